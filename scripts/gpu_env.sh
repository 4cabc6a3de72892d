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
  # installed as pip installs them, with their bytecode compiled (the first processes to
  # import a package without it each compile it, which a fresh run's start would then measure)
  # shellcheck disable=SC2086
  python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade \
    --target "$site" $carried || echo "wheel install failed"
fi
export PYTHONPATH=$site
# carries in parts (scripts/carry_parts.sh), unpacked into /root/parts/NAME; numba-cuda-mlir's
# (scripts/mlir_parts.sh) joins PYTHONPATH
source scripts/gpu_parts.sh
[ -f /root/parts/mlir/numba_cuda_mlir/__init__.py ] && export PYTHONPATH=$site:/root/parts/mlir
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
  || { echo "caiconform install failed"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt"
nproc >> "$out/gpu.txt"

# a matrix as on a fresh machine: no compiled code kept on disk by an earlier run or the tests
# (cuda.compute's builds, adapters/_cccl_builds.py, the reference kernels' cubin,
# cuda/kernels.py, JAX's compilation cache, adapters/jax_adapter.py, and numba's cache of the
# copy kernels, adapters/numba_adapter.py, stay in the temp directory between runs)
fresh_builds() {
  rm -rf "${TMPDIR:-/tmp}"/caiconform-cccl-* "${TMPDIR:-/tmp}"/caiconform-kernels-* \
    "${TMPDIR:-/tmp}"/caiconform-jax-* "${TMPDIR:-/tmp}"/caiconform-numba-*
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
