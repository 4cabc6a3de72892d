#!/usr/bin/env bash
# One call: the numba-cuda-mlir release chart (0.5.4, carried unpacked in parts, against the
# machine's 0.6.0 from the mlir parts) and then README's test command with every carried
# adopter. The calls just before, to the same warm machine: .whl/adopters1 installed into
# /tmp/site with .parts/numba-cuda-mlir-0.5.4.2, then .parts/numba-cuda-mlir-0.5.4.1, then
# .parts/mlir.1; this one carries .parts/mlir.2 and .whl/adopters2:
#   bash scripts/gpu_mlir_chart_tests.sh OUT
# Writes under OUT (at most 8 files come back): chart/ releases.json, releases.md, summary.txt,
# runs.tar.gz; tests/ summary.json, tests.log.gz.
set -uo pipefail
out=${1:?usage: gpu_mlir_chart_tests.sh OUT}
mkdir -p "$out/chart" "$out/tests"
out=$(cd "$out" && pwd)
export PYTHONUNBUFFERED=1
SEED=1 CAP_S=80 timeout 240 bash scripts/gpu_releases.sh "$out/chart" numba-cuda-mlir 0.5.4 \
  installed -- --libraries reference,numba-mlir,numba-mlir-from-cai,numba-mlir-kernel,cupy,torch \
  --max-examples 30 > /tmp/chart.log 2>&1
echo "chart: exit $?"
rm -f "$out/chart/releases.html" "$out/chart/gpu.txt"
grep -v '^  ' "$out/chart/summary.txt" | cut -c1-300
export PYTHONPATH=/tmp/site:/root/parts/mlir  # what gpu_env.sh, in the chart's shell, installed
timeout 400 bash scripts/gpu_tests.sh "$out/tests" > /tmp/tests.out 2>&1
echo "tests: exit $?"
rm -f "$out/tests/junit.xml" "$out/tests/gpu.txt"
gzip -f "$out/tests/tests.log"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print({k: d.get(k) for k in ('passed','failed','skipped','errors','wall_s')}); print(*d.get('failing', [])[:20], sep='\n')" "$out/tests/summary.json"
