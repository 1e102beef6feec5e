#!/usr/bin/env bash
# The acceptance job, run for real with Debian's torch (gloo):
# - without a scheduler (`acceptance.py --direct N`): the local stack passes with 2 ranks and
#   with 1; a site promising 2 NVIDIA GPUs (bound to cores 1 and 0) fails on this GPU-less
#   machine with the devices of both ranks named, while the binding it applied is right;
#   cores the node lacks fail the affinity check; more ranks than devices is refused;
# - the cross-rank rules on made-up results (ranks sharing a device or CPUs);
# - on a real one-node Slurm with TaskPlugin=task/affinity (binding is real): the local
#   stack's acceptance.slurm, submitted as is, passes; submitted with a wrong binding
#   (SLURM_CPU_BIND=map_cpu:0,0: both ranks on CPU 0) it fails naming ranks 0 and 1; the GPU
#   site's job (mask binding 0x2,0x1) shows each rank on its site cores and fails on devices.
set -euo pipefail
sitegen=$(realpath "${1:?usage: node_acceptance.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool sbatch srun slurmctld slurmd /usr/bin/python3
if ! /usr/bin/python3 -c 'import torch.distributed'; then
  fail "Debian's python3-torch is not importable by /usr/bin/python3"
  finish
fi

# Sites: local, and variants of it (same machine, other promises).
sites=$SCRATCH/sites
mkdir -p "$sites"
cp -r "$root/sites/local" "$sites/local"
variant() {  # variant NAME PYTHON-REPLACEMENTS...: sites/NAME from local's site.toml
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
hw_old=$'gpu_vendor = "none"\ndevices_per_node = 0\ncores_per_node = 2'
variant local-gpu "$hw_old" $'gpu_vendor = "nvidia"\ndevices_per_node = 2\ncores_per_node = 2\ndevice_cores = ["1", "0"]\n\n[binding]\nstyle = "mask"' \
  'library = "gloo"' $'library = "gloo"\nvisibility_var = "CUDA_VISIBLE_DEVICES"'
variant local-far "$hw_old" $'gpu_vendor = "nvidia"\ndevices_per_node = 2\ncores_per_node = 4\ndevice_cores = ["2", "3"]\n\n[binding]\nstyle = "mask"'
out=$SCRATCH/out
for site in local local-gpu local-far; do
  "$sitegen" --sites-dir "$sites" --out-dir "$out" build "$site" --prefix "$out/modules-out/$site" >/dev/null 2>&1 ||
    fail "build $site"
done
rs() { echo "$out/modules-out/$1/software/pytorch/1.13.1-cpu/runscripts"; }

# direct NAME SITE ARGS...: acceptance.py --direct, output in $SCRATCH/NAME.out; prints the exit code.
direct() {
  local name=$1 site=$2 code=0
  shift 2
  (cd "$SCRATCH" && env -i PATH=/usr/bin:/bin HOME="$SCRATCH" timeout 300 "$(rs "$site")/acceptance.py" --direct "$@") \
    >"$SCRATCH/$name.out" 2>&1 || code=$?
  echo "$code"
}

# ---- Without a scheduler.
check_eq "direct local 2 ranks: exit 0" 0 "$(direct d2 local 2 --sizes 1,4)"
check_contains "direct local 2 ranks: PASS" \
  "ACCEPTANCE PASS: pytorch/1.13.1-cpu on local: 2 ranks on 1 node; affinity, all_reduce, devices ok" "$(<"$SCRATCH/d2.out")"
check_contains "direct local: bandwidth table" "all_reduce bus bandwidth (gloo, 2 ranks, float32, 5 iterations" "$(<"$SCRATCH/d2.out")"
check_eq "direct local 1 rank: exit 0" 0 "$(direct d1 local 1 --sizes 1)"
check_contains "direct local 1 rank: PASS" "ACCEPTANCE PASS: pytorch/1.13.1-cpu on local: 1 rank on 1 node" "$(<"$SCRATCH/d1.out")"

check_eq "direct GPU site on a CPU node: exit 1" 1 "$(direct dg local-gpu 2 --sizes 1)"
dg=$(<"$SCRATCH/dg.out")
check_contains "direct GPU site: verdict" \
  "ACCEPTANCE FAIL: pytorch/1.13.1-cpu on local-gpu: 2 ranks on 1 node; failing ranks 0,1 (devices: ranks 0,1)" "$dg"
check_contains "direct GPU site: rank 0's device" \
  "rank 0 (local 0) on $(hostname): devices FAIL: sees 0 cuda devices (CUDA_VISIBLE_DEVICES=0); the site promises 1 per rank" "$dg"
check_contains "direct GPU site: rank 0 bound as the site says" \
  "rank 0 (local 0) on $(hostname): affinity ok: cpus 1, the site binds local rank 0 to 1" "$dg"
check_contains "direct GPU site: rank 1 bound as the site says" \
  "rank 1 (local 1) on $(hostname): affinity ok: cpus 0, the site binds local rank 1 to 0" "$dg"
check_contains "direct GPU site: gloo still reduces exactly" "all_reduce ok: 1000003 float32 values, 0 not the exact sum" "$dg"

check_eq "direct, cores the node lacks: exit 1" 1 "$(direct df local-far 2 --sizes 1)"
check_contains "direct, cores the node lacks: verdict" "failing ranks 0,1 (affinity: ranks 0,1; devices: ranks 0,1)" \
  "$(<"$SCRATCH/df.out")"
check_contains "direct, cores the node lacks: why" "affinity FAIL: cannot bind to cores 2:" "$(<"$SCRATCH/df.out")"

check_eq "direct, more ranks than devices: exit 1" 1 "$(direct d3 local-gpu 3)"
check_eq "direct, more ranks than devices: refused" \
  "acceptance: --direct 3: the site has 2 devices per node, one per rank" "$(<"$SCRATCH/d3.out")"

# ---- The cross-rank rules on made-up results (what four GPU ranks or CPU ranks report).
rules=$(cd "$(rs local-gpu)" && /usr/bin/python3 - <<'PY'
import acceptance as a
shared_gpu = [dict(rank=r, host='n1', cpus=[r], device_id='GPU-%d' % (r // 2), checks=[], timings={}) for r in range(4)]
print(sorted(a.cross_checks(shared_gpu).items()))
a.RANK_CORES = None
a.CPUS_PER_TASK = 2
cpus = [dict(rank=0, host='n1', cpus=[0, 1, 2, 3], device_id=None, checks=[], timings={}),
        dict(rank=1, host='n1', cpus=[0, 1, 2, 3], device_id=None, checks=[], timings={}),
        dict(rank=2, host='n1', cpus=[3, 4], device_id=None, checks=[], timings={}),
        dict(rank=3, host='n2', cpus=[0, 1], device_id=None, checks=[], timings={})]
print(sorted(a.cross_checks(cpus).items()))
PY
)
check_eq "cross-rank rules" \
  "[(0, [('devices', 'ranks 0,1 on n1 share one device (GPU-0)')]), (1, [('devices', 'ranks 0,1 on n1 share one device (GPU-0)')]), (2, [('devices', 'ranks 2,3 on n1 share one device (GPU-1)')]), (3, [('devices', 'ranks 2,3 on n1 share one device (GPU-1)')])]
[(0, [('affinity', 'ranks 0,1 and 2 on n1 overlap on cpus 3')]), (1, [('affinity', 'ranks 0,1 and 2 on n1 overlap on cpus 3')]), (2, [('affinity', 'ranks 0,1 and 2 on n1 overlap on cpus 3')])]" \
  "$rules"

# ---- A real Slurm whose CPU binding is real.
slurm_up SITEGEN_SLURM_TASK_PLUGIN=task/affinity
check_contains "the test Slurm binds tasks" "TaskPlugin=task/affinity" "$(<"$SCRATCH/slurm/slurm.conf")"

# submit NAME SCRIPT [ENV...]: sbatch --wait the script as is; prints the exit code.
submit() {
  local name=$1 script=$2 code=0
  shift 2
  (cd "$SCRATCH" && env "$@" sbatch --wait --quiet -o "$SCRATCH/$name.out" "$script" --sizes 1,8) || code=$?
  echo "$code"
}
host=$(hostname)

check_eq "Slurm, local: exit 0" 0 "$(submit s_ok "$(rs local)/acceptance.slurm")"
ok=$(<"$SCRATCH/s_ok.out")
check_contains "Slurm, local: PASS" \
  "ACCEPTANCE PASS: pytorch/1.13.1-cpu on local: 2 ranks on 1 node; affinity, all_reduce, devices ok" "$ok"
# task/affinity gives each rank one core of its own: the two ranks' CPUs differ.
c0=$(sed -n "s/^rank 0 (local 0) on $host: affinity ok: cpus \([0-9,-]*\);.*/\1/p" <<<"$ok")
c1=$(sed -n "s/^rank 1 (local 1) on $host: affinity ok: cpus \([0-9,-]*\);.*/\1/p" <<<"$ok")
if [[ -n $c0 && -n $c1 && $c0 != "$c1" ]]; then pass; else fail "Slurm, local: ranks' CPUs '$c0' and '$c1'"; fi

check_eq "Slurm, local, both ranks on CPU 0: exit 1" 1 "$(submit s_bind "$(rs local)/acceptance.slurm" SLURM_CPU_BIND=map_cpu:0,0)"
bad=$(<"$SCRATCH/s_bind.out")
check_contains "Slurm, wrong binding: verdict" \
  "ACCEPTANCE FAIL: pytorch/1.13.1-cpu on local: 2 ranks on 1 node; failing ranks 0,1 (affinity: ranks 0,1)" "$bad"
check_contains "Slurm, wrong binding: why" "rank 0 on $host: affinity FAIL: ranks 0,1 on $host share cpus 0: 1 for 2 ranks of 1 CPUs each" "$bad"
check_eq "Slurm, wrong binding: one verdict line" 1 "$(grep -c '^ACCEPTANCE ' <<<"$bad")"

# The GPU site: this cluster has no GPU GRES, so the copy submitted drops --gpus-per-node
# (job.slurm, which it runs, is used as generated: its directives are comments there).
grep -v '^#SBATCH --gpus-per-node=' "$(rs local-gpu)/acceptance.slurm" >"$SCRATCH/gpu-acceptance.slurm"
check_eq "Slurm, GPU site: exit 1" 1 "$(submit s_gpu "$SCRATCH/gpu-acceptance.slurm")"
gpu=$(<"$SCRATCH/s_gpu.out")
check_contains "Slurm, GPU site: verdict" \
  "ACCEPTANCE FAIL: pytorch/1.13.1-cpu on local-gpu: 2 ranks on 1 node; failing ranks 0,1 (devices: ranks 0,1)" "$gpu"
check_contains "Slurm, GPU site: srun's mask put rank 0 on core 1" \
  "rank 0 (local 0) on $host: affinity ok: cpus 1, the site binds local rank 0 to 1" "$gpu"
check_contains "Slurm, GPU site: and rank 1 on core 0" \
  "rank 1 (local 1) on $host: affinity ok: cpus 0, the site binds local rank 1 to 0" "$gpu"
finish
