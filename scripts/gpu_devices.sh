#!/usr/bin/env bash
# Two-GPU check of the devices family and the reference consumer across devices.
set -uo pipefail
out=${1:?usage: gpu_devices.sh OUT_DIR}
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
python3 scripts/diag_devices.py 2>&1 | tee "$out/diag.log"
python3 -m pytest tests/gpu/test_ipc_gpu.py -q -p no:cacheprovider -rs 2>&1 | tee "$out/ipc.log" | tail -4
timeout 120 caiconform run --checks devices --max-examples 30 --out /tmp/devices > "$out/devices.log" 2>&1
tail -14 "$out/devices.log"
tar -C /tmp -czf "$out/devices.tar.gz" devices
