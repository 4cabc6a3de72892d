#!/usr/bin/env bash
# GPU step of issue 10: bring the adopters the machine lacks (carried as wheels / sources) and
# make them importable. Usage on the device:
#   bash scripts/gpu_adopters.sh measure OUT   (carry .whl; one call): installs the carried
#       wheels (rmm, pycuda built earlier, cuda-cccl), and from .whl/extra/ nvJitLink and
#       cuda-pathfinder only where the machine lacks them (the H100 had both; the 41 MB nvJitLink
#       wheel is kept out of .whl, in /work/wheels_big/extra, so other calls stay small); probes every adopter (probe.json:
#       available, reason, version), runs the adopters' GPU tests (tests.log) and a seeded
#       matrix of reference, pycuda, cuda.cccl, dali, pyarrow, mpi4py (run.log, results.jsonl.gz,
#       report.tar.gz). Warp, too large for one transfer, is the two calls below.
#   bash scripts/gpu_adopters.sh stage1 OUT   (carry .whl .src .warp/part_aa): rmm, pycuda
#       built from its sdist with the machine's nvcc (the wheel comes back under OUT), Warp's
#       first part parked in /tmp
#   bash scripts/gpu_adopters.sh stage2 OUT   (carry .whl .warp/part_ab): Warp assembled and
#       installed; prints what imports
# Every later command of the same machine starts with: export PYTHONPATH=/tmp/site
set -uo pipefail
stage=${1:?usage: gpu_adopters.sh measure|stage1|stage2 OUT}
out=${2:?usage: gpu_adopters.sh measure|stage1|stage2 OUT}
export PYTHONUNBUFFERED=1
site=/tmp/site
mkdir -p "$site"
install() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$@"; }
if [ "$stage" = measure ]; then
  install .whl/*.whl || echo "wheel install failed"
  export PYTHONPATH=$site
  python3 -c "from cuda.pathfinder import load_nvidia_dynamic_lib as f; f('nvJitLink')" 2>/dev/null \
    && echo "nvJitLink: the machine's" \
    || { install .whl/extra/nvidia_nvjitlink-*.whl && echo "nvJitLink: carried wheel installed"; }
  python3 - <<'PY' || { install .whl/extra/cuda_pathfinder-*.whl && echo "cuda-pathfinder: carried"; }
from importlib.metadata import version
found = tuple(int(p) for p in version("cuda-pathfinder").split(".")[:3] if p.isdigit())
raise SystemExit(0 if found >= (1, 2, 3) else 1)  # what cuda-cccl 1.2.1 requires
PY
  python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
    || { echo "caiconform install failed"; exit 1; }
  python3 - > "$out/probe.json" <<'PY'
import json
from caiconform.adapters import registry
from caiconform.env import library_versions
names = ["numba-kernel", "warp", "pycuda", "rmm", "cuda.cccl", "dali", "mpi4py", "pyarrow"]
rows = {}
for name in names:
    adapter = registry.get(name)
    ok, why = adapter.available()
    rows[name] = {"available": ok, "reason": why, "version": adapter.version(),
                  "capabilities": sorted(adapter.capabilities)}
print(json.dumps({"adapters": rows, "env_libraries": library_versions()}, indent=1))
PY
  python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['adapters']; [print(k, v['available'], v['version'], v['reason'][:160]) for k, v in d.items()]" "$out/probe.json"
  timeout 100 python3 -m pytest tests/gpu/test_adapters_gpu.py tests/gpu/test_numba_kernel_gpu.py tests/gpu/test_adopters_gpu.py \
    -q -p no:cacheprovider -rs -n 8 -k "pycuda or cccl or rmm or numba_kernel" > "$out/tests.log" 2>&1
  grep -E "passed|failed" "$out/tests.log" | tail -1
  run=/tmp/adopters
  rm -rf "$run"
  timeout "${ADOPTERS_MATRIX_S:-200}" caiconform run --seed 22 --max-examples 10 --timeout 20 \
    --no-shrink --libraries reference,pycuda,cuda.cccl,dali,pyarrow,mpi4py --out "$run" \
    > "$out/run.log" 2>&1
  echo "matrix exit $?" | tee -a "$out/run.log"
  caiconform report "$run" 2>&1 | tail -1 | tee -a "$out/run.log"
  gzip -c "$run/results.jsonl" > "$out/results.jsonl.gz"
  tar -C "$run" -czf "$out/report.tar.gz" matrix.json matrix.md findings.json env.json adapters.json run.json \
    cells.jsonl 2>/dev/null
  grep -E "^\[|Skipped|unavailable" "$out/run.log" | tail -12
  exit 0
elif [ "$stage" = stage1 ]; then
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
