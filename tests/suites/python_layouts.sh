#!/usr/bin/env bash
# The python layouts without conda in the image and the conda env from an environment file,
# each proven by the programs that consume their outputs:
#
#   container-system-venv  a charliecloud site; a small image directory (Debian's /usr with
#                          python3-torch bound in, as charliecloud_e2e.sh); the venv is made
#                          by the easyconfig's own install commands (postinstallcmds, run as
#                          EasyBuild templates them) through ch-run, inside the image; the
#                          module loads in real Lmod and a 2-rank gloo job on the real
#                          one-node Slurm runs python in the image with the venv active
#                          (sys.prefix, a package only the venv holds, torch from the image).
#   conda-env + file       a bare-metal site whose conda env comes from an environment file;
#                          the real EasyBuild checks (--dry-run, -x) and a full install with a
#                          STAND-IN `conda` (Debian has none) that records its argv: the exact
#                          `conda env create` call, the file installed byte for byte; the
#                          installed module (EasyBuild's) and sitegen's load and unload in
#                          real Lmod, and `python` under it is the environment's.
#   module-venv            a bare-metal site installed by the real EasyBuild with the host's
#                          python3.11: the venv's home is /usr/bin, and under EasyBuild's
#                          module `python` is the venv's (its site-packages first, on
#                          PYTHONPATH) and imports the base's torch.
set -euo pipefail
sitegen=$(realpath "${1:?usage: python_layouts.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool python3 ch-run sbatch srun slurmctld slurmd unshare
export USER=${USER:-root}  # ch-run refuses to start without $USER
eb=$(git -C "$root" rev-parse --show-toplevel)/../shared/tools/easybuild/eb
[[ -x $eb ]] || { fail "real EasyBuild not found at $eb"; finish; }

# install_commands EASYCONFIG INSTALLDIR: the easyconfig's postinstallcmds, templated as
# EasyBuild's resolve_template does (a % that starts no %(name)s template is doubled, then
# %-formatting), one JSON string per line.
install_commands() {
  /usr/bin/python3 - "$1" "$2" <<'EOF'
import json, re, sys
env = {"SYSTEM": {"name": "system", "version": "system"}, "EXTERNAL_MODULE": "EXTERNAL_MODULE"}
exec(open(sys.argv[1]).read(), env)
for cmd in env["postinstallcmds"]:
    print(json.dumps(re.sub(r"(%)(?!%*\(\w+\)s)", r"\1\1", cmd) % {"installdir": sys.argv[2]}))
EOF
}

# install_script EASYCONFIG INSTALLDIR: a bash script running them in order, each in its own
# bash as EasyBuild does, stopping at the first that fails.
install_script() {
  echo 'set -e'
  install_commands "$1" "$2" | /usr/bin/python3 -c 'import json, shlex, sys
for line in sys.stdin:
    print("bash -c " + shlex.quote(json.loads(line)))'
}

# ============================================================================================
# container-system-venv under charliecloud
work=$SCRATCH/work
images=$SCRATCH/images
prefix=$SCRATCH/prefix
mkdir -p "$work" "$images" "$SCRATCH/sites/chvenv"
img=$images/debian-torch
mkdir -p "$img"/{usr,etc/alternatives,tmp,dev,proc,sys,home,mnt,root,var,run,runscripts,user-software}
cp /etc/passwd /etc/group "$img/etc/"
: >"$img/etc/hosts"
: >"$img/etc/resolv.conf"
for d in bin lib lib64 sbin; do ln -s "usr/$d" "$img/$d"; done

cat >"$SCRATCH/sites/chvenv/site.toml" <<TOML
[site]
name = "chvenv"
description = "a venv over a charliecloud image's python"
scheduler = "slurm"
launcher = "srun"
install_prefix = "/opt/sitegen-chvenv"

[hardware]
gpu_vendor = "none"
devices_per_node = 0
cores_per_node = 2

[batch]
tasks_per_node = 2
cpus_per_task = 1
partition = "debug"
time = "00:05:00"

[collectives]
library = "gloo"
master_port_base = 41000

[collectives.env]
GLOO_SOCKET_IFNAME = "lo"

[container]
runtime = "charliecloud"
image_dir = "$images"
binds = [{ host = "/usr" }, { host = "/etc/alternatives" }, { host = "$work" }]

[python]
layout = "container-system-venv"
version = "3.11"
interpreter = "/usr/bin/python3"
venv = "/user-software/venv/torch"

[[stacks]]
name = "pytorch"
version = "1.13.1"
versionsuffix = "-venv"
description = "a venv over Debian's torch in a charliecloud image"
homepage = "https://pytorch.org/"
image = "debian-torch"
TOML
if "$sitegen" --sites-dir "$SCRATCH/sites" --out-dir "$SCRATCH/out" build chvenv --prefix "$prefix" >"$SCRATCH/build.log" 2>&1; then
  pass "sitegen builds the container-system-venv site"
else
  fail "sitegen build: $(cat "$SCRATCH/build.log")"
  finish
fi
stack=$prefix/software/pytorch/1.13.1-venv
ec=$SCRATCH/out/easyconfigs-out/chvenv/p/pytorch/pytorch-1.13.1-venv.eb
mkdir -p "$stack"
# EasyBuild's source step (MakeCp) copies the image into the install dir, where the install
# commands run it.
cp -a "$img" "$stack/debian-torch"
# The install commands, as written into the easyconfig (paths as EasyBuild templates them).
check_eq "easyconfig: the venv is made inside the image by its python" \
  "mkdir -p \"$stack/bin\" \"$stack/runscripts\"
mkdir -p \"$stack/user-software\"
ch-run -b \"$stack/user-software:/user-software\" \"$stack/\"debian-torch -- bash -c 'mkdir -p /user-software/venv && /usr/bin/python3 -m venv --system-site-packages /user-software/venv/torch'" \
  "$(install_commands "$ec" "$stack" | python3 -c 'import json, sys; [print(json.loads(l)) for l in sys.stdin.read().splitlines()[:3]]')"
# The image brings its own python (as an NGC or Debian image does): here Debian's /usr and
# /etc/alternatives are mounted into the image directory, in a mount namespace of the
# install only; the install commands bind nothing but /user-software.
install_script "$ec" "$stack" >"$SCRATCH/install.sh"
# shellcheck disable=SC2016  # $1 and $2 are the inner bash's arguments
if out=$(unshare -m --propagation private bash -c 'mount --bind /usr "$1/usr" &&
    mount --bind /etc/alternatives "$1/etc/alternatives" && bash "$2"' ns "$stack/debian-torch" "$SCRATCH/install.sh" 2>&1); then
  pass "the install commands ran"
else
  fail "install commands: $out"
fi
if [[ -x $stack/user-software/venv/torch/bin/python3 ]]; then pass "the venv exists"; else fail "no venv in $stack/user-software"; fi
check_eq "the venv's home is the image's python" "home = /usr/bin" \
  "$(grep '^home = ' "$stack/user-software/venv/torch/pyvenv.cfg" || true)"
check_eq "the venv keeps the image's packages" "include-system-site-packages = true" \
  "$(grep '^include-system-site-packages' "$stack/user-software/venv/torch/pyvenv.cfg" || true)"
# A package only the venv holds, to see that the job's python is the venv's.
echo 'WHERE = "venv"' >"$stack/user-software/venv/torch/lib/python3.11/site-packages/sitegen_venv_marker.py"
if diff -r "$SCRATCH/out/modules-out/chvenv/software/pytorch/1.13.1-venv/runscripts" "$stack/runscripts" >"$SCRATCH/diff" 2>&1; then
  pass "the installed scripts are sitegen's"
else
  fail "installed scripts differ: $(cat "$SCRATCH/diff")"
fi
cp -a "$SCRATCH/out/modules-out/chvenv/modulefiles" "$prefix/"

if vars=$(lmod_vars_set_by "$prefix/modulefiles" pytorch/1.13.1-venv 2>&1); then pass "module loads"; else fail "module load: $vars"; fi
check_eq "module: CONTAINER_BINDS with the venv's /user-software" \
  "/usr,/etc/alternatives,$work,$stack/runscripts:/runscripts,$stack/user-software:/user-software" \
  "$(sed -n 's/^CONTAINER_BINDS=//p' <<<"$vars")"
check_eq "module: no conda variable" "" "$(grep -i conda <<<"$vars" || true)"
if out=$(lmod_load_unload_roundtrip "$prefix/modulefiles" pytorch/1.13.1-venv); then pass "load/unload round trip"; else fail "round trip: $out"; fi
if grep -rqi conda "$stack/runscripts" "$prefix/modulefiles"; then fail "a generated file mentions conda"; else pass "no file mentions conda"; fi

slurm_up
cat >"$work/venv_job.py" <<'PY'
import os
import sys
import torch
import torch.distributed as dist
import sitegen_venv_marker
dist.init_process_group("gloo", init_method="env://")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
inside = "in-container" if os.environ.get("CH_RUNNING") else "on-host"
print(f"RANK={dist.get_rank()} SUM={t.item():g} {inside} prefix={sys.prefix} base={sys.base_prefix}",
      f"VIRTUAL_ENV={os.environ.get('VIRTUAL_ENV')} marker={sitegen_venv_marker.WHERE}",
      f"torch={os.path.dirname(torch.__file__)}", flush=True)
dist.destroy_process_group()
PY
log=$work/venv.out
code=0
(cd "$work" && sbatch --wait --quiet -o "$log" "$stack/runscripts/job.slurm" "$work/venv_job.py") || code=$?
if [[ $code -eq 0 ]]; then pass "the venv job succeeded"; else fail "job exited $code: $(cat "$log")"; fi
for rank in 0 1; do
  check_eq "rank $rank: the venv's python in the image, torch from the image" \
    "RANK=$rank SUM=3 in-container prefix=/user-software/venv/torch base=/usr VIRTUAL_ENV=/user-software/venv/torch marker=venv torch=/usr/lib/python3/dist-packages/torch" \
    "$(grep "^RANK=$rank " "$log" || cat "$log")"
done

# ============================================================================================
# conda-env from an environment file, bare metal, through the real EasyBuild
mkdir -p "$SCRATCH/sites/condafile/env"
# The file as a site keeps it; its quotes, '%' and trailing spaces must reach conda unchanged.
printf '%s\n' "name: torch-env" "channels:" "  - conda-forge" "dependencies:" "  - python=3.11" \
  "  - pytorch=1.13.1 # 100% 'pinned' " >"$SCRATCH/sites/condafile/env/torch.yml"
cat >"$SCRATCH/sites/condafile/site.toml" <<'TOML'
[site]
name = "condafile"
description = "a conda env from an environment file"
scheduler = "slurm"
launcher = "srun"
install_prefix = "/opt/sitegen-condafile"

[hardware]
gpu_vendor = "none"
devices_per_node = 0
cores_per_node = 2

[collectives]
library = "gloo"

[python]
layout = "conda-env"
version = "3.11"
environment_file = "env/torch.yml"

[[stacks]]
name = "pytorch"
version = "1.13.1"
versionsuffix = "-condafile"
description = "torch from a conda environment file"
homepage = "https://pytorch.org/"

[stacks.components]
torch = "1.13.0a0"  # what Debian's 1.13.1+dfsg reports as torch.__version__
TOML
cprefix=$SCRATCH/cprefix
if "$sitegen" --sites-dir "$SCRATCH/sites" --out-dir "$SCRATCH/cout" build condafile --prefix "$cprefix" >"$SCRATCH/cbuild.log" 2>&1; then
  pass "sitegen builds the conda-env-file site"
else
  fail "sitegen build: $(cat "$SCRATCH/cbuild.log")"
  finish
fi
cec=$SCRATCH/cout/easyconfigs-out/condafile/p/pytorch/pytorch-1.13.1-condafile.eb
cmods=$SCRATCH/cout/modules-out/condafile/modulefiles
if out=$(lmod_load_unload_roundtrip "$cmods" pytorch/1.13.1-condafile); then pass "sitegen's module: load/unload"; else fail "round trip: $out"; fi
check_eq "sitegen's module: CONDA_PREFIX" "CONDA_PREFIX=$cprefix/software/pytorch/1.13.1-condafile/conda-env" \
  "$(lmod_vars_set_by "$cmods" pytorch/1.13.1-condafile | grep '^CONDA_PREFIX=')"

# STAND-IN for conda (Debian has no conda): records its argv, one word per line, and makes
# the --prefix an environment whose python is the host's (Debian's torch), so the payload
# check that EasyBuild runs afterwards has a real interpreter.
standin=$SCRATCH/standin
mkdir -p "$standin" "$SCRATCH/home"
cat >"$standin/conda" <<SH
#!/bin/bash
# STAND-IN conda for tests/suites/python_layouts.sh: records argv, fakes the environment.
printf '%s\n' "\$@" >>'$SCRATCH/conda-argv'
prefix=
while [[ \$# -gt 0 ]]; do
  [[ \$1 == --prefix ]] && prefix=\$2
  shift
done
mkdir -p "\$prefix/bin" "\$prefix/conda-meta"
for p in python python3 python3.11; do ln -sf /usr/bin/python3.11 "\$prefix/bin/\$p"; done
SH
chmod +x "$standin/conda"
d=$SCRATCH/eb
mkdir -p "$d/src" "$d/tmp"
eb_opts=(--allow-use-as-root-and-accept-consequences --robot-paths= --installpath="$d/prefix" --buildpath="$d/build"
  --sourcepath="$d/src" --tmpdir="$d/tmp" --installpath-modules="$d/prefix" --suffix-modules-path=modulefiles)
run_eb() {
  env -i "HOME=$SCRATCH/home" "USER=$USER" "SITEGEN_EB_CACHE=${SITEGEN_EB_CACHE:-${HOME:-/tmp}/.cache/easybuild-5.2.1}" \
    "PATH=$standin:/usr/bin:/bin" "MODULEPATH=$d/prefix/modulefiles" "$eb" "${eb_opts[@]}" "$@"
}
if run_eb --dry-run "$cec" >"$SCRATCH/eb-dry.log" 2>&1; then pass "eb --dry-run"; else fail "eb --dry-run: $(tail -n 15 "$SCRATCH/eb-dry.log")"; fi
if run_eb -x "$cec" >"$SCRATCH/eb-x.log" 2>&1 && ! grep -v rpath_wrappers "$SCRATCH/eb-x.log" | grep 'ignoring error' >/dev/null; then
  pass "eb -x"
else
  fail "eb -x: $(grep -E 'ignoring error|ERROR' "$SCRATCH/eb-x.log" | head -n 10 || tail -n 15 "$SCRATCH/eb-x.log")"
fi
: >"$SCRATCH/conda-argv"
if run_eb "$cec" >"$SCRATCH/eb-install.log" 2>&1; then pass "eb installs the stack"; else fail "eb install: $(grep -E 'ERROR|FAILED' "$SCRATCH/eb-install.log" | head -n 10 || tail -n 15 "$SCRATCH/eb-install.log")"; fi
inst=$d/prefix/software/pytorch/1.13.1-condafile
check_eq "stand-in conda: the exact call" "env
create
--prefix
$inst/conda-env
--file
$inst/conda-environment.yml" "$(cat "$SCRATCH/conda-argv")"
if cmp "$SCRATCH/sites/condafile/env/torch.yml" "$inst/conda-environment.yml" >"$SCRATCH/cmp" 2>&1; then
  pass "the environment file is installed byte for byte"
else
  fail "environment file: $(cat "$SCRATCH/cmp")"
fi
emods=$d/prefix/modulefiles
if out=$(lmod_load_unload_roundtrip "$emods" pytorch/1.13.1-condafile); then pass "EasyBuild's module: load/unload"; else fail "round trip: $out"; fi
check_eq "EasyBuild's module: python is the environment's" "$inst/conda-env/bin/python" \
  "$(lmod_clean_shell "$emods" 'module load pytorch/1.13.1-condafile && command -v python')"

# ============================================================================================
# module-venv, bare metal, installed by the real EasyBuild with the host's real python3.11
# (no components: nothing to pip-install without a network)
mkdir -p "$SCRATCH/sites/modvenv"
cat >"$SCRATCH/sites/modvenv/site.toml" <<'TOML'
[site]
name = "modvenv"
description = "a venv over the host's python"
scheduler = "slurm"
launcher = "srun"
install_prefix = "/opt/sitegen-modvenv"

[hardware]
gpu_vendor = "none"
devices_per_node = 0
cores_per_node = 2

[collectives]
library = "gloo"

[python]
layout = "module-venv"
version = "3.11"

[[stacks]]
name = "pytorch"
version = "1.13.1"
versionsuffix = "-modvenv"
description = "a venv over Debian's python3 with its torch"
homepage = "https://pytorch.org/"
TOML
if "$sitegen" --sites-dir "$SCRATCH/sites" --out-dir "$SCRATCH/vout" build modvenv >"$SCRATCH/vbuild.log" 2>&1; then
  pass "sitegen builds the module-venv site"
else
  fail "sitegen build: $(cat "$SCRATCH/vbuild.log")"
  finish
fi
vec=$SCRATCH/vout/easyconfigs-out/modvenv/p/pytorch/pytorch-1.13.1-modvenv.eb
if run_eb "$vec" >"$SCRATCH/eb-venv.log" 2>&1; then pass "eb installs the module-venv stack"; else fail "eb install: $(grep -E 'ERROR|FAILED' "$SCRATCH/eb-venv.log" | head -n 10 || tail -n 15 "$SCRATCH/eb-venv.log")"; fi
vinst=$d/prefix/software/pytorch/1.13.1-modvenv
check_eq "the venv's home is the module's python" "home = /usr/bin" "$(grep '^home = ' "$vinst/venv/pyvenv.cfg" || true)"
if out=$(lmod_load_unload_roundtrip "$emods" pytorch/1.13.1-modvenv); then pass "module-venv: load/unload"; else fail "round trip: $out"; fi
check_eq "module-venv: python is the venv's, with the base's torch" "$vinst/venv $vinst/venv/lib/python3.11/site-packages torch=1.13.0a0" \
  "$(lmod_clean_shell "$emods" 'module load pytorch/1.13.1-modvenv && python -c "import sys, torch; print(sys.prefix, [p for p in sys.path if p.endswith(\"site-packages\")][0], \"torch=\" + torch.__version__)"')"
finish
