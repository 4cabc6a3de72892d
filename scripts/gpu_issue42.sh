#!/usr/bin/env bash
# Issue 42's GPU call: the default matrix of the code before the issue's refactor and of the
# code now, on one seed and a fresh machine, `caiconform compare` of the two (the same groups,
# plus the C exchange API's), the dlpack_capi family's findings, and the exchange benchmark.
# The code before travels as a tarball: `git archive e9a7dc8 | gzip > .old/before.tar.gz`
# (`.old` ignored through .git/info/exclude, named in the call's carry with .whl):
#   bash scripts/gpu_issue42.sh OUT [SEED]
# Writes under OUT: summary.txt, gpu.txt, compare.txt, compare.json, capi.txt, bench.json and
# runs.tar.gz (each run's run.json, cells.jsonl, matrix.json and findings.json).
set -uo pipefail
out=${1:?usage: gpu_issue42.sh OUT [SEED]}
seed=${2:-2802562769}
mkdir -p "$out"
out=$(cd "$out" && pwd)
source scripts/gpu_env.sh
work=$(mktemp -d /tmp/i42.XXXX)
summary="$out/summary.txt"
: > "$summary"
export CAICONFORM_START_CACHE=off
mkdir -p "$work/code-before"
tar -xzf .old/before.tar.gz -C "$work/code-before" || { echo "no .old/before.tar.gz"; exit 1; }
fresh_builds
# from another directory: `python -m` puts the working directory first on sys.path, and the
# checkout's caiconform would then shadow the code before
(cd "$work" && timed before 300 env PYTHONPATH="$work/code-before:${PYTHONPATH:-}" \
  python3 -m caiconform.cli run --seed "$seed" --out "$work/before")
fresh_builds
timed after 300 caiconform run --seed "$seed" --out "$work/after"
caiconform compare "$work/before" "$work/after" > "$out/compare.txt" 2>&1
echo "compare: exit $?" | tee -a "$summary"
caiconform compare --json "$work/before" "$work/after" > "$out/compare.json" 2>/dev/null
caiconform findings "$work/after" --list --out "$work/after/findings" > /dev/null 2>&1
grep -n "dlpack_capi" "$work/after/findings.json" | head -40 > "$out/capi.txt"
python3 benchmarks/bench_dlpack_capi.py --json > "$out/bench.json" 2>&1
python3 benchmarks/bench_dlpack_capi.py | tee -a "$summary"
tar -czf "$out/runs.tar.gz" -C "$work" \
  $(cd "$work" && ls -d {before,after}/{run.json,cells.jsonl,matrix.json,findings.json} 2>/dev/null)
cat "$summary"
