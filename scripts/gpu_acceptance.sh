#!/usr/bin/env bash
# Issue 24's acceptance on a GPU machine, one command from the repository root:
#   bash scripts/gpu_acceptance.sh [OUT]        (OUT defaults to $OUT)
# 1. the downstream libraries (tests/downstream): the CuPy pass-through's first run writes a
#    baseline, its next three runs must be green, the planted library's run red with only the
#    planted defect; every run's plugin output kept (downstream.tar.gz);
# 2. the GPU-marked tests (tests/gpu, the plugin's GPU tests; test_reference_gpu.py in a process
#    of its own), each pytest capped.
# Writes OUT/acceptance.log, OUT/tests.log, OUT/downstream.tar.gz, OUT/gpu.txt.
set -uo pipefail
out=${1:-${OUT:?usage: gpu_acceptance.sh OUT (or set OUT)}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
source scripts/gpu_env.sh
export PYTHONPATH=".:${PYTHONPATH:-}"
t0=$(date +%s)
logs=$(mktemp -d /tmp/downstream.XXXX)
CAI_DOWNSTREAM_LOG=$logs timeout -s INT -k 10 "${DOWNSTREAM_CAP_S:-420}" python3 -m pytest \
  tests/downstream -q -p no:cacheprovider -rs > "$out/acceptance.log" 2>&1
echo "downstream exit $? after $(( $(date +%s) - t0 )) s" | tee -a "$out/acceptance.log"
tar -czf "$out/downstream.tar.gz" -C "$logs" . 2>/dev/null
t1=$(date +%s)
timeout -s INT -k 5 "${TESTS_CAP_S:-150}" python3 -m pytest tests/gpu/test_reference_gpu.py -q \
  -p no:cacheprovider -rs > /tmp/tests-ref.log 2>&1 &
timeout -s INT -k 5 "${TESTS_CAP_S:-150}" python3 -m pytest tests/gpu tests/test_pytest_plugin.py \
  -q -p no:cacheprovider -rs -n 8 --ignore=tests/gpu/test_reference_gpu.py > "$out/tests.log" 2>&1
echo "tests exit $?" >> "$out/tests.log"
wait
{ echo "== tests/gpu/test_reference_gpu.py"; cat /tmp/tests-ref.log; } >> "$out/tests.log"
echo "tests: $(( $(date +%s) - t1 )) s; $(grep -E '(passed|failed)' "$out/tests.log" | tail -2 | tr '\n' ' ')"
grep -E "^(OK|FIX|UPDATE)" "$logs"/*.log | sed 's/^/headline /'
