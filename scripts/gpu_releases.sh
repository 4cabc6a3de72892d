#!/usr/bin/env bash
# Conformance across releases on a GPU machine without nox or a network (what `nox -s releases`
# does elsewhere): each release of LIBRARY in a venv of its own, installed from the carried
# wheels with --no-deps, the other libraries fixed (the machine's own, and .whl/ as
# scripts/gpu_env.sh installs them), one `caiconform run` per release on one seed, then
# `caiconform releases` charts every run of LIBRARY done so far:
#   bash scripts/gpu_releases.sh OUT LIBRARY VERSION... [-- CAICONFORM RUN OPTIONS]
# e.g. bash scripts/gpu_releases.sh /tmp/out numba-cuda 0.26.0 0.27.0 -- \
#        --libraries reference,numba,numba-from-cai,numba-kernel,cupy,torch
# A VERSION whose release came unpacked in parts (/root/parts/LIBRARY-VERSION, see below) runs
# from there. VERSION `installed` runs the version the machine already has (numba-cuda-mlir from the
# carried parts, scripts/mlir_parts.sh), without a venv. The release wheels travel in
# ${RELEASE_WHEELS:-.whl/releases} (named in carry with .whl; `pip download --no-deps` as the
# device notes say, one wheel per release). Runs go to ${RELEASES_WORK:-/root/releases}, outside
# the checkout, so a later call to the same warm machine adds releases (one already run there is
# not run again) and charts them all. SEED (default 1) is every release's seed, CAP_S (default
# 300) each run's time limit. WITH="REQ ..." installs those requirements (wheels there too) into
# every release's venv, the same for each, so they stay fixed: numba-cuda before 0.30 asks for
# cuda-core<1.0, so WITH="cuda-core==0.7.0" runs every numba-cuda release beside that one (its
# wheel trimmed by scripts/trim_cuda_core_wheel.sh to fit one call with the tree). What a
# release asks for that its venv does not hold is written to the summary ("needs ...").
# FIXED_SITE=DIR puts a folder of unpacked libraries after each release and before the
# machine's own, the same for every release: numba-cuda before 0.30.4 imports NPDatetime from
# numba.core.types, which numba 0.66 moved, so those releases run beside numba 0.65 (with its
# llvmlite 0.47 and NumPy 2.4, which it needs) carried in parts (scripts/carry_parts.sh,
# unpacked by scripts/gpu_parts.sh into /root/parts/NAME).
# The wheels, on a machine with pip and a network (the device notes' platform flags):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --implementation cp --platform manylinux_2_28_x86_64 -d .whl/releases numba-cuda==0.26.0 ...
# Writes under OUT: summary.txt, gpu.txt, releases.json, releases.md, releases.html and
# runs.tar.gz (each release's env.json, run.json, adapters.json, cells.jsonl, findings.json).
set -uo pipefail
usage="usage: gpu_releases.sh OUT LIBRARY VERSION... [-- CAICONFORM RUN OPTIONS]"
out=${1:?$usage}
library=${2:?$usage}
shift 2
versions=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do versions+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#versions[@]} -gt 0 ] || { echo "$usage"; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
source scripts/gpu_env.sh
wheels=${RELEASE_WHEELS:-.whl/releases}
work=${RELEASES_WORK:-/root/releases}
seed=${SEED:-1}
cap=${CAP_S:-300}
read -r -a with <<< "${WITH:-}"
links=()
[ -d .whl ] && links=(--find-links .whl)
summary="$out/summary.txt"
: > "$summary"
mkdir -p "$work"
export CAICONFORM_START_CACHE=off
# the interpreter the libraries are installed in: each release's venv sees its site-packages
# (processed with their .pth files, as the interpreter's own) after its own
outer=$(python3 -c 'import site; print("\n".join(site.getsitepackages()))')
version_of() {  # the version of LIBRARY the command's environment imports
  "$1" -c "import importlib.metadata as m; print(m.version('$library'))" 2>/dev/null
}

for version in "${versions[@]}"; do
  python=python3
  path=${PYTHONPATH:-}
  if [ "$version" = installed ]; then
    path=${FIXED_SITE:+$FIXED_SITE:}${PYTHONPATH:-}
    version=$(PYTHONPATH=$path version_of python3) || { echo "$library: not installed here" | tee -a "$summary"; continue; }
  else
    venv=/tmp/releases-venv/$library-$version
    rm -rf "$venv"
    python3 -m venv --without-pip "$venv" || { echo "$library $version: no venv" | tee -a "$summary"; continue; }
    site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    : > "$site/_outer.pth"
    while read -r dir; do echo "import site; site.addsitedir('$dir')" >> "$site/_outer.pth"; done <<< "$outer"
    # the release first on the path: ahead of the carried wheels under /tmp/site too; a
    # release too large for one call comes unpacked in parts (scripts/carry_parts.sh NAME as
    # LIBRARY-VERSION: /root/parts/LIBRARY-VERSION) instead of as a wheel
    unpacked=/root/parts/$library-$version
    if [ -d "$unpacked" ]; then
      [ ${#with[@]} -eq 0 ] || python3 -m pip install -q --no-index --no-deps --no-compile \
        --no-cache-dir --find-links "$wheels" "${links[@]}" --target "$site" "${with[@]}"
    else
      unpacked=
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --find-links "$wheels" "${links[@]}" --target "$site" --upgrade \
        "$library==$version" "${with[@]}" \
        || { echo "$library $version: no wheel in $wheels" | tee -a "$summary"; continue; }
    fi
    python=$venv/bin/python
    path=${unpacked:+$unpacked:}$site:${FIXED_SITE:+$FIXED_SITE:}$PWD:${PYTHONPATH:-}
  fi
  found=$(PYTHONPATH=$path version_of "$python")
  if [ "$found" != "$version" ]; then
    echo "$library $version asked, ${found:-none} imported: left out" | tee -a "$summary"
    continue
  fi
  PYTHONPATH=$path "$python" scripts/releases_plan.py unmet "$library" \
    | sed "s/^/  $library $version /" | tee -a "$summary"
  run=$work/$library-$version
  if [ -f "$run/findings.json" ]; then
    echo "$library $version: already run in $run" | tee -a "$summary"
    continue
  fi
  rm -rf "$run"
  fresh_builds
  timed "$library-$version" "$cap" env PYTHONPATH="$path" "$python" -m caiconform.cli run \
    --seed "$seed" --out "$run" "$@"
  PYTHONPATH=$path "$python" -m caiconform.cli report "$run" > /dev/null 2>&1
  echo "  report: exit $?" >> "$summary"
done

runs=()
for dir in "$work/$library"-*/; do [ -f "$dir/env.json" ] && runs+=("${dir%/}"); done
if [ ${#runs[@]} -ge 2 ]; then
  caiconform releases "${runs[@]}" --library "$library" --out "$out" | tee -a "$summary"
  tar -czf "$out/runs.tar.gz" -C "$work" $(cd "$work" && ls -d \
    "$library"-*/{env.json,run.json,adapters.json,cells.jsonl,findings.json} 2>/dev/null)
else
  echo "${#runs[@]} run(s) of $library in $work: the chart needs two" | tee -a "$summary"
fi
cat "$summary"
