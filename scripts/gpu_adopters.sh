#!/usr/bin/env bash
# GPU step of issue 10: bring the adopters the machine lacks (carried as wheels / sources) and
# make them importable. Usage on the device, in two calls of one warm machine (Warp's wheel is
# larger than one transfer, so it travels in two parts):
#   bash scripts/gpu_adopters.sh stage1 OUT   (carry .whl .src .warp/part_aa): rmm, pycuda
#       built from its sdist with the machine's nvcc (the wheel comes back under OUT), Warp's
#       first part parked in /tmp
#   bash scripts/gpu_adopters.sh stage2 OUT   (carry .whl .warp/part_ab): Warp assembled and
#       installed; prints what imports
# Every later command of the same machine starts with: export PYTHONPATH=/tmp/site
set -uo pipefail
stage=${1:?usage: gpu_adopters.sh stage1|stage2 OUT}
out=${2:?usage: gpu_adopters.sh stage1|stage2 OUT}
export PYTHONUNBUFFERED=1
site=/tmp/site
mkdir -p "$site"
install() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$@"; }
if [ "$stage" = stage1 ]; then
  install .whl/*.whl || echo "wheel install failed"
  start=$(date +%s)
  ls .whl/pycuda-*.whl >/dev/null 2>&1 && echo "pycuda: wheel carried (built on an earlier machine)" || \
  python3 -m pip wheel -q --no-deps --no-build-isolation --no-index .src/pycuda-*.tar.gz -w /tmp/pycuda-wheel \
    > "$out/pycuda-build.log" 2>&1 && install /tmp/pycuda-wheel/*.whl && cp /tmp/pycuda-wheel/*.whl "$out/"
  echo "pycuda build: $(( $(date +%s) - start )) s, exit $?"; tail -3 "$out/pycuda-build.log"
  cp .warp/part_aa /tmp/warp_part_aa 2>/dev/null && echo "warp part 1 parked"
else
  install .whl/*.whl || echo "wheel install failed"
  if [ -f /tmp/warp_part_aa ] && [ -f .warp/part_ab ]; then
    cat /tmp/warp_part_aa .warp/part_ab > /tmp/warp_lang-1.3.3-py3-none-manylinux2014_x86_64.whl
    install /tmp/warp_lang-1.3.3-py3-none-manylinux2014_x86_64.whl && echo "warp installed"
  else
    echo "warp: part 1 missing (a fresh machine): not installed"
  fi
fi
export PYTHONPATH=$site
python3 - <<'PY'
import importlib
for name in ("rmm", "pycuda", "pycuda.autoprimaryctx", "warp", "mpi4py", "pyarrow", "cuda.cccl"):
    try:
        m = importlib.import_module(name)
        print(name, "imports", getattr(m, "__version__", ""))
    except Exception as exc:
        print(name, "not importable:", type(exc).__name__, str(exc)[:200])
try:
    import pyarrow.cuda  # noqa: F401
    print("pyarrow.cuda imports")
except Exception as exc:
    print("pyarrow.cuda not importable:", type(exc).__name__, str(exc)[:200])
PY
