#!/usr/bin/env bash
# Issue 27: does the default matrix scale with a host's GPUs? One command for a host with two
# GPUs (nvidia-h100-x2: 2 x H100, 32 cores), run from the repository root:
#   bash scripts/gpu_two_speedup.sh [OUT]          (OUT defaults to $OUT)
# 1. `caiconform run --gpus 1` with the default workers (16 per GPU: pool.WORKERS_PER_GPU),
# 2. `caiconform run --gpus 2` with the default workers, both seed 11, 100 examples per cell,
#    each from no compiled code on disk (fresh build caches) and under `timeout`,
# 3. `caiconform compare` of the two runs' finding groups (`--common-cells`),
# 4. while the time allows (the whole script stays under 9 minutes): the one-GPU run again
#    with `--workers 8` and `--workers 24` (16 is run 1).
# A failed step never stops the later ones. Writes 7 files under OUT: summary.txt (the table,
# printed at the end too), steps.log (every step's output), compare.txt, gpu-util.csv.gz, and
# one.tar.gz, two.tar.gz, sweep.tar.gz (per run: run.json, cells.jsonl, env.json,
# adapters.json, results.jsonl.gz).
set -u
out=${1:-${OUT:?usage: gpu_two_speedup.sh OUT (or set OUT)}}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export PYTHONUNBUFFERED=1
seed=11
examples=${CAI_EXAMPLES:-100}  # (a smaller number only to try the script)
began=$(date +%s)
# the script's own limit: the last run is cut so that the whole ends before 9 minutes
budget_s=520
work=$(mktemp -d /tmp/two-speedup.XXXX)
log="$out/steps.log"
: > "$log"

# carried wheels (.whl/*.whl), as the other GPU scripts take them; the working tree first
site=/tmp/site
if ls .whl/*.whl >/dev/null 2>&1; then
  mkdir -p "$site"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" .whl/*.whl >>"$log" 2>&1 || echo "wheel install failed" | tee -a "$log"
  export PYTHONPATH=".:$site:${PYTHONPATH:-}"
else
  export PYTHONPATH=".:${PYTHONPATH:-}"
fi

cai() { python3 -c 'import sys; from caiconform.cli import main; sys.exit(main())' "$@"; }
elapsed() { echo $(($(date +%s) - began)); }
step() { echo "== [$(elapsed) s] $*" | tee -a "$log"; }
fresh_builds() {  # cuda.compute's builds and the reference kernels' cubins, kept in TMPDIR
  rm -rf "${TMPDIR:-/tmp}"/caiconform-cccl-* "${TMPDIR:-/tmp}"/caiconform-kernels-*
}

step "machine"
{
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
  echo "cores: $(nproc)"
  git log --oneline -1 2>/dev/null
} 2>&1 | tee -a "$log"
nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv,noheader \
  -lms 1000 > "$work/gpu-util.csv" 2>/dev/null &
util=$!

# run NAME CAP_S ARGS...: one matrix run into $work/NAME, its wall time in $work/NAME.wall
run() {
  local name=$1 cap=$2
  shift 2
  fresh_builds
  step "run $name (cap ${cap} s): caiconform run --seed $seed --max-examples $examples $*"
  local s e rc
  s=$(date +%s.%N)
  timeout -s INT -k 15 "$cap" python3 -c \
    'import sys; from caiconform.cli import main; sys.exit(main())' \
    run --seed "$seed" --max-examples "$examples" --out "$work/$name" "$@" >>"$log" 2>&1
  rc=$?
  e=$(date +%s.%N)
  python3 -c "print(round($e - $s, 1))" > "$work/$name.wall"
  echo "$rc" > "$work/$name.rc"
  step "run $name: exit $rc after $(cat "$work/$name.wall") s"
}

keep() {  # keep NAME...: their run files in one tarball
  local tarball=$1
  shift
  local name
  for name in "$@"; do
    [ -f "$work/$name/results.jsonl" ] && gzip -kf "$work/$name/results.jsonl"
  done
  (cd "$work" && tar -czf "$out/$tarball" --ignore-failed-read \
    $(for name in "$@"; do
        for f in run.json cells.jsonl env.json adapters.json results.jsonl.gz; do
          [ -f "$name/$f" ] && echo "$name/$f"
        done
        echo "$name.wall"
      done) 2>>"$log") || echo "tar $tarball failed" | tee -a "$log"
}

run one 190 --gpus 1
keep one.tar.gz one
run two 170 --gpus 2
keep two.tar.gz two

step "compare one two"
cai compare "$work/one" "$work/two" --common-cells > "$out/compare.txt" 2>&1
echo "compare exit $?" >> "$out/compare.txt"
tail -6 "$out/compare.txt" | tee -a "$log"

sweep=()
for workers in 8 24; do
  left=$((budget_s - $(elapsed) - 15))
  cap=$((left < 130 ? left : 130))
  if [ "$cap" -lt 90 ]; then
    step "sweep --workers $workers not run: ${left} s left of the script's ${budget_s} s"
    continue
  fi
  run "w$workers" "$cap" --gpus 1 --workers "$workers"
  sweep+=("w$workers")
done
[ ${#sweep[@]} -gt 0 ] && keep sweep.tar.gz "${sweep[@]}"

kill "$util" 2>/dev/null
gzip -c "$work/gpu-util.csv" > "$out/gpu-util.csv.gz"

step "summary"
python3 - "$work" one two w8 w24 > "$out/summary.txt" 2>>"$log" <<'EOF'
import collections
import json
import sys
from pathlib import Path

work = Path(sys.argv[1])
rows = []
longest = {}
for name in sys.argv[2:]:
    run = work / name
    if not (work / f"{name}.wall").exists():
        continue
    wall = (work / f"{name}.wall").read_text().strip()
    rc = (work / f"{name}.rc").read_text().strip()
    meta = {}
    if (run / "run.json").exists():
        meta = json.loads((run / "run.json").read_text())
    workers = meta.get("workers") or {}
    cells = []
    if (run / "cells.jsonl").exists():
        for line in (run / "cells.jsonl").read_text().splitlines():
            try:
                cells.append(json.loads(line))
            except ValueError:
                pass
    ran = [c for c in cells if "wall_s" in c]
    counts = collections.Counter()
    for c in ran:
        counts.update(c.get("counts") or {})
    lost = sum(counts[k] for k in ("crash", "hang", "poisoned"))
    devices = [c for c in ran if str(c["cell"]).startswith("devices/")]
    parent = meta.get("parent") or {}
    cpu = parent.get("cpu_user_s", 0) + parent.get("cpu_system_s", 0)
    per_gpu = workers.get("workers_per_gpu") or {}
    rows.append(
        (
            name,
            wall,
            rc,
            str(workers.get("count", "?")),
            "/".join(str(v) for v in per_gpu.values()) or "-",
            str(len(ran)),
            str(sum(counts.values())),
            str(lost),
            f"{max((c['wall_s'] for c in devices), default=0):.1f}",
            f"{cpu:.0f}/{parent.get('wall_s', 0):.0f}",
        )
    )
    longest[name] = sorted(ran, key=lambda c: -c["wall_s"])[:6]
head = ("run", "wall_s", "rc", "workers", "per_gpu", "cells", "examples", "lost",
        "devices_max_s", "parent_cpu/wall")
widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
for r in [head, *rows]:
    print("  ".join(v.rjust(w) for v, w in zip(r, widths)))
walls = {r[0]: float(r[1]) for r in rows}
if "one" in walls and "two" in walls and walls["one"]:
    print(f"two/one wall: {walls['two'] / walls['one']:.2f} (goal <= 0.60)")
print()
for name, cells in longest.items():
    print(f"{name}: longest cells " + ", ".join(f"{c['cell']} {c['wall_s']:.1f}" for c in cells))
EOF
if [ -f scripts/timing_summary.py ]; then
  args=()
  for name in one two w8 w24; do [ -d "$work/$name" ] && args+=("$name=$work/$name"); done
  python3 scripts/timing_summary.py "${args[@]}" >> "$log" 2>&1
fi
tail -3 "$out/compare.txt" >> "$out/summary.txt"
echo "script: $(elapsed) s" >> "$out/summary.txt"
cat "$out/summary.txt"
