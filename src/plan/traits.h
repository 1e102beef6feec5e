// Traits of the model's choices: one table per scheduler, launcher and container runtime, so
// what differs between them is data in one place instead of ternaries in every emitter.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <variant>

#include "site/model.h"

namespace sitegen {

// A [batch] value and the directive that carries it, e.g. "#SBATCH --partition=" + value.
// Strings and numbers follow the prefix; a true bool writes the prefix alone ("#SBATCH
// --exclusive"). Unset values (empty, 0, false) write no directive.
using DirectiveMember = std::variant<std::string Batch::*, int Batch::*, bool Batch::*>;
struct DirectiveField {
    const char* key;            // the [batch] key
    DirectiveMember value;      // its model field
    const char* prefix;         // the directive text before the value
    bool resource;              // a PBS -l resource: ',' would start another one
    // The value as the directive takes it ("" when it cannot be written); nullptr: as it is.
    std::string (*convert)(const std::string&) = nullptr;
};

// What follows the prefix for this batch's value, or nullopt when the value is unset.
std::optional<std::string> directive_text(const Batch& batch, const DirectiveField& field);

// A [batch] key a scheduler cannot express, and why (check refuses it at its location).
struct UnsupportedBatchKey {
    const char* key;
    const char* why;
};

struct SchedulerTraits {
    Scheduler scheduler;
    const char* directive;  // "#SBATCH": what a batch script's option lines start with
    const char* job_file;   // the batch script under runscripts/
    const char* submit;     // how users submit it
    std::span<const DirectiveField> directives;  // the [batch] values written as directives
    const char* job_name;   // the directive naming the job, before the name
    Launcher launcher;      // the launcher its job scripts start ranks with
    std::span<const UnsupportedBatchKey> unsupported = {};  // [batch] keys this scheduler refuses
    std::span<const char* const> implied = {};  // [batch] keys its job scripts satisfy without a value directive
};

struct LauncherTraits {
    Launcher launcher;
    const char* command;  // what starts the ranks
};

// What a rank starter implies for the job script and the rank wrapper.
struct RankStarterTraits {
    RankStarter starter;
    bool one_task_per_node;  // the launcher starts one task per node, which starts the node's ranks
    bool per_rank_binding;   // the launcher's per-rank CPU binding and the wrapper's device narrowing apply
};

// How a job script enters a container (RuntimeTraits::job_entry).
enum class RuntimeEntry {
    command,         // CMD [flags] IMAGE [--] PROGRAM, the command started by the launcher
    launcher_flags,  // srun --container-image=IMAGE ... PROGRAM (a Slurm SPANK plugin)
};

struct RuntimeTraits {
    ContainerRuntime runtime;
    const char* command;  // the executable
    const char* exec;     // words between the command (and its flags) and the image: "exec" or ""
    const char* before_program;  // words between the image and the program: "" or "--"
    // <prefix>_BIND and <prefix>ENV_<NAME> pass binds and values in; nullptr: the runtime reads
    // no variables, so the module exports CONTAINER_BINDS and scripts pass `bind_flag` flags.
    const char* env_prefix;
    const char* bind_flag;     // one bind per flag: "--bind SRC:DST" / "-b SRC:DST"
    const char* inside_test;   // bash test that is true inside a container of this runtime
    bool image_directories;    // runs an image that is a directory (not only an image file)
    bool squashfs_binds;       // can mount a SquashFS file as a directory (image-src=/)
    bool bind_options;         // accepts :ro / :rw after a bind
    const char* nvidia_flag;   // GPU flags per vendor (nullptr: none exists)
    const char* amd_flag;
    // The members below default to what singularity, apptainer and charliecloud do.
    // How a job script enters the image: the command above around the rank wrapper, or
    // flags of srun itself (pyxis, uenv), which then also start the ranks inside.
    RuntimeEntry job_entry = RuntimeEntry::command;
    const char* image_launcher_flag = nullptr;   // launcher flags: "--container-image=" / "--uenv="
    const char* mounts_launcher_flag = nullptr;  // launcher flags: the bind list in one flag
    // The working directory is mounted at its own path and made the container's with this
    // flag, as singularity does by itself: "-w " (command), "--container-workdir=" (srun).
    const char* workdir_flag = nullptr;
    const char* workdir_launcher_flag = nullptr;
    const char* view_flag = nullptr;     // "--view=" + [container] view (uenv), before the image
    // nullptr: the host environment passes in. Else the runtime starts from the image's
    // environment and each variable is passed by name with this flag ("-e NAME").
    const char* env_flag = nullptr;
    bool env_prefix_glob = false;   // env_flag takes NAME* for every variable with that prefix
    bool image_is_name = false;     // `image` names an image the runtime stores, not a file in image_dir
    bool host_filesystem = false;   // the host's files are all visible: no binds, no /runscripts
    bool bind_target_required = false;  // each bind must be written SRC:DST (podman's -v SRC alone is a volume)
    bool bind_fstab = false;        // bind_flag takes an enroot fstab entry SRC:DST:none:OPTIONS
    bool gpu_devices_shared = true; // the host's GPU device files are visible without a GPU flag
    bool conda_images = true;       // images may carry conda (the container-venv layout)
    const char* slurm_only = nullptr;   // why the runtime works only under Slurm (nullptr: any)
    const char* nvidia_note = nullptr;  // a warning for NVIDIA nodes when no GPU flag exists
};

// What a Python layout implies for the rest of the plan.
struct LayoutTraits {
    PythonLayout layout;
    bool in_container;  // python runs inside the site's image
    bool conda_venv;    // a conda environment plus a venv (conda_root, conda_env, venv required)
    bool own_venv = false;  // a venv without conda, created at install over the layout's python
};

// What a device-visibility policy does in the rank wrapper.
struct VisibilityTraits {
    VisibilityPolicy policy;
    bool narrows;  // sets the visibility variable: device LOCAL_RANK / ranks_per_device
    bool shares;   // several ranks per device: ranks_per_device, the vendor's sharing variables
};

// How ranks share one device of a vendor (visibility = "shared").
struct SharingTraits {
    GpuVendor vendor;
    const char* mechanism;  // nullptr: devices cannot be shared
    std::span<const int> ranks_per_device;  // the counts the vendor allows; empty: 1..max_ranks
    int max_ranks;
};

// What a collective library allows of the ranks on one device.
struct CollectiveTraits {
    CollectiveLib library;
    // Why two ranks of one communicator cannot share a device (visibility = "shared" is
    // refused); nullptr: they can.
    const char* one_rank_per_device;
};

// Where a module system finds a modulefile and a module name's default version.
struct ModuleSystemTraits {
    ModuleSystem system;
    const char* modulefile_suffix;  // after <name>/<version>
    const char* defaults_file;      // beside the versions of one name
    const char* reader;             // the program that evaluates modulefiles, for messages and docs
};

const ModuleSystemTraits& traits(ModuleSystem);
const SchedulerTraits& traits(Scheduler);
const LauncherTraits& traits(Launcher);
const RuntimeTraits& traits(ContainerRuntime);
const LayoutTraits& traits(PythonLayout);
const VisibilityTraits& traits(VisibilityPolicy);
const SharingTraits& sharing_traits(GpuVendor);
const CollectiveTraits& traits(CollectiveLib);

// Ranks on each device: collectives.ranks_per_device under a sharing policy, else 1.
int ranks_per_device(const Site& site);
const RankStarterTraits& traits(RankStarter);

// Where a vendor's kernel driver says its version, read without touching a GPU: the module's
// driver gate, `doctor` and the acceptance job read the first run of digits and dots with at
// least one dot in this file and compare it number by number with a stack's min_driver.
struct DriverTraits {
    GpuVendor vendor;
    const char* version_file;  // nullptr: no driver to check
    const char* driver;        // how messages name it
};
const DriverTraits& driver_traits(GpuVendor);
// Tests and debugging point the driver gates at another file with this variable.
inline constexpr const char* kDriverVersionFileVar = "SITEGEN_DRIVER_VERSION_FILE";

// A [batch] time ([[D-]HH:]MM:SS, MM:SS or minutes, as Slurm reads it) in Flux Standard
// Duration for `flux batch -t`: "10m", "90s"; "" when it is not such a time.
std::string flux_time_limit(const std::string& time);

// The runtime's GPU flag for the site's vendor when [container] gpu_flag asks for one ("" if none).
std::string gpu_flag(const Site& site);

// The stack's Python lives in the site's container image.
bool runs_in_container(const Site& site, const Stack& stack);

}  // namespace sitegen
