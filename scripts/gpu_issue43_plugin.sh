#!/usr/bin/env bash
# Issue 43's plugin measurement in one device call: `gpu_plugin_ab.sh` (this checkout against
# the tree before the one-run change, unpacked from .old/plugin-before.tar.gz), then the plugin's
# GPU tests (`gpu_tests.sh` on tests/downstream and the plugin's GPU test files, capped at
# CAP_S). At most 8 files come back from a call: OUT/plugin-ab.txt, OUT/summary.json (the
# tests') and OUT/logs.tar.gz (every log).
#   bash scripts/gpu_issue43_plugin.sh OUT
set -uo pipefail
out=${1:?usage: gpu_issue43_plugin.sh OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d /tmp/issue43.XXXX)
mkdir -p "$work/before" && tar -xzf .old/plugin-before.tar.gz -C "$work/before"
bash scripts/gpu_plugin_ab.sh "$work/ab" "$work/before"
cp "$work/ab/plugin-ab.txt" "$out/"
# once more with --cai-report, so the run directory stays for scripts/timing_summary.py
plug=$(mktemp -d /tmp/plugin.XXXX)
s=$(date +%s.%N)
(cd "$plug" && PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 PYTHONPATH=$root timeout -k 10 150 \
  python3 -m pytest -p caiconform.pytest_plugin -m cai -p no:cacheprovider -q \
  --cai-name cleanlib --cai-against reference,cupy,torch,numba --cai-report "$work/report" \
  --cai-producer tests.downstream.cleanlib.testing:make_array \
  --cai-consumer tests.downstream.cleanlib.testing:to_host) > "$work/ab/report-run.log" 2>&1
echo "report run: exit $?, $(python3 -c "print(round($(date +%s.%N) - $s, 1))") s" >> "$out/plugin-ab.txt"
PYTHONPATH=$root python3 scripts/timing_summary.py $(for d in "$work"/report/runs/*/exchange; do echo "plugin=$d"; done) \
  > "$out/timing-summary.txt" 2>&1
CAP_S=${CAP_S:-170} bash scripts/gpu_tests.sh "$work/tests" tests/downstream \
  tests/gpu/test_plugin_claims_gpu.py tests/gpu/test_plugin_dlpack_consumer_gpu.py \
  tests/test_pytest_plugin.py
cp "$work/tests/summary.json" "$out/" 2>/dev/null
tar -czf "$out/logs.tar.gz" -C "$work" ab tests
