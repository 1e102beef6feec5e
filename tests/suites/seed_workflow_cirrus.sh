#!/usr/bin/env bash
# The Cirrus seed's user workflow (cirrus-pytorch-venv.md and the page it links,
# https://docs.cirrus.ac.uk/user-guide/python/#installing-your-own-python-packages-with-pip)
# walked literally against the generated outputs: `module load pytorch/2.3.1-gpu` in real Lmod,
# `which python` and the packages from PYTHONUSERBASE, `python -m venv --system-site-packages`,
# `extend-venv-activate`, activate (loads the module) and deactivate (unloads it), then the
# generated job on the real one-node Slurm. Expected values by hand from the seed. Stand-ins, for
# what this machine lacks: the python/3.12.1-gpu module (a modulefile setting what the seed reads
# from it, its python the real /usr/bin/python3), the pip --user install (a horovod package
# stand-in in the stack's PYTHONUSERBASE) and the GPUs (the job's --gpus-per-node directive is
# dropped for this GPU-less Slurm). Horovod's build is the easyconfig suites' business.
set -euo pipefail
sitegen=$(realpath "${1:?usage: seed_workflow_cirrus.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
# shellcheck source=tests/tools/lmod-lib.sh
source "$root/tests/tools/lmod-lib.sh"
need_tool sbatch srun slurmctld slurmd shellcheck
[[ -r $LMOD_INIT ]] || { fail "lmod is not installed ($LMOD_INIT)"; finish; }

prefix=$SCRATCH/out/modules-out/cirrus
"$sitegen" --sites-dir "$root/sites" --out-dir "$SCRATCH/out" build cirrus --prefix "$prefix" >/dev/null
mp=$prefix/modulefiles
sw=$prefix/software/pytorch/2.3.1-gpu
userbase=$sw/python/3.12.1

# Stand-in for Cirrus' python/3.12.1-gpu (Miniconda3): its python and the variables the seed reads.
mkdir -p "$mp/python" "$SCRATCH/miniconda/bin"
ln -s /usr/bin/python3 "$SCRATCH/miniconda/bin/python"
cat >"$mp/python/3.12.1-gpu.lua" <<LUA
-- stand-in for Cirrus' python/3.12.1-gpu module
setenv("MINICONDA3_PYTHON_VERSION", "3.12.1")
setenv("MINICONDA3_PYTHON_LABEL", "python3.12")
prepend_path("PATH", "$SCRATCH/miniconda/bin")
LUA
# Stand-in for what `pip install --user` put into the stack's PYTHONUSERBASE.
mkdir -p "$userbase/lib/python3.12/site-packages/horovod"
echo '__version__ = "0.28.1"' >"$userbase/lib/python3.12/site-packages/horovod/__init__.py"
hvd=$userbase/lib/python3.12/site-packages/horovod/__init__.py

# ---- Step 1: module load, which python, the packages, and a venv extended by the seed's script.
venv=$SCRATCH/work/myvenv
# shellcheck disable=SC2016  # expanded in Lmod's shell
got=$(lmod_clean_shell "$mp" 'module load pytorch/2.3.1-gpu && echo "python=$(which python)" &&
echo "LOADED=$LOADEDMODULES" && python -c "import horovod, site; print(\"horovod=\" + horovod.__file__); print(\"USER_BASE=\" + site.USER_BASE)" &&
echo "extend-venv-activate=$(which extend-venv-activate)" &&
python -m venv --system-site-packages '"'$venv'"' && extend-venv-activate '"'$venv'"' && echo extended' 2>"$SCRATCH/step1.err")
check_eq "module: the python module's python, horovod from PYTHONUSERBASE, extend-venv-activate on PATH" \
  "python=$SCRATCH/miniconda/bin/python
LOADED=python/3.12.1-gpu:pytorch/2.3.1-gpu
horovod=$hvd
USER_BASE=$userbase
extend-venv-activate=$sw/bin/extend-venv-activate
$venv/bin/activate: loads pytorch/2.3.1-gpu on activate
extended" "$got"
# Its notes (stderr); the stand-in python is Debian's 3.11, hence also a version warning.
check_contains "extend-venv-activate: csh is not extended" \
  "extend-venv-activate: note: bin/activate.csh is not extended; use bash or zsh to load pytorch/2.3.1-gpu with the venv" \
  "$(cat "$SCRATCH/step1.err")"

# ---- Step 2: a new session: activating the venv loads the module, deactivating unloads it.
# shellcheck disable=SC2016  # expanded in Lmod's shell
got=$(lmod_clean_shell "$mp" 'source '"'$venv'"'/bin/activate && echo "LOADED=$LOADEDMODULES" &&
echo "python=$(which python)" && python -c "import horovod, sys; print(\"horovod=\" + horovod.__file__); print(\"prefix=\" + sys.prefix)" &&
deactivate && echo "after=${LOADEDMODULES:-}"' 2>&1)
check_eq "venv: activate loads pytorch/2.3.1-gpu, its python and the stack's packages; deactivate unloads" \
  "LOADED=python/3.12.1-gpu:pytorch/2.3.1-gpu
python=$venv/bin/python
horovod=$hvd
prefix=$venv
after=" "$got"

# ---- Step 3: the generated job on the real Slurm.
job=$sw/runscripts/job.slurm
check "shellcheck job.slurm" shellcheck -s bash "$job"
grep -v '^#SBATCH --gpus-per-node' "$job" >"$SCRATCH/job.slurm"
check_eq "the GPU-less copy differs by the --gpus-per-node line" 1 "$(diff "$job" "$SCRATCH/job.slurm" | grep -c '^<')"
cat >"$SCRATCH/train.py" <<'PY'
import os, sys
import horovod
e = os.environ
print(f"RANK={e['RANK']} LOCAL_RANK={e['LOCAL_RANK']} WORLD_SIZE={e['WORLD_SIZE']}"
      f" CUDA_VISIBLE_DEVICES={e.get('CUDA_VISIBLE_DEVICES', '<unset>')} MASTER={e['MASTER_ADDR']}:{e['MASTER_PORT']}"
      f" python={sys.executable} horovod={horovod.__file__} args={' '.join(sys.argv[1:])}", flush=True)
PY
slurm_up
host=$(hostname)
work=$SCRATCH/work
if id=$(cd "$work" && sbatch --export=NONE --wait --parsable --partition=debug --ntasks-per-node=2 --cpus-per-task=1 \
  -o "$work/job-%j.out" "$SCRATCH/job.slurm" "$SCRATCH/train.py" --epochs 1); then pass; else
  fail "the job failed: $(cat "$work"/job-*.out 2>/dev/null)"; fi
port=$((29500 + id % 1000))
want=""
for r in 0 1; do
  want+="RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 CUDA_VISIBLE_DEVICES=$r MASTER=$host:$port"
  want+=" python=$SCRATCH/miniconda/bin/python horovod=$hvd args=--epochs 1"$'\n'
done
check_eq "job: each rank one GPU, the module's python and packages, one master" \
  "$want" "$(grep '^RANK=' "$work/job-$id.out" | sort)"$'\n'
finish
