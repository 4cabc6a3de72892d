# Sourced by the GPU-machine scripts (gpu_stability.sh, gpu_two_speedup.sh, gpu_ab.sh,
# gpu_marked_tests.sh, gpu_findings.sh): the carried wheels (.whl/*.whl: rmm, cuda-cccl, PyCUDA and their
# pure-Python needs) installed under /tmp/site and put on PYTHONPATH, caiconform installed
# editable, the machine written to "$out/gpu.txt" (GPUs, driver, memory; cores). Needs $out.
export PYTHONUNBUFFERED=1
site=/tmp/site
mkdir -p "$site"
# .whl/adopters*/: the adopters' wheels apart from the release wheels (.whl/releases,
# .whl/numba-releases), so that a call can carry them alone
# (`ls` of two globs fails when either matches nothing: the wheels are gathered by compgen)
carried=$(compgen -G '.whl/*.whl'; compgen -G '.whl/adopters*/*.whl')
if [ -n "$carried" ]; then
  # shellcheck disable=SC2086
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$site" $carried || echo "wheel install failed"
fi
export PYTHONPATH=$site
# numba-cuda-mlir travels in two parts (scripts/mlir_parts.sh): an earlier call to the same warm
# machine carries .mlir1 and copies it to /root/mlir_stash (outside the checkout: the copy of the
# working tree removes what the tree there does not hold), this one carries .mlir2; unpacked
# into /root/mlir_site, outside the checkout too (unpacked inside it, in .mlir_site, a later
# call found files of it gone: numba_cuda_mlir.numba_cuda.cudadrv.driver), which joins PYTHONPATH
mlir_site=/root/mlir_site
if [ -d .mlir1 ]; then mkdir -p /root/mlir_stash && cp .mlir1/mlirpart.* /root/mlir_stash/; fi
if [ ! -f $mlir_site/numba_cuda_mlir/__init__.py ] && ls /root/mlir_stash/mlirpart.* .mlir2/mlirpart.* >/dev/null 2>&1; then
  rm -rf $mlir_site && mkdir -p $mlir_site
  cat /root/mlir_stash/mlirpart.* .mlir2/mlirpart.* > /tmp/mlir.tar.xz
  if (cd /tmp && echo "$(cut -d' ' -f1 "$OLDPWD/.mlir2/SHA256")  mlir.tar.xz" | sha256sum -c --quiet); then
    xz -dc /tmp/mlir.tar.xz | tar -x -C $mlir_site && echo "numba-cuda-mlir unpacked"
  else
    echo "numba-cuda-mlir parts do not match their checksum"
  fi
  rm -f /tmp/mlir.tar.xz
fi
# other carries in parts (scripts/carry_parts.sh): unpacked into /root/parts/NAME
source scripts/gpu_parts.sh
[ -f $mlir_site/numba_cuda_mlir/__init__.py ] && export PYTHONPATH=$site:$mlir_site
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
  || { echo "caiconform install failed"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt"
nproc >> "$out/gpu.txt"

# a matrix as on a fresh machine: no compiled code kept on disk by an earlier run or the tests
# (cuda.compute's builds, adapters/_cccl_builds.py, and the reference kernels' cubin,
# cuda/kernels.py, stay in the temp directory between runs)
fresh_builds() {
  rm -rf "${TMPDIR:-/tmp}"/caiconform-cccl-* "${TMPDIR:-/tmp}"/caiconform-kernels-*
}

# timed NAME CAP_S COMMAND...: run it under `timeout` with its output in "$work/NAME.log", its
# exit and wall time (and the log's first and last lines) appended to "$summary"
timed() {
  local name=$1 cap=$2
  shift 2
  local s rc
  s=$(date +%s.%N)
  timeout -s INT -k 15 "$cap" "$@" > "$work/$name.log" 2>&1
  rc=$?
  echo "$name: exit $rc after $(python3 -c "print(round($(date +%s.%N) - $s, 1))") s: $*" \
    | tee -a "$summary"
  head -3 "$work/$name.log" | cut -c1-400 | sed 's/^/  /' >> "$summary"
  tail -2 "$work/$name.log" | cut -c1-400 | sed 's/^/  /' >> "$summary"
}
