#!/usr/bin/env bash
# Variants of the default matrix one after another on one GPU machine (issue 11): the same seed,
# each variant NAME:ENV:FLAGS, a name, its environment (VAR=value words, may be empty) and its
# extra `caiconform run` flags, e.g. (carry .whl)
#   bash scripts/gpu_ab.sh OUT 11 "final::" "nocap::--drawn-crash-cap 0" "nozygote::--no-zygote"
# The first variant runs on the fresh machine (a later one finds the page cache and the
# drivers warm: order them so that the one to report comes first). Each starts without the
# compiled builds an earlier one left (fresh_builds). MAX_EXAMPLES (100) and CAP_S (250: each
# run's limit) may be set. Brings back ab.log (each run's exit, wall and start), gpu.txt and
# <name>.tar.gz per variant (run.json, cells.jsonl, findings.json, env.json, adapters.json,
# results.jsonl.gz, workers/zygote.log: `scripts/timing_summary.py` and `caiconform compare`
# read them; cpu.txt: the host's /proc/stat "cpu" line and its run queue each second of the
# run: how busy the host was).
# A variant's ENV may preload the ioctl clock (LD_PRELOAD=/tmp/libioctlclock.so, built from
# benchmarks/ioctl_clock and carried): its workers then journal their NVIDIA driver ioctls,
# which scripts/timing_summary.py breaks down by family and library.
set -uo pipefail
out=${1:?usage: gpu_ab.sh OUT SEED NAME:ENV:FLAGS ...}
seed=${2:?usage: gpu_ab.sh OUT SEED NAME:ENV:FLAGS ...}
shift 2
source scripts/gpu_env.sh
for variant in "$@"; do
  IFS=: read -r name env flags <<< "$variant"
  fresh_builds
  run=/tmp/ab-$name
  rm -rf "$run"
  (while sleep 1; do echo "$(date +%s.%N) $(head -1 /proc/stat) $(grep procs_running /proc/stat)"
   done) > "$run.cpu.txt" 2>/dev/null &
  sampler=$!
  s=$(date +%s.%N)
  # shellcheck disable=SC2086  # env and flags are word lists
  env $env timeout -s INT -k 15 "${CAP_S:-250}" caiconform run --seed "$seed" \
    --max-examples "${MAX_EXAMPLES:-100}" $flags --out "$run" > "/tmp/ab-$name.log" 2>&1
  rc=$?
  kill "$sampler" 2>/dev/null
  wall=$(python3 -c "print(round($(date +%s.%N)-$s,1))")
  echo "$name: exit $rc after $wall s: $env caiconform run --seed $seed" \
    "--max-examples ${MAX_EXAMPLES:-100} $flags" | tee -a "$out/ab.log"
  tail -3 "/tmp/ab-$name.log" >> "$out/ab.log"
  python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print('  startup:',
    d.get('startup'), 'spin:', (d.get('spin_calibration') or {}).get('spin_us'))" \
    "$run/run.json" >> "$out/ab.log" 2>/dev/null
done
for variant in "$@"; do
  name=${variant%%:*}
  run=/tmp/ab-$name
  caiconform report "$run" 2>&1 | tail -1 | sed "s/^/$name: /" >> "$out/ab.log"
  gzip -c "$run/results.jsonl" > "$run/results.jsonl.gz"
  cp "$run.cpu.txt" "$run/cpu.txt" 2>/dev/null
  # workers/zygote.log: the zygote's imports one by one, which timing_summary.py breaks down
  tar -C "$run" -czf "$out/$name.tar.gz" run.json cells.jsonl findings.json env.json \
    adapters.json results.jsonl.gz cpu.txt workers/zygote.log 2>/dev/null
done
cat "$out/ab.log"
