#!/usr/bin/env bash
# On the GPU machine: the parts of scripts/carry_parts.sh carried by this call (.parts/NAME.K)
# kept in /root/parts_stash, outside the checkout (the copy of the working tree removes what a
# later call does not carry again); each NAME whose parts are all in and match the whole's
# SHA256 is unpacked once into /root/parts/NAME. Sourced by scripts/gpu_env.sh; run alone
# (`bash scripts/gpu_parts.sh`) by the calls that only bring a part.
stash=/root/parts_stash
mkdir -p "$stash"
if ls .parts/*/*.part.* >/dev/null 2>&1; then
  cp .parts/*/* "$stash"/ && echo "parts kept: $(ls .parts/*/*.part.* | xargs -n1 basename | tr '\n' ' ')"
fi
for count in "$stash"/*.count; do
  [ -f "$count" ] || continue
  name=$(basename "$count" .count)
  [ -d "/root/parts/$name" ] && continue
  have=$(ls "$stash/$name".part.* 2>/dev/null | wc -l)
  if [ "$have" -ne "$(cat "$count")" ]; then
    echo "$name: $have of $(cat "$count") parts here"
    continue
  fi
  cat "$stash/$name".part.* > "/tmp/$name.tar.xz"
  if (cd /tmp && echo "$(cat "$stash/$name.sha256")  $name.tar.xz" | sha256sum -c --quiet); then
    # unpacked, then its bytecode compiled, as pip's install of the wheel would have done
    mkdir -p "/root/parts/$name" && xz -dc "/tmp/$name.tar.xz" | tar -x -C "/root/parts/$name" \
      && { python3 -m compileall -q -j 0 "/root/parts/$name" >/dev/null || true; } \
      && echo "$name unpacked into /root/parts/$name, its bytecode compiled"
  else
    echo "$name: its parts do not match their checksum"
  fi
  rm -f "/tmp/$name.tar.xz"
done
