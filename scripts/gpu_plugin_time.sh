#!/usr/bin/env bash
# The pytest plugin's wall time for one library against four peers, both protocols (issue 43):
# the downstream test's `cleanlib` (a pass-through to CuPy) against reference, cupy, torch and
# numba, three times in a row on one machine: the first measuring its start (`--fresh-start`
# is the run's; here CAICONFORM_START_CACHE is a new directory), the next two reading it.
#   bash scripts/gpu_plugin_time.sh OUT
# Writes OUT/plugin.txt (each run's wall time and the plugin's summary line) and OUT/run-N.log.
# RUNS=N: that many runs (3); REPORT=DIR: the first with `--cai-report DIR`, its exchange run's
# `timing_summary.py` in OUT/plugin-timing.txt.
set -uo pipefail
out=${1:?usage: gpu_plugin_time.sh OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONUNBUFFERED=1 PYTHONPATH=$root${PYTHONPATH:+:$PYTHONPATH}
export CAICONFORM_START_CACHE=$(mktemp -d /tmp/plugin-start.XXXX)
work=$(mktemp -d /tmp/plugin.XXXX)
: > "$out/plugin.txt"
for n in $(seq "${RUNS:-3}"); do
  report=()
  [ "$n" = 1 ] && [ -n "${REPORT:-}" ] && report=(--cai-report "$REPORT")
  s=$(date +%s.%N)
  (cd "$work" && python3 -m pytest -m cai -p no:cacheprovider -q \
    --cai-name cleanlib --cai-against reference,cupy,torch,numba "${report[@]}" \
    --cai-producer tests.downstream.cleanlib.testing:make_array \
    --cai-consumer tests.downstream.cleanlib.testing:to_host) > "$out/run-$n.log" 2>&1
  rc=$?
  wall=$(python3 -c "print(round($(date +%s.%N) - $s, 1))")
  line=$(grep -m1 -E "^(OK|FIX|INCOMPLETE|NOTHING)" "$out/run-$n.log")
  echo "run $n: exit $rc, $wall s: $line" | tee -a "$out/plugin.txt"
done
if [ -n "${REPORT:-}" ]; then
  # shellcheck disable=SC2046
  python3 "$root/scripts/timing_summary.py" \
    $(for d in "$REPORT"/runs/*/exchange; do echo "plugin=$d"; done) > "$out/plugin-timing.txt" 2>&1
fi
