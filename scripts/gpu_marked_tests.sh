#!/usr/bin/env bash
# The GPU tests on the GPU machine (carry .whl): tests/gpu on 8 xdist workers, beside
# tests/gpu/test_reference_gpu.py in a process of its own (its tally test reads what the
# property before it counted), and, when the ioctl clock is built and carried
# (benchmarks/ioctl_clock/libioctlclock.so), tests/gpu/test_health_gpu.py with it preloaded.
# Writes OUT/tests.log; prints how long they took and the tallies.
#   bash scripts/gpu_marked_tests.sh OUT [CAP_S]   (CAP_S: each pytest's limit, 90 s by default)
# scripts/gpu_stability.sh runs it before or after its matrices (TESTS_CAP_S, TESTS_AFTER).
set -uo pipefail
out=${1:?usage: gpu_marked_tests.sh OUT [CAP_S]}
cap=${2:-90}
source scripts/gpu_env.sh
t0=$(date +%s)
timeout -s INT -k 5 "$cap" python3 -m pytest tests/gpu/test_reference_gpu.py -q \
  -p no:cacheprovider -rs > /tmp/tests-ref.log 2>&1 &
timeout -s INT -k 5 "$cap" python3 -m pytest tests/gpu -q -p no:cacheprovider -rs \
  -n 8 --ignore=tests/gpu/test_reference_gpu.py > "$out/tests.log" 2>&1
echo "tests exit $?" >> "$out/tests.log"
wait
{ echo "== tests/gpu/test_reference_gpu.py"; cat /tmp/tests-ref.log; } >> "$out/tests.log"
# with the ioctl clock built and carried (benchmarks/ioctl_clock): the health check's no-ioctl test
clock=$PWD/benchmarks/ioctl_clock/libioctlclock.so
if [ -f "$clock" ]; then
  { echo "== tests/gpu/test_health_gpu.py with the ioctl clock preloaded"
    LD_PRELOAD=$clock timeout -s INT -k 5 "$cap" python3 -m pytest tests/gpu/test_health_gpu.py \
      -q -p no:cacheprovider -rs 2>&1 | tail -3; } >> "$out/tests.log"
fi
echo "tests: $(( $(date +%s) - t0 )) s; $(grep -E '(passed|failed)' "$out/tests.log" | tail -2 | tr '\n' ' ')"
