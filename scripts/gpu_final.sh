#!/usr/bin/env bash
# GPU evidence for issues 9-11: (optionally) the GPU tests, then the full default matrix with
# one seed, its report and findings catalogue. Usage on the device:
#   bash scripts/gpu_final.sh OUT SEED [tests] [-- extra caiconform run args]
# Brings back: run.log, results.jsonl.gz, report.tar.gz (matrix.json/md, index.html,
# findings.json, env.json, run.json, cells.jsonl), repro-min.tar.gz (the reproducer of each
# catalogue group), tests.log.
set -uo pipefail
out=${1:?usage: gpu_final.sh OUT SEED [tests]}
seed=${2:?usage: gpu_final.sh OUT SEED [tests]}
tests=${3:-}
shift 3 2>/dev/null || shift $#
[ "${1:-}" = "--" ] && shift
export PYTHONUNBUFFERED=1
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
  || { echo "install failed"; exit 1; }
if [ "$tests" = tests ]; then
  # test_reference_gpu.py's tally test reads what the property before it counted: one process
  python3 -m pytest tests/gpu tests/test_floor.py tests/test_dlpack.py tests/test_speed.py -q \
    -p no:cacheprovider -rs -n 8 --ignore=tests/gpu/test_reference_gpu.py > "$out/tests.log" 2>&1
  python3 -m pytest tests/gpu/test_reference_gpu.py -q -p no:cacheprovider -rs >> "$out/tests.log" 2>&1
  grep -E "passed|failed" "$out/tests.log" | tail -2
fi
run=/tmp/matrix-$seed
rm -rf "$run"
start=$(date +%s.%N)
timeout 450 caiconform run --seed "$seed" --out "$run" "$@" > "$out/run.log" 2>&1
rc=$?
secs=$(python3 -c "print(round($(date +%s.%N)-$start,1))")
echo "matrix exit $rc after $secs s: caiconform run --seed $seed $*" | tee -a "$out/run.log"
caiconform report "$run" 2>&1 | tail -1 | tee -a "$out/run.log"
gzip -c "$run/results.jsonl" > "$out/results.jsonl.gz"
tar -C "$run" -czf "$out/report.tar.gz" matrix.json matrix.md index.html findings.json env.json adapters.json \
  run.json cells.jsonl
python3 scripts/cited_repros.py "$run" > /tmp/min-repros.txt
tar -C "$run" -czf "$out/repro-min.tar.gz" -T /tmp/min-repros.txt 2>/dev/null
grep -E "^\[" "$out/run.log" | tail -3
