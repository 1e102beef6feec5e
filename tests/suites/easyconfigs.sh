#!/usr/bin/env bash
# Every generated easyconfig of every seed site (plus the hostile golden site), checked as
# EasyBuild reads and runs it (tests/tools/check_easyconfig.py: parameters, names, file
# naming, templates; postinstallcmds run under bash and /bin/sh write sitegen's scripts
# byte for byte, sanity checks pass). Then, per site: the tools postinstallcmds call
# (singularity, pip, conda: recorded by fakes) get exactly the arguments the seeds use.
# The module EasyBuild generates from each easyconfig is compared with sitegen's by
# tests/suites/easybuild_real.sh, with the real EasyBuild after real installs.
set -euo pipefail
sitegen=$(realpath "${1:?usage: easyconfigs.sh SITEGEN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/tools/common.sh
source "$root/tests/tools/common.sh"
need_tool python3 bash truncate

lumi_sif=lumi-pytorch-rocm-6.0.3-python-3.12-pytorch-v2.3.1-dockerhash-2c1c14cafd28.sif
# expected_calls SITE: the fake tool calls of the site's postinstallcmds, one Python list
# each (argv, then PYTHONUSERBASE and MPICC), install dir as @INSTALLDIR@. From the seeds:
#   lumi   LUMI's recipe: singularity exec --bind %(installdir)s/user-software:/user-software
#          %(installdir)s/<sif> bash -c '$WITH_CONDA; cd /user-software/venv; python -m venv
#          --system-site-packages pytorch' ($WITH_CONDA = source /opt/miniconda3/bin/activate pytorch)
#   cirrus pip install --user under PYTHONUSERBASE=<dir>/python/3.12.1 (the python/3.12.1-gpu
#          module's Python), the seed's packages and versions: torch, torchaudio, torchmetrics,
#          torchtext, torchvision with --extra-index-url https://download.pytorch.org/whl/cu121
#          (one command here, one per package in the seed), the tensorboard packages, then
#          pip install --user --no-cache-dir git+https://github.com/thomas-bouvier/horovod.git@compile-cpp17
#          (its HOROVOD_* environment is compared in tests/suites/install_settings.sh)
#   frontier conda create -p <env> python=3.10, then that env's pip: torch, torchvision,
#          torchaudio from --index-url https://download.pytorch.org/whl/rocm6.0, then
#          MPICC="cc -shared" pip install --no-cache-dir --no-binary=mpi4py mpi4py
expected_calls() {
  case $1 in
    lumi) cat <<EOF
['singularity', 'exec', '--bind', '@INSTALLDIR@/user-software:/user-software', '@INSTALLDIR@/$lumi_sif', 'bash', '-c', 'source /opt/miniconda3/bin/activate pytorch && mkdir -p /user-software/venv && python -m venv --system-site-packages /user-software/venv/pytorch', 'PYTHONUSERBASE=', 'MPICC=']
EOF
    ;;
    cirrus) cat <<'EOF'
['python3.12', '-m', 'pip', 'install', '--user', '--no-cache-dir', '--extra-index-url', 'https://download.pytorch.org/whl/cu121', 'torch==2.3.1', 'torchaudio==2.3.1', 'torchmetrics==1.0.3', 'torchtext==0.18.0', 'torchvision==0.18.1', 'PYTHONUSERBASE=@INSTALLDIR@/python/3.12.1', 'MPICC=']
['python3.12', '-m', 'pip', 'install', '--user', '--no-cache-dir', 'tensorboard==2.17.0', 'tensorboard-plugin-wit==1.8.1', 'tensorboard-pytorch==0.7.1', 'tensorboard_plugin_profile==2.15.1', 'torch-tb-profiler==0.4.3', 'PYTHONUSERBASE=@INSTALLDIR@/python/3.12.1', 'MPICC=']
['python3.12', '-m', 'pip', 'install', '--user', '--no-cache-dir', 'git+https://github.com/thomas-bouvier/horovod.git@compile-cpp17', 'PYTHONUSERBASE=@INSTALLDIR@/python/3.12.1', 'MPICC=']
EOF
    ;;
    frontier) cat <<'EOF'
['conda', 'create', '--yes', '--prefix', '@INSTALLDIR@/conda-env', 'python=3.10', 'PYTHONUSERBASE=', 'MPICC=']
['@INSTALLDIR@/conda-env/bin/python', '-m', 'pip', 'install', '--no-cache-dir', '--index-url', 'https://download.pytorch.org/whl/rocm6.0', 'torch==2.3.1', 'torchaudio==2.3.1', 'torchvision==0.18.1', 'PYTHONUSERBASE=', 'MPICC=']
['@INSTALLDIR@/conda-env/bin/python', '-m', 'pip', 'install', '--no-cache-dir', '--no-binary=mpi4py', 'mpi4py==3.1.6', 'PYTHONUSERBASE=', 'MPICC=cc -shared']
EOF
    ;;
    box) cat <<'EOF'
['apptainer', 'exec', '--bind', '@INSTALLDIR@/user-software:/user-software', "@INSTALLDIR@/torch box's image.sif", 'bash', '-c', 'source /opt/conda/bin/activate torch && mkdir -p /user-software/venv && python -m venv --system-site-packages /user-software/venv/torch', 'PYTHONUSERBASE=', 'MPICC=']
EOF
    ;;
    # tuolumne: pip --user over cray-python/3.11.7, torch from pytorch.org's ROCm 6.4 index (rocm/6.4.1)
    tuolumne) cat <<'EOF'
['python3.11', '-m', 'pip', 'install', '--user', '--no-cache-dir', '--index-url', 'https://download.pytorch.org/whl/rocm6.4', 'torch==2.8.0', 'PYTHONUSERBASE=@INSTALLDIR@/python/3.11.7', 'MPICC=']
EOF
    ;;
    *) ;;  # aurora, local, polaris, perlmutter, alps: the site (or its uenv) provides Python and the packages
  esac
}

check_site() {  # check_site SITES_DIR SITE
  local site=$2 out=$SCRATCH/$2 report
  "$sitegen" --sites-dir "$1" --out-dir "$out" build "$site" --prefix "$out/modules-out/$site" >/dev/null 2>&1
  mkdir -p "$out/records"
  if report=$(python3 "$root/tests/tools/check_easyconfig.py" "$root/tests/data/easybuild_parameters.txt" \
      "$out/easyconfigs-out/$site" "$out/modules-out/$site" --records "$out/records"); then
    pass
  else
    fail "easyconfigs of $site:"
    echo "$report" | grep -v ' passed, ' | head -n 20
  fi
  check_eq "$site: tool calls of postinstallcmds" "$(expected_calls "$site")" "$(cat "$out"/records/*.record)"

}

for site in lumi frontier cirrus aurora local polaris perlmutter alps tuolumne; do check_site "$root/sites" "$site"; done
check_site "$root/tests/golden/apptainer-container/sites" box

# The LUMI easyconfig has every parameter LUMI's own recipe uses (easybuild/easyconfigs/p/
# PyTorch/PyTorch-2.3.1-rocm-6.0.3-python-3.12-singularity-20240923.eb in
# Lumi-supercomputer/LUMI-EasyBuild-containers), with LUMI's values where they are values.
lumi_eb=$SCRATCH/lumi/easyconfigs-out/lumi/p/PyTorch/PyTorch-2.3.1-rocm-6.0.3-python-3.12-singularity-20240923.eb
lumi_values=$(python3 - "$lumi_eb" <<'EOF'
import sys
env = {"SYSTEM": {"name": "system", "version": "system"}, "EXTERNAL_MODULE": "EXTERNAL_MODULE"}
exec(open(sys.argv[1]).read(), env)
for key in ("easyblock", "name", "version", "versionsuffix", "local_sif", "homepage", "toolchain", "sources",
            "skipsteps", "files_to_copy", "docurls", "moduleclass"):
    print(key, "=", repr(env.get(key)))
print("whatis keywords =", [w for w in env.get("whatis", []) if w.startswith("Keywords:")])
print("sanity dirs =", env["sanity_check_paths"]["dirs"])
print("dependencies =", env.get("dependencies"))
print("has =", sorted(k for k in ("description", "postinstallcmds", "sanity_check_paths", "modextravars", "modluafooter") if env.get(k)))
EOF
)
check_eq "LUMI recipe parameters" "easyblock = 'MakeCp'
name = 'PyTorch'
version = '2.3.1'
versionsuffix = '-rocm-6.0.3-python-3.12-singularity-20240923'
local_sif = '$lumi_sif'
homepage = 'https://pytorch.org/'
toolchain = {'name': 'system', 'version': 'system'}
sources = [{'filename': '$lumi_sif', 'extract_cmd': '/bin/cp -L %s .'}]
skipsteps = ['build']
files_to_copy = [(['$lumi_sif'], '.')]
docurls = ['DeepSpeed web site: https://www.deepspeed.ai/', 'Latest LUMI AI training: https://lumi-supercomputer.github.io/AI-latest']
moduleclass = 'devel'
whatis keywords = ['Keywords: PyTorch, DeepSpeed, flash-attention, xformers']
sanity dirs = ['runscripts']
dependencies = None
has = ['description', 'modextravars', 'modluafooter', 'postinstallcmds', 'sanity_check_paths']" "$lumi_values"
finish
