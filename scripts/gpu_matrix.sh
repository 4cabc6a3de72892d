#!/usr/bin/env bash
# GPU evidence, part 2: the full default conformance matrix on one GPU, its report, and the
# runner benchmark. Usage on the device: bash scripts/gpu_matrix.sh OUT_DIR [MATRIX_SECONDS]
# Brings back (at most 8 files): env.json, results.jsonl.gz, matrix.json, matrix.md, index.html,
# findings.json (the catalogue of non-conformances), repro.tar.gz (repro/, run.json,
# cells.jsonl), run.log (the run's progress and report, then the GPU tests and the runner
# benchmark).
set -uo pipefail
out=${1:?usage: gpu_matrix.sh OUT_DIR [MATRIX_SECONDS]}
limit=${2:-420}
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
  || { echo "install failed"; exit 1; }
run=/tmp/matrix
start=$(date +%s)
timeout "$limit" caiconform run --max-examples 100 --timeout 20 --shrink-budget 15 --out "$run" \
  2>&1 | tee "$out/run.log"
echo "matrix exit ${PIPESTATUS[0]} after $(( $(date +%s) - start )) s" | tee -a "$out/run.log"
caiconform report "$run" 2>&1 | tee -a "$out/run.log"
cp "$run/env.json" "$run/matrix.json" "$run/matrix.md" "$run/index.html" "$run/findings.json" \
  "$out/" 2>/dev/null
gzip -c "$run/results.jsonl" > "$out/results.jsonl.gz"
tar -C "$run" -czf "$out/repro.tar.gz" repro run.json cells.jsonl 2>/dev/null
{
  python3 -m pytest tests/test_pytest_plugin.py tests/test_runner.py -q -p no:cacheprovider -rs
  python3 benchmarks/bench_runner.py --family roundtrip --producer reference --consumer reference \
    --exchanges 2000 --fresh 10
} > /tmp/extra.log 2>&1
{ echo "== GPU tests and runner benchmark"; cat /tmp/extra.log; } >> "$out/run.log"
tail -5 /tmp/extra.log
