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

constexpr RuntimeTraits kSingularity{ContainerRuntime::singularity, "singularity", "SINGULARITY"};
constexpr RuntimeTraits kApptainer{ContainerRuntime::apptainer, "apptainer", "APPTAINER"};

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
    }
    std::abort();
}

}  // namespace sitegen
