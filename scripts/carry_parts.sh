#!/usr/bin/env bash
# A carry too large for one transfer to the GPU machine (64 MiB a call with the working tree),
# in parts that travel in calls one after another to the same warm machine:
#   bash scripts/carry_parts.sh NAME DIR|FILE.tar.xz [PART_BYTES]
# packs DIR (an unpacked site: wheels unzipped into one folder) as one tar.xz, or takes the
# given one, and splits it into .parts/NAME.1/, .parts/NAME.2/, ... (ignored by git), each with
# one part, the whole's SHA256 and the count of parts. Each call carries one of those folders
# (carry ".parts/NAME.K"); scripts/gpu_parts.sh there keeps each part in /root/parts_stash and,
# once every part is in, unpacks the whole into /root/parts/NAME. PART_BYTES defaults to
# 26000000: a part and the 37 MB tree stay under the limit. The release chart of numba-cuda
# before 0.30.4 runs beside numba 0.65 (numba 0.66 moved NPDatetime, which those releases
# import), whose llvmlite alone is a 56 MB wheel: that site travels this way (FIXED_SITE of
# scripts/gpu_releases.sh).
set -euo pipefail
usage="usage: carry_parts.sh NAME DIR|FILE.tar.xz [PART_BYTES]"
name=${1:?$usage}
src=${2:?$usage}
bytes=${3:-26000000}
tmp=$(mktemp -d)
if [ -d "$src" ]; then
  tar -cf - -C "$src" . | xz -9e -T2 > "$tmp/$name.tar.xz"
else
  cp "$src" "$tmp/$name.tar.xz"
fi
rm -rf ".parts/$name".*
split -b "$bytes" -d "$tmp/$name.tar.xz" "$tmp/$name.part."
count=$(ls "$tmp/$name".part.* | wc -l)
sum=$(cd "$tmp" && sha256sum "$name.tar.xz" | cut -d' ' -f1)
k=0
for part in "$tmp/$name".part.*; do
  k=$((k + 1))
  mkdir -p ".parts/$name.$k"
  mv "$part" ".parts/$name.$k/"
  echo "$count" > ".parts/$name.$k/$name.count"
  echo "$sum" > ".parts/$name.$k/$name.sha256"
done
grep -q '^/.parts/' .git/info/exclude || echo '/.parts/' >> .git/info/exclude
rm -rf "$tmp"
du -sh .parts/"$name".*
