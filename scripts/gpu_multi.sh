#!/usr/bin/env bash
# GPU evidence on a two-GPU machine: the whole test suite (gpu and multigpu tests included), the
# conformance suites at a few examples per cell, and the `devices` family (an array on device 1
# consumed while device 0 is current). Usage on the device: bash scripts/gpu_multi.sh OUT_DIR
set -uo pipefail
out=${1:?usage: gpu_multi.sh OUT_DIR}
export PYTHONUNBUFFERED=1
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
nvidia-smi topo -m >> "$out/nvidia-smi.txt" 2>&1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
  || { echo "install failed"; exit 1; }
python3 -c "import json, caiconform.env as e; print(json.dumps(e.capture(), indent=2))" > "$out/env.json"
timeout 300 python3 -m pytest tests -q -p no:cacheprovider -rs --junitxml="$out/junit.xml" \
  > "$out/pytest.log" 2>&1
echo "tests exit $?"; tail -3 "$out/pytest.log"
timeout 150 python3 -m pytest suites -q -p no:cacheprovider --ignore=suites/test_emm.py \
  --suite-max-examples 4 --suite-shrink-budget 0 --suite-workers 8 --suite-timeout 30 \
  --suite-out /tmp/suites -rfEs > "$out/suites.log" 2>&1
echo "suites exit $?"; tail -3 "$out/suites.log"
timeout 90 caiconform run --checks devices --max-examples 30 --out /tmp/devices > "$out/devices.log" 2>&1
echo "devices exit $?"; tail -15 "$out/devices.log"
tar -C /tmp -czf "$out/runs.tar.gz" devices suites 2>/dev/null
