#!/usr/bin/env bash
# One GPU call that publishes findings a maintainer can accept (carry .whl for the adopters):
#   bash scripts/gpu_findings.sh OUT [SEED]          (SEED: 2802562769)
# 1. the default matrix, timed, from no compiled code on disk (`caiconform run --seed SEED`),
#    rendered (`caiconform report`);
# 2. `caiconform findings RUN --verify`, timed: every group at or above refuses-valid gets its
#    standalone script (numpy and the exchange's libraries only), run in a fresh process with
#    caiconform not importable; then the upstream pack (`--upstream RUN/upstream`);
# 3. the GPU-marked tests (`scripts/gpu_marked_tests.sh`) and the plugin's downstream acceptance
#    (tests/downstream: a baseline keeps a clean library green and a new failure mode red).
# SELFCHECK_AB=1 then runs the matrix again with CAICONFORM_SELFCHECK=off and prints both
# runs' start-up phases (what the run-start adapter self-check costs).
# Each step is capped so the whole stays under 9.5 minutes; a failed step never stops the later
# ones. Writes under OUT: summary.txt (each step's exit and time), gpu.txt, tests.log,
# downstream.log, run.tar.gz (the run directory: journal gzipped, reports, findings.json,
# standalone/ scripts, upstream/ pack, every log).
set -uo pipefail
out=${1:?usage: gpu_findings.sh OUT [SEED]}
seed=${2:-2802562769}
mkdir -p "$out"
out=$(cd "$out" && pwd)
source scripts/gpu_env.sh
work=$(mktemp -d /tmp/findings.XXXX)
summary="$out/summary.txt"
: > "$summary"

run=$work/run
fresh_builds
timed run 170 caiconform run --seed "$seed" --out "$run"
timed report 60 caiconform report "$run"
timed verify 200 caiconform findings "$run" --verify
timed upstream 60 caiconform findings "$run" --upstream "$run/upstream"
cp "$work"/*.log "$run/" 2>/dev/null
bash scripts/gpu_marked_tests.sh "$out" 110 | tee -a "$summary"
[ "$SECONDS" -lt 330 ] && timed downstream 240 python3 -m pytest tests/downstream -q \
  -p no:cacheprovider -rs
cp "$work/downstream.log" "$out/downstream.log" 2>/dev/null
# SELFCHECK_AB=1: the same matrix again without the run-start adapter self-check (what it costs)
if [ -n "${SELFCHECK_AB:-}" ] && [ "$SECONDS" -lt 430 ]; then
  fresh_builds
  CAICONFORM_SELFCHECK=off timed run-noselfcheck 120 caiconform run --seed "$seed" \
    --out "$work/noselfcheck"
  for d in "$run" "$work/noselfcheck"; do
    python3 -c "import json,sys; s=json.load(open(sys.argv[1]+'/run.json')).get('startup',{}); \
print(sys.argv[1].rsplit('/',1)[-1], 'startup', s)" "$d" | tee -a "$summary"
  done
fi
[ -f "$run/results.jsonl" ] && gzip -f "$run/results.jsonl"
tar -czf "$out/run.tar.gz" -C "$work" run || echo "tar failed" | tee -a "$summary"
cat "$summary"
