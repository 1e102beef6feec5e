#!/usr/bin/env bash
# A container stack proven in a real runtime: a charliecloud site (ch-run, the image's own
# python) is generated, a small image directory is built (Debian's /usr with python3-torch
# bound in, as ../shared/notes/containers-and-modules.md verified), and the generated
# job.slurm runs 2 ranks on the real one-node Slurm: srun -> ch-run with the module's
# CONTAINER_BINDS as -b flags -> the rank wrapper inside the container -> a gloo all_reduce.
set -euo pipefail
sitegen=$(realpath "${1:?usage: charliecloud_e2e.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool ch-run sbatch srun slurmctld slurmd
export USER=${USER:-root}  # ch-run refuses to start without $USER

work=$SCRATCH/work
images=$SCRATCH/images
prefix=$SCRATCH/prefix
mkdir -p "$work" "$images" "$SCRATCH/sites/chlocal"

# ---- The image: an empty Debian-shaped tree; /usr and /etc/alternatives come from the host.
img=$images/debian-torch
mkdir -p "$img"/{usr,etc/alternatives,tmp,dev,proc,sys,home,mnt,root,var,run,runscripts,user-software}
cp /etc/passwd /etc/group "$img/etc/"
: >"$img/etc/hosts"
: >"$img/etc/resolv.conf"
for d in bin lib lib64 sbin; do ln -s "usr/$d" "$img/$d"; done
if ch-run -b /usr:/usr -b /etc/alternatives:/etc/alternatives "$img" -- /usr/bin/python3 -c 'import torch' 2>"$SCRATCH/ch.err"; then
  pass "ch-run imports torch in the image"
else
  fail "ch-run cannot run python3 in the image: $(cat "$SCRATCH/ch.err")"
  finish
fi

# ---- The site: charliecloud, the image's own python, the work dir bound in.
cat >"$SCRATCH/sites/chlocal/site.toml" <<TOML
[site]
name = "chlocal"
description = "charliecloud on the local one-node Slurm"
scheduler = "slurm"
launcher = "srun"
install_prefix = "/opt/sitegen-ch"

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
# Away from the local site's 29500+: other suites' clusters may run jobs on this host too.
master_port_base = 40000

[collectives.env]
GLOO_SOCKET_IFNAME = "lo"

[container]
runtime = "charliecloud"
image_dir = "$images"
binds = [{ host = "/usr" }, { host = "/etc/alternatives" }, { host = "$work" }]

[python]
layout = "container-system"
version = "3.11"
interpreter = "/usr/bin/python3"

[[stacks]]
name = "pytorch"
version = "1.13.1"
versionsuffix = "-ch"
description = "Debian's torch in a charliecloud image"
homepage = "https://pytorch.org/"
image = "debian-torch"
TOML
if "$sitegen" --sites-dir "$SCRATCH/sites" --out-dir "$SCRATCH/out" build chlocal --prefix "$prefix" >"$SCRATCH/build.log" 2>&1; then
  pass "sitegen builds the charliecloud site"
else
  fail "sitegen build: $(cat "$SCRATCH/build.log")"
  finish
fi
cp -a "$SCRATCH/out/modules-out/chlocal/." "$prefix/"
stack=$prefix/software/pytorch/1.13.1-ch
job=$stack/runscripts/job.slurm
# shellcheck disable=SC2016  # the job's own text, not expanded here
check_contains "job runs the wrapper through ch-run" \
  'srun ch-run "${bind_flags[@]}" "$SIFPYTORCH" -- /runscripts/python-distributed "$@"' "$(cat "$job")"

# ---- The module in real Lmod: the directory image is found, the binds are listed.
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
if vars=$(lmod_vars_set_by "$prefix/modulefiles" pytorch/1.13.1-ch 2>&1); then pass "module loads"; else fail "module load: $vars"; fi
check_eq "module: CONTAINER_BINDS" "/usr,/etc/alternatives,$work,$stack/runscripts:/runscripts" \
  "$(sed -n 's/^CONTAINER_BINDS=//p' <<<"$vars")"
check_eq "module: the directory image from image_dir" "$img" "$(sed -n 's/^SIFPYTORCH=//p' <<<"$vars")"
if out=$(lmod_load_unload_roundtrip "$prefix/modulefiles" pytorch/1.13.1-ch); then pass "load/unload round trip"; else fail "round trip: $out"; fi

# ---- A real one-node Slurm.
slurm_up

cat >"$work/allreduce.py" <<'PY'
import os
import torch
import torch.distributed as dist
dist.init_process_group("gloo", init_method="env://")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
inside = "in-container" if os.environ.get("CH_RUNNING") else "on-host"
print(f"RANK={dist.get_rank()} WORLD_SIZE={dist.get_world_size()} LOCAL_RANK={os.environ['LOCAL_RANK']}",
      f"SUM={t.item():g} {inside} python={os.path.realpath('/proc/self/exe')}", flush=True)
dist.destroy_process_group()
PY
log=$work/job.out
code=0
(cd "$work" && sbatch --wait --quiet -o "$log" "$job" "$work/allreduce.py") || code=$?
if [[ $code -eq 0 ]]; then pass "the charliecloud job succeeded"; else fail "job exited $code: $(cat "$log")"; fi
for rank in 0 1; do
  check_eq "rank $rank ran inside ch-run" \
    "RANK=$rank WORLD_SIZE=2 LOCAL_RANK=$rank SUM=3 in-container python=/usr/bin/python3.11" \
    "$(grep "^RANK=$rank " "$log" || cat "$log")"
done
finish
