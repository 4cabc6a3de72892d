#!/usr/bin/env bash
# Issue 43's GPU call: the default matrix twice on one seed on a fresh machine's GPU, first as
# now (the machine's first run, its start cache empty: a fresh machine's run), then as before
# the issue's levers (`--saturate 0 --saturate-found 0 --fresh-start`: every drawn example, the
# start measured), then `caiconform compare` of the two and both timing summaries. Carry
# .whl (and the numba-cuda-mlir parts as scripts/mlir_parts.sh says, or an earlier call's
# /root/parts/mlir on the same warm machine):
#   bash scripts/gpu_issue43.sh OUT [SEED]
# Writes under OUT: summary.txt, gpu.txt, compare.txt, compare.json, timing.txt and runs.tar.gz
# (each run's run.json, cells.jsonl, matrix.json and findings.json). With PLUGIN=1, then the
# pytest plugin (`cleanlib` against reference, cupy, torch and numba, both protocols) twice, a
# new start cache (a fresh machine's case) with `--cai-report`, then reading that cache:
# OUT/plugin.txt (wall times, summary lines) and OUT/plugin-timing.txt (the first run's
# `timing_summary.py`). VERIFY=1: `findings --verify` of the run as now (its verify.json in
# runs.tar.gz). BEFORE=0: the run as now alone (no compare).
set -uo pipefail
out=${1:?usage: gpu_issue43.sh OUT [SEED]}
seed=${2:-2802562769}
mkdir -p "$out"
out=$(cd "$out" && pwd)
source scripts/gpu_env.sh
work=$(mktemp -d /tmp/i43.XXXX)
summary="$out/summary.txt"
: > "$summary"
export CAICONFORM_START_CACHE=$work/start-cache
python3 -c "import importlib.metadata as m; print('numba-cuda-mlir', m.version('numba-cuda-mlir'))" \
  2>&1 | tail -1 | tee -a "$summary"
# as now first, on the fresh machine with an empty start cache: a fresh machine's run
fresh_builds
timed after 240 caiconform run --seed "$seed" --out "$work/after"
runs="after"
if [ "${BEFORE:-1}" != 0 ]; then  # BEFORE=0: the code as now alone
  runs="before after"
  fresh_builds
  timed before 240 caiconform run --seed "$seed" --saturate 0 --saturate-found 0 --fresh-start --out "$work/before"
  caiconform compare "$work/before" "$work/after" > "$out/compare.txt" 2>&1
  echo "compare: exit $?" | tee -a "$summary"
  caiconform compare --json "$work/before" "$work/after" > "$out/compare.json" 2>/dev/null
fi
# shellcheck disable=SC2046
python3 scripts/timing_summary.py $(for r in $runs; do echo "$r=$work/$r"; done) > "$out/timing.txt" 2>&1
for run in $runs; do
  caiconform findings "$work/$run" --list --out "$work/$run/findings" > /dev/null 2>&1
  python3 - "$work/$run" <<'PY' | tee -a "$summary"
import json, sys
from pathlib import Path
run = Path(sys.argv[1])
meta = json.loads((run / "run.json").read_text())
cells = [json.loads(line) for line in (run / "cells.jsonl").read_text().splitlines()]
cut = [c["saturated"] for c in cells if c.get("saturated")]
print(run.name, "wall", meta.get("parent", {}).get("wall_s"), "startup", meta.get("startup"),
      "saturated cells", len(cut), "unrun", sum(c["unrun"] for c in cut))
PY
done
# VERIFY=1: each finding group of the run as now reproduced by a script without caiconform
[ "${VERIFY:-0}" = 1 ] && timed verify 150 caiconform findings "$work/after" --verify
if [ "${PLUGIN:-0}" = 1 ]; then
  RUNS=2 REPORT="$work/plugin-report" bash scripts/gpu_plugin_time.sh "$work/plugin"
  cp "$work/plugin/plugin.txt" "$work/plugin/plugin-timing.txt" "$out/" 2>/dev/null
fi
tar -czf "$out/runs.tar.gz" -C "$work" \
  $(cd "$work" && ls -d {before,after}/{run.json,cells.jsonl,matrix.json,findings.json} \
    after/results.jsonl after/verify.json after/workers/zygote.log plugin-report/runs/*/exchange/{run.json,cells.jsonl,results.jsonl} 2>/dev/null)
cat "$summary"
