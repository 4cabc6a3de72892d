#!/usr/bin/env bash
# numba-cuda-mlir's wheel (0.6.0: 71 MB) does not fit one transfer to the GPU machine beside the
# working tree (64 MiB a call). Here: unpack it and hand the folder to scripts/carry_parts.sh
# as `mlir`, which xz's it (47 MB) and splits it into .parts/mlir.1 and .parts/mlir.2:
#   bash scripts/mlir_parts.sh WHEEL
# Each travels in a call of its own to the same warm machine (carry ".parts/mlir.K");
# scripts/gpu_parts.sh there unpacks the whole into /root/parts/mlir, which scripts/gpu_env.sh
# puts on PYTHONPATH.
set -euo pipefail
wheel=$(realpath "${1:?usage: mlir_parts.sh numba_cuda_mlir-*.whl}")
tmp=$(mktemp -d)
(cd "$tmp" && unzip -q "$wheel")
bash "$(dirname "$0")/carry_parts.sh" mlir "$tmp"
rm -rf "$tmp"
