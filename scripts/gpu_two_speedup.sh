#!/usr/bin/env bash
# Issue 11's multi-GPU figure: the default matrix on one host with two GPUs, run once on one GPU
# and once spread over both (`--gpus 1` / `--gpus 2`, the same seed, the default workers), timed,
# then compared (the same finding groups). Run on nvidia-h200-x2 with .whl carried:
#   bash scripts/gpu_two_speedup.sh OUT [SEED] [RUN_CAP_S]
# Brings back gpu.txt, run.log, gpu-util.csv.gz, compare.txt and one{SEED}.tar.gz /
# two{SEED}.tar.gz (matrix.json, findings.json, run.json, cells.jsonl, env.json).
set -uo pipefail
out=${1:?usage: gpu_two_speedup.sh OUT [SEED] [RUN_CAP_S]}
seed=${2:-11}
cap=${3:-270}
source scripts/gpu_env.sh
nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv,noheader \
  -lms 1000 > /tmp/gpu-util.csv 2>/dev/null &
util=$!
for gpus in 1 2; do
  name=$([ "$gpus" = 1 ] && echo one || echo two)
  fresh_builds  # each run from no compiled code on disk
  s=$(date +%s.%N)
  timeout -s INT -k 15 "$cap" caiconform run --seed "$seed" --max-examples 100 --gpus "$gpus" \
    --out "/tmp/$name" > "/tmp/$name.log" 2>&1
  rc=$?
  echo "matrix exit $rc after $(python3 -c "print(round($(date +%s.%N)-$s,1))") s:" \
    "caiconform run --seed $seed --max-examples 100 --gpus $gpus" | tee -a "/tmp/$name.log"
  caiconform report "/tmp/$name" 2>&1 | tail -1
  { echo "== --gpus $gpus"; cat "/tmp/$name.log"; } >> "$out/run.log"
  tar -C "/tmp/$name" -czf "$out/$name$seed.tar.gz" matrix.json findings.json run.json \
    cells.jsonl env.json adapters.json 2>/dev/null
done
kill "$util" 2>/dev/null
gzip -c /tmp/gpu-util.csv > "$out/gpu-util.csv.gz"
caiconform compare /tmp/one /tmp/two --common-cells > "$out/compare.txt"
tail -3 "$out/compare.txt"
