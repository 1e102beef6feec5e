// The traits tables, in enum declaration order (checked at compile time).
#include "plan/traits.h"

#include <cstdlib>

namespace sitegen {

namespace {

constexpr DirectiveField kSlurmDirectives[] = {
    {"partition", &Batch::partition, "#SBATCH --partition=", false},
    {"account", &Batch::account, "#SBATCH --account=", false},
    {"time", &Batch::time, "#SBATCH --time=", false},
    {"mem", &Batch::mem, "#SBATCH --mem=", false},
    {"output", &Batch::output, "#SBATCH --output=", false},
};

constexpr DirectiveField kPbsDirectives[] = {
    {"place", &Batch::place, "#PBS -l place=", true},
    {"time", &Batch::time, "#PBS -l walltime=", true},
    {"filesystems", &Batch::filesystems, "#PBS -l filesystems=", true},
    {"partition", &Batch::partition, "#PBS -q ", false},
    {"account", &Batch::account, "#PBS -A ", false},
};

constexpr SchedulerTraits kSlurm{Scheduler::slurm, "#SBATCH", "job.slurm", "sbatch", kSlurmDirectives};
constexpr SchedulerTraits kPbs{Scheduler::pbs, "#PBS", "job.pbs", "qsub", kPbsDirectives};

constexpr LauncherTraits kSrun{Launcher::srun, "srun"};
constexpr LauncherTraits kMpiexec{Launcher::mpiexec, "mpiexec"};

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

}  // namespace

// Exhaustive switches (no default, -Werror=switch): a new enumerator fails to compile here
// until it has its row.
const SchedulerTraits& traits(Scheduler s) {
    switch (s) {
        case Scheduler::slurm: return kSlurm;
        case Scheduler::pbs: return kPbs;
    }
    std::abort();
}

const LauncherTraits& traits(Launcher l) {
    switch (l) {
        case Launcher::srun: return kSrun;
        case Launcher::mpiexec: return kMpiexec;
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
    }
    std::abort();
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
