#!/usr/bin/env bash
# module_system = "environment-modules": every site rebuilt with Tcl modulefiles, loaded by
# the real Environment Modules 5.2 (modulecmd.tcl, unpacked by install-deps.sh). Each module
# sets exactly what the same site's Lua module sets in the real Lmod, unloads back to the
# environment it found, is the default where the site says so, shows its help and whatis;
# Lmod reads the Tcl form the same way. A site of hostile values sets their exact bytes and
# runs none of them.
set -euo pipefail
sitegen=$(realpath "${1:?usage: tcl_modulefiles.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool tclsh python3
[[ -r $LMOD_INIT ]] || { fail "lmod is not installed"; finish; }
modulecmd=${SITEGEN_ENV_MODULES_ROOT:-/opt/sitegen-deps/environment-modules}/usr/lib/x86_64-linux-gnu/modulecmd.tcl
[[ -f $modulecmd ]] || { fail "Environment Modules' modulecmd.tcl not found at $modulecmd (tests/tools/install-deps.sh)"; finish; }

sites=(lumi frontier cirrus aurora local polaris perlmutter alps tuolumne)
out=$SCRATCH/lua tout=$SCRATCH/tcl
# The same sites, naming Environment Modules: one line added under [site].
cp -a "$root/sites" "$SCRATCH/tcl-sites"
for site in "${sites[@]}"; do
  sed -i 's/^\[site\]$/[site]\nmodule_system = "environment-modules"/' "$SCRATCH/tcl-sites/$site/site.toml"
done
for site in "${sites[@]}"; do
  # Both module trees point at one install tree (the Lua build's), so their file tests agree.
  "$sitegen" --sites-dir "$root/sites" --out-dir "$out" build "$site" --prefix "$out/modules-out/$site" >/dev/null
  "$sitegen" --sites-dir "$SCRATCH/tcl-sites" --out-dir "$tout" build "$site" --prefix "$out/modules-out/$site" >/dev/null
done
# The installed images (EasyBuild copies them into each stack's root): every image the site names.
for site in "${sites[@]}"; do
  python3 - "$root/sites/$site/site.toml" "$out/modules-out/$site/software" <<'PY'
import os, sys, tomllib
images = [s["image"] for s in tomllib.load(open(sys.argv[1], "rb")).get("stacks", []) if "image" in s]
for name in os.listdir(sys.argv[2]):
    for version in os.listdir(os.path.join(sys.argv[2], name)):
        for image in images:
            if image.endswith(".sif") or image.endswith(".sqsh"):
                open(os.path.join(sys.argv[2], name, version, image), "a").close()
PY
done
# Base modules the sites depend on, as empty stubs in both syntaxes (they are the site's).
stubs=$SCRATCH/stubs tstubs=$SCRATCH/stubs-tcl
for m in LUMI/24.03 PrgEnv-gnu/8.5.0 miniforge3/23.11.0-0 rocm/6.0.0 craype-accel-amd-gfx90a python/3.12.1-gpu \
  conda/2025-09-25 pytorch/2.8.0 rocm/6.4.1 cray-python/3.11.7; do
  mkdir -p "$stubs/$(dirname "$m")" "$tstubs/$(dirname "$m")"
  echo "-- stub of the site's own $m" >"$stubs/$m.lua"
  printf '#%%Module\n# stub of the site'"'"'s own %s\n' "$m" >"$tstubs/$m"
done

# envmod SCRIPT [ARG...]: SCRIPT runs in a clean bash where `module` is Environment Modules'
# (modulecmd.tcl, real Tcl; `eval` of the code it prints, as its init script does).
envmod() {
  local script=$1
  shift
  # shellcheck disable=SC2016 # expanded by the clean bash
  env -i HOME="$SCRATCH/home" USER="${USER:-root}" PATH=/usr/bin:/bin LC_ALL=C MODULECMD="$modulecmd" \
    bash --noprofile --norc -c 'module() { local code; code=$(tclsh "$MODULECMD" bash "$@") || return 1; eval "$code"; }
envdump() { env -0 | grep -zEv "^(__MODULES_[A-Za-z0-9_]*|_LMFILES_|LOADEDMODULES|MODULES_[A-Za-z0-9_]*|_)=" | sort -z | tr "\n\0" "\001\n"; }
'"$script" envmod "$@"
}
mkdir -p "$SCRATCH/home"

# envmod_vars_set_by MODULEPATH MODULE: NAME=value lines the load adds or changes, then
# "unset NAME" lines, sorted, as lmod_vars_set_by prints them for Lmod.
# shellcheck disable=SC2016 # expanded by the clean bash
envmod_vars_set_by() {
  envmod 'export MODULEPATH=$1; t=$(mktemp -d); trap "rm -rf \"$t\"" EXIT
    envdump >"$t/before"
    module load "$2" 2>"$t/err" || { cat "$t/err"; exit 1; }
    grep -q ERROR "$t/err" && { cat "$t/err"; exit 1; }
    envdump >"$t/after"
    comm -13 "$t/before" "$t/after"
    cut -d= -f1 "$t/before" >"$t/nb"; cut -d= -f1 "$t/after" >"$t/na"
    comm -23 "$t/nb" "$t/na" | sed "s/^/unset /"' "$1" "$2"
}
# Lmod's view without its own records.
lmod_vars() { lmod_vars_set_by "$1" "$2" | grep -Ev '^(__LMOD|_ModuleTable|LMOD_)' || true; }

for site in "${sites[@]}"; do
  lmp=$out/modules-out/$site/modulefiles:$stubs
  tmp=$tout/modules-out/$site/modulefiles:$tstubs
  tdir=$tout/modules-out/$site/modulefiles
  # The Tcl tree has what the Lua tree has, without .lua, and .modulerc for .modulerc.lua.
  lua_files=$(cd "$out/modules-out/$site/modulefiles" && find . -type f | sed 's|\.lua$||' | sort)
  tcl_files=$(cd "$tdir" && find . -type f | sort)
  check_eq "$site: the Tcl tree holds the Lua tree's modulefiles and defaults" "$lua_files" "$tcl_files"
  while IFS= read -r mod; do
    [[ $mod == */.modulerc ]] && continue
    mod=${mod#./}
    if head -n1 "$tdir/$mod" | grep -qx '#%Module'; then pass; else fail "$site: $mod does not start with #%Module"; fi
    if ! lua=$(lmod_vars "$lmp" "$mod" 2>&1); then fail "$site: Lmod cannot load the Lua $mod: $lua"; continue; fi
    if tcl=$(envmod_vars_set_by "$tmp" "$mod" 2>&1); then
      check_eq "$site: $mod sets in Environment Modules what the Lua module sets in Lmod" "$lua" "$tcl"
    else
      fail "$site: Environment Modules cannot load $mod: $tcl"
    fi
    if lmod_tcl=$(lmod_vars "$tmp" "$mod" 2>&1); then
      check_eq "$site: Lmod reads the Tcl $mod as the Lua one" "$lua" "$lmod_tcl"
    else
      fail "$site: Lmod cannot load the Tcl $mod: $lmod_tcl"
    fi
    # shellcheck disable=SC2016
    if report=$(envmod 'export MODULEPATH=$1; envdump >"$HOME/before"
        module load "$2" && module unload "$2" || exit 1
        envdump | diff "$HOME/before" - ' "$tmp" "$mod" 2>&1); then
      pass
    else
      fail "$site: unloading $mod does not restore the environment: $report"
    fi
    # shellcheck disable=SC2016
    help=$(envmod 'export MODULEPATH=$1; module help "$2" 2>&1' "$tmp" "$mod")
    check_contains "$site: module help $mod shows the module's help" "Module Specific Help" "$help"
    # shellcheck disable=SC2016
    whatis=$(envmod 'export MODULEPATH=$1; module whatis "$2" 2>&1' "$tmp" "$mod")
    check_contains "$site: module whatis $mod" "Description: " "$whatis"
  done <<<"$tcl_files"
  # The default version, by name alone.
  while IFS= read -r rc; do
    name=${rc#./}
    name=${name%/.modulerc}
    lua_default=$(lmod_clean_shell "$lmp" "module load '$name' && module -t list 2>&1 | grep '^$name/'")
    # shellcheck disable=SC2016
    tcl_default=$(envmod 'export MODULEPATH=$1; module load "$2" 2>/dev/null && tr : "\n" <<<"$LOADEDMODULES" | grep "^$2/"' "$tmp" "$name")
    check_eq "$site: module load $name picks the site's default" "$lua_default" "$tcl_default"
  done < <(cd "$tdir" && find . -name .modulerc)
done

# By hand for the CPU-only local site: the variables its module sets in Environment Modules.
r=$out/modules-out/local/software/pytorch/1.13.1-cpu
if actual=$(envmod_vars_set_by "$tout/modules-out/local/modulefiles:$tstubs" pytorch/1.13.1-cpu); then
  check_eq "local: exact variables under Environment Modules" "GLOO_SOCKET_IFNAME=lo
PATH=$r/bin:/usr/bin:/bin
RUNSCRIPTS=$r/runscripts" "$(tr '\001' '\n' <<<"$actual")"
else
  fail "local: Environment Modules cannot load pytorch/1.13.1-cpu: $actual"
fi

# Hostile values: each payload would create $marker if anything ran it.
marker=$SCRATCH/MARKER
toml() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }
evil="\"} ]\$(touch $marker) [exec touch $marker] \${HOME} \\ {"
description="\"} [exec touch $marker]
\$(touch $marker) {"
image="pt \"} [exec id] \$(id) {.sif"
mkdir -p "$SCRATCH/sites/evil"
cat >"$SCRATCH/sites/evil/site.toml" <<TOML
[site]
name = "evil"
description = "hostile values"
scheduler = "slurm"
launcher = "srun"
install_prefix = "/opt/evil"
module_system = "environment-modules"

[hardware]
gpu_vendor = "none"
devices_per_node = 0
cores_per_node = 4

[collectives]
library = "gloo"

[container]
runtime = "apptainer"
image_dir = "/images"

[python]
layout = "container-system"
version = "3.12"
interpreter = "/usr/bin/python3"

[[stacks]]
name = "Evil-Box"
version = "1.0"
image = $(toml "$image")
default = true
homepage = "https://example.org/?a=1&b=']]'"
description = $(toml "$description")

[stacks.env]
EVIL = $(toml "$evil")
TOML
# The prefix is hostile too (it is `root`); the module tree itself sits on a plain path, since
# Environment Modules globs MODULEPATH entries ([ and { there are its own problem, not ours).
eout=$SCRATCH/evil-out
eprefix="$SCRATCH/p \"q\" [exec touch $marker] \$(touch $marker) {x"
if ! msg=$("$sitegen" --sites-dir "$SCRATCH/sites" --out-dir "$eout" build evil --prefix "$eprefix" 2>&1); then
  fail "evil: sitegen build failed: $msg"
  finish
fi
er=$eprefix/software/Evil-Box/1.0
mkdir -p "$er" && : >"$er/$image"
emp=$eout/modules-out/evil/modulefiles
actual=$(envmod_vars_set_by "$emp" Evil-Box/1.0 | tr '\001' '\n') || fail "evil: module load failed: $actual"
check_contains "evil: EVIL holds its exact bytes" "EVIL=$evil" "$actual"
check_contains "evil: SIF names the installed image" "SIF=$er/$image" "$actual"
# shellcheck disable=SC2016
help=$(envmod 'export MODULEPATH=$1; module help Evil-Box/1.0 2>&1' "$emp" || true)
check_contains "evil: module help shows the description byte for byte" "$description" "$help"
rm -f "$er/$image"
# shellcheck disable=SC2016
if msg=$(envmod 'export MODULEPATH=$1; module load Evil-Box/1.0 2>&1' "$emp"); then
  fail "evil: module load succeeded with no image anywhere"
else
  check_contains "evil: missing-image error names the image" "not found in" "$msg"
fi
if [[ -e $marker ]]; then fail "evil: a payload ran (found $marker)"; else pass; fi

# The driver gate in real Tcl: a stack that needs NVIDIA driver 535.129.03, its module loaded
# against version files written here (SITEGEN_DRIVER_VERSION_FILE, as driver_gate.sh does for Lmod).
mkdir -p "$SCRATCH/sites/gate"
cat >"$SCRATCH/sites/gate/site.toml" <<'TOML'
[site]
name = "gate"
description = "driver gate in Environment Modules"
scheduler = "slurm"
launcher = "srun"
install_prefix = "/opt/gate"
module_system = "environment-modules"

[hardware]
gpu_vendor = "nvidia"
devices_per_node = 1
cores_per_node = 4
device_cores = ["0-3"]

[collectives]
library = "nccl"
visibility_var = "CUDA_VISIBLE_DEVICES"

[python]
layout = "system"
version = "3.11"
interpreter = "/usr/bin/python3"

[[stacks]]
name = "Gated"
version = "1.0"
min_driver = "535.129.03"
homepage = "https://example.org/"
description = "a stack that needs driver 535.129.03"
TOML
if ! msg=$("$sitegen" --sites-dir "$SCRATCH/sites" --out-dir "$SCRATCH/gate-out" build gate 2>&1); then
  fail "gate: sitegen build failed: $msg"
  finish
fi
# gate_load VERSION-FILE-TEXT: exit status and messages of `module load Gated/1.0`.
gate_load() {
  printf '%s\n' "$1" >"$SCRATCH/driver-version"
  # shellcheck disable=SC2016 # expanded by the clean bash
  envmod 'export MODULEPATH=$1 SITEGEN_DRIVER_VERSION_FILE=$2
    module load Gated/1.0 2>&1; echo "rc=$? loaded=${LOADEDMODULES:-}"' \
    "$SCRATCH/gate-out/modules-out/gate/modulefiles" "$SCRATCH/driver-version"
}
out=$(gate_load "NVRM version: NVIDIA UNIX x86_64 Kernel Module  530.30.02  Wed Feb 22 04:11:39 UTC 2023")
check_contains "gate: an older driver is refused, naming its version" "530.30.02" "$out"
check_contains "gate: an older driver leaves nothing loaded" "loaded=" "$out"
if [[ $out != *"loaded=Gated/1.0"* ]]; then pass; else fail "gate: Gated/1.0 loaded over an older driver: $out"; fi
out=$(gate_load "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 UTC 2023")
check_contains "gate: the minimum driver loads" "loaded=Gated/1.0" "$out"
out=$(gate_load "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15")
check_contains "gate: a newer driver loads (numbers compared as numbers)" "loaded=Gated/1.0" "$out"
# No dotted version in the file (a literal dot is required): nothing to compare, so it loads.
out=$(gate_load "driver 530x30")
check_contains "gate: a file without a dotted version loads" "loaded=Gated/1.0" "$out"

finish
