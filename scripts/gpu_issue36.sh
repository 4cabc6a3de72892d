#!/usr/bin/env bash
# Issue 36's GPU call: numba-cuda-mlir beside numba-cuda, and DLPack beside the CAI.
# Carry .whl; .parts/mlir.1 and .parts/mlir.2 must have come with the calls just before, to the
# same warm machine (scripts/mlir_parts.sh says why):
#   bash scripts/gpu_issue36.sh OUT [SEED]          (SEED: 2802562769)
# 1. the default matrix, both protocols, timed from no compiled code on disk; report; findings
#    --verify (standalone scripts in a fresh process) and the upstream pack;
# 2. emm-check of Numba's own manager and both reference plugins under numba-cuda, then under
#    numba-cuda-mlir;
# 3. scripts/protocol_probe.py (which protocol each consumer path takes when both are offered);
# 4. the default matrix again without the numba-cuda-mlir adapters (both protocols: what the
#    90 s target is held to, numba-cuda-mlir being a carried adopter);
# 5. the GPU-marked tests.
# Writes under OUT: summary.txt, gpu.txt, emm-check.txt, protocols.json, protocols.md,
# tests.log, run.tar.gz (the run directory with its reports, standalone/ and upstream/).
set -uo pipefail
out=${1:?usage: gpu_issue36.sh OUT [SEED]}
seed=${2:-2802562769}
mkdir -p "$out"
out=$(cd "$out" && pwd)
source scripts/gpu_env.sh
work=$(mktemp -d /tmp/i36.XXXX)
summary="$out/summary.txt"
: > "$summary"
python3 -c "import importlib.metadata as m; print('numba-cuda-mlir', m.version('numba-cuda-mlir'))" \
  2>&1 | tail -1 | tee -a "$summary"
run=$work/run
fresh_builds
timed run 230 caiconform run --seed "$seed" --out "$run"
timed report 60 caiconform report "$run"
[ "$SECONDS" -lt 330 ] && timed verify 120 caiconform findings "$run" --verify
timed upstream 40 caiconform findings "$run" --upstream "$run/upstream"
cp "$work"/*.log "$run/" 2>/dev/null
plugins="caiconform.reference.emm:ReferenceDirectManager caiconform.reference.emm:ReferencePoolManager"
timed emm-numba 50 caiconform emm-check numba.cuda.cudadrv.driver:NumbaCUDAMemoryManager $plugins
timed emm-mlir 100 caiconform emm-check --numba numba-cuda-mlir \
  numba_cuda_mlir.numba_cuda.cudadrv.driver:NumbaCUDAMemoryManager $plugins
{ echo "== numba-cuda"; cat "$work/emm-numba.log"; echo "== numba-cuda-mlir"; cat "$work/emm-mlir.log"; } \
  > "$out/emm-check.txt"
timed probe 60 python3 scripts/protocol_probe.py --out "$out/protocols.json"
cp "$work/probe.log" "$out/protocols.md"
no_mlir=$(python3 -c "from caiconform.adapters import registry as r; \
print(','.join(n for n in r.names() if not n.startswith('numba-mlir')))")
fresh_builds
[ "$SECONDS" -lt 330 ] && timed run-no-mlir 120 caiconform run --seed "$seed" \
  --libraries "$no_mlir" --out "$work/no-mlir"
[ -f "$work/no-mlir/run.json" ] && cp "$work/no-mlir/cells.jsonl" "$out/no-mlir-cells.jsonl"
[ "$SECONDS" -lt 470 ] && bash scripts/gpu_marked_tests.sh "$out" $(( 560 - SECONDS )) | tee -a "$summary"
[ -f "$run/results.jsonl" ] && gzip -f "$run/results.jsonl"
tar -czf "$out/run.tar.gz" -C "$work" run || echo "tar failed" | tee -a "$summary"
cat "$summary"
