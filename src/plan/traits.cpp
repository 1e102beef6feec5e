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

constexpr UnsupportedBatchKey kPbsUnsupported[] = {
    {"qos", "PBS Pro has no quality-of-service option"},
    {"constraint", "PBS Pro selects node features with site-defined resources in the select statement, which "
                   "sitegen does not write"},
    {"gpus_per_task", "PBS Pro requests GPUs per chunk (ngpus), not per task"},
    {"gpu_bind", "PBS Pro has no GPU binding option; the rank wrapper sets device visibility"},
};

constexpr SchedulerTraits kSlurm{Scheduler::slurm, "#SBATCH", "job.slurm", "sbatch", kSlurmDirectives, {}};
constexpr SchedulerTraits kPbs{Scheduler::pbs, "#PBS", "job.pbs", "qsub", kPbsDirectives, kPbsUnsupported};

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
constexpr RuntimeTraits kCharliecloud{ContainerRuntime::charliecloud, "ch-run", "", "--", nullptr, "-b",
                                      "-n ${CH_RUNNING:-}", true, false, false, nullptr, nullptr};

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
