#!/usr/bin/env bash
# The pytest plugin's wall time, this checkout against an earlier tree, on one machine (issue 43):
# the downstream test's `cleanlib` (a pass-through to CuPy) against reference, cupy, torch and
# numba, both protocols: this checkout with a new start cache (a fresh machine's run: the start
# measured), the earlier tree likewise, then this checkout again reading its cache
# (`runner.startcache`). The earlier tree is BEFORE (a directory holding its
# `caiconform/` and `tests/downstream/`, e.g. `git archive COMMIT caiconform tests/downstream`
# unpacked under the excluded `.old/`); the plugin is loaded with `-p` from the tree on
# PYTHONPATH, pytest's other plugins not autoloaded, so neither tree's installed metadata
# decides which code runs.
#   bash scripts/gpu_plugin_ab.sh OUT BEFORE
# Writes OUT/plugin-ab.txt (each run's tree, wall time, exit status and the plugin's summary
# line) and OUT/<n>-<tree>.log.
set -uo pipefail
out=${1:?usage: gpu_plugin_ab.sh OUT BEFORE}
before=${2:?usage: gpu_plugin_ab.sh OUT BEFORE}
mkdir -p "$out"
out=$(cd "$out" && pwd)
before=$(cd "$before" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONUNBUFFERED=1 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
: > "$out/plugin-ab.txt"
declare -A cache
n=0
for tree in after before after; do
  n=$((n + 1))
  src=$root
  [ "$tree" = before ] && src=$before
  [ -n "${cache[$tree]:-}" ] || cache[$tree]=$(mktemp -d /tmp/plugin-start.XXXX)
  work=$(mktemp -d /tmp/plugin.XXXX)
  s=$(date +%s.%N)
  (cd "$work" && CAICONFORM_START_CACHE=${cache[$tree]} PYTHONPATH=$src timeout -k 10 150 \
    python3 -m pytest -p caiconform.pytest_plugin -m cai -p no:cacheprovider -q \
    --cai-name cleanlib --cai-against reference,cupy,torch,numba \
    --cai-producer tests.downstream.cleanlib.testing:make_array \
    --cai-consumer tests.downstream.cleanlib.testing:to_host) > "$out/$n-$tree.log" 2>&1
  rc=$?
  wall=$(python3 -c "print(round($(date +%s.%N) - $s, 1))")
  line=$(grep -m1 -E "^(OK|FIX|INCOMPLETE|NOTHING)" "$out/$n-$tree.log")
  tail=$(tail -n 1 "$out/$n-$tree.log")
  echo "run $n ($tree): exit $rc, $wall s: $line | $tail" | tee -a "$out/plugin-ab.txt"
done
