#!/usr/bin/env bash
# Build a PyCUDA wheel for the GPU machine (CPython 3.12) on a machine without a GPU, so no
# device time goes to compiling it. Needs CUDA's headers (nvcc's toolkit at /usr/local/cuda),
# gcc and a python3.12. curand.h is not in that toolkit: curand is configured out (caiconform's
# PyCUDA adapter does not use it). No libcuda exists here, so the link uses a stub libcuda.so.1
# that defines the cu* symbols PyCUDA's _driver needs; the GPU machine's driver library
# resolves them at import. Usage: bash scripts/build_pycuda_wheel.sh [OUT_DIR]   (default .whl)
set -euo pipefail
out=$(realpath -m "${1:-.whl}")
work=$(mktemp -d)
python3.12 -m venv "$work/venv"
"$work/venv/bin/pip" install -q numpy setuptools wheel pytools platformdirs mako siphash24
"$work/venv/bin/pip" download -q --no-deps --no-build-isolation --no-binary=pycuda \
  pycuda==2026.1 -d "$work"
tar -xzf "$work"/pycuda-2026.1.tar.gz -C "$work"
src="$work/pycuda-2026.1"
build() {
  # configure once: its options follow siteconf.py's values (curand off turns
  # --no-cuda-enable-curand into --cuda-enable-curand)
  (cd "$src" && { [ -f siteconf.py ] || "$work/venv/bin/python" configure.py \
     --cuda-root=/usr/local/cuda --no-cuda-enable-curand --cudadrv-lib-dir="$work/stub" \
     >/dev/null; } &&
   rm -rf build dist && "$work/venv/bin/pip" wheel -q --no-deps --no-build-isolation . -w "$work/wheel")
}
# first pass: an empty stub, to learn which cu* symbols the extension needs
mkdir -p "$work/stub" && echo "" > "$work/stub/e.c"
gcc -shared -fPIC -o "$work/stub/libcuda.so" -Wl,-soname,libcuda.so.1 "$work/stub/e.c"
build
mkdir -p "$work/probe" && (cd "$work/probe" && unzip -q "$work"/wheel/pycuda-*.whl)
nm -D --undefined-only "$work"/probe/pycuda/_driver*.so | awk '{print $2}' | grep -E '^cu[A-Z]' \
  | sort -u | sed 's/.*/void &(void){}/' > "$work/stub/e.c"
gcc -shared -fPIC -o "$work/stub/libcuda.so" -Wl,-soname,libcuda.so.1 "$work/stub/e.c"
rm -rf "$work/wheel" && build
mkdir -p "$out" && cp "$work"/wheel/pycuda-*.whl "$out/"
echo "built: $(ls "$out"/pycuda-*.whl)"
