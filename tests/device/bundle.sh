#!/usr/bin/env bash
# Puts what tests/device/h100-acceptance.sh needs on a GPU node into DIR (default .devrun,
# ignored by git): the sitegen binary and the Debian 12 libraries it and lstopo load, hwloc's
# PCI plugin, the .deb files of Lmod and its Lua modules, and EasyBuild 5.2.1's release
# tarballs (../shared/tools/easybuild). The node runs another
# distribution and can fetch nothing, so everything travels from this machine.
# usage: tests/device/bundle.sh [SITEGEN [DIR]]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
sitegen=$(realpath "${1:-$root/build/sitegen}")
dir=${2:-$root/.devrun}
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/lib" "$dir/hwloc-plugins" "$dir/debs" "$dir/easybuild"
cp "$sitegen" "$dir/bin/sitegen"
cp "$(command -v lstopo-no-graphics)" "$dir/bin/"
multiarch=/usr/lib/x86_64-linux-gnu
for lib in libmimalloc.so.2 libtomlplusplus.so.3 liblua5.4.so.0 libhwloc.so.15 libudev.so.1 libpciaccess.so.0; do
  cp -L "$multiarch/$lib" "$dir/lib/"
done
cp "$multiarch/hwloc/hwloc_pci.so" "$dir/hwloc-plugins/"
(cd "$dir/debs" && apt-get download -q lmod lua5.3 liblua5.3-0 lua-posix lua-bit32 lua-filesystem \
  lua-json lua-lpeg lua-term libtcl8.6 tcl8.6 >/dev/null)
cp "$root"/../shared/tools/easybuild/easybuild-*-v5.2.1.tar.gz "$dir/easybuild/"
du -sh "$dir"
