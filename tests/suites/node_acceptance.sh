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
#   site's job (mask binding 0x2,0x1) shows each rank on its site cores and fails on devices;
# - the visibility policies and torchrun, with a stand-in for a node's NVIDIA GPUs (torch.cuda
#   reporting the GPUs CUDA_VISIBLE_DEVICES leaves visible): narrow passes with one GPU per
#   rank and fails when the scheduler left both ranks the same one; all passes when every rank
#   sees both GPUs and uses LOCAL_RANK's, and fails when they were narrowed; shared (2 ranks on
#   1 GPU) passes; torchrun passes seeing the node's GPUs; the cross-rank rules for sharing on
#   made-up results; on the real Slurm, all and shared pass through the generated wrapper and
#   a CPU site's acceptance.slurm with rank_starter = torchrun passes with Debian's torchrun.
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
variant local-all "$hw_old" $'gpu_vendor = "nvidia"\ndevices_per_node = 2\ncores_per_node = 2\ndevice_cores = ["1", "0"]\n\n[binding]\nstyle = "mask"' \
  'library = "gloo"' $'library = "gloo"\nvisibility_var = "CUDA_VISIBLE_DEVICES"\nvisibility = "all"'
variant local-shared "$hw_old" $'gpu_vendor = "nvidia"\ndevices_per_node = 1\ncores_per_node = 2\ndevice_cores = ["0-1"]\n\n[binding]\nstyle = "mask"' \
  'library = "gloo"' $'library = "gloo"\nvisibility_var = "CUDA_VISIBLE_DEVICES"\nvisibility = "shared"\nranks_per_device = 2'
variant local-trgpu "$hw_old" $'gpu_vendor = "nvidia"\ndevices_per_node = 2\ncores_per_node = 2\ndevice_cores = ["0", "1"]' \
  'cpus_per_task = 1' $'cpus_per_task = 1\nrank_starter = "torchrun"'
variant local-torchrun 'cpus_per_task = 1' $'cpus_per_task = 1\nrank_starter = "torchrun"'
variant local-far "$hw_old" $'gpu_vendor = "nvidia"\ndevices_per_node = 2\ncores_per_node = 4\ndevice_cores = ["2", "3"]\n\n[binding]\nstyle = "mask"'
out=$SCRATCH/out
for site in local local-gpu local-far local-all local-shared local-trgpu local-torchrun; do
  "$sitegen" --sites-dir "$sites" --out-dir "$out" build "$site" --prefix "$out/modules-out/$site" >/dev/null 2>&1 ||
    fail "build $site"
done
rs() { echo "$out/modules-out/$1/software/pytorch/1.13.1-cpu/runscripts"; }

# direct NAME SITE ARGS...: acceptance.py --direct, output in $SCRATCH/NAME.out; prints the exit code.
# The ranks' environment is PATH, HOME and ${direct_env[@]}.
direct_env=()
direct() {
  local name=$1 site=$2 code=0
  shift 2
  (cd "$SCRATCH" && env -i PATH=/usr/bin:/bin HOME="$SCRATCH" "${direct_env[@]}" timeout 300 "$(rs "$site")/acceptance.py" --direct "$@") \
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
check_contains "direct local 1 rank: no bandwidth from one rank" \
  "all_reduce with 1 rank (gloo, float32, 5 iterations): no data crosses a link, so no bandwidth is measured" "$(<"$SCRATCH/d1.out")"
if [[ $(<"$SCRATCH/d1.out") == *GB/s* ]]; then fail "direct local 1 rank: a bandwidth from one rank"; else pass; fi

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
shared_gpu = [dict(rank=r, local_rank=r, host='n1', cpus=[r], device_id='GPU-%d' % (r // 2), checks=[], timings={})
              for r in range(4)]
print(sorted(a.cross_checks(shared_gpu).items()))
a.RANK_CORES = None
a.CPUS_PER_TASK = 2
cpus = [dict(rank=0, local_rank=0, host='n1', cpus=[0, 1, 2, 3], device_id=None, checks=[], timings={}),
        dict(rank=1, local_rank=1, host='n1', cpus=[0, 1, 2, 3], device_id=None, checks=[], timings={}),
        dict(rank=2, local_rank=2, host='n1', cpus=[3, 4], device_id=None, checks=[], timings={}),
        dict(rank=3, local_rank=0, host='n2', cpus=[0, 1], device_id=None, checks=[], timings={})]
print(sorted(a.cross_checks(cpus).items()))
# shared, 2 ranks per device: local ranks 0,1 on GPU-0 and 2,3 on GPU-1, but rank 1 is on GPU-1.
a.RANKS_PER_DEVICE = 2
a.CPUS_PER_TASK = 1
shared = [dict(rank=r, local_rank=r, host='n1', cpus=[r], device_id='GPU-%d' % min(r, 1), checks=[], timings={})
          for r in range(4)]
print(sorted(a.cross_checks(shared).items()))
ok = [dict(r, device_id='GPU-%d' % (r['rank'] // 2)) for r in shared]
print(sorted(a.cross_checks(ok).items()))
PY
)
check_eq "cross-rank rules" \
  "[(0, [('devices', 'ranks 0,1 on n1 share one device (GPU-0)')]), (1, [('devices', 'ranks 0,1 on n1 share one device (GPU-0)')]), (2, [('devices', 'ranks 2,3 on n1 share one device (GPU-1)')]), (3, [('devices', 'ranks 2,3 on n1 share one device (GPU-1)')])]
[(0, [('affinity', 'ranks 0,1 and 2 on n1 overlap on cpus 3')]), (1, [('affinity', 'ranks 0,1 and 2 on n1 overlap on cpus 3')]), (2, [('affinity', 'ranks 0,1 and 2 on n1 overlap on cpus 3')])]
[(0, [('devices', 'ranks 0,1 on n1 should share device 0 (LOCAL_RANK / 2) but use GPU-0 and GPU-1')]), (1, [('devices', 'ranks 1,2,3 on n1 share one device (GPU-1), which the site gives only to 2 local ranks of one LOCAL_RANK / 2'), ('devices', 'ranks 0,1 on n1 should share device 0 (LOCAL_RANK / 2) but use GPU-0 and GPU-1')]), (2, [('devices', 'ranks 1,2,3 on n1 share one device (GPU-1), which the site gives only to 2 local ranks of one LOCAL_RANK / 2')]), (3, [('devices', 'ranks 1,2,3 on n1 share one device (GPU-1), which the site gives only to 2 local ranks of one LOCAL_RANK / 2')])]
[]" \
  "$rules"

# ---- The visibility policies and torchrun, on stand-in GPUs.
# STAND-IN, not a GPU runtime: this machine has no GPU, so a sitecustomize (imported by every
# python that has $standin on PYTHONPATH) makes Debian's torch.cuda report the GPUs of a node
# with SITEGEN_STANDIN_GPUS of them that CUDA_VISIBLE_DEVICES leaves visible, in its order, as
# CUDA numbers them (unset: all), each with uuid GPU-standin-<its node index>. The collectives
# stay on gloo (CPU), so the all_reduce is real.
standin=$SCRATCH/gpu-standin
mkdir -p "$standin"
cat >"$standin/sitecustomize.py" <<'PY'
import os
if os.environ.get('SITEGEN_STANDIN_GPUS'):
    import types
    import torch

    def _visible():
        n = int(os.environ['SITEGEN_STANDIN_GPUS'])
        given = os.environ.get('CUDA_VISIBLE_DEVICES')
        return list(range(n)) if given is None else [int(i) for i in given.split(',') if i and int(i) < n]

    torch.cuda.is_available = lambda: bool(_visible())
    torch.cuda.device_count = lambda: len(_visible())
    torch.cuda.get_device_properties = lambda i: types.SimpleNamespace(
        name='stand-in GPU', uuid='GPU-standin-%d' % _visible()[i])
    torch.cuda.set_device = lambda device: None
PY
h=$(hostname)
direct_env=(PYTHONPATH="$standin" SITEGEN_STANDIN_GPUS=2)
check_eq "narrow, 2 stand-in GPUs: exit 0" 0 "$(direct n2 local-gpu 2 --sizes 1)"
check_contains "narrow: PASS" "ACCEPTANCE PASS: pytorch/1.13.1-cpu on local-gpu: 2 ranks on 1 node; affinity, all_reduce, devices ok" \
  "$(<"$SCRATCH/n2.out")"
check_contains "narrow: rank 1 sees its one GPU" \
  "rank 1 (local 1) on $h: devices ok: sees 1 cuda device (CUDA_VISIBLE_DEVICES=1); the site promises 1 per rank" "$(<"$SCRATCH/n2.out")"
# The scheduler left exactly one GPU visible: the wrapper keeps it, so both ranks use GPU 1.
direct_env=(PYTHONPATH="$standin" SITEGEN_STANDIN_GPUS=2 CUDA_VISIBLE_DEVICES=1)
check_eq "narrow, both ranks on GPU 1: exit 1" 1 "$(direct n1 local-gpu 2 --sizes 1)"
check_contains "narrow, both ranks on GPU 1: verdict" "failing ranks 0,1 (devices: ranks 0,1)" "$(<"$SCRATCH/n1.out")"
check_contains "narrow, both ranks on GPU 1: why" "rank 0 on $h: devices FAIL: ranks 0,1 on $h share one device (GPU-standin-1)" \
  "$(<"$SCRATCH/n1.out")"

direct_env=(PYTHONPATH="$standin" SITEGEN_STANDIN_GPUS=2)
check_eq "all: exit 0" 0 "$(direct a2 local-all 2 --sizes 1)"
check_contains "all: PASS" "ACCEPTANCE PASS: pytorch/1.13.1-cpu on local-all: 2 ranks on 1 node; affinity, all_reduce, devices ok" \
  "$(<"$SCRATCH/a2.out")"
check_contains "all: rank 1 sees both GPUs and uses GPU 1" \
  "rank 1 (local 1) on $h: devices ok: sees 2 cuda devices (CUDA_VISIBLE_DEVICES=(unset)); the site promises all 2 of its node, device 1 for local rank 1" \
  "$(<"$SCRATCH/a2.out")"
direct_env=(PYTHONPATH="$standin" SITEGEN_STANDIN_GPUS=2 CUDA_VISIBLE_DEVICES=0)
check_eq "all, narrowed to GPU 0 by someone: exit 1" 1 "$(direct a1 local-all 2 --sizes 1)"
check_contains "all, narrowed: verdict" "failing ranks 0,1 (devices: ranks 0,1)" "$(<"$SCRATCH/a1.out")"
check_contains "all, narrowed: rank 0" \
  "rank 0 (local 0) on $h: devices FAIL: sees 1 cuda device (CUDA_VISIBLE_DEVICES=0); the site promises all 2 of its node, device 0 for local rank 0" \
  "$(<"$SCRATCH/a1.out")"
# gloo reduces in host memory, so the all_reduce runs; rank 1 misses its GPU 1.
check_contains "all, narrowed: rank 1 has no GPU 1" \
  "rank 1 (local 1) on $h: devices FAIL: sees 1 cuda device (CUDA_VISIBLE_DEVICES=0); the site promises all 2 of its node, device 1 for local rank 1" \
  "$(<"$SCRATCH/a1.out")"

direct_env=(PYTHONPATH="$standin" SITEGEN_STANDIN_GPUS=1)
check_eq "shared, 2 ranks on 1 GPU: exit 0" 0 "$(direct s2 local-shared 2 --sizes 1)"
check_contains "shared: PASS" "ACCEPTANCE PASS: pytorch/1.13.1-cpu on local-shared: 2 ranks on 1 node; affinity, all_reduce, devices ok" \
  "$(<"$SCRATCH/s2.out")"
check_contains "shared: rank 1 on GPU 0 with rank 0" \
  "rank 1 (local 1) on $h: devices ok: sees 1 cuda device (CUDA_VISIBLE_DEVICES=0); the site promises 1 per rank, device 0 shared by 2 ranks" \
  "$(<"$SCRATCH/s2.out")"
check_contains "shared: rank 1 on its half of the GPU's cores" \
  "rank 1 (local 1) on $h: affinity ok: cpus 1, the site binds local rank 1 to 1" "$(<"$SCRATCH/s2.out")"
check_eq "shared: 3 ranks refused" 1 "$(direct s3 local-shared 3)"
check_eq "shared: 3 ranks refused, why" "acceptance: --direct 3: the site has 1 devices per node, 2 ranks per device" "$(<"$SCRATCH/s3.out")"

direct_env=(PYTHONPATH="$standin" SITEGEN_STANDIN_GPUS=2)
check_eq "torchrun: exit 0" 0 "$(direct t2 local-trgpu 2 --sizes 1)"
check_contains "torchrun: PASS" "ACCEPTANCE PASS: pytorch/1.13.1-cpu on local-trgpu: 2 ranks on 1 node; affinity, all_reduce, devices ok" \
  "$(<"$SCRATCH/t2.out")"
check_contains "torchrun: rank 1 sees the node's GPUs, uses GPU 1" \
  "rank 1 (local 1) on $h: devices ok: sees 2 cuda devices (no visibility variable); the site promises all 2 of its node, device 1 for local rank 1" \
  "$(<"$SCRATCH/t2.out")"
check_contains "torchrun: no per-rank binding" \
  "; torchrun starts the ranks in one task per node, whose CPUs they share: at least 1 for each (checked below)" "$(<"$SCRATCH/t2.out")"
direct_env=()

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
# The policies through the generated wrapper (GRES-less cluster: --gpus-per-node dropped as above).
for site in local-all local-shared; do
  grep -v '^#SBATCH --gpus-per-node=' "$(rs "$site")/acceptance.slurm" >"$SCRATCH/$site-acceptance.slurm"
done
check_eq "Slurm, all: exit 0" 0 "$(submit s_all "$SCRATCH/local-all-acceptance.slurm" PYTHONPATH="$standin" SITEGEN_STANDIN_GPUS=2)"
check_contains "Slurm, all: PASS" "ACCEPTANCE PASS: pytorch/1.13.1-cpu on local-all: 2 ranks on 1 node" "$(<"$SCRATCH/s_all.out")"
check_contains "Slurm, all: rank 1 uses GPU 1 of 2" \
  "rank 1 (local 1) on $host: devices ok: sees 2 cuda devices (CUDA_VISIBLE_DEVICES=(unset)); the site promises all 2 of its node, device 1 for local rank 1" \
  "$(<"$SCRATCH/s_all.out")"
check_eq "Slurm, shared: exit 0" 0 "$(submit s_sh "$SCRATCH/local-shared-acceptance.slurm" PYTHONPATH="$standin" SITEGEN_STANDIN_GPUS=1)"
check_contains "Slurm, shared: PASS" "ACCEPTANCE PASS: pytorch/1.13.1-cpu on local-shared: 2 ranks on 1 node" "$(<"$SCRATCH/s_sh.out")"
check_contains "Slurm, shared: the wrapper gave rank 1 GPU 0" \
  "rank 1 (local 1) on $host: devices ok: sees 1 cuda device (CUDA_VISIBLE_DEVICES=0); the site promises 1 per rank, device 0 shared by 2 ranks" \
  "$(<"$SCRATCH/s_sh.out")"

# torchrun as the rank starter: srun starts one task, Debian's torchrun the two ranks.
# PET_*: torch 1.13's option parsing under Python 3.11, as in torchrun_e2e.sh (nothing redirected).
check_eq "Slurm, torchrun: exit 0" 0 "$(submit s_tr "$(rs local-torchrun)/acceptance.slurm" PET_REDIRECTS=9:1 PET_TEE=9:1)"
tr=$(<"$SCRATCH/s_tr.out")
check_contains "Slurm, torchrun: PASS" \
  "ACCEPTANCE PASS: pytorch/1.13.1-cpu on local-torchrun: 2 ranks on 1 node; affinity, all_reduce, devices ok" "$tr"
check_contains "Slurm, torchrun: rank 1's CPUs are the node task's" \
  "rank 1 (local 1) on $host: affinity ok: cpus $(sed -n "s/^rank 0 (local 0) on $host: affinity ok: cpus \([0-9,-]*\);.*/\1/p" <<<"$tr"); torchrun starts the ranks" "$tr"
finish
