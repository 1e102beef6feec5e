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

struct RuntimeTraits {
    ContainerRuntime runtime;
    const char* command;     // the executable: `<command> exec IMAGE ...`
    const char* env_prefix;  // <prefix>_BIND, <prefix>ENV_<NAME> pass values into the container
};

const SchedulerTraits& traits(Scheduler);
const LauncherTraits& traits(Launcher);
const RuntimeTraits& traits(ContainerRuntime);

}  // namespace sitegen
