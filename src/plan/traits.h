// Traits of the model's choices: one table per scheduler, launcher and container runtime, so
// what differs between them is data in one place instead of ternaries in every emitter.
#pragma once

#include <span>
#include <string>

#include "site/model.h"

namespace sitegen {

// A [batch] value and the directive that carries it, e.g. "#SBATCH --partition=" + value.
struct DirectiveField {
    const char* key;            // the [batch] key
    std::string Batch::*value;  // its model field
    const char* prefix;         // the directive text before the value
    bool resource;              // a PBS -l resource: ',' would start another one
};

struct SchedulerTraits {
    Scheduler scheduler;
    const char* directive;  // "#SBATCH": what a batch script's option lines start with
    const char* job_file;   // the batch script under runscripts/
    const char* submit;     // how users submit it
    std::span<const DirectiveField> directives;  // the [batch] strings written as directives
};

struct LauncherTraits {
    Launcher launcher;
    const char* command;  // what starts the ranks
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
};

const SchedulerTraits& traits(Scheduler);
const LauncherTraits& traits(Launcher);
const RuntimeTraits& traits(ContainerRuntime);
const LayoutTraits& traits(PythonLayout);

// The runtime's GPU flag for the site's vendor when [container] gpu_flag asks for one ("" if none).
std::string gpu_flag(const Site& site);

// The stack's Python lives in the site's container image.
bool runs_in_container(const Site& site, const Stack& stack);

}  // namespace sitegen
