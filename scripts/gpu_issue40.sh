#!/usr/bin/env bash
# Issue 40's GPU call: the default matrix rerun with the severity policy, folding and triage, its
# standalone verification and upstream pack. Carry .whl; .parts/mlir.1 and .parts/mlir.2 must
# have come with the calls just before, to the same warm machine (scripts/mlir_parts.sh says why):
#   bash scripts/gpu_issue40.sh OUT [SEED]
# Writes under OUT: summary.txt, gpu.txt, run.tar.gz (the run directory with its reports,
# standalone/ and upstream/), findings.json, verify.json.
set -uo pipefail
out=${1:?usage: gpu_issue40.sh OUT [SEED]}
seed=${2:-2802562769}
mkdir -p "$out"
out=$(cd "$out" && pwd)
source scripts/gpu_env.sh
work=$(mktemp -d /tmp/i40.XXXX)
summary="$out/summary.txt"
: > "$summary"
python3 -c "import importlib.metadata as m; print('numba-cuda-mlir', m.version('numba-cuda-mlir'))" \
  2>&1 | tail -1 | tee -a "$summary"
run=$work/run
fresh_builds
timed run 230 caiconform run --seed "$seed" --out "$run"
timed report 90 caiconform report "$run"
timed findings 90 caiconform findings "$run" --list --out "$run/findings"
[ "$SECONDS" -lt 400 ] && timed verify 150 caiconform findings "$run" --verify
timed upstream 60 caiconform findings "$run" --upstream "$run/upstream"
cp "$work"/*.log "$run/" 2>/dev/null
cp "$run/findings.json" "$run/verify.json" "$out/" 2>/dev/null
[ -f "$run/results.jsonl" ] && gzip -f "$run/results.jsonl"
tar -czf "$out/run.tar.gz" -C "$work" run || echo "tar failed" | tee -a "$summary"
cat "$summary"
