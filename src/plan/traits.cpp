// The traits tables, in enum declaration order (checked at compile time).
#include "plan/traits.h"

#include <cstdlib>
#include <vector>

namespace sitegen {

namespace {

constexpr DirectiveField kSlurmDirectives[] = {
    {"partition", &Batch::partition, "#SBATCH --partition=", false},
    {"account", &Batch::account, "#SBATCH --account=", false},
    {"time", &Batch::time, "#SBATCH --time=", false},
    {"mem", &Batch::mem, "#SBATCH --mem=", false},
    {"output", &Batch::output, "#SBATCH --output=", false},
    // https://slurm.schedmd.com/sbatch.html: --qos, --constraint, --exclusive, --reservation,
    // --gpus-per-task (needs a task count: --nodes with --ntasks-per-node gives one), --gpu-bind.
    {"qos", &Batch::qos, "#SBATCH --qos=", false},
    {"constraint", &Batch::constraint, "#SBATCH --constraint=", false},
    {"exclusive", &Batch::exclusive, "#SBATCH --exclusive", false},
    {"reservation", &Batch::reservation, "#SBATCH --reservation=", false},
    {"gpus_per_task", &Batch::gpus_per_task, "#SBATCH --gpus-per-task=", false},
    {"gpu_bind", &Batch::gpu_bind, "#SBATCH --gpu-bind=", false},
};

constexpr DirectiveField kPbsDirectives[] = {
    {"place", &Batch::place, "#PBS -l place=", true},
    {"time", &Batch::time, "#PBS -l walltime=", true},
    {"filesystems", &Batch::filesystems, "#PBS -l filesystems=", true},
    {"partition", &Batch::partition, "#PBS -q ", false},
    {"account", &Batch::account, "#PBS -A ", false},
    // PBS Pro: exclusive placement is the place= modifier excl (pbs_resources(7B)), and a
    // reservation is a queue named after it, submitted to with qsub -q R123 (pbs_rsub(1B)):
    // https://github.com/openpbs/openpbs/tree/master/doc/man1, .../doc/man7
    {"exclusive", &Batch::exclusive, "#PBS -l place=excl", true},
    {"reservation", &Batch::reservation, "#PBS -q ", false},
};

// Flux: `flux batch` reads `# flux:` lines as directives (RFC 36; flux-batch(1),
// https://flux-framework.readthedocs.io/projects/flux-core/en/latest/man1/flux-batch.html);
// -t takes minutes or a Flux Standard Duration, not HH:MM:SS.
constexpr DirectiveField kFluxDirectives[] = {
    {"time", &Batch::time, "# flux: -t ", false, flux_time_limit},
    {"partition", &Batch::partition, "# flux: --queue=", false},
    {"account", &Batch::account, "# flux: --bank=", false},
    {"output", &Batch::output, "# flux: --output=", false},
};

constexpr UnsupportedBatchKey kPbsUnsupported[] = {
    {"qos", "PBS Pro has no quality-of-service option"},
    {"constraint", "PBS Pro selects node features with site-defined resources in the select statement, which "
                   "sitegen does not write"},
    {"gpus_per_task", "PBS Pro requests GPUs per chunk (ngpus), not per task"},
    {"gpu_bind", "PBS Pro has no GPU binding option; the rank wrapper sets device visibility"},
};

// Flux jobs always ask for whole nodes (`# flux: --exclusive`, written by flux_job), so
// `exclusive = true` holds there without a directive of its own.
constexpr const char* kFluxImplied[] = {"exclusive"};

constexpr SchedulerTraits kSlurm{Scheduler::slurm, "#SBATCH", "job.slurm", "sbatch", kSlurmDirectives,
                                 "#SBATCH --job-name=", Launcher::srun};
constexpr SchedulerTraits kPbs{Scheduler::pbs, "#PBS", "job.pbs", "qsub", kPbsDirectives, "#PBS -N ",
                               Launcher::mpiexec, kPbsUnsupported};
constexpr SchedulerTraits kFlux{Scheduler::flux, "# flux:", "job.flux", "flux batch", kFluxDirectives,
                                "# flux: --job-name=", Launcher::flux, {}, kFluxImplied};

constexpr LauncherTraits kSrun{Launcher::srun, "srun"};
constexpr LauncherTraits kMpiexec{Launcher::mpiexec, "mpiexec"};
constexpr LauncherTraits kFluxRun{Launcher::flux, "flux run"};

constexpr RankStarterTraits kByLauncher{RankStarter::launcher, false, true};
// torchrun starts the node's ranks itself (https://pytorch.org/docs/stable/elastic/run.html).
constexpr RankStarterTraits kTorchrun{RankStarter::torchrun, true, false};

constexpr const char* kInsideSingularity =
    "-e /.singularity.d || -n ${APPTAINER_CONTAINER:-} || -n ${SINGULARITY_CONTAINER:-}";
constexpr RuntimeTraits kSingularity{ContainerRuntime::singularity, "singularity", "exec", "", "SINGULARITY",
                                     "--bind", kInsideSingularity, false, true, true, "--nv", "--rocm"};
constexpr RuntimeTraits kApptainer{ContainerRuntime::apptainer, "apptainer", "exec", "", "APPTAINER",
                                   "--bind", kInsideSingularity, false, true, true, "--nv", "--rocm"};
// ch-run IMAGE -- CMD: binds as -b flags (no options, no SquashFS-as-directory); GPU
// libraries are injected into the image beforehand (ch-fromhost), there is no run flag.
constexpr RuntimeTraits kCharliecloud = [] {
    RuntimeTraits t{ContainerRuntime::charliecloud, "ch-run", "", "--", nullptr, "-b",
                    "-n ${CH_RUNNING:-}", true, false, false, nullptr, nullptr};
    t.nvidia_note = "charliecloud runs the image as it is: CUDA works only if the host's NVIDIA libraries were "
                    "injected into it (ch-fromhost --nvidia)";
    return t;
}();
// NERSC's podman-hpc (https://github.com/NERSC/podman-hpc, etc/modules.d/gpu.yaml: --gpu is
// NVIDIA's only device module) wraps podman run
// (https://docs.podman.io/en/latest/markdown/podman-run.1.html): the image is a name
// (`podman-hpc migrate` makes it usable on compute nodes), binds are -v SRC:DST[:ro], the
// container has its own network namespace and /dev unless asked (--network host, --ipc host
// as podman-hpc's own --mpi module does), and only variables named with -e reach it, a
// trailing * passing every variable with that prefix. Its MPI/shared-run support reads
// SLURM_LOCALID and SLURM_STEP_TASKS_PER_NODE (etc/podman_hpc.yaml).
constexpr RuntimeTraits kPodmanHpc{.runtime = ContainerRuntime::podman_hpc,
                                   .command = "podman-hpc",
                                   .exec = "run --rm --network host --ipc host",
                                   .before_program = "",
                                   .env_prefix = nullptr,
                                   .bind_flag = "-v",
                                   .inside_test = "-e /run/.containerenv",
                                   .image_directories = false,
                                   .squashfs_binds = false,
                                   .bind_options = true,
                                   .nvidia_flag = "--gpu",
                                   .amd_flag = nullptr,
                                   .workdir_flag = "-w ",
                                   .env_flag = "-e",
                                   .env_prefix_glob = true,
                                   .image_is_name = true,
                                   .bind_target_required = true,
                                   .gpu_devices_shared = false,
                                   .slurm_only = "podman-hpc is built for Slurm (its MPI and shared-run support reads "
                                                 "SLURM_LOCALID and SLURM_STEP_TASKS_PER_NODE)"};
// Pyxis (https://github.com/NVIDIA/pyxis, README: srun --container-image=PATH.sqsh
// --container-mounts=SRC:DST[:FLAGS],... --container-workdir=PATH; every exported host
// variable is set in the container) is a Slurm SPANK plugin running enroot. Outside a job
// the same image starts with `enroot start --mount FSTAB IMAGE CMD`
// (https://github.com/NVIDIA/enroot/blob/master/doc/cmd/start.md), which passes only the
// variables named with --env. enroot has no GPU flag: its NVIDIA hook (98-nvidia.sh) injects
// the driver into images that set NVIDIA_VISIBLE_DEVICES, and /dev is the host's.
constexpr RuntimeTraits kPyxis{.runtime = ContainerRuntime::pyxis,
                               .command = "enroot",
                               .exec = "start",
                               .before_program = "",
                               .env_prefix = nullptr,
                               .bind_flag = "--mount",
                               .inside_test = "-n ${SITEGEN_CONTAINER:-}",
                               .image_directories = false,
                               .squashfs_binds = false,
                               .bind_options = true,
                               .nvidia_flag = nullptr,
                               .amd_flag = nullptr,
                               .job_entry = RuntimeEntry::launcher_flags,
                               .image_launcher_flag = "--container-image=",
                               .mounts_launcher_flag = "--container-mounts=",
                               .workdir_launcher_flag = "--container-workdir=",
                               .env_flag = "--env",
                               .bind_target_required = true,
                               .bind_fstab = true,
                               .slurm_only = "pyxis is a Slurm SPANK plugin: the container is entered by srun's "
                                             "--container-image flags",
                               .nvidia_note = "enroot has no GPU flag: CUDA works only in images that set "
                                              "NVIDIA_VISIBLE_DEVICES (NGC images do), which enroot's NVIDIA hook "
                                              "reads to inject the driver"};
// CSCS uenv (https://docs.cscs.ch/software/uenv/using/): a SquashFS software stack mounted at
// /user-environment, not an OS image; `uenv run --view=VIEW IMAGE -- CMD` in scripts,
// `srun --uenv=IMAGE --view=VIEW` in jobs (its Slurm plugin). The host's files, devices and
// environment stay as they are; a view sets PATH to the stack's software (Spack, no conda).
// The plugin and `uenv run` set UENV_MOUNT_LIST (https://github.com/eth-cscs/uenv2).
constexpr RuntimeTraits kUenv{.runtime = ContainerRuntime::uenv,
                              .command = "uenv",
                              .exec = "run",
                              .before_program = "--",
                              .env_prefix = nullptr,
                              .bind_flag = "",
                              .inside_test = "-n ${UENV_MOUNT_LIST:-}",
                              .image_directories = false,
                              .squashfs_binds = false,
                              .bind_options = false,
                              .nvidia_flag = nullptr,
                              .amd_flag = nullptr,
                              .job_entry = RuntimeEntry::launcher_flags,
                              .image_launcher_flag = "--uenv=",
                              .view_flag = "--view=",
                              .image_is_name = true,
                              .host_filesystem = true,
                              .conda_images = false,
                              .slurm_only = "uenv enters jobs through its Slurm plugin (srun --uenv, --view)"};

constexpr LayoutTraits kContainerVenv{PythonLayout::container_venv, true, true};
constexpr LayoutTraits kContainerSystem{PythonLayout::container_system, true, false};
constexpr LayoutTraits kCondaEnv{PythonLayout::conda_env, false, false};
constexpr LayoutTraits kUserbaseVenv{PythonLayout::userbase_venv, false, false};
constexpr LayoutTraits kFrameworksModule{PythonLayout::frameworks_module, false, false};
constexpr LayoutTraits kSystem{PythonLayout::system, false, false};
constexpr LayoutTraits kContainerSystemVenv{PythonLayout::container_system_venv, true, false, true};
constexpr LayoutTraits kModuleVenv{PythonLayout::module_venv, false, false, true};

constexpr VisibilityTraits kNarrow{VisibilityPolicy::narrow, true, false};
constexpr VisibilityTraits kAllVisible{VisibilityPolicy::all, false, false};
constexpr VisibilityTraits kShared{VisibilityPolicy::shared, true, true};

// Intel PVC: 1, 2 or 4 compute command streamers (CCS) per tile, one process each
// (https://docs.alcf.anl.gov/aurora/data-science/frameworks/pytorch/, "Distributed Training with
// Multiple CCSs"). NVIDIA MPS: Volta and later serve up to 48 client contexts per GPU
// (https://docs.nvidia.com/deploy/mps/index.html). ROCm runs several processes on one GCD as it is.
constexpr int kPvcCcsCounts[] = {1, 2, 4};
constexpr SharingTraits kNoSharing{GpuVendor::none, nullptr, {}, 1};
constexpr SharingTraits kAmdSharing{GpuVendor::amd, "processes sharing a GCD (no extra service)", {}, 64};
constexpr SharingTraits kNvidiaSharing{GpuVendor::nvidia, "the MPS control daemon (nvidia-cuda-mps-control -d)", {}, 48};
constexpr SharingTraits kIntelSharing{GpuVendor::intel, "compute command streamers (ZEX_NUMBER_OF_CCS)", kPvcCcsCounts, 4};

}  // namespace

// Exhaustive switches (no default, -Werror=switch): a new enumerator fails to compile here
// until it has its row.
const SchedulerTraits& traits(Scheduler s) {
    switch (s) {
        case Scheduler::slurm: return kSlurm;
        case Scheduler::pbs: return kPbs;
        case Scheduler::flux: return kFlux;
    }
    std::abort();
}

const LauncherTraits& traits(Launcher l) {
    switch (l) {
        case Launcher::srun: return kSrun;
        case Launcher::mpiexec: return kMpiexec;
        case Launcher::flux: return kFluxRun;
    }
    std::abort();
}

const RuntimeTraits& traits(ContainerRuntime r) {
    switch (r) {
        case ContainerRuntime::singularity: return kSingularity;
        case ContainerRuntime::apptainer: return kApptainer;
        case ContainerRuntime::charliecloud: return kCharliecloud;
        case ContainerRuntime::podman_hpc: return kPodmanHpc;
        case ContainerRuntime::pyxis: return kPyxis;
        case ContainerRuntime::uenv: return kUenv;
    }
    std::abort();
}

const LayoutTraits& traits(PythonLayout l) {
    switch (l) {
        case PythonLayout::container_venv: return kContainerVenv;
        case PythonLayout::container_system: return kContainerSystem;
        case PythonLayout::conda_env: return kCondaEnv;
        case PythonLayout::userbase_venv: return kUserbaseVenv;
        case PythonLayout::frameworks_module: return kFrameworksModule;
        case PythonLayout::system: return kSystem;
        case PythonLayout::container_system_venv: return kContainerSystemVenv;
        case PythonLayout::module_venv: return kModuleVenv;
    }
    std::abort();
}

const VisibilityTraits& traits(VisibilityPolicy v) {
    switch (v) {
        case VisibilityPolicy::narrow: return kNarrow;
        case VisibilityPolicy::all: return kAllVisible;
        case VisibilityPolicy::shared: return kShared;
    }
    std::abort();
}

// Lmod reads <name>/<version>.lua and .modulerc.lua
// (https://lmod.readthedocs.io/en/latest/060_locating.html); Environment Modules reads
// <name>/<version> files starting with #%Module and .modulerc
// (https://modules.readthedocs.io/en/latest/modulefile.html).
constexpr ModuleSystemTraits kLmod{ModuleSystem::lmod, ".lua", ".modulerc.lua", "Lmod"};
constexpr ModuleSystemTraits kEnvironmentModules{ModuleSystem::environment_modules, "", ".modulerc",
                                                 "Environment Modules (modulecmd.tcl)"};

const ModuleSystemTraits& traits(ModuleSystem m) {
    switch (m) {
        case ModuleSystem::lmod: return kLmod;
        case ModuleSystem::environment_modules: return kEnvironmentModules;
    }
    std::abort();
}

const RankStarterTraits& traits(RankStarter r) {
    switch (r) {
        case RankStarter::launcher: return kByLauncher;
        case RankStarter::torchrun: return kTorchrun;
    }
    std::abort();
}

const SharingTraits& sharing_traits(GpuVendor v) {
    switch (v) {
        case GpuVendor::none: return kNoSharing;
        case GpuVendor::amd: return kAmdSharing;
        case GpuVendor::nvidia: return kNvidiaSharing;
        case GpuVendor::intel: return kIntelSharing;
    }
    std::abort();
}

// NCCL refuses a communicator with two ranks on one GPU since 2.5 (init.cc's "Duplicate GPU
// detected", ncclInvalidUsage; MPS does not change it: https://github.com/NVIDIA/nccl/issues/418),
// seen with NCCL 2.28.9 on an H100 with and without MPS (docs/node-tools.md). RCCL keeps that
// check and defaults to one rank per GPU (https://github.com/ROCm/rccl/pull/569). oneCCL shares
// Intel tiles by CCS mode (ALCF); gloo reduces host memory.
constexpr CollectiveTraits kNccl{CollectiveLib::nccl,
                                 "NCCL refuses two ranks of one communicator on one GPU (\"Duplicate GPU detected\", "
                                 "ncclInvalidUsage), with or without MPS"};
constexpr CollectiveTraits kRccl{CollectiveLib::rccl,
                                 "RCCL keeps NCCL's check against two ranks of one communicator on one GPU "
                                 "(\"Duplicate GPU detected\") and allows one rank per GPU by default"};
constexpr CollectiveTraits kOneccl{CollectiveLib::oneccl, nullptr};
constexpr CollectiveTraits kGloo{CollectiveLib::gloo, nullptr};

const CollectiveTraits& traits(CollectiveLib l) {
    switch (l) {
        case CollectiveLib::nccl: return kNccl;
        case CollectiveLib::rccl: return kRccl;
        case CollectiveLib::oneccl: return kOneccl;
        case CollectiveLib::gloo: return kGloo;
    }
    std::abort();
}

int ranks_per_device(const Site& site) {
    if (!traits(site.collectives.visibility).shares || site.collectives.ranks_per_device < 1) return 1;
    return site.collectives.ranks_per_device;

}

std::string flux_time_limit(const std::string& time) {
    // Slurm's forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (sbatch(1) --time).
    std::string rest = time;
    long long days = -1;
    if (auto dash = rest.find('-'); dash != std::string::npos) {
        const std::string d = rest.substr(0, dash);
        if (d.empty() || d.size() > 4 || d.find_first_not_of("0123456789") != std::string::npos) return "";
        days = std::stoll(d);
        rest = rest.substr(dash + 1);
    }
    std::vector<long long> parts;
    size_t start = 0;
    for (;;) {
        const size_t colon = rest.find(':', start);
        const std::string p = rest.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
        if (p.empty() || p.size() > 6 || p.find_first_not_of("0123456789") != std::string::npos) return "";
        parts.push_back(std::stoll(p));
        if (colon == std::string::npos) break;
        start = colon + 1;
    }
    if (parts.size() > 3) return "";
    long long seconds = 0;
    if (days >= 0) {
        const long long h = parts[0], m = parts.size() > 1 ? parts[1] : 0, s = parts.size() > 2 ? parts[2] : 0;
        seconds = ((days * 24 + h) * 60 + m) * 60 + s;
    } else if (parts.size() == 1) {
        seconds = parts[0] * 60;
    } else if (parts.size() == 2) {
        seconds = parts[0] * 60 + parts[1];
    } else {
        seconds = (parts[0] * 60 + parts[1]) * 60 + parts[2];
    }
    if (seconds <= 0) return "";
    return seconds % 60 == 0 ? std::to_string(seconds / 60) + "m" : std::to_string(seconds) + "s";

}

std::optional<std::string> directive_text(const Batch& batch, const DirectiveField& field) {
    return std::visit(
        [&](auto member) -> std::optional<std::string> {
            const auto& value = batch.*member;
            using V = std::decay_t<decltype(value)>;
            if constexpr (std::is_same_v<V, bool>) return value ? std::optional<std::string>("") : std::nullopt;
            else if constexpr (std::is_same_v<V, int>) return value > 0 ? std::optional(std::to_string(value)) : std::nullopt;
            else return value.empty() ? std::nullopt : std::optional(value);
        },
        field.value);
}

// The files each vendor's kernel driver writes its version to:
// NVIDIA: /proc/driver/nvidia/version, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05 ..."
//   (the driver version CUDA's compatibility tables are written in:
//   https://docs.nvidia.com/deploy/cuda-compatibility/);
// AMD: /sys/module/amdgpu/version, written by AMD's amdgpu (DKMS) driver, absent with a distribution
//   kernel's inbox driver (https://github.com/ollama/ollama/issues/3425); AMD supports ROCm user
//   space within two releases of the kernel driver's
//   (https://rocm.docs.amd.com/projects/install-on-linux/en/latest/reference/user-kernel-space-compat-matrix.html);
// Intel: /sys/module/i915/version, written by Intel's i915 backport (DKMS) driver for data-centre
//   GPUs (https://github.com/intel-gpu/intel-gpu-i915-backports/pull/141), which Level Zero runs on.
const DriverTraits& driver_traits(GpuVendor v) {
    static const DriverTraits kNone{GpuVendor::none, nullptr, "GPU driver"};
    static const DriverTraits kAmd{GpuVendor::amd, "/sys/module/amdgpu/version", "AMD GPU driver (amdgpu)"};
    static const DriverTraits kNvidia{GpuVendor::nvidia, "/proc/driver/nvidia/version", "NVIDIA GPU driver"};
    static const DriverTraits kIntel{GpuVendor::intel, "/sys/module/i915/version", "Intel GPU driver (i915)"};
    switch (v) {
        case GpuVendor::none: return kNone;
        case GpuVendor::amd: return kAmd;
        case GpuVendor::nvidia: return kNvidia;
        case GpuVendor::intel: return kIntel;
    }
    return kNone;
}

bool runs_in_container(const Site& site, const Stack& stack) {
    return site.container.enabled && traits(stack.python.layout).in_container;
}

std::string gpu_flag(const Site& site) {
    if (!site.container.enabled || !site.container.gpu_flag) return "";
    const RuntimeTraits& rt = traits(site.container.runtime);
    const char* flag = nullptr;
    switch (site.hardware.gpu_vendor) {
        case GpuVendor::nvidia: flag = rt.nvidia_flag; break;
        case GpuVendor::amd: flag = rt.amd_flag; break;
        case GpuVendor::intel:
        case GpuVendor::none: break;
    }
    return flag ? flag : "";
}

}  // namespace sitegen
