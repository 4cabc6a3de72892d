#!/usr/bin/env bash
# GPU step of issue 11: the full default matrix (timed), its run files, and the per-example
# benchmark. Usage on the device: bash scripts/gpu_speed.sh OUT_DIR [SEED] [EXTRA RUN ARGS...]
set -uo pipefail
out=${1:?usage: gpu_speed.sh OUT_DIR [SEED] [ARGS...]}
seed=${2:-1}
shift 2 2>/dev/null || shift $#
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
  || { echo "install failed"; exit 1; }
run=/tmp/speedrun
rm -rf "$run"
start=$(date +%s.%N)
timeout 520 caiconform run --seed "$seed" --out "$run" "$@" > "$out/run.log" 2>&1
rc=$?
end=$(date +%s.%N)
echo "matrix exit $rc after $(python3 -c "print(round($end-$start,1))") s (caiconform run --seed $seed $*)" | tee -a "$out/run.log"
tail -22 "$out/run.log"
gzip -c "$run/results.jsonl" > "$out/results.jsonl.gz"
tar -C "$run" -czf "$out/runfiles.tar.gz" run.json cells.jsonl env.json workers 2>/dev/null
