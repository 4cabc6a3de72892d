#!/usr/bin/env bash
# The two-GPU `devices` cells that never finished on nvidia-h200-x2 (cuda.cccl, numba-kernel,
# pycuda): run them alone with both GPUs, capped, and bring back each worker's stderr log and,
# after CAP-20 s, py-spy dumps of every worker process still running (where it is stuck).
#   bash scripts/diag_devices_stall.sh OUT [CAP_S]   (carry the cuda-cccl and PyCUDA wheels,
#   their pure-Python needs and .whl/diag/py-spy)
set -uo pipefail
out=${1:?usage: diag_devices_stall.sh OUT [CAP_S]}
cap=${2:-90}
source scripts/gpu_env.sh
timeout -s INT -k 10 "$cap" caiconform run --checks devices --libraries cuda.cccl,numba-kernel,pycuda \
  --gpus 2 --max-examples 20 --seed 11 --out /tmp/dev > /tmp/dev.log 2>&1 &
run=$!
sleep $(( cap - 20 ))
spy=.whl/diag/py-spy
{
  for pid in $(pgrep -f "caiconform.runner.worker"); do
    echo "=== pid $pid: $(tr '\0' ' ' < /proc/$pid/cmdline | cut -c1-150)"
    if [ -f "$spy" ]; then chmod +x "$spy"; "$spy" dump --pid "$pid" 2>&1 | head -60
    else echo "(no $spy carried: no stack)"; fi
  done
} > "$out/stacks.txt" 2>&1
wait $run
echo "exit $?" >> /tmp/dev.log
cp /tmp/dev.log "$out/run.log"
tar -C /tmp/dev -czf "$out/dev.tar.gz" workers cells.jsonl run.json 2>/dev/null
tail -5 /tmp/dev.log
grep -c "=== pid" "$out/stacks.txt"
