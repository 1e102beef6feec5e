#!/usr/bin/env bash
# `sitegen topology import` against real hwloc: each seed site's node fixture
# (tests/fixtures/hwloc/<site>.xml, from the documented layouts), the lstopo XML of a real
# node with one NVIDIA H100 (h100-nccl.xml, for tests/device/sites/h100-nccl) and this
# machine's own `lstopo --of xml` print a [hardware] table that TOML reads back to the site's values
# (cores, threads, devices, device_cores, NICs, vendor), and that, pasted into the site file,
# passes `sitegen check`. Unreadable or invalid XML exits 3, a missing argument 2.
set -euo pipefail
sitegen=$(realpath "${1:?usage: node_topology.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool lstopo-no-graphics /usr/bin/python3
fixtures=$root/tests/fixtures/hwloc
# sites_of SITE: the sites directory holding SITE (the GPU device's test site has its own).
sites_of() { if [[ $1 == h100-nccl ]]; then echo "$root/tests/device/sites"; else echo "$root/sites"; fi; }

# compare SITE_TOML IMPORTED_TOML [FRAGMENT...]: the site's [hardware] (its fragments first)
# against the imported one; prints the differences, nothing when they agree.
compare() {
  /usr/bin/python3 - "$@" <<'PY'
import sys
import tomllib


def cores(ranges):
    out = []
    for part in ranges.split(','):
        lo, _, hi = part.partition('-')
        out += range(int(lo), int(hi or lo) + 1)
    return out


site_file, imported_file, fragments = sys.argv[1], sys.argv[2], sys.argv[3:]
site = {}
for path in fragments + [site_file]:
    with open(path, 'rb') as f:
        site.update(tomllib.load(f).get('hardware', {}))
with open(imported_file, 'rb') as f:
    imported = tomllib.load(f)['hardware']
for key in ('gpu_vendor', 'devices_per_node', 'cores_per_node'):
    if site.get(key) != imported.get(key):
        print('%s: site %r, imported %r' % (key, site.get(key), imported.get(key)))
if site.get('threads_per_core', 1) != imported.get('threads_per_core'):
    print('threads_per_core: site %r, imported %r' % (site.get('threads_per_core', 1), imported.get('threads_per_core')))
want = [cores(r) for r in site.get('device_cores', [])]
got = [cores(r) for r in imported.get('device_cores', [])]
if want != got:
    print('device_cores: site %r, imported %r' % (site.get('device_cores'), imported.get('device_cores')))
if sorted(site.get('nics', [])) != sorted(imported.get('nics', [])):
    print('nics: site %r, imported %r' % (site.get('nics'), imported.get('nics')))
PY
}

# paste SITE IMPORTED: a copy of sites/ where SITE's [hardware] is the imported table (plus the
# site's own reserved_cores and interconnect, which stay site decisions); prints the dir.
paste_hardware() {
  local site=$1 imported=$2 dir
  dir=$(mktemp -d "$SCRATCH/sites.XXXXXX")
  cp -r "$(sites_of "$site")/." "$dir/"
  /usr/bin/python3 - "$dir/$site/site.toml" "$imported" "$dir/shared/amd-mi250x-slingshot.toml" <<'PY'
import re
import sys
import tomllib

site_file, imported_file, shared = sys.argv[1:]
text = open(site_file).read()
hardware = {}
extends = tomllib.loads(text).get('extends', [])
if extends:
    with open(shared, 'rb') as f:
        hardware = tomllib.load(f).get('hardware', {})
    # The fragment keeps its other tables; the site file gets the imported [hardware].
    frag = open(shared).read()
    frag = re.sub(r'(?ms)^\[hardware\]\n.*?(?=^\[)', '', frag)
    open(shared, 'w').write(frag)
hardware.update(tomllib.loads(text).get('hardware', {}))
keep = ''
if 'reserved_cores' in hardware:
    keep += 'reserved_cores = %s\n' % hardware['reserved_cores']
if 'interconnect' in hardware:
    keep += 'interconnect = "%s"\n' % hardware['interconnect']
text = re.sub(r'(?ms)^\[hardware\]\n.*?(?=^\[)', '', text)
text += '\n' + open(imported_file).read() + keep
open(site_file, 'w').write(text)
PY
  echo "$dir"
}

for site in lumi frontier cirrus aurora local h100-nccl; do
  out=$SCRATCH/$site.toml
  if ! "$sitegen" topology import "$fixtures/$site.xml" >"$out" 2>"$SCRATCH/err"; then
    fail "$site: import failed: $(<"$SCRATCH/err")"
    continue
  fi
  fragments=()
  [[ $site == lumi || $site == frontier ]] && fragments=("$root/sites/shared/amd-mi250x-slingshot.toml")
  check_eq "$site: imported [hardware] = the site's" "" "$(compare "$(sites_of "$site")/$site/site.toml" "$out" "${fragments[@]}")"
  dir=$(paste_hardware "$site" "$out")
  check "$site: the site with the imported [hardware] passes sitegen check" "$sitegen" --sites-dir "$dir" check "$site"
done

# Every value carries its source.
lumi=$("$sitegen" topology import "$fixtures/lumi.xml")
check_contains "lumi: device 0's source" \
  '"48-55",  # device 0: rsmi0, PCI 0000:c1:00.0, near cores 48-63 (NUMA node 3), under Group0 L#3, part 1 of 2' "$lumi"
check_contains "lumi: the management NIC is named but left out" \
  "# not in nics: nmn0 (PCI 0000:02:00.0, PCI link 0.25 GB/s, no RDMA device: not a high-speed NIC)" "$lumi"
check_contains "h100-nccl: a GPU without an OS device (no CUDA plugin in hwloc) is named by its PCI address once" \
  '"0-15",  # device 0: PCI 0000:00:06.0, near cores 0-15 (NUMA node 0), under Machine' "$("$sitegen" topology import "$fixtures/h100-nccl.xml")"
check_contains "h100-nccl: a virtio NIC's link speed is unknown, not 0" \
  "# not in nics: eth0 (PCI 0000:00:03.0, PCI link speed unknown, no RDMA device: not a high-speed NIC)" \
  "$("$sitegen" topology import "$fixtures/h100-nccl.xml")"
check_contains "aurora: tiles" \
  "devices_per_node = 12  # 6 GPU PCI devices x 2 Level Zero subdevices (tiles)" "$("$sitegen" topology import "$fixtures/aurora.xml")"

# This machine, now: lstopo's XML imports to its own core count.
lstopo-no-graphics --of xml >"$SCRATCH/this.xml"
this=$("$sitegen" topology import "$SCRATCH/this.xml")
cores=$(lstopo-no-graphics --only core | wc -l)
check_contains "this machine: cores_per_node from lstopo" "cores_per_node = $cores  #" "$this"

# Exit codes: 3 for files hwloc cannot read, 2 for usage.
code=0
"$sitegen" topology import "$SCRATCH/missing.xml" 2>"$SCRATCH/err" || code=$?
check_eq "missing file: exit 3" "3: sitegen: error: cannot read '$SCRATCH/missing.xml': No such file or directory" \
  "$code: $(<"$SCRATCH/err")"
printf '<topology version="2.0"><object type=' >"$SCRATCH/bad.xml"
code=0
"$sitegen" topology import "$SCRATCH/bad.xml" >/dev/null 2>"$SCRATCH/err" || code=$?
check_eq "invalid XML: exit 3" "3" "$code"
check_contains "invalid XML: says so" "sitegen: error: hwloc cannot" "$(<"$SCRATCH/err")"
code=0
"$sitegen" topology import >/dev/null 2>&1 || code=$?
check_eq "no file: exit 2" "2" "$code"
finish
