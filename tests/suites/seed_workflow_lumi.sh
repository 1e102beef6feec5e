#!/usr/bin/env bash
# LUMI's two seeds (../shared/seeds/lumi-container-distributed-demo.md, "Container demo 2",
# and lumi-pytorch.md) walked in their own order against sitegen's outputs for sites/lumi:
#
#   1. export EBU_USER_PREFIX (the project's EasyBuild prefix, LUMI's advice);
#      module load LUMI/24.03 partition/container EasyBuild-user; eb <the easyconfig>
#      -> the real EasyBuild installs the container into $EBU_USER_PREFIX, venv included
#   2. module purge; module load LUMI/24.03; module load PyTorch/...; echo $SIF $SIFPYTORCH
#      -> the installed copy's image; CONTAINERROOT, RUNSCRIPTS; the same from CrayEnv
#   3. singularity exec $SIF which python -> /user-software/venv/pytorch/bin/python
#   4. pip install inside the container -> lands in $CONTAINERROOT/user-software; in a
#      read-only (central) copy pip fails and the venv's python still runs; module help
#      says both and how to get a private copy
#   5. sbatch job.slurm with SITEGEN_NCCL_DEBUG=INFO (the seed's NCCL_DEBUG=INFO check) and
#      the demo's own srun line (singularity exec $SIFPYTORCH conda-python-distributed ...),
#      on a real one-node Slurm: what each rank sees (python, RANK, ROCR_VISIBLE_DEVICES,
#      NCCL_*, the plugin dlopen'ed from LD_LIBRARY_PATH and its NET/OFI log lines), and the
#      per-rank MIOpen cache directories: there while the rank runs, gone after it.
#
# Stand-ins, only for what this machine lacks (each says so where it is made):
#   singularity   tests/tools/eb-standins/singularity: runs the command in the image with
#                 charliecloud's ch-run, with SINGULARITY_BIND / SINGULARITYENV_* semantics
#   the image     tests/tools/eb-standins/make-image: conda env "pytorch" at /opt/miniconda3
#                 (the host's python3), stand-in torch 2.3.1, and a real compiled
#                 /opt/aws-ofi-rccl/librccl-net.so
#   LUMI's modules  LUMI/24.03 and CrayEnv (add $EBU_USER_PREFIX/modulefiles to MODULEPATH
#                 as LUMI's partition module does for user installs, and put the system's
#                 singularity -- here the stand-in -- on PATH), partition/container (nothing),
#                 EasyBuild-user (configures the real EasyBuild for $EBU_USER_PREFIX)
#   GPUs / RCCL   the rank program loads the plugin with a real dlopen and prints RCCL's
#                 plugin lines itself when NCCL_DEBUG=INFO (there is no RCCL here)
# Every expected value below is written by hand from the seeds and the site file.
# SC2016: the single-quoted commands run in the seed's clean shell, which expands them.
# shellcheck disable=SC2016
set -euo pipefail
sitegen=$(realpath "${1:?usage: seed_workflow_lumi.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool python3 ch-run unsquashfs mksquashfs cc mount sbatch srun slurmctld slurmd
[[ -r $LMOD_INIT ]] || { fail "lmod is not installed"; finish; }
eb=$(git -C "$root" rev-parse --show-toplevel)/../shared/tools/easybuild/eb
[[ -x $eb ]] || { fail "real EasyBuild not found at $eb"; finish; }
standins=$root/tests/tools/eb-standins
USER=${USER:-$(id -un)}

stack=PyTorch/2.3.1-rocm-6.0.3-python-3.12-singularity-20240923
ec_name=PyTorch-2.3.1-rocm-6.0.3-python-3.12-singularity-20240923.eb
sif=lumi-pytorch-rocm-6.0.3-python-3.12-pytorch-v2.3.1-dockerhash-2c1c14cafd28.sif
# The demo's project directory (installdir=/scratch/project_465001726/$USER/DEMO2) and the
# project's EasyBuild prefix, as LUMI recommends (export EBU_USER_PREFIX=/project/.../EasyBuild).
project=$SCRATCH/project_465001726
demo=$project/$USER/DEMO2
ebu=$project/EasyBuild
installdir=$ebu/software/PyTorch/2.3.1-rocm-6.0.3-python-3.12-singularity-20240923
mkdir -p "$demo" "$ebu"

# ---- sitegen's outputs for LUMI, relocated to the user's prefix (what eb installs there).
out=$SCRATCH/out
if "$sitegen" --sites-dir "$root/sites" --out-dir "$out" build lumi --prefix "$ebu" >"$SCRATCH/build.log" 2>&1; then
  pass "sitegen builds lumi"
else
  fail "sitegen build lumi: $(cat "$SCRATCH/build.log")"
  finish
fi
ec=$out/easyconfigs-out/lumi/p/PyTorch/$ec_name
ours=$out/modules-out/lumi/software/PyTorch/2.3.1-rocm-6.0.3-python-3.12-singularity-20240923

# ---- Stand-ins.
tools=$SCRATCH/tools
mkdir -p "$tools" "$SCRATCH/ebtools" "$SCRATCH/sources"
ln -s "$standins/singularity" "$tools/singularity"  # STAND-IN for singularity (ch-run)
ln -s "$eb" "$SCRATCH/ebtools/eb"
"$standins/make-image" "$SCRATCH/sources/$sif" --conda-root /opt/miniconda3 --env pytorch --python 3.12 \
  --package torch==2.3.1 --library /opt/aws-ofi-rccl/librccl-net.so
stubs=$SCRATCH/lumi-modules
mkdir -p "$stubs/LUMI" "$stubs/partition"
for m in LUMI/24.03 CrayEnv; do
  cat >"$stubs/$m.lua" <<EOF
-- STAND-IN for LUMI's $m software stack module (tests/suites/seed_workflow_lumi.sh): the
-- user's modules under \$EBU_USER_PREFIX (default ~/EasyBuild) join MODULEPATH, as LUMI's
-- partition module does for EasyBuild-user installs; the system's singularity on PATH.
local ebu = os.getenv("EBU_USER_PREFIX") or pathJoin(os.getenv("HOME"), "EasyBuild")
prepend_path("MODULEPATH", pathJoin(ebu, "modulefiles"))
prepend_path("PATH", "$tools")
setenv("SEED_STACK", "$m")
EOF
done
echo '-- STAND-IN for LUMI'"'"'s partition/container (selects container installs; nothing here)' >"$stubs/partition/container.lua"
cat >"$stubs/EasyBuild-user.lua" <<EOF
-- STAND-IN for LUMI's EasyBuild-user (tests/suites/seed_workflow_lumi.sh): the real EasyBuild,
-- configured to install into \$EBU_USER_PREFIX in sitegen's layout (modules in
-- <prefix>/modulefiles, software in <prefix>/software), finding the easyconfigs sitegen made
-- and the image where LUMI keeps its sources.
local ebu = os.getenv("EBU_USER_PREFIX") or pathJoin(os.getenv("HOME"), "EasyBuild")
prepend_path("PATH", "$SCRATCH/ebtools")
setenv("EASYBUILD_INSTALLPATH", ebu)
setenv("EASYBUILD_INSTALLPATH_MODULES", ebu)
setenv("EASYBUILD_SUFFIX_MODULES_PATH", "modulefiles")
setenv("EASYBUILD_BUILDPATH", "$SCRATCH/eb-build")
setenv("EASYBUILD_TMPDIR", "$SCRATCH/eb-tmp")
setenv("EASYBUILD_SOURCEPATH", "$SCRATCH/sources")
setenv("EASYBUILD_ROBOT_PATHS", "$out/easyconfigs-out/lumi")
setenv("EASYBUILD_SET_DEFAULT_MODULE", "1")
setenv("EASYBUILD_FILTER_ENV_VARS", "CMAKE_PREFIX_PATH")
setenv("EASYBUILD_IGNORE_CHECKSUMS", "1")
setenv("EASYBUILD_ALLOW_USE_AS_ROOT_AND_ACCEPT_CONSEQUENCES", "1")
EOF
mkdir -p "$SCRATCH/eb-build" "$SCRATCH/eb-tmp"
# The clean shell of every step: the user's EBU_USER_PREFIX, LUMI's (stand-in) modules, the
# EasyBuild unpacked once per machine (the eb wrapper's cache).
LMOD_EXTRA_ENV=("EBU_USER_PREFIX=$ebu" "USER=$USER" "SITEGEN_EB_CACHE=${HOME:-/tmp}/.cache/easybuild-5.2.1")
seed() { lmod_clean_shell "$stubs" "$@"; }

# ---- Demo step 2: install the container with EasyBuild-user into the project.
if seed "cd '$demo'" "module purge" "module load LUMI/24.03 partition/container EasyBuild-user" \
  "eb $ec_name" >"$SCRATCH/eb.log" 2>&1; then
  pass "eb $ec_name installs into \$EBU_USER_PREFIX"
else
  fail "eb $ec_name: $(grep -E 'ERROR|FAILED|Error' "$SCRATCH/eb.log" | head -n 20)"
  tail -n 30 "$SCRATCH/eb.log"
  finish
fi
check "the module is in the user's tree" test -f "$ebu/modulefiles/$stack.lua"
check "the image is in the user's copy" test -f "$installdir/$sif"
# The venv made at install time, which the seed's `which python` expects (its python is a
# link into the image's conda env: there as a link, resolved in the container).
check_eq "venv python installed (a link to the conda env's)" "/opt/miniconda3/envs/pytorch/bin/python" \
  "$(readlink "$installdir/user-software/venv/pytorch/bin/python")"
check "the recipe EasyBuild kept is sitegen's" cmp "$ec" "$installdir/easybuild/$ec_name"
check "every runscript installed is sitegen's" cmp "$installdir/runscripts/conda-python-distributed" "$ours/runscripts/conda-python-distributed"

# ---- module purge; module load LUMI/24.03; module load PyTorch/...; echo $SIF; echo $SIFPYTORCH
show='printf "%s\n" "SIF=$SIF" "SIFPYTORCH=$SIFPYTORCH" "CONTAINERROOT=$CONTAINERROOT" "RUNSCRIPTS=$RUNSCRIPTS" "NCCL_DEBUG=${NCCL_DEBUG-<unset>}"'
expected_vars="SIF=$installdir/$sif
SIFPYTORCH=$installdir/$sif
CONTAINERROOT=$installdir
RUNSCRIPTS=$installdir/runscripts
NCCL_DEBUG=<unset>"
check_eq "LUMI/24.03 then the module: SIF and SIFPYTORCH are the user's copy" "$expected_vars" \
  "$(seed "module purge" "module load LUMI/24.03" "module load $stack" "$show" 2>&1)"
# Upstream's container modules work in any LUMI stack or CrayEnv: no depends_on a LUMI version.
check_eq "CrayEnv then the module: the same" "$expected_vars" \
  "$(seed "module purge" "module load CrayEnv" "module load $stack" "$show" 2>&1)"
check_eq "the module loads LUMI/24.03 neither itself" "CrayEnv $stack" \
  "$(seed "module load CrayEnv" "module load $stack" 'echo $(module -t list 2>&1)' 2>&1)"

# ---- singularity exec $SIF which python (the demo's `singularity shell $SIF` + `which python`)
check_eq "which python in the container" "/user-software/venv/pytorch/bin/python" \
  "$(seed "module load LUMI/24.03" "module load $stack" 'singularity exec "$SIF" which python' 2>/dev/null)"

# ---- pip install into the venv, in the user's own copy: a local wheel (no index here; made
# by hand, as pip needs no build step for a wheel).
pkg=$SCRATCH/seedpkg-1.0-py3-none-any.whl
python3 - "$pkg" <<'PY'
import base64, hashlib, sys, zipfile
files = {"seedpkg/__init__.py": 'VALUE = "from the user venv"\n',
         "seedpkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: seedpkg\nVersion: 1.0\n",
         "seedpkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
def digest(text):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
record = "".join(f"{n},{digest(t)},{len(t.encode())}\n" for n, t in files.items()) + "seedpkg-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for n, t in {**files, "seedpkg-1.0.dist-info/RECORD": record}.items():
        z.writestr(n, t)
PY
if out_pip=$(seed "cd '$SCRATCH'" "module load LUMI/24.03" "module load $stack" \
  "singularity exec \"\$SIF\" pip install --no-cache-dir --no-index --no-deps '$pkg'" 2>&1); then
  pass "pip install inside the container (own copy)"
else
  fail "pip install inside the container: $out_pip"
fi
check "pip's package landed in \$CONTAINERROOT/user-software" \
  bash -c "ls -d '$installdir'/user-software/venv/pytorch/lib/python3*/site-packages/seedpkg"
check_eq "the package imports in the container" "from the user venv" \
  "$(seed "cd '$SCRATCH'" "module load LUMI/24.03" "module load $stack" \
    "singularity exec \"\$SIF\" python -c 'import seedpkg; print(seedpkg.VALUE)'" 2>/dev/null)"

# ---- The same copy read-only (as a central install is to its users): the venv's python
# runs, pip cannot write. A read-only bind mount over the copy (the suite runs as root, whom
# file modes do not stop); the container's binds of it inherit the read-only flag. PIP_USER=0:
# pip would otherwise fall back to ~/.local, outside the venv, when the venv is not writable.
mount --bind "$installdir" "$installdir"
at_exit "umount '$installdir' 2>/dev/null || true"
mount -o remount,ro,bind "$installdir" "$installdir"
ro_shell() { seed "$@"; }
check_eq "read-only copy: which python still the venv's" "/user-software/venv/pytorch/bin/python" \
  "$(ro_shell "module load LUMI/24.03" "module load $stack" 'singularity exec "$SIF" which python' 2>/dev/null)"
code=0
ro_out=$(ro_shell "cd '$SCRATCH'" "module load LUMI/24.03" "module load $stack" \
  "PIP_USER=0 singularity exec \"\$SIF\" pip install --no-cache-dir --no-index --no-deps --force-reinstall '$pkg'" 2>&1) || code=$?
if [[ $code -ne 0 && $ro_out == *"Read-only file system"* ]]; then pass "read-only copy: pip install fails (Read-only file system)"; else
  fail "read-only copy: pip install exit $code: $ro_out"
fi
umount "$installdir"
help=$(seed "module load LUMI/24.03" "module help $stack" 2>&1 || true)
for line in \
  "This stack is installed per user or project with EasyBuild into \$EBU_USER_PREFIX." \
  "In your own copy, \`pip install\` inside the container adds packages to the venv:" \
  "(a central install) still runs its venv's python, but pip cannot install there." \
  "  export EBU_USER_PREFIX=<your project's directory>/EasyBuild" \
  "  module load LUMI/24.03 partition/container EasyBuild-user" \
  "  eb $ec_name" \
  "The job script loads LUMI/24.03 first; this module needs none of them"; do
  check_contains "module help" "$line" "$help"
done

# ---- The job (real Slurm, one node, 2 ranks; the site's 4 nodes x 8 GPUs, partition,
# account and memory are overridden on sbatch's command line, which wins over #SBATCH).
slurm_up
LMOD_EXTRA_ENV+=("SLURM_CONF=$SLURM_CONF")
probe=$demo/mnist/probe.py
mkdir -p "$demo/mnist"
cat >"$probe" <<'PY'
# Stand-in for mnist_DDP.py: what a rank sees. RCCL is absent here, so this loads the network
# plugin as RCCL does (dlopen("librccl-net.so") through LD_LIBRARY_PATH) and, at
# NCCL_DEBUG=INFO, prints the two lines LUMI's page tells users to look for.
import ctypes, os, sys
e = os.environ.get
lib = ctypes.CDLL("librccl-net.so")
plugin = "loaded" if lib.sitegen_standin_plugin else "missing"
if e("NCCL_DEBUG") == "INFO":
    print(f"rank{e('RANK')}: NCCL INFO NET/OFI Using aws-ofi-rccl 1.4.0", flush=True)
    print(f"rank{e('RANK')}: NCCL INFO NET/OFI Selected Provider is cxi", flush=True)
db = e("MIOPEN_USER_DB_PATH", "")
print(f"rank{e('RANK')}: python={sys.executable} RANK={e('RANK')} WORLD_SIZE={e('WORLD_SIZE')} "
      f"LOCAL_RANK={e('LOCAL_RANK')} ROCR_VISIBLE_DEVICES={e('ROCR_VISIBLE_DEVICES')} "
      f"NCCL_DEBUG={e('NCCL_DEBUG', '<unset>')} NCCL_DEBUG_SUBSYS={e('NCCL_DEBUG_SUBSYS', '<unset>')} "
      f"NCCL_SOCKET_IFNAME={e('NCCL_SOCKET_IFNAME')} NCCL_NET_GDR_LEVEL={e('NCCL_NET_GDR_LEVEL')} "
      f"plugin={plugin} MIOPEN_CUSTOM_CACHE_DIR_SAME={e('MIOPEN_CUSTOM_CACHE_DIR') == db} "
      f"MIOPEN_DIR_EXISTS={os.path.isdir(db)} MIOPEN={db} args={'|'.join(sys.argv[1:])}", flush=True)
PY
override=(--nodes=1 --ntasks-per-node=2 --cpus-per-task=1 --partition=debug --mem=0 --gpus-per-node=0)
# run_job NAME CMD...: submits in a seed shell (module-less: the job loads its modules), waits;
# prints the job id.
run_job() {
  local name=$1 code=0
  shift
  seed "cd '$demo'" "$@" >"$SCRATCH/$name.submit" 2>&1 || code=$?
  if [[ $code -ne 0 ]]; then fail "$name: submission/job exited $code: $(cat "$SCRATCH/$name.submit" "$demo/$name.out" 2>/dev/null)"; return 1; fi
  pass "$name: the job succeeded"
}
# rank_lines FILE: the probe's summary lines with the MIOpen path's random part masked.
rank_lines() { grep -E '^rank[0-9]+: python=' "$1" | sed -E 's/(MIOPEN=\/tmp\/miopen-[0-9]+-)[0-9]+-([0-9]+)\.[A-Za-z0-9]{6}/\1JOB-\2.XXXXXX/' | sort; }
expect_rank() {  # expect_rank RANK NCCL_DEBUG NCCL_DEBUG_SUBSYS ARGS
  echo "rank$1: python=/user-software/venv/pytorch/bin/python RANK=$1 WORLD_SIZE=2 LOCAL_RANK=$1 ROCR_VISIBLE_DEVICES=$1 NCCL_DEBUG=$2 NCCL_DEBUG_SUBSYS=$3 NCCL_SOCKET_IFNAME=hsn0,hsn1,hsn2,hsn3 NCCL_NET_GDR_LEVEL=3 plugin=loaded MIOPEN_CUSTOM_CACHE_DIR_SAME=True MIOPEN_DIR_EXISTS=True MIOPEN=/tmp/miopen-$UID-JOB-$1.XXXXXX args=$4"
}

# sitegen's job: SITEGEN_NCCL_DEBUG=INFO sbatch job.slurm SCRIPT.py [ARGS...] (the job loads
# LUMI/24.03 and the module itself).
job=$installdir/runscripts/job.slurm
if run_job debug "SITEGEN_NCCL_DEBUG=INFO sbatch --wait --quiet ${override[*]} -o debug.out '$job' mnist/probe.py --gpu --modelpath model"; then
  check_eq "job.slurm with SITEGEN_NCCL_DEBUG=INFO: what each rank sees" \
    "$(expect_rank 0 INFO INIT,COLL '--gpu|--modelpath|model')
$(expect_rank 1 INFO INIT,COLL '--gpu|--modelpath|model')" "$(rank_lines "$demo/debug.out")"
  check_eq "the plugin lines the seed greps for, once per rank" "4" \
    "$(grep -cE '^rank[01]: NCCL INFO NET/OFI (Using aws-ofi-rccl 1.4.0|Selected Provider is cxi)$' "$demo/debug.out")"
  dirs=$(grep -oE 'MIOPEN=[^ ]+' "$demo/debug.out" | sort -u | wc -l)
  check_eq "two ranks, two MIOpen directories" 2 "$dirs"
  left=$(grep -oE 'MIOPEN=[^ ]+' "$demo/debug.out" | cut -d= -f2 | while read -r d; do [[ ! -e $d ]] || echo "$d"; done)
  check_eq "each rank removed its MIOpen directory" "" "$left"
fi
# Off by default: no NCCL_DEBUG in the ranks, no plugin lines.
if run_job quiet "sbatch --wait --quiet ${override[*]} -o quiet.out '$job' mnist/probe.py"; then
  check_eq "job.slurm without the switch: NCCL_DEBUG unset in every rank" \
    "$(expect_rank 0 '<unset>' '<unset>' '')
$(expect_rank 1 '<unset>' '<unset>' '')" "$(rank_lines "$demo/quiet.out")"
  check_eq "no plugin lines without the switch" 0 "$(grep -c 'NET/OFI' "$demo/quiet.out" || true)"
fi
# The demo's own job script: module load LUMI/24.03 + the module, then its srun line
# (srun ... singularity exec $SIFPYTORCH conda-python-distributed -u mnist_DDP.py ...); the
# wrapper is found on the container's PATH (/runscripts), as in the demo.
cat >"$demo/mnist.slurm" <<EOF
#!/bin/bash -e
#SBATCH --output="output_%x_%j.txt"
module load LUMI/24.03
module load $stack
cd mnist
srun --ntasks=\$((SLURM_NNODES*2)) singularity exec \$SIFPYTORCH conda-python-distributed -u probe.py --gpu --modelpath model
EOF
if run_job demo "SITEGEN_NCCL_DEBUG=INFO sbatch --wait --quiet ${override[*]} mnist.slurm"; then
  demo_out=$(find "$demo" -maxdepth 1 -name 'output_mnist.slurm_*.txt' | head -n 1)
  check_eq "the demo's mnist.slurm: what each rank sees" \
    "$(expect_rank 0 INFO INIT,COLL '--gpu|--modelpath|model')
$(expect_rank 1 INFO INIT,COLL '--gpu|--modelpath|model')" "$(rank_lines "${demo_out:-/dev/null}")"
  left=$(grep -oE 'MIOPEN=[^ ]+' "${demo_out:-/dev/null}" | cut -d= -f2 | while read -r d; do [[ ! -e $d ]] || echo "$d"; done)
  check_eq "the demo's job: MIOpen directories removed" "" "$left"
fi

# ---- The wrapper alone (a hand-made Slurm environment): a bad level is refused before python
# runs; a MIOPEN_USER_DB_PATH the user set is used and kept; a failing program's status comes
# back and its directory is still removed.
w=$ours/runscripts/conda-python-distributed
mkdir -p "$SCRATCH/fakebin"
printf '#!/bin/bash\necho "db=$MIOPEN_USER_DB_PATH"; ls -d "$MIOPEN_USER_DB_PATH" >/dev/null && exit "${PROBE_STATUS:-0}"\n' >"$SCRATCH/fakebin/python"
chmod +x "$SCRATCH/fakebin/python"
fake=(SLURM_JOB_ID=777 SLURM_PROCID=3 SLURM_NTASKS=8 SLURM_LOCALID=3 SLURM_NODEID=0 SLURM_STEP_TASKS_PER_NODE=8
  SLURM_STEP_NODELIST=nid000001 VIRTUAL_ENV=/user-software/venv/pytorch)
run_w() { env -i PATH="$SCRATCH/fakebin:/usr/bin:/bin" "${fake[@]}" "$@" bash "$w" x.py 2>&1; }
code=0
msg=$(run_w SITEGEN_NCCL_DEBUG='INFO; id') || code=$?
check_eq "a bad SITEGEN_NCCL_DEBUG is refused" "exit 2: conda-python-distributed: SITEGEN_NCCL_DEBUG must be VERSION, WARN, INFO or TRACE, not INFO; id" "exit $code: $msg"
mine=$SCRATCH/my-miopen
check_eq "a MIOPEN_USER_DB_PATH the user set is used" "db=$mine" "$(run_w MIOPEN_USER_DB_PATH="$mine")"
check "and kept" test -d "$mine"
code=0
msg=$(run_w PROBE_STATUS=7) || code=$?
check_eq "the program's exit status comes back" 7 "$code"
gone=${msg#db=}
if [[ $gone == /tmp/miopen-$UID-777-3.* && ! -e $gone ]]; then pass "a failed rank's MIOpen directory is removed too"; else fail "MIOpen dir after a failed rank: $msg"; fi
finish
