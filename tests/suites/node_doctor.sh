#!/usr/bin/env bash
# `sitegen doctor` with real hwloc and the real Lmod:
# - each seed site against its node fixture (--topology) and a node file system (--root)
#   holding its bind paths, image and base modules: no mismatches, exit 0;
# - planted mismatches (cores, device_cores, reserved cores, NICs, socket interfaces, a bind
#   path, the image, a base module): each reported at its file:line:col, exit 1;
# - named images (podman-hpc, uenv) are not looked for as files; a pyxis image file is;
# - `sitegen doctor local` on this machine: passes (when this machine has the local site's
#   2 cores; elsewhere it must say how many it has), and a mutated local site fails at the
#   mutated keys (cores, NIC, python, socket interface);
# - usage errors exit 2, an unreadable topology 3.
set -euo pipefail
sitegen=$(realpath "${1:?usage: node_doctor.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool lstopo-no-graphics /usr/bin/python3 /usr/share/lmod/lmod/libexec/lmod
fixtures=$root/tests/fixtures/hwloc

# A node's file system for SITE: its bind paths, images and base modules (under /modules).
node=$SCRATCH/node
mkdir -p "$node/modules"
for m in LUMI/24.03 PrgEnv-gnu/8.5.0 miniforge3/23.11.0-0 rocm/6.0.0 craype-accel-amd-gfx90a python/3.12.1-gpu; do
  mkdir -p "$node/modules/$(dirname "$m")"
  echo "whatis('stub of $m')" >"$node/modules/$m.lua"
done
for d in /var/spool/slurmd /opt/cray /pfs /scratch /projappl /project /flash /appl /appl/local/containers/sif-images \
  /usr/lib64; do
  mkdir -p "$node$d"
done
touch "$node/usr/lib64/libcxi.so.1" "$node/usr/lib64/libjansson.so.4" \
  "$node/appl/local/containers/sif-images/lumi-pytorch-rocm-6.0.3-python-3.12-pytorch-v2.3.1-dockerhash-2c1c14cafd28.sif"
# Frontier's aws-ofi-rccl build (collectives.network_plugin_path).
mkdir -p "$node/sw/frontier/sitegen/aws-ofi-rccl/lib"
touch "$node/sw/frontier/sitegen/aws-ofi-rccl/lib/librccl-net.so"
# Aurora's frameworks module python.
mkdir -p "$node/opt/aurora/24.180.3/frameworks/aurora_nre_models_frameworks-2024.2.1_u1/bin"
printf '#!/bin/sh\n' >"$node/opt/aurora/24.180.3/frameworks/aurora_nre_models_frameworks-2024.2.1_u1/bin/python"
chmod +x "$node/opt/aurora/24.180.3/frameworks/aurora_nre_models_frameworks-2024.2.1_u1/bin/python"
mkdir -p "$node/usr/bin"
cp /usr/bin/python3 "$node/usr/bin/python3"
# The stacks are not deployed under the node root: one warning each, not a mismatch.

doctor() {  # doctor SITES_DIR SITE [ARGS...]: exit code, then stdout and stderr
  local dir=$1 site=$2 code=0
  shift 2
  MODULEPATH=/modules "$sitegen" --sites-dir "$dir" doctor "$site" "$@" >"$SCRATCH/out" 2>"$SCRATCH/err" || code=$?
  echo "$code"
}

for site in lumi frontier cirrus aurora local; do
  code=$(doctor "$root/sites" "$site" --topology "$fixtures/$site.xml" --root "$node")
  check_eq "$site: its fixture matches, exit 0" "0" "$code"
  check_contains "$site: no mismatches" "no mismatches" "$(<"$SCRATCH/out")"
  if [[ $code != 0 ]]; then cat "$SCRATCH/err"; fi
  check_eq "$site: no error lines" "" "$(grep ': error: ' "$SCRATCH/err" || true)"
done
check_contains "lumi: what was checked" "  checked container: 10 bind paths, 1 image" \
  "$(doctor "$root/sites" lumi --topology "$fixtures/lumi.xml" --root "$node" >/dev/null; cat "$SCRATCH/out")"

check_contains "frontier: the plugin library was found" \
  "  checked network plugin: /sw/frontier/sitegen/aws-ofi-rccl/lib/librccl-net.so" \
  "$(doctor "$root/sites" frontier --topology "$fixtures/frontier.xml" --root "$node" >/dev/null; cat "$SCRATCH/out")"
mv "$node/sw/frontier/sitegen/aws-ofi-rccl/lib/librccl-net.so" "$node/sw/frontier/sitegen/aws-ofi-rccl/lib/librccl-net.so.off"
check_eq "frontier: a plugin directory without the library, at its key" \
  "1 sites/frontier/site.toml:28:23: error: network plugin directory '/sw/frontier/sitegen/aws-ofi-rccl/lib' holds no plugin library on the node of $fixtures/frontier.xml" \
  "$(doctor "$root/sites" frontier --topology "$fixtures/frontier.xml" --root "$node") $(grep ': error: ' "$SCRATCH/err" | sed "s|^$root/||")"
mv "$node/sw/frontier/sitegen/aws-ofi-rccl/lib/librccl-net.so.off" "$node/sw/frontier/sitegen/aws-ofi-rccl/lib/librccl-net.so"

# Planted mismatches in a copy of the sites.
mutated=$SCRATCH/sites
cp -r "$root/sites" "$mutated"
shared=$mutated/shared/amd-mi250x-slingshot.toml
sed -i 's/^cores_per_node = 64$/cores_per_node = 128/; s/"48-55", "56-63", "16-23", "24-31", "0-7"/"0-7", "56-63", "16-23", "24-31", "48-55"/;
  s/reserved_cores = \[0, 8,/reserved_cores = [0, 100,/; s/"hsn3"\]/"hsn4"]/' "$shared"
# NCCL_SOCKET_IFNAME is a setting of the Slingshot profile (sites/shared/slingshot.toml).
sed -i 's/"hsn0,hsn1,hsn2,hsn3"/"hsn0,hsn1,hsn2,hsn4"/' "$mutated/shared/slingshot.toml"
sed -i 's#base_modules = \["LUMI/24.03"\]#base_modules = ["LUMI/23.09"]#; s#^image = "lumi-pytorch#image = "old-lumi-pytorch#' \
  "$mutated/lumi/site.toml"
rmdir "$node/flash"
code=$(doctor "$mutated" lumi --topology "$fixtures/lumi.xml" --root "$node")
mkdir "$node/flash"
err=$(<"$SCRATCH/err")
check_eq "lumi mutated: exit 1" "1" "$code"
s=$mutated/shared/amd-mi250x-slingshot.toml p=$mutated/shared/slingshot.toml l=$mutated/lumi/site.toml x=$fixtures/lumi.xml
for want in \
  "$s:8:18: error: 'cores_per_node' is 128 but the node of $x has 64 cores" \
  "$s:11:17: error: device 0 is listed with cores 0-7, but on the node of $x it is near 48-63" \
  "$s:11:51: error: device 4 is listed with cores 48-55, but on the node of $x it is near 0-15" \
  "$s:13:22: error: reserved core 100 is not a core of the node of $x" \
  "$s:14:33: error: NIC 'hsn4' does not exist on the node of $x" \
  "$p:17:9: error: NCCL_SOCKET_IFNAME names network interface 'hsn4', which the node of $x does not have" \
  "$l:11:17: error: base module 'LUMI/23.09' is not available: Lmod cannot find it" \
  "$l:48:12: error: bind path '/flash' does not exist on the node of $x" \
  "$l:63:9: error: image 'old-lumi-pytorch-rocm-6.0.3-python-3.12-pytorch-v2.3.1-dockerhash-2c1c14cafd28.sif' of stack" \
  "  note: hwloc: device 0 is rsmi0 (PCI 0000:c1:00.0), near cores 48-63 (NUMA node 3), under Group0 L#3; \`sitegen topology import\` suggests \"48-55\"" \
  "sitegen doctor: lumi against $x (files under $node): 9 mismatches"; do
  check_contains "lumi mutated: $want" "$want" "$err"
done
# Compiler style: the source line and a caret under the key's value.
check_contains "lumi mutated: caret" $'  reserved_cores = [0, 100, 16, 24, 32, 40, 48, 56]\n                       ^' "$err"

# GPUs of another vendor and count: cirrus's site against LUMI's node.
doctor "$root/sites" cirrus --topology "$fixtures/lumi.xml" --root "$node" >/dev/null
c=$root/sites/cirrus/site.toml
check_contains "cirrus on lumi: count" \
  "$c:14:20: error: 'devices_per_node' is 4 but the node of $x has 8 GPUs" "$(<"$SCRATCH/err")"
check_contains "cirrus on lumi: vendor" \
  "$c:12:14: error: 'gpu_vendor' is 'nvidia' but the GPUs of the node of $x are amd's" "$(<"$SCRATCH/err")"

# This machine, live: hwloc reads it, /sys/class/net has lo, /usr/bin/python3 runs.
cores=$(lstopo-no-graphics --only core | wc -l)
code=$(doctor "$root/sites" local)
if [[ $cores == 2 ]]; then
  check_eq "doctor local on this machine: exit 0" "0" "$code"
  check_contains "doctor local: python checked" "  checked python: /usr/bin/python3 3.11." "$(<"$SCRATCH/out")"
else
  check_contains "doctor local on a $cores-core machine: says so" \
    "error: 'cores_per_node' is 2 but this node has $cores cores" "$(<"$SCRATCH/err")"
fi
# A mutated local site: every mutation at its key.
sed -i 's/^cores_per_node = 2$/cores_per_node = 64/; s/^GLOO_SOCKET_IFNAME = "lo"$/GLOO_SOCKET_IFNAME = "ib7"/;
  s/^version = "3.11"$/version = "3.9"/' "$mutated/local/site.toml"
sed -i 's/^cores_per_node = 64$/cores_per_node = 64\nnics = ["ib0"]/' \
  "$mutated/local/site.toml"
code=$(doctor "$mutated" local)
err=$(<"$SCRATCH/err")
m=$mutated/local/site.toml
check_eq "local mutated: exit 1" "1" "$code"
check_contains "local mutated: cores" "$m:13:18: error: 'cores_per_node' is 64 but this node has $cores cores" "$err"
check_contains "local mutated: NIC" "$m:14:9: error: NIC 'ib0' does not exist on this node" "$err"
check_contains "local mutated: socket interface" \
  "$m:27:1: error: GLOO_SOCKET_IFNAME names network interface 'ib7', which this node does not have" "$err"
check_contains "local mutated: python" \
  "$m:31:11: error: python version is '3.9' but /usr/bin/python3 on this node is 3.11." "$err"

# Container runtimes whose `image` is a name the runtime stores (podman-hpc's migrated image,
# a uenv label): nothing to look for on disk, so no mismatch, and the checked line says so. A
# file image (pyxis' squashfs under image_dir) is still looked for, at its key, also with
# python in the image's system (container-system).
runtime_site() {  # runtime_site NAME RUNTIME IMAGE [CONTAINER-LINES]: sites under $SCRATCH/rt
  mkdir -p "$SCRATCH/rt/$1"
  /usr/bin/python3 - "$root/sites/local/site.toml" "$SCRATCH/rt/$1/site.toml" "$@" <<'PY'
import sys
src, dst, name, runtime, image = sys.argv[1:6]
lines = sys.argv[6] + '\n' if len(sys.argv) > 6 else ''
text = open(src).read()
for old, new in (('name = "local"', 'name = "%s"' % name), ('layout = "system"', 'layout = "container-system"'),
                 ('interpreter = "/usr/bin/python3"\n', ''),
                 ('[python]', '[container]\nruntime = "%s"\n%s\n[python]' % (runtime, lines)),
                 ('keywords = ', 'image = "%s"\nkeywords = ' % image)):
    assert old in text, old
    text = text.replace(old, new)
open(dst, 'w').write(text)
PY
}
runtime_site podman podman-hpc registry.nersc.gov/library/torch:2.4
runtime_site uenv uenv pytorch/v2.4.0:v1 'view = "default"'
runtime_site pyxis pyxis torch.sqsh 'image_dir = "/images"'
for site in podman uenv; do
  code=$(doctor "$SCRATCH/rt" "$site" --topology "$fixtures/local.xml" --root "$node")
  check_eq "$site: a named image is no mismatch, exit 0" "0" "$code"
  if [[ $code != 0 ]]; then cat "$SCRATCH/err"; fi
  check_contains "$site: what was checked" \
    "  checked container: 0 bind paths, 0 images, 1 named image (the runtime's own, not files: not checked)" "$(<"$SCRATCH/out")"
done
check_eq "pyxis: its image file is missing: exit 1" "1" "$(doctor "$SCRATCH/rt" pyxis --topology "$fixtures/local.xml" --root "$node")"
check_contains "pyxis: at its key" \
  "$SCRATCH/rt/pyxis/site.toml:45:9: error: image 'torch.sqsh' of stack 'pytorch/1.13.1-cpu' is missing on the node of $fixtures/local.xml" \
  "$(<"$SCRATCH/err")"
mkdir -p "$node/images"
: >"$node/images/torch.sqsh"
check_eq "pyxis: its image file under image_dir: exit 0" "0" "$(doctor "$SCRATCH/rt" pyxis --topology "$fixtures/local.xml" --root "$node")"
check_contains "pyxis: what was checked" "  checked container: 0 bind paths, 1 image" "$(<"$SCRATCH/out")"

# Usage and I/O.
check_eq "no site: exit 2" "2" "$(doctor "$root/sites" "" 2>/dev/null || true)"
check_eq "unknown site: exit 2" "2" "$(doctor "$root/sites" nosuch)"
check_contains "unknown site: says so" "no site 'nosuch'" "$(<"$SCRATCH/err")"
check_eq "--root not a directory: exit 2" "2" "$(doctor "$root/sites" local --root "$SCRATCH/none")"
check_eq "unreadable topology: exit 3" "3" "$(doctor "$root/sites" local --topology "$SCRATCH/none.xml")"
check_contains "unreadable topology: says so" "cannot read '$SCRATCH/none.xml'" "$(<"$SCRATCH/err")"
finish
