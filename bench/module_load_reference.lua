-- Hand-written reference for bench/module_load.sh: the LUMI PyTorch module's variables, no checks, no help.
-- @ROOT@ is replaced by the benchmark with the install directory (an installed module would hard-code it).
depends_on("LUMI/24.03")
local root = "@ROOT@"
local sif = root .. "/lumi-pytorch-rocm-6.0.3-python-3.12-pytorch-v2.3.1-dockerhash-2c1c14cafd28.sif"
setenv("SIF", sif)
setenv("SIFPYTORCH", sif)
setenv("CONTAINERROOT", root)
setenv("RUNSCRIPTS", root .. "/runscripts")
setenv("RUNSCRIPTSPYTORCH", root .. "/runscripts")
setenv("SINGULARITY_BIND", "/var/spool/slurmd,/opt/cray,/usr/lib64/libcxi.so.1,/usr/lib64/libjansson.so.4,"
  .. "/pfs,/scratch,/projappl,/project,/flash,/appl,"
  .. root .. "/runscripts:/runscripts," .. root .. "/user-software:/user-software")
setenv("SINGULARITYENV_CONDA_DEFAULT_ENV", "pytorch")
setenv("SINGULARITYENV_CONDA_EXE", "/opt/miniconda3/bin/conda")
setenv("SINGULARITYENV_CONDA_PREFIX", "/opt/miniconda3/envs/pytorch")
setenv("SINGULARITYENV_PREPEND_PATH", "/runscripts:/user-software/venv/pytorch/bin:/opt/miniconda3/envs/pytorch/bin:/opt/miniconda3/condabin")
setenv("SINGULARITYENV_VIRTUAL_ENV", "/user-software/venv/pytorch")
setenv("SINGULARITYENV_WITH_CONDA_VENV", "source /runscripts/init-conda-venv")
setenv("SINGULARITYENV_WITH_VENV", "source /user-software/venv/pytorch/bin/activate")
setenv("NCCL_SOCKET_IFNAME", "hsn0,hsn1,hsn2,hsn3")
setenv("NCCL_NET_GDR_LEVEL", "3")
prepend_path("PATH", root .. "/bin")
