// The field tables: every key of the site file, its member, bounds, choices and reference text.
#include "site/fields.h"

namespace sitegen {

constexpr int kMaxCount = 1 << 20;  // nodes: far above any machine, yet catches a stray exponent

const char* const kTopLevelSection = "Top level of `sites/<name>/site.toml` or of a shared fragment.";

template <>
const std::vector<Field<Site>>& fields_of() {
    static const std::vector<Field<Site>> rows = {
        {.key = "extends", .member = ExtendsPaths{},
         .meaning = "Fragments applied before this file, paths relative to this file; later files override earlier ones key by key."},
        {.key = "site", .member = &Site::site, .requirement = "required", .meaning = "See [site].",
         .section = "Identity of the site and how users reach the module tree."},
        {.key = "hardware", .member = &Site::hardware, .requirement = "required", .meaning = "See [hardware].",
         .section = "A compute node as the scheduler sees it."},
        {.key = "binding", .member = &Site::binding, .meaning = "See [binding].",
         .section = "How ranks are pinned to cores, computed from `hardware.device_cores`."},
        {.key = "batch", .member = &Site::batch, .meaning = "See [batch].",
         .section = "Defaults for the generated batch scripts."},
        {.key = "collectives", .member = &Site::collectives, .requirement = "required", .meaning = "See [collectives].",
         .section = "Collective library, its network plugin and environment."},
        {.key = "container", .member = &Site::container, .meaning = "See [container].",
         .section = "Container runtime and bind mounts (omit for bare-metal sites)."},
        {.key = "python", .member = &Site::python, .requirement = "required", .meaning = "See [python].",
         .section = "Python layout of the stacks (each stack may override it)."},
        {.key = "stacks", .member = &Site::stacks, .requirement = "required",
         .meaning = "See [stacks[]]; at least one `[[stacks]]`.", .section = "A module to publish (`[[stacks]]`)."},
        {.key = "profiles", .member = &Site::profiles,
         .meaning = "Named sets of collective and fabric variables (`[[profiles]]`), each variable with a reason and "
                    "conditions; every file adds its own, so a shared fragment can define them (docs/profiles.md).",
         .section = "A collective network profile (`[[profiles]]`), applied where `collectives.profiles` names it."},
    };
    return rows;
}

template <>
const std::vector<Field<SiteInfo>>& fields_of() {
    static const std::vector<Field<SiteInfo>> rows = {
        {.key = "name", .member = &SiteInfo::name, .requirement = "required",
         .meaning = "Site id; must equal the `sites/<name>/` directory."},
        {.key = "description", .member = &SiteInfo::description, .requirement = "required",
         .meaning = "One line shown in `sitegen list`."},
        {.key = "url", .member = &SiteInfo::url, .meaning = "User documentation of the site."},
        {.key = "scheduler", .member = &SiteInfo::scheduler, .requirement = "required", .meaning = "Batch system (`flux`: `flux batch` scripts with `# flux:` directives)."},
        {.key = "launcher", .member = &SiteInfo::launcher, .requirement = "required",
         .meaning = "Parallel launcher: the scheduler's own (srun for Slurm, mpiexec for PBS/PALS, `flux run` for Flux)."},
        {.key = "install_prefix", .member = &SiteInfo::install_prefix, .absolute_path = true, .requirement = "required",
         .meaning = "Where stacks are installed (`<prefix>/software/<name>/<version>`); `--prefix` overrides it."},
        {.key = "module_system", .member = &SiteInfo::module_system, .requirement = "default `lmod`",
         .meaning = "Module system the modulefiles are written for: Lmod (Lua modulefiles, `.modulerc.lua`) or "
                    "Environment Modules 5.1 or later (Tcl modulefiles, `.modulerc`)."},
        {.key = "module_use", .member = &SiteInfo::module_use,
         .meaning = "Paths users `module use` before loading (Aurora: `/soft/modulefiles`)."},
        {.key = "base_modules", .member = &SiteInfo::base_modules,
         .meaning = "Modules every stack depends on (e.g. `LUMI/24.03`, `rocm/6.0.0`)."},
        {.key = "user_install", .member = &SiteInfo::user_install, .requirement = "default false",
         .meaning = "The stacks are installed per user or project with EasyBuild (`eb <easyconfig>` after loading "
                    "`user_install_modules`, into the prefix `$user_prefix_var` names; LUMI's EasyBuild-user and "
                    "`EBU_USER_PREFIX`), so each copy's `user-software` venv belongs to its owner: the module's help "
                    "says `pip install` works in your own copy only and how to make one. false: one central copy."},
        {.key = "user_prefix_var", .member = &SiteInfo::user_prefix_var, .requirement = "required with user_install",
         .meaning = "Variable naming the user's or project's install prefix, set before loading the modules "
                    "(LUMI: `EBU_USER_PREFIX`)."},
        {.key = "user_install_modules", .member = &SiteInfo::user_install_modules,
         .requirement = "required with user_install",
         .meaning = "Modules loaded before `eb` for a user install (LUMI: `LUMI/24.03`, `partition/container`, "
                    "`EasyBuild-user`)."},
        {.key = "depend_on_base_modules", .member = &SiteInfo::depend_on_base_modules, .requirement = "default true",
         .meaning = "The modules depend on `base_modules` (`depends_on`, and EasyBuild dependencies). false: the job "
                    "script loads them first but the module needs none of them (LUMI's container modules work in any "
                    "LUMI stack or CrayEnv)."},
    };
    return rows;
}

template <>
const std::vector<Field<Hardware>>& fields_of() {
    static const std::vector<Field<Hardware>> rows = {
        {.key = "gpu_vendor", .member = &Hardware::gpu_vendor, .requirement = "required", .meaning = "GPU vendor."},
        {.key = "gpu_model", .member = &Hardware::gpu_model,
         .meaning = "GPU model, e.g. `MI250X`, `V100-SXM2-16GB`, `Max 1550`."},
        {.key = "devices_per_node", .member = &Hardware::devices_per_node, .min = 0, .max = 1024,
         .requirement = "required",
         .meaning = "GPUs per node as the scheduler counts them (GCDs on MI250X, tiles on PVC); 0 on CPU-only nodes."},
        {.key = "cores_per_node", .member = &Hardware::cores_per_node, .min = 1, .max = 65536,
         .requirement = "required", .meaning = "Physical cores per node."},
        {.key = "threads_per_core", .member = &Hardware::threads_per_core, .min = 1, .max = 16,
         .requirement = "default 1", .meaning = "Hardware threads per core."},
        {.key = "device_cores", .member = &Hardware::device_cores, .requirement = "required if devices_per_node > 0",
         .meaning = "For device i, the cores nearest to it as ranges (`\"48-55\"`, `\"0-3,8-11\"`)."},
        {.key = "reserved_cores", .member = &Hardware::reserved_cores, .min = 0, .max = 65535,
         .meaning = "Cores never bound to a rank (OS / low-noise cores)."},
        {.key = "nics", .member = &Hardware::nics, .meaning = "High-speed network interfaces (`hsn0`...)."},
        {.key = "interconnect", .member = &Hardware::interconnect, .meaning = "Interconnect name, e.g. `slingshot-11`."},
        {.key = "device_numa", .member = &Hardware::device_numa, .min = 0, .max = 4095,
         .requirement = "required by binding style `numa`",
         .meaning = "For device i, the NUMA node (OS index) whose cores are nearest to it, e.g. `[3, 3, 1, 1, 0, 0, 2, 2]`; "
                    "`sitegen topology import` fills it."},
        {.key = "driver_gate", .member = &Hardware::driver_gate, .requirement = "default `refuse`",
         .meaning = "What a module does when the node's GPU driver is older than its stack's `min_driver`: "
                    "`refuse` to load (LmodError) or `warn` and load."},
        {.key = "network_links", .member = &Hardware::network_links, .min = 0, .max = 64,
         .requirement = "default 0 (unknown)",
         .meaning = "Network links (NICs) per node the collectives use; with link_gbps, the peak the acceptance "
                    "job compares a multi-node all_reduce's bus bandwidth with."},
        {.key = "link_gbps", .member = &Hardware::link_gbps, .min = 0, .max = 100000,
         .requirement = "default 0 (unknown)", .meaning = "Line rate of each network link in Gbit/s (Slingshot-11: 200)."},
    };
    return rows;
}

template <>
const std::vector<Field<Binding>>& fields_of() {
    static const std::vector<Field<Binding>> rows = {
        {.key = "style", .member = &Binding::style, .requirement = "default `none`",
         .meaning = "`mask`: Slurm `--cpu-bind=mask_cpu:`; `list`: PALS `mpiexec --cpu-bind list:`; under Flux either is "
                    "`flux run -o cpu-affinity=map:` (masks or core lists); `numa`: each rank bound to its device's NUMA node "
                    "(`hardware.device_numa`), by Slurm `--cpu-bind=map_ldom:` or, under mpiexec, by `numactl --cpunodebind "
                    "--membind` in the rank wrapper."},
        {.key = "cores_per_rank", .member = &Binding::cores_per_rank, .min = 0, .max = 65536, .requirement = "default 0",
         .meaning = "Cores per rank taken from its device's domain (0 = all that are not reserved)."},
        {.key = "core_offset", .member = &Binding::core_offset, .min = 0, .max = 65536, .requirement = "default 0",
         .meaning = "Domain cores skipped before the rank's cores start."},
        {.key = "verbose", .member = &Binding::verbose, .requirement = "default false",
         .meaning = "Prefix the PALS list with `verbose,`."},
        {.key = "affinity_env", .member = &Binding::affinity_env, .choices = {"last", "next"},
         .meaning = "Variables listing one core per rank: `last` (last core of the rank) or `next` (the core after "
                    "it), e.g. `HOROVOD_THREAD_AFFINITY = \"last\"`.",
         .section = "Affinity variables (name = `last` | `next`)."},
    };
    return rows;
}

template <>
const std::vector<Field<Batch>>& fields_of() {
    static const std::vector<Field<Batch>> rows = {
        {.key = "nodes", .member = &Batch::nodes, .min = 1, .max = kMaxCount, .requirement = "default 1",
         .meaning = "Nodes requested."},
        {.key = "tasks_per_node", .member = &Batch::tasks_per_node, .min = 1, .max = 4096,
         .requirement = "default devices_per_node (1 without GPUs)", .meaning = "Ranks per node."},
        {.key = "gpus_per_node", .member = &Batch::gpus_per_node, .min = 0, .max = 1024,
         .requirement = "default devices_per_node", .meaning = "GPUs requested per node."},
        {.key = "cpus_per_task", .member = &Batch::cpus_per_task, .min = 1, .max = 65536,
         .requirement = "default from binding", .meaning = "CPUs per rank."},
        {.key = "partition", .member = &Batch::partition, .meaning = "Slurm partition, PBS or Flux queue."},
        {.key = "account", .member = &Batch::account, .meaning = "Account / project placeholder (Flux: the bank)."},
        {.key = "time", .member = &Batch::time, .requirement = "default `00:10:00`",
         .meaning = "Wall time, `[[D-]HH:]MM:SS` (Flux gets it as `-t` minutes or seconds)."},
        {.key = "mem", .member = &Batch::mem, .meaning = "Memory per node (Slurm `--mem`)."},
        {.key = "output", .member = &Batch::output, .meaning = "Slurm or Flux (`--output`) output file pattern."},
        {.key = "place", .member = &Batch::place, .meaning = "PBS `place=` value."},
        {.key = "filesystems", .member = &Batch::filesystems, .meaning = "PBS `filesystems=` value."},
        {.key = "rank_starter", .member = &Batch::rank_starter, .requirement = "default `launcher`",
         .meaning = "Who starts the ranks: `launcher` (the scheduler's launcher, one task per rank, bound and given a "
                    "device by the rank wrapper) or `torchrun` (the launcher starts one task per node, which runs "
                    "`torchrun --nnodes=N --nproc_per_node=tasks_per_node` with c10d rendezvous at MASTER_ADDR:MASTER_PORT; "
                    "torchrun sets RANK/LOCAL_RANK/WORLD_SIZE, the program picks its device by LOCAL_RANK, and no "
                    "per-rank CPU binding or device narrowing applies)."},
        {.key = "qos", .member = &Batch::qos, .meaning = "Slurm `--qos` (no PBS equivalent: refused there)."},
        {.key = "constraint", .member = &Batch::constraint,
         .meaning = "Slurm `--constraint`: node features (PBS selects them with site resources in `select`: refused there)."},
        {.key = "exclusive", .member = &Batch::exclusive, .requirement = "default false",
         .meaning = "Nodes not shared with other jobs: Slurm `--exclusive`, PBS `-l place=excl` (with `place` set, "
                    "write `:excl` into it instead)."},
        {.key = "reservation", .member = &Batch::reservation,
         .meaning = "Slurm `--reservation`; PBS runs a reservation as its queue (`-q`), so not with `partition`."},
        {.key = "gpus_per_task", .member = &Batch::gpus_per_task, .min = 1, .max = 1024,
         .meaning = "Slurm `--gpus-per-task`, written instead of `--gpus-per-node` (Slurm only); 1 where the rank "
                    "wrapper narrows visibility, and x ranks per node at most `devices_per_node`."},
        {.key = "gpu_bind", .member = &Batch::gpu_bind,
         .meaning = "Slurm `--gpu-bind`, e.g. `closest` (Slurm only; needs GPUs, and `gpus_per_task = 1` where the "
                    "rank wrapper narrows visibility, so that Slurm binds the one device the wrapper keeps)."},
        {.key = "env", .member = &Batch::env,
         .meaning = "Variables the job script exports after loading the modules, before the launcher (every rank "
                    "inherits them; the module does not set them), e.g. Aurora's `IPEX_FP32_MATH_MODE = \"TF32\"`.",
         .section = "Job environment (name = value)."},
        {.key = "prepend_path", .member = &Batch::prepend_path,
         .meaning = "Directories the job script puts first on a path variable after loading the modules "
                    "(name = one absolute directory), e.g. Aurora's `LD_LIBRARY_PATH` = oneCCL's `lib`.",
         .section = "Job path prepends (name = absolute directory)."},
        {.key = "core_dumps", .member = &Batch::core_dumps, .requirement = "default true",
         .meaning = "false: the job script runs `ulimit -c 0` before the launcher, so no rank writes a core file "
                    "(Aurora's job script does)."},
        {.key = "miopen_cache_per_rank", .member = &Batch::miopen_cache_per_rank, .requirement = "default false",
         .meaning = "AMD GPUs: each rank gets a fresh MIOpen cache (MIOPEN_USER_DB_PATH, MIOPEN_CUSTOM_CACHE_DIR) in "
                    "`/tmp` (`mktemp -d`, named by job and rank with a random suffix), which the rank wrapper removes when the rank "
                    "exits; no rank touches another's. false: one directory per job and node, kept."},
    };
    return rows;
}

template <>
const std::vector<Field<Collectives>>& fields_of() {
    static const std::vector<Field<Collectives>> rows = {
        {.key = "library", .member = &Collectives::library, .requirement = "required",
         .meaning = "Collective library torch.distributed uses."},
        {.key = "network_plugin", .member = &Collectives::network_plugin,
         .meaning = "Network plugin, e.g. `aws-ofi-rccl`."},
        {.key = "visibility_var", .member = &Collectives::visibility_var,
         .meaning = "Device-visibility variable the rank wrapper sets (`ROCR_VISIBLE_DEVICES`, "
                    "`CUDA_VISIBLE_DEVICES`, `ZE_AFFINITY_MASK`)."},
        {.key = "master_port_base", .member = &Collectives::master_port_base, .min = 1, .max = 65535,
         .requirement = "default 29500",
         .meaning = "MASTER_PORT = base + job id mod span, unless MASTER_PORT is already set."},
        {.key = "master_port_span", .member = &Collectives::master_port_span, .min = 1, .max = 65535,
         .requirement = "default 1000", .meaning = "See master_port_base."},
        {.key = "env", .member = &Collectives::env,
         .meaning = "Variables every rank and the module export (NCCL_*, FI_CXI_*, CCL_*).",
         .section = "Collective environment (name = value)."},
        {.key = "visibility", .member = &Collectives::visibility, .requirement = "default `narrow`",
         .meaning = "Which devices each rank sees. `narrow`: one, device LOCAL_RANK (the wrapper sets visibility_var; "
                    "without it nothing narrows). `all`: every device of the node; the program picks its own by "
                    "LOCAL_RANK (or the launcher's MPI_LOCALRANKID / PALS_LOCAL_RANKID), nothing narrows. `shared`: "
                    "ranks_per_device ranks on each device, device LOCAL_RANK / ranks_per_device, with the vendor's "
                    "variables (Intel: ZEX_NUMBER_OF_CCS, one CCS per rank; NVIDIA: the MPS client's "
                    "CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY) and each device's cores split among its ranks. "
                    "Refused with `library = \"nccl\"` or `\"rccl\"`: they do not allow two ranks of one communicator on "
                    "one GPU (\"Duplicate GPU detected\"); ranks sharing an NVIDIA or AMD device reduce with `gloo`."},
        {.key = "ranks_per_device", .member = &Collectives::ranks_per_device, .min = 1, .max = 64,
         .requirement = "default 1",
         .meaning = "Ranks per device under `visibility = \"shared\"` (Intel PVC: 1, 2 or 4 CCS per tile; NVIDIA MPS: "
                    "at most 48 clients per GPU); tasks_per_node defaults to devices_per_node x this."},
        {.key = "network_plugin_path", .member = &Collectives::network_plugin_path, .absolute_path = true,
         .requirement = "required with network_plugin",
         .meaning = "Directory holding the plugin library (`librccl-net*.so`, `libnccl-net*.so`): prepended to "
                    "LD_LIBRARY_PATH by the module (bare metal) or, in containers, bound in and prepended by the "
                    "rank wrapper."},
        {.key = "network_plugin_in_image", .member = &Collectives::network_plugin_in_image,
         .requirement = "default false",
         .meaning = "network_plugin_path is inside the container image (built in, as LUMI's images): not bound from "
                    "the host, only prepended inside."},
        {.key = "profiles", .member = &Collectives::profiles,
         .meaning = "Names of `[[profiles]]` applied to every stack, in order, after `env` (which acts as an "
                    "unconditional profile of its own); see docs/profiles.md."},
        {.key = "network_plugin_version", .member = &Collectives::network_plugin_version,
         .meaning = "Version of the network plugin (`1.4.0`), matched by profile conditions `plugin_version`; a "
                    "stack's `components` entry named like `network_plugin` overrides it (the plugin in its image)."},
        {.key = "debug_switch", .member = &Collectives::debug_switch, .requirement = "default false",
         .meaning = "NCCL/RCCL: `SITEGEN_NCCL_DEBUG=LEVEL sbatch job...` (VERSION, WARN, INFO or TRACE) makes the rank "
                    "wrapper set NCCL_DEBUG=LEVEL (and NCCL_DEBUG_SUBSYS = debug_subsys) for the ranks only; off when "
                    "unset. LUMI's check that aws-ofi-rccl is used: `NCCL_DEBUG=INFO`, then `NET/OFI` lines in the log."},
        {.key = "debug_subsys", .member = &Collectives::debug_subsys, .requirement = "optional, with debug_switch",
         .meaning = "NCCL_DEBUG_SUBSYS the switch sets unless the job already has one (LUMI: `INIT,COLL`)."},
        {.key = "min_busbw_percent", .member = &Collectives::min_busbw_percent, .min = 0, .max = 100,
         .requirement = "default 0 (report only)",
         .meaning = "The acceptance job fails a multi-node all_reduce whose bus bandwidth is under this percentage "
                    "of `hardware.network_links` x `hardware.link_gbps`."},
    };
    return rows;
}

template <>
const std::vector<Field<Container>>& fields_of() {
    static const std::vector<Field<Container>> rows = {
        {.key = "runtime", .member = &Container::runtime, .requirement = "required",
         .meaning = "Container runtime. singularity and apptainer read the module's SINGULARITY_* / APPTAINER_* "
                    "variables (binds, in-container environment); charliecloud (`ch-run`) gets its binds as `-b` "
                    "flags from the module's CONTAINER_BINDS and runs the image directory or SquashFS in SIF. "
                    "podman-hpc (NERSC; Slurm only) runs a named image (`podman-hpc migrate`d) with `-v` binds, host "
                    "networking and the scheduler's and module's variables passed by name (`-e`); pyxis (Slurm's "
                    "enroot plugin) enters the SquashFS image by `srun --container-image/--container-mounts` flags; "
                    "uenv (CSCS Alps; Slurm only) mounts a named uenv at /user-environment with `srun --uenv --view`, "
                    "the host's files visible as they are (no binds)."},
        {.key = "image_dir", .member = &Container::image_dir, .absolute_path = true,
         .requirement = "required unless the runtime runs named images",
         .meaning = "Where the site keeps its images (unused by podman-hpc and uenv, whose images are names)."},
        {.key = "binds", .member = &Container::binds,
         .meaning = "Bind mounts, each `{ host = \"/opt/cray\", container = \"/opt/cray\", options = \"ro\" }`; "
                    "`container` defaults to `host`.",
         .section = "One bind mount."},
        {.key = "gpu_flag", .member = &Container::gpu_flag, .requirement = "default false",
         .meaning = "Run the image with the runtime's GPU flag for `hardware.gpu_vendor` (`--nv` on NVIDIA, `--rocm` on "
                    "AMD), which binds the host's driver libraries in. Required on NVIDIA (CUDA is invisible without it); "
                    "AMD images that carry ROCm (LUMI's) need none."},
        {.key = "view", .member = &Container::view, .requirement = "required for uenv",
         .meaning = "uenv only: the view(s) that put the uenv's software on PATH (`--view=`), e.g. `default` or "
                    "`prgenv-gnu:default`; comma-separated for several."},
    };
    return rows;
}

template <>
const std::vector<Field<Bind>>& fields_of() {
    static const std::vector<Field<Bind>> rows = {
        {.key = "host", .member = &Bind::host, .absolute_path = true, .requirement = "required",
         .meaning = "Path on the host."},
        {.key = "container", .member = &Bind::container, .absolute_path = true, .requirement = "default host",
         .meaning = "Path inside the container."},
        {.key = "options", .member = &Bind::options, .choices = {"ro", "rw"}, .meaning = "Mount options."},
    };
    return rows;
}

template <>
const std::vector<Field<Python>>& fields_of() {
    static const std::vector<Field<Python>> rows = {
        {.key = "layout", .member = &Python::layout, .requirement = "required",
         .meaning = "How Python and the packages are provided. In the image: `container-venv` (a conda environment "
                    "plus a venv in /user-software, as LUMI's), `container-system` (the image's own python: "
                    "`interpreter`, default `python3`). On the host: `conda-env`, `userbase-venv` (pip --user over a "
                    "python module), `frameworks-module` (the site's conda module), `system`. "
                    "`container-system-venv`: a venv (`venv`, under /user-software) created at install by the image's "
                    "own python (`interpreter`, default `python3`) with --system-site-packages, no conda (NGC or "
                    "Debian-based images). `module-venv`: a venv in the install dir created at install by the python "
                    "module (`interpreter`, default pythonX.Y), the components pip-installed into it."},
        {.key = "version", .member = &Python::version, .requirement = "required",
         .meaning = "Python version, `3.12` or `3.12.1`."},
        {.key = "interpreter", .member = &Python::interpreter,
         .meaning = "Interpreter path (e.g. `/usr/bin/python3`); for container-system, the path inside the image."},
        {.key = "conda_root", .member = &Python::conda_root,
         .meaning = "Conda installation (inside the container for container-venv)."},
        {.key = "conda_env", .member = &Python::conda_env, .meaning = "Conda environment name or path."},
        {.key = "venv", .member = &Python::venv,
         .meaning = "Virtual environment path (container-venv: inside the container)."},
        {.key = "environment_file", .member = &Python::environment_file,
         .meaning = "conda-env: a conda environment file (environment.yml), relative to the site file that sets "
                    "it and inside the sites directory; its bytes go into the easyconfig and the install runs "
                    "`conda env create --prefix <installdir>/conda-env --file` on them (its own channels and "
                    "packages: the components are not pip-installed)."},
        {.key = "channels", .member = &Python::channels,
         .meaning = "conda-env without an environment file: the only channels `conda create` uses "
                    "(`--override-channels -c ...`), e.g. `[\"conda-forge\"]`."},
    };
    return rows;
}

template <>
const std::vector<Field<Stack>>& fields_of() {
    static const std::vector<Field<Stack>> rows = {
        {.key = "name", .member = &Stack::name, .requirement = "required", .meaning = "Module name, e.g. `PyTorch`."},
        {.key = "version", .member = &Stack::version, .requirement = "required", .meaning = "Version, e.g. `2.3.1`."},
        {.key = "versionsuffix", .member = &Stack::versionsuffix,
         .meaning = "Appended to the version in module and easyconfig names."},
        {.key = "description", .member = &Stack::description, .requirement = "required",
         .meaning = "What the module provides (module help, easyconfig description)."},
        {.key = "homepage", .member = &Stack::homepage, .requirement = "required", .meaning = "Project home page."},
        {.key = "keywords", .member = &Stack::keywords, .meaning = "`whatis` keywords."},
        {.key = "docurls", .member = &Stack::docurls, .meaning = "Further documentation."},
        {.key = "moduleclass", .member = &Stack::moduleclass, .requirement = "default `devel`",
         .meaning = "EasyBuild module class."},
        {.key = "family", .member = &Stack::family,
         .meaning = "Lmod family (only one module of a family loaded at a time)."},
        {.key = "conflicts", .member = &Stack::conflicts,
         .meaning = "Modules that cannot be loaded together with this one."},
        {.key = "base_modules", .member = &Stack::base_modules,
         .meaning = "Modules this stack depends on, after the site's."},
        {.key = "default", .member = &Stack::is_default, .requirement = "default false",
         .meaning = "Make this version the default (`.modulerc.lua`)."},
        {.key = "image", .member = &Stack::image, .requirement = "required on container sites",
         .meaning = "Image file name in `container.image_dir`; for podman-hpc an image reference "
                    "(`docker.io/library/python:3.12`), for uenv a uenv label (`prgenv-gnu/24.11:v1`)."},
        {.key = "image_sha256", .member = &Stack::image_sha256,
         .meaning = "SHA-256 of the image (64 lowercase hex digits): the easyconfig's `checksums`, which "
                    "`eb --check-contrib` requires and a full install verifies; unset, the easyconfig has none."},
        {.key = "venv_extension", .member = &Stack::venv_extension, .requirement = "default false",
         .meaning = "Ship `extend-venv-activate` for user venvs."},
        {.key = "min_driver", .member = &Stack::min_driver,
         .meaning = "Oldest GPU driver the stack's image or wheels need, as the node's driver version file "
                    "numbers it (NVIDIA: `/proc/driver/nvidia/version`, e.g. `535.104.05`; AMD: the amdgpu module's "
                    "`/sys/module/amdgpu/version`; Intel: the i915 module's `/sys/module/i915/version`). On an older "
                    "node the module refuses to load (or warns: `hardware.driver_gate`); `doctor` and the acceptance "
                    "job check it too."},
        // Starts as the site's [python] (the loader copies it into each stack), key by key overridden.
        {.key = "python", .member = &Stack::python, .same_keys_as = "python",
         .meaning = "Overrides keys of `[python]` for this stack.",
         .section = "Per-stack override of `[python]` (same keys)."},
        {.key = "components", .member = &Stack::components, .key_names = KeyNames::free,
         .meaning = "Packages and versions the stack contains (torch = \"2.3.1\").",
         .section = "Components (name = version)."},
        {.key = "env", .member = &Stack::env, .meaning = "Extra variables the module sets.",
         .section = "Extra module variables (name = value)."},
        {.key = "install", .member = &Stack::install,
         .meaning = "How components are installed, one `pip install` each, in order (layouts that run pip: "
                    "`userbase-venv`, `conda-env` without `conda_env`): `[[stacks.install]]` with `packages` and "
                    "their index, pip flags, build environment, build modules, source and check. Components no "
                    "step names are installed from PyPI in one more pip command after the steps.",
         .section = "One `pip install` of some of the stack's components, with its own settings, e.g. "
                    "Frontier's `packages = [\"mpi4py\"]`, `pip_flags = [\"--no-binary=mpi4py\"]`, "
                    "`build_env = { MPICC = \"cc -shared\" }` (OLCF: "
                    "https://docs.olcf.ornl.gov/software/python/pytorch_frontier.html)."},
    };
    return rows;
}

template <>
const std::vector<Field<InstallStep>>& fields_of() {
    static const std::vector<Field<InstallStep>> rows = {
        {.key = "packages", .member = &InstallStep::packages, .requirement = "required",
         .meaning = "Components of the stack installed by this one pip command (as `name==version`, in the "
                    "components' order); each component in at most one step."},
        {.key = "index_url", .member = &InstallStep::index_url,
         .meaning = "Wheel index instead of PyPI (`--index-url`), an https URL, e.g. "
                    "`https://download.pytorch.org/whl/rocm6.0` for PyTorch's ROCm wheels."},
        {.key = "extra_index_url", .member = &InstallStep::extra_index_url,
         .meaning = "Wheel index besides PyPI (`--extra-index-url`), an https URL, e.g. "
                    "`https://download.pytorch.org/whl/cu121` for PyTorch's CUDA 12.1 wheels."},
        {.key = "pip_flags", .member = &InstallStep::pip_flags,
         .meaning = "Further pip options, each one word starting with `-`, e.g. `--no-binary=mpi4py`, "
                    "`--no-build-isolation` (the index, `--user` and the target are the layout's)."},
        {.key = "build_env", .member = &InstallStep::build_env,
         .meaning = "Variables set for this pip command only (`MPICC`, `HOROVOD_*`); `${NAME}` in a value is "
                    "expanded at install time (e.g. `${NVHPC_ROOT}/cuda/12.4`); any other `$` is refused, every other character "
                    "is literal.",
         .section = "Build environment of one pip command (name = value; `${NAME}` expands)."},
        {.key = "build_modules", .member = &InstallStep::build_modules,
         .meaning = "Modules the build needs but users do not (e.g. `cmake/3.25.2`): EasyBuild "
                    "`builddependencies`, loaded while it builds the stack, not by the stack's module."},
        {.key = "source", .member = &InstallStep::source,
         .meaning = "What pip installs instead of `name==version` when `packages` names one component: an "
                    "https or `git+https://` URL, e.g. a fork `git+https://github.com/o/horovod.git@tag`."},
        {.key = "check", .member = &InstallStep::check,
         .meaning = "A command (its words) run after the install with the stack's module loaded "
                    "(EasyBuild `sanity_check_commands`), e.g. `[\"horovodrun\", \"--check-build\"]`; it must "
                    "exit 0."},
        {.key = "check_expect", .member = &InstallStep::check_expect,
         .meaning = "Text the check's output (stdout and stderr) must contain, each entry somewhere, e.g. "
                    "`\"[X] NCCL\"`."},
    };
    return rows;
}

template <>
const std::vector<Field<Profile>>& fields_of() {
    static const std::vector<Field<Profile>> rows = {
        {.key = "name", .member = &Profile::name, .requirement = "required",
         .meaning = "The profile's name, as `collectives.profiles` and other profiles' `extends` write it."},
        {.key = "description", .member = &Profile::description, .meaning = "One line: what the profile is for."},
        {.key = "extends", .member = &Profile::extends,
         .meaning = "Profiles applied before this one, by name (from any file of the site)."},
        {.key = "vars", .member = &Profile::vars,
         .meaning = "The variables, in order (`[[profiles.vars]]`).",
         .section = "One variable of a profile: its value, why, and when it applies."},
    };
    return rows;
}

template <>
const std::vector<Field<ProfileVar>>& fields_of() {
    static const std::vector<Field<ProfileVar>> rows = {
        {.key = "name", .member = &ProfileVar::name, .requirement = "required",
         .meaning = "Environment variable name (`NCCL_NET_GDR_LEVEL`)."},
        {.key = "value", .member = &ProfileVar::value, .requirement = "required", .meaning = "Its value, written literally."},
        {.key = "reason", .member = &ProfileVar::reason, .requirement = "required",
         .meaning = "One line saying why (a public issue or page is best): shown in the module help and by `sitegen explain`."},
        {.key = "when", .member = &ProfileVar::when,
         .meaning = "Conditions, all of which must hold (none: always), e.g. `{ nodes = \"multi\" }`.",
         .section = "When a profile variable applies: every key given must hold. `nodes` is decided by the rank "
                    "wrapper at run time; the others when the stack is planned."},
    };
    return rows;
}

template <>
const std::vector<Field<ProfileWhen>>& fields_of() {
    static const std::vector<Field<ProfileWhen>> rows = {
        {.key = "library", .member = &ProfileWhen::library, .choices = {"nccl", "rccl", "oneccl", "gloo"},
         .meaning = "`collectives.library` is this one."},
        {.key = "plugin_version", .member = &ProfileWhen::plugin_version,
         .meaning = "The stack's network plugin version satisfies this: `>=1.4`, `<1.4`, `>1.4`, `<=1.4` or `=1.4.0` "
                    "(numeric, dot by dot); a stack whose version is unknown does not match."},
        {.key = "stack", .member = &ProfileWhen::stack,
         .meaning = "Glob (`*`, `?`) on the module's full name, e.g. `PyTorch/2.3.1-*`."},
        {.key = "image", .member = &ProfileWhen::image, .meaning = "Glob (`*`, `?`) on the stack's `image`."},
        {.key = "nodes", .member = &ProfileWhen::nodes, .choices = {"single", "multi"},
         .meaning = "Run time: `single` (every rank on one node) or `multi`; set by the rank wrapper only, never by the "
                    "module."},
        {.key = "in_container", .member = &ProfileWhen::in_container, .choices = {"yes", "no"},
         .meaning = "The stack runs in a container (`yes`: a site with `[container]` and a layout in the image) or on bare metal (`no`)."},
    };
    return rows;
}

}  // namespace sitegen
