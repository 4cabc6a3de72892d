#!/usr/bin/env bash
# One GPU call that checks a change end to end (carry .whl for the adopters), in the order that
# keeps the timed run on a fresh machine:
#   bash scripts/gpu_check_change.sh OUT [SEED]          (SEED: 11)
# 1. the default matrix, timed, from no compiled code on disk (`caiconform run --seed SEED`);
#    then, for each N in $WORKERS (e.g. WORKERS="16 4"), the same with `--workers N`, timed and
#    summarised by scripts/timing_summary.py into summary.txt (how the default compares);
# 2. the adversarial family again with the same seed (do its groups repeat? `compare.txt`);
# 3. `caiconform emm-check` of Numba's default manager and both reference plugin modes;
# 4. the GPU-marked tests (`scripts/gpu_marked_tests.sh`);
# 5. where RMM is installed (carried in .whl), `emm-check` of RMM's plugin on its default
#    resource and on each of `caiconform.emm.rmm_setups.RESOURCES`, appended to emm-check.txt,
#    last and only while the 9 minutes allow (each capped at 40 s).
# Each step has its own cap so the whole stays under 9 minutes; a failed step never stops the
# later ones. Writes under OUT (7 files): summary.txt (each step's exit and time), gpu.txt,
# emm-check.txt, tests.log, compare.txt, run.tar.gz (the default run's run.json, cells.jsonl,
# env.json, adapters.json, results.jsonl.gz and its log: `caiconform report` renders it here)
# and adversarial.tar.gz (the same for step 2).
set -uo pipefail
out=${1:?usage: gpu_check_change.sh OUT [SEED]}
seed=${2:-11}
mkdir -p "$out"
out=$(cd "$out" && pwd)
source scripts/gpu_env.sh
work=$(mktemp -d /tmp/check-change.XXXX)
summary="$out/summary.txt"
: > "$summary"

# keep NAME TARBALL: a run directory's files and its log in one tarball under OUT
keep() {
  local name=$1
  [ -f "$work/$name/results.jsonl" ] && gzip -kf "$work/$name/results.jsonl"
  (cd "$work" && tar -czf "$out/$2" --ignore-failed-read "$name.log" \
    $(for f in run.json cells.jsonl env.json adapters.json results.jsonl.gz; do
        [ -f "$name/$f" ] && echo "$name/$f"
      done)) || echo "tar $2 failed" | tee -a "$summary"
}

fresh_builds
timed default 150 caiconform run --seed "$seed" --out "$work/default"
keep default run.tar.gz
for n in ${WORKERS:-}; do
  fresh_builds
  timed "workers$n" 150 caiconform run --seed "$seed" --workers "$n" --out "$work/workers$n"
done
if [ -n "${WORKERS:-}" ]; then
  python3 scripts/timing_summary.py default="$work/default" \
    $(for n in $WORKERS; do echo "workers$n=$work/workers$n"; done) >> "$summary" 2>&1
fi
fresh_builds
timed adversarial 70 caiconform run --seed "$seed" --checks adversarial --out "$work/adversarial"
keep adversarial adversarial.tar.gz
caiconform compare "$work/default" "$work/adversarial" --common-cells > "$out/compare.txt" 2>&1
echo "compare (adversarial cells of both runs): exit $?; $(sed -n 2p "$out/compare.txt")" \
  | tee -a "$summary"
timed emm-check 70 caiconform emm-check numba.cuda.cudadrv.driver:NumbaCUDAMemoryManager \
  caiconform.reference.emm:ReferenceDirectManager caiconform.reference.emm:ReferencePoolManager
cp "$work/emm-check.log" "$out/emm-check.txt"
bash scripts/gpu_marked_tests.sh "$out" 110 | tee -a "$summary"
if python3 -c "import rmm" 2>/dev/null; then
  rmm_plugin=rmm.allocators.numba:RMMNumbaManager
  for setup in "" $(python3 -c "from caiconform.emm import rmm_setups as r; print(*r.RESOURCES)"); do
    [ "$SECONDS" -gt 500 ] && { echo "rmm ${setup:-default}: not run (time)" | tee -a "$summary"; continue; }
    timed "emm-rmm-${setup:-default}" 40 caiconform emm-check "$rmm_plugin" \
      ${setup:+--setup caiconform.emm.rmm_setups:$setup}
    { echo "== RMM, resource: ${setup:-default}"; cat "$work/emm-rmm-${setup:-default}.log"; } \
      >> "$out/emm-check.txt"
  done
fi
cat "$summary"
