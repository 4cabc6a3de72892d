#!/usr/bin/env bash
# numba-cuda-mlir 0.6.0's wheel (71 MB) does not fit one transfer to the GPU machine beside the
# working tree and .whl (64 MiB a call). Here: unpack it, xz it (47 MB) and split it into
# .mlir1/ (26 MB) and .mlir2/ (21 MB, with the whole's SHA256), both ignored by git:
#   bash scripts/mlir_parts.sh WHEEL
# With a 33 MB tree, a call carries one part and nothing else: the first copies .mlir1 to
# /root/mlir_stash (a carried path not carried again is removed, the checkout's untracked files
# too), the second .mlir2 (with its SHA256), the third, at once, to the same warm machine, .whl,
# moving the second part back into .mlir2 before `source scripts/gpu_env.sh`, which joins,
# checks and unpacks them into /root/mlir_site.
set -euo pipefail
wheel=${1:?usage: mlir_parts.sh numba_cuda_mlir-*.whl}
tmp=$(mktemp -d)
(cd "$tmp" && unzip -q "$wheel")
tar -cf - -C "$tmp" numba_cuda_mlir "$(cd "$tmp" && ls -d numba_cuda_mlir-*.dist-info)" \
  | xz -9e -T2 > "$tmp/mlir.tar.xz"
mkdir -p .mlir1 .mlir2
rm -f .mlir1/mlirpart.* .mlir2/mlirpart.*
split -b 26000000 -d "$tmp/mlir.tar.xz" "$tmp/mlirpart."
mv "$tmp/mlirpart.00" .mlir1/
mv "$tmp"/mlirpart.0[1-9] .mlir2/
(cd "$tmp" && sha256sum mlir.tar.xz) > .mlir2/SHA256
grep -q '^/.mlir1/' .git/info/exclude || printf '/.mlir1/\n/.mlir2/\n/.mlir_site/\n' >> .git/info/exclude
rm -rf "$tmp"
ls -la .mlir1 .mlir2
