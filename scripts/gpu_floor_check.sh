#!/usr/bin/env bash
# GPU check of the coverage floor, named dtypes and library stream scenarios: the floor-heavy
# families over the libraries installed on the device, plus the GPU tests that touch them.
# Usage on the device: bash scripts/gpu_floor_check.sh OUT_DIR [CHECKS] [LIBRARIES] [SECONDS]
set -uo pipefail
out=${1:?usage: gpu_floor_check.sh OUT_DIR [CHECKS] [LIBRARIES] [SECONDS]}
checks=${2:-schema,streams}
libs=${3:-reference,numba,cupy,torch,jax,cuda.core}
limit=${4:-400}
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
  || { echo "install failed"; exit 1; }
run=/tmp/floorrun
rm -rf "$run"
start=$(date +%s)
timeout "$limit" caiconform run --checks "$checks" --libraries "$libs" --max-examples 10 \
  --timeout 20 --shrink-budget 10 --workers 16 --seed 1 --out "$run" 2>&1 | tail -25 | tee "$out/run.log"
echo "run exit ${PIPESTATUS[0]} after $(( $(date +%s) - start )) s" | tee -a "$out/run.log"
gzip -c "$run/results.jsonl" > "$out/results.jsonl.gz"
python3 - "$run/results.jsonl" <<'PY' | tee "$out/summary.txt"
import collections, json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
floor = [r for r in recs if r.get("floor")]
print(len(recs), "records,", len(floor), "floor")
c = collections.Counter((r["check"], r["producer"], r["consumer"], r["outcome"], r["rule"]) for r in recs if r["outcome"] not in ("pass",))
for k, n in sorted(c.items(), key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2] or "", -kv[1])):
    print(n, *k)
PY
