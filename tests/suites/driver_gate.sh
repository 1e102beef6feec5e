#!/usr/bin/env bash
# Driver gates and bandwidth expectations with the real consumers:
# - check: a min_driver that is not a version, or on a site without GPUs, and a bandwidth
#   threshold without the link bandwidth, are errors at their TOML lines;
# - real Lmod with a fake driver version file (SITEGEN_DRIVER_VERSION_FILE): older -> the load
#   is refused with the message; equal or newer (6.10.5 > 6.7.0: numbers, not text) -> loads;
#   missing -> loads silently; NVIDIA's version line is read; driver_gate = "warn" loads with a
#   warning; unload works whatever the file says; the default path is the vendor's file;
# - the real EasyBuild's Lua and Tcl modules (eb --module-only) refuse and load the same way;
# - acceptance.py: its driver, network and bandwidth checks called with injected versions,
#   NCCL log lines and measured numbers, verdicts written by hand; a real `--direct 2` run
#   prints the driver check and fails on an old driver.
set -euo pipefail
sitegen=$(realpath "${1:?usage: driver_gate.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool /usr/bin/python3 luac5.4 luacheck
[[ -r $LMOD_INIT ]] || { fail "lmod is not installed"; finish; }

# variant NAME OLD NEW ...: sites/NAME from local's site.toml with each OLD replaced by NEW.
sites=$SCRATCH/sites
variant() {
  local name=$1
  shift
  mkdir -p "$sites/$name"
  /usr/bin/python3 - "$root/sites/local/site.toml" "$sites/$name/site.toml" "$name" "$@" <<'PY'
import sys
src, dst, name, pairs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
text = open(src).read().replace('name = "local"', 'name = "%s"' % name)
for old, new in zip(pairs[::2], pairs[1::2]):
    assert old in text, old
    text = text.replace(old, new)
open(dst, 'w').write(text)
PY
}
amd='gpu_vendor = "amd"'
variant dg 'gpu_vendor = "none"' "$amd" 'venv_extension = true' $'venv_extension = true\nmin_driver = "6.7.0"' \
  'cores_per_node = 2' $'cores_per_node = 2\nnetwork_links = 4\nlink_gbps = 200' \
  'library = "gloo"' $'library = "gloo"\nmin_busbw_percent = 50'
variant dgw 'gpu_vendor = "none"' $'gpu_vendor = "amd"\ndriver_gate = "warn"' \
  'venv_extension = true' $'venv_extension = true\nmin_driver = "6.7.0"'
variant dgn 'gpu_vendor = "none"' 'gpu_vendor = "nvidia"' \
  'venv_extension = true' $'venv_extension = true\nmin_driver = "535.129.03"'
# Invalid: not a version; a gate on a GPU-less site; a threshold without the peak.
variant bad1 'gpu_vendor = "none"' "$amd" 'venv_extension = true' $'venv_extension = true\nmin_driver = "6.x"'
variant bad2 'venv_extension = true' $'venv_extension = true\nmin_driver = "6.0"'
variant bad3 'library = "gloo"' $'library = "gloo"\nmin_busbw_percent = 50'

# ---- check ----------------------------------------------------------------------------------
bad() {  # bad SITE EXPECTED-LINE: check exits 1 and prints the line
  local code=0 msg
  msg=$("$sitegen" --sites-dir "$sites" check "$1" 2>&1) || code=$?
  check_eq "check $1: exit 1" 1 "$code"
  check_contains "check $1: the error at its key" "$2" "$msg"
}
bad bad1 "sites/bad1/site.toml:39:14: error: min_driver '6.x' is not a driver version: numbers separated by '.'"
bad bad2 "sites/bad2/site.toml:39:14: error: min_driver is set but hardware.gpu_vendor is 'none': there is no GPU driver to check"
bad bad3 "sites/bad3/site.toml:24:21: error: min_busbw_percent needs the per-node link bandwidth it is a fraction of"

out=$SCRATCH/out
for site in dg dgw dgn; do
  check "sitegen build $site" "$sitegen" --sites-dir "$sites" --out-dir "$out" build "$site" --prefix "$out/modules-out/$site"
done
m=pytorch/1.13.1-cpu
mp() { echo "$out/modules-out/$1/modulefiles"; }
mf=$(mp dg)/$m.lua
check "luac -p" luac5.4 -p "$mf"
check "luacheck (Lmod's API)" luacheck --no-color --config "$root/tests/tools/luacheckrc-lmod" "$mf" "$(mp dgw)/$m.lua"
check_contains "the gate reads AMD's version file by default" \
  'local driver_file = os.getenv("SITEGEN_DRIVER_VERSION_FILE") or "/sys/module/amdgpu/version"' "$(<"$mf")"
check_contains "NVIDIA's: /proc/driver/nvidia/version" '"/proc/driver/nvidia/version"' "$(<"$(mp dgn)/$m.lua")"
check_contains "the help says what it needs" \
  "Needs the AMD GPU driver (amdgpu) 6.7.0 or newer: loading fails on an older node." "$(<"$mf")"

# ---- real Lmod with a fake driver version file --------------------------------------------------
drv=$SCRATCH/driver-version
LMOD_EXTRA_ENV=("SITEGEN_DRIVER_VERSION_FILE=$drv")  # every clean shell below reads the fake file
refused="$m needs the AMD GPU driver (amdgpu) 6.7.0 or newer; this node has 6.3.6 ($drv). Use it on nodes with a newer driver, or load a pytorch version built for an older one (module avail pytorch); your support team knows which nodes have which driver."
# load SITE: `module load` with the fake file; prints Lmod's stderr (one line) and the status.
load() {
  local code=0 msg
  msg=$(lmod_clean_shell "$(mp "$1")" \
    "module load $m 2>&1 >/dev/null; s=\$?; echo \"RUNSCRIPTS=\${RUNSCRIPTS:-unset}\"; exit \$s" 2>&1) || code=$?
  printf '%s\nstatus=%s\n' "$(tr -s ' \n' '  ' <<<"$msg" | sed 's/ *$//')" "$code"
}
printf '6.3.6\n' >"$drv"
got=$(load dg)
check_contains "old driver: refused with the message" "$refused" "$got"
check_contains "old driver: nothing set, load fails" "RUNSCRIPTS=unset" "$got"
for v in 6.7.0 6.7 6.10.5 7.0.0; do
  printf '%s\n' "$v" >"$drv"
  check_eq "driver $v: loads silently" "RUNSCRIPTS=$out/modules-out/dg/software/pytorch/1.13.1-cpu/runscripts
status=0" "$(load dg)"
done
rm -f "$drv"
check_eq "no driver file: loads silently" "RUNSCRIPTS=$out/modules-out/dg/software/pytorch/1.13.1-cpu/runscripts
status=0" "$(load dg)"
# Without the variable the vendor's file is read; this machine has no amdgpu module.
if [[ -e /sys/module/amdgpu/version ]]; then fail "this test machine has an amdgpu driver"; fi
LMOD_EXTRA_ENV=()
check "default file absent: loads" lmod_clean_shell "$(mp dg)" "module load $m"
LMOD_EXTRA_ENV=("SITEGEN_DRIVER_VERSION_FILE=$drv")
# NVIDIA's line: the kernel module's version is read, not x86_64 nor the date.
printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\nGCC version:  gcc version 12.2.0\n' >"$drv"
check_contains "NVIDIA 535.104.05 < 535.129.03: refused" \
  "$m needs the NVIDIA GPU driver 535.129.03 or newer; this node has 535.104.05 ($drv)." "$(load dgn)"
printf 'NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build\n' >"$drv"
check_contains "NVIDIA 550.54.15: loads" "status=0" "$(load dgn)"
# warn: loads, says why (LmodMessage: Lmod's LmodWarning would make `module load` exit 1,
# which stops job scripts under set -e).
printf '6.3.6\n' >"$drv"
got=$(load dgw)
check_contains "warn gate: the warning" "WARNING: $m needs the AMD GPU driver (amdgpu) 6.7.0 or newer; this node has 6.3.6 ($drv), so GPU calls may fail." "$got"
check_contains "warn gate: loads" "RUNSCRIPTS=$out/modules-out/dgw/software/pytorch/1.13.1-cpu/runscripts status=0" "$(tr '\n' ' ' <<<"$got")"
# Loaded on a good node, unloaded after the file changed: unload never checks.
printf '6.8.0\n' >"$drv"
code=0
lmod_clean_shell "$(mp dg)" "module load $m" \
  "printf '6.0.0\n' >'$drv'" "module unload $m" "[[ -z \${RUNSCRIPTS:-} ]]" >/dev/null 2>&1 || code=$?
check_eq "unload after the driver file changed: ok" 0 "$code"
printf '6.8.0\n' >"$drv"
if report=$(lmod_load_unload_roundtrip "$(mp dg)" "$m"); then pass; else
  fail "load/unload roundtrip"
  echo "$report"
fi
if report=$(lmod_check_syntax "$(mp dg)" "$m"); then pass; else fail "Lmod --checkSyntax"; echo "$report"; fi

# ---- the real EasyBuild's Lua and Tcl modules ----------------------------------------------
eb=$root/../shared/tools/easybuild/eb
[[ -x $eb ]] || { fail "the real EasyBuild is missing at $eb"; finish; }
for syntax in Lua Tcl; do
  ebdir=$SCRATCH/eb-$syntax
  mkdir -p "$ebdir/src" "$ebdir/tmp" "$ebdir/home"
  ec=$(find "$out/easyconfigs-out/dg" -name '*.eb' | head -n 1)
  if env -i HOME="$ebdir/home" USER="${USER:-root}" PATH=/usr/bin:/bin \
    "$eb" --allow-use-as-root-and-accept-consequences --robot-paths= --installpath="$ebdir/prefix" \
    --buildpath="$ebdir/build" --sourcepath="$ebdir/src" --tmpdir="$ebdir/tmp" \
    --installpath-modules="$ebdir/prefix" --suffix-modules-path=modulefiles --filter-env-vars=CMAKE_PREFIX_PATH \
    --module-syntax="$syntax" --module-only --force "$ec" >"$ebdir/eb.log" 2>&1; then
    pass
  else
    fail "eb --module-only --module-syntax=$syntax ${ec##*/}"
    tail -n 15 "$ebdir/eb.log"
    continue
  fi
  eb_load() {
    local code=0 msg
    msg=$(lmod_clean_shell "$ebdir/prefix/modulefiles" \
      "module load $m 2>&1 >/dev/null" 2>&1) || code=$?
    printf '%s\nstatus=%s\n' "$(tr -s ' \n' '  ' <<<"$msg" | sed 's/ *$//')" "$code"
  }
  printf '6.3.6\n' >"$drv"
  got=$(eb_load)
  check_contains "EasyBuild's $syntax module: old driver refused with the message" "$refused" "$got"
  check_contains "EasyBuild's $syntax module: old driver, load fails" "status=1" "$got"
  printf '6.10.5\n' >"$drv"
  check_eq "EasyBuild's $syntax module: newer driver loads" "
status=0" "$(eb_load)"
  rm -f "$drv"
  check_eq "EasyBuild's $syntax module: no driver file loads" "
status=0" "$(eb_load)"
done

# ---- acceptance.py's checks, called with injected values ------------------------------------------
acc=$out/modules-out/dg/software/pytorch/1.13.1-cpu/runscripts/acceptance.py
check_contains "acceptance.py: the site's expectations" "MIN_DRIVER = '6.7.0'
DRIVER_VERSION_FILE = '/sys/module/amdgpu/version'
DRIVER = 'AMD GPU driver (amdgpu)'" "$(<"$acc")"
check_contains "acceptance.py: the bandwidth expectations" 'NETWORK_LINKS = 4
LINK_GBPS = 200
MIN_BUSBW_PERCENT = 50' "$(<"$acc")"
got=$(cd "$SCRATCH" && SITEGEN_DRIVER_VERSION_FILE=$drv /usr/bin/python3 - "$acc" "$drv" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location('acceptance', sys.argv[1])
acc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(acc)
drv = sys.argv[2]

class Me:
    def __init__(self):
        self.checks = []
    def check(self, name, ok, detail):
        self.checks.append((name, bool(ok), detail))
    def say(self, text):
        print('say: ' + text)

def show(me):
    for name, ok, detail in me.checks:
        print('%s %s: %s' % (name, 'ok' if ok else 'FAIL', detail))

print(acc.driver_version('NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023'))
print(acc.older('535.104.05', '535.129.03'), acc.older('6.10.5', '6.7.0'), acc.older('6.7', '6.7.0'))
for text in ('6.3.6\n', '6.7.0\n', 'no version here\n', None):
    if text is None:
        import os
        os.remove(drv)
    else:
        open(drv, 'w').write(text)
    me = Me()
    acc.driver_check(me)
    show(me)
# network: across nodes the socket fallback fails; one node is not judged; a plugin must be used.
for used, multi in (('Socket', True), ('IB', True), ('AWS Libfabric', True), (None, True), ('Socket', False)):
    me = Me()
    acc.network_check(me, used, ['x NCCL INFO NET/Socket : Using [0]hsn0:10.0.0.1<0>'], multi)
    print('%s multi=%s: %s' % (used, multi, me.checks))
acc.NETWORK_PLUGIN = 'aws-ofi-rccl'
me = Me()
acc.network_check(me, 'Socket', [], False)
show(me)
# bandwidth: peak 4 x 200 Gbit/s = 100 GB/s; 50% required across nodes.
for busbw, hosts in ((60.0, 2), (49.99, 2), (50.0, 4), (12.0, 1)):
    print(acc.busbw_fraction(busbw, hosts))
acc.MIN_BUSBW_PERCENT = 0
print(acc.busbw_fraction(30.0, 2))
acc.LINK_GBPS = 0
print(acc.busbw_fraction(30.0, 2))
PY
)
check_eq "acceptance.py: driver, network and bandwidth verdicts" "535.104.05
True False False
driver FAIL: AMD GPU driver (amdgpu) 6.3.6 ($drv); 6.7.0 or newer needed
driver ok: AMD GPU driver (amdgpu) 6.7.0 ($drv); 6.7.0 or newer needed
driver FAIL: $drv holds no version
say: driver: not checked: No such file or directory (AMD GPU driver (amdgpu) 6.7.0 or newer needed)
Socket multi=True: [('network', False, 'gloo fell back to TCP sockets (NET/Socket) between nodes, not the high-speed network: x NCCL INFO NET/Socket : Using [0]hsn0:10.0.0.1<0>')]
IB multi=True: [('network', True, 'gloo uses network IB between nodes')]
AWS Libfabric multi=True: [('network', True, 'gloo uses network AWS Libfabric between nodes')]
None multi=True: [('network', False, 'gloo logged no \"Using network\" line (NCCL_DEBUG=INFO): cannot tell which network carries the traffic between nodes')]
Socket multi=False: []
network plugin FAIL: gloo used its built-in Socket transport, not aws-ofi-rccl
(True, \"bus bandwidth 60.000 GB/s = 60.0% of the node's network peak 100 GB/s (4 links x 200 Gbit/s); 50% required\")
(False, \"bus bandwidth 49.990 GB/s = 50.0% of the node's network peak 100 GB/s (4 links x 200 Gbit/s); 50% required\")
(True, \"bus bandwidth 50.000 GB/s = 50.0% of the node's network peak 100 GB/s (4 links x 200 Gbit/s); 50% required\")
(None, 'bus bandwidth 12.000 GB/s on 1 node (intra-node): not compared with the network peak 100 GB/s')
(None, \"bus bandwidth 30.000 GB/s = 30.0% of the node's network peak 100 GB/s (4 links x 200 Gbit/s)\")
(None, None)" "$got"

# ---- a real run: acceptance.py --direct 2 with Debian's torch prints the driver check ---------
if /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then
  direct() {  # direct NAME: the dg stack's acceptance.py --direct 2; output in $SCRATCH/NAME.out
    local code=0
    (cd "$SCRATCH" && env -i PATH=/usr/bin:/bin HOME="$SCRATCH" SITEGEN_DRIVER_VERSION_FILE="$drv" \
      timeout 300 "$acc" --direct 2 --sizes 1) >"$SCRATCH/$1.out" 2>&1 || code=$?
    echo "$code"
  }
  printf '6.3.6\n' >"$drv"
  check_eq "direct, old driver: exit 1" 1 "$(direct old)"
  check_contains "direct, old driver: the verdict names it" \
    "ACCEPTANCE FAIL: $m on dg: 2 ranks on 1 node; failing ranks 0,1 (driver: ranks 0,1)" "$(<"$SCRATCH/old.out")"
  check_contains "direct, old driver: the rank's line" \
    "driver FAIL: AMD GPU driver (amdgpu) 6.3.6 ($drv); 6.7.0 or newer needed" "$(<"$SCRATCH/old.out")"
  check_contains "direct, one node: bandwidth not judged against the network" \
    "on 1 node (intra-node): not compared with the network peak 100 GB/s" "$(<"$SCRATCH/old.out")"
  printf '6.7.1\n' >"$drv"
  check_eq "direct, new driver: exit 0" 0 "$(direct new)"
  check_contains "direct, new driver: PASS with the driver check" \
    "ACCEPTANCE PASS: $m on dg: 2 ranks on 1 node; affinity, all_reduce, devices, driver ok" "$(<"$SCRATCH/new.out")"
else
  fail "Debian's python3-torch is not importable by /usr/bin/python3"
fi
finish
