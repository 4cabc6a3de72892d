#!/usr/bin/env bash
# The two-GPU `devices` cells that never finished on nvidia-h200-x2 (cuda.cccl, numba-kernel,
# pycuda): run them alone with both GPUs, capped, and bring back each worker's stderr log and,
# after CAP-20 s, py-spy dumps of every worker process still running (where it is stuck).
#   bash scripts/diag_devices_stall.sh OUT [CAP_S]   (carry the cuda-cccl and PyCUDA wheels,
#   their pure-Python needs and .whl/diag/py-spy)
set -uo pipefail
out=${1:?usage: diag_devices_stall.sh OUT [CAP_S]}
cap=${2:-90}
export PYTHONUNBUFFERED=1
mkdir -p /tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || echo "wheel install failed"
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt"
timeout -s INT -k 10 "$cap" caiconform run --checks devices --libraries cuda.cccl,numba-kernel,pycuda \
  --gpus 2 --max-examples 20 --seed 11 --out /tmp/dev > /tmp/dev.log 2>&1 &
run=$!
sleep $(( cap - 20 ))
{
  for pid in $(pgrep -f "caiconform.runner.worker"); do
    echo "=== pid $pid: $(tr '\0' ' ' < /proc/$pid/cmdline | cut -c1-150)"
    chmod +x .whl/diag/py-spy; .whl/diag/py-spy dump --pid "$pid" 2>&1 | head -60
  done
  for pid in $(pgrep -P "$(pgrep -f 'caiconform.runner.worker' | head -1)" 2>/dev/null); do :; done
} > "$out/stacks.txt" 2>&1
wait $run
echo "exit $?" >> /tmp/dev.log
cp /tmp/dev.log "$out/run.log"
tar -C /tmp/dev -czf "$out/dev.tar.gz" workers cells.jsonl run.json 2>/dev/null
tail -5 /tmp/dev.log
grep -c "=== pid" "$out/stacks.txt"
