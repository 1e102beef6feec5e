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
    std::span<const UnsupportedBatchKey> unsupported;  // [batch] keys this scheduler refuses
};

struct LauncherTraits {
    Launcher launcher;
    const char* command;  // what starts the ranks
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
