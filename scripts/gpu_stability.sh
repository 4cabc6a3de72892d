#!/usr/bin/env bash
# Issue 9's stability figure on the GPU: the GPU tests, then the default matrix with one or more
# seeds side by side on the same machine (the cores shared between them), each rendered with its
# findings catalogue and coverage tables, then `caiconform compare` when two seeds ran.
#   bash scripts/gpu_stability.sh OUT [MAX_EXAMPLES] [RUN_CAP_S] [SEED ...]   (carry .whl)
# Defaults: 20 examples, 300 s, seeds 11 and 22. Two full runs (100 examples) do not fit one
# call side by side (each took 330-365 s alone on an H100): run one seed per call, e.g.
#   TESTS_CAP_S=0 bash scripts/gpu_stability.sh $OUT 100 560 22
# and compare the two runs here: caiconform compare seed11 seed22 [--common-cells].
# TESTS_CAP_S=0 skips the GPU tests.
# .whl holds the adopters the machine lacks (rmm, cuda-cccl, a PyCUDA wheel from
# scripts/build_pycuda_wheel.sh, their pure-Python needs); they are installed under /tmp/site
# first, so the matrix has every library this machine can run in one call (Warp needs two
# calls: scripts/gpu_adopters.sh).
# Brings back (8 files at most): gpu.txt, tests.log, run.log, compare.json, compare.txt,
# gpu-util.csv.gz (nvidia-smi every 0.5 s during the matrices), cpu-util.txt (vmstat every 1 s;
# the busiest processes 40 s in),
# profile<N>.txt.gz (with .whl/py-spy.xz: the parent's GIL-holding stacks, py-spy's raw format),
# seed<N>.tar.gz per seed (matrix.json/md, index.html, findings.json, env.json, run.json,
# cells.jsonl, results.jsonl.gz and the reproducers the catalogue cites).
set -uo pipefail
out=${1:?usage: gpu_stability.sh OUT [MAX_EXAMPLES] [RUN_CAP_S] [SEED ...]}
examples=${2:-20}
cap=${3:-300}
shift 3 2>/dev/null || shift $#
seeds=${*:-11 22}
set -- $seeds
workers=$(( $(nproc) / $# ))
[ "$workers" -ge 1 ] || workers=1
workers=${WORKERS:-$workers}  # WORKERS=N: another count of workers per run
extra=${NOZYGOTE:+--no-zygote}  # NOZYGOTE=1: each fork server imports the libraries itself
source scripts/gpu_env.sh

# the GPU tests (TESTS_CAP_S=0: none), before the matrices or, with TESTS_AFTER=1, after them
# (the matrices then run on a fresh machine)
gpu_tests() { bash scripts/gpu_marked_tests.sh "$out" "${TESTS_CAP_S:-90}"; }
[ "${TESTS_CAP_S:-90}" = 0 ] || [ "${TESTS_AFTER:-0}" = 1 ] || gpu_tests

# CCCL_WARM=1 keeps the compiled builds the tests (or an earlier run) left on disk
[ "${CCCL_WARM:-0}" = 1 ] || fresh_builds
ls "${TMPDIR:-/tmp}"/caiconform-{cccl,kernels}-*/*.bin 2>/dev/null | wc -l \
  | sed 's/^/compiled builds on disk before the matrix: /'
t1=$(date +%s)
# the GPU's busy share while the matrices run (every 0.5 s): is the run bound by the GPU?
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -lms 500 \
  > /tmp/gpu-util.csv 2>/dev/null &
util=$!
# the cores' busy share (vmstat every second) and, 40 s in, the busiest processes with their
# thread counts: is the run bound by the cores, and do the libraries' thread pools crowd them?
vmstat -n 1 > /tmp/vmstat.txt 2>/dev/null &
cpu=$!
runs=()
{ sleep 40; ps -eo pid,nlwp,pcpu,rss,args --sort=-pcpu | cut -c1-160 | head -40 > /tmp/ps40.txt; } &
for seed in $seeds; do
  rm -rf "/tmp/m$seed"  # a machine kept warm from an earlier call still has the last run there
  (
    s=$(date +%s.%N)
    timeout -s INT -k 15 "$cap" caiconform run --seed "$seed" --max-examples "$examples" \
      --workers "$workers" $extra --out "/tmp/m$seed" > "/tmp/run$seed.log" 2>&1
    rc=$?
    echo "matrix exit $rc after $(python3 -c "print(round($(date +%s.%N)-$s,1))") s:" \
      "caiconform run --seed $seed --max-examples $examples --workers $workers $extra" \
      "(seeds side by side: $seeds)" >> "/tmp/run$seed.log"
  ) &
  runs+=($!)
done
# with .whl/py-spy.xz (a py-spy binary, xz-compressed, carried like the wheels): sample the
# parent of each run, only threads holding the GIL (--gil), without pausing it (--nonblocking),
# to see where the parent's time goes (issue 11: workers idle while the parent draws, judges and journals)
[ -f .whl/py-spy.xz ] && python3 -c "import lzma, shutil, sys
shutil.copyfileobj(lzma.open('.whl/py-spy.xz'), sys.stdout.buffer)" > /tmp/py-spy && chmod +x /tmp/py-spy
if [ -x /tmp/py-spy ]; then
  sleep 3
  for seed in $seeds; do
    pid=$(pgrep -o -f "^[^ ]*python[^ ]* [^ ]*caiconform run --seed $seed ")
    [ -n "$pid" ] && /tmp/py-spy record --pid "$pid" --gil --nonblocking --rate 50 --format raw \
      -o "/tmp/profile$seed.txt" > "/tmp/pyspy$seed.log" 2>&1 &
  done
fi
wait "${runs[@]}"  # the matrices only: the samplers above run until killed
kill "$util" "$cpu" 2>/dev/null
gzip -c /tmp/gpu-util.csv > "$out/gpu-util.csv.gz"
{ cat /tmp/vmstat.txt; echo "== processes 40 s in"; cat /tmp/ps40.txt; } > "$out/cpu-util.txt" 2>/dev/null
echo "matrices: $(( $(date +%s) - t1 )) s"
# the runs' own logs first, and their summary (exit, wall, cells, run.json): a call that runs out
# of device time while rendering the reports still brings back how the runs ended
for seed in $seeds; do
  grep -E "^matrix exit" "/tmp/run$seed.log"
  { echo "== seed $seed"; cat "/tmp/run$seed.log"; } >> "$out/run.log"
  echo "seed $seed: $(grep -cE '^\[[0-9]+/[0-9]+\]' "/tmp/run$seed.log") cells ended" >> "$out/run.log"
  python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print('seed $seed startup:',
    d.get('startup'), 'spin:', (d.get('spin_calibration') or {}).get('spin_us'))" \
    "/tmp/m$seed/run.json" >> "$out/run.log" 2>/dev/null
done
for seed in $seeds; do
  run=/tmp/m$seed
  caiconform report "$run" 2>&1 | tail -1 | tee -a "$out/run.log"
  gzip -c "$run/results.jsonl" > "$run/results.jsonl.gz"
  python3 scripts/cited_repros.py "$run" > "/tmp/min$seed.txt"
  tar -C "$run" -czf "$out/seed$seed.tar.gz" matrix.json matrix.md index.html findings.json adapters.json \
    env.json run.json cells.jsonl results.jsonl.gz -T "/tmp/min$seed.txt" 2>/dev/null
  # how long each worker's fork server took to import the libraries (its start)
  grep -h "fork server: preloaded" "$run"/workers/*.log 2>/dev/null | sort | uniq -c \
    | sed "s/^/seed $seed: /" >> "$out/run.log"
  if [ -s "/tmp/profile$seed.txt" ]; then gzip -c "/tmp/profile$seed.txt" > "$out/profile$seed.txt.gz"
  else tail -3 "/tmp/pyspy$seed.log" 2>/dev/null; fi
done
if [ $# -eq 2 ]; then
  caiconform compare "/tmp/m$1" "/tmp/m$2" --json > "$out/compare.json"
  caiconform compare "/tmp/m$1" "/tmp/m$2" --common-cells > "$out/compare.txt"
  echo "compare exit $?"; tail -4 "$out/compare.txt"
fi
[ "${TESTS_CAP_S:-90}" = 0 ] || [ "${TESTS_AFTER:-0}" != 1 ] || gpu_tests
