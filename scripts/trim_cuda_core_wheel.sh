#!/usr/bin/env bash
# A cuda-core wheel of 0.x (cu12 and cu13 builds side by side, 31 MB for 0.7.0) without its cu12
# half (16 MB), so that it travels to the GPU machine with the working tree and the numba-cuda
# release wheels in one call (64 MiB): the machine's cuda-bindings is 13.x, and cuda.core imports
# `cuda.core.cu13` for it (cuda/core/__init__.py picks cu{major} of cuda.bindings). RECORD loses
# the dropped files' lines; the wheel keeps its name, so `pip install` and gpu_releases.sh's WITH
# find it as they find the original:
#   bash scripts/trim_cuda_core_wheel.sh cuda_core-0.7.0-*.whl .whl/numba-releases
set -euo pipefail
wheel=$(cd "$(dirname "${1:?usage: trim_cuda_core_wheel.sh WHEEL OUTDIR}")" && pwd)/$(basename "$1")
out=${2:?usage: trim_cuda_core_wheel.sh WHEEL OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && unzip -q "$wheel")
[ -d "$tmp/cuda/core/cu12" ] || { echo "trim_cuda_core_wheel: no cuda/core/cu12 in $wheel" >&2; exit 2; }
rm -rf "$tmp/cuda/core/cu12"
record=$(ls "$tmp"/cuda_core-*.dist-info/RECORD)
grep -v '^cuda/core/cu12/' "$record" > "$tmp/RECORD" && mv "$tmp/RECORD" "$record"
rm -f "$out/$(basename "$wheel")"
(cd "$tmp" && zip -q -9 -r "$out/$(basename "$wheel")" cuda cuda_core-*.dist-info)
ls -la "$out/$(basename "$wheel")"
