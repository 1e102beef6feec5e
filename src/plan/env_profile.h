// A stack's collective environment resolved once from [collectives.env], the [[profiles]] that
// collectives.profiles names and the stack's env: what the module, the rank wrapper, the
// container's passed names, the acceptance job and `sitegen explain` all read.
#pragma once

#include <string>
#include <vector>

#include "site/model.h"

namespace sitegen {

// When a setting applies at run time: always, or only when all ranks are on one node / not.
enum class NodeScope { any, single, multi };

struct EnvSetting {
    std::string name;
    std::string value;
    std::string reason;      // profiles only ("" for collectives.env and a stack's env)
    std::string origin;      // "profile slingshot", "collectives.env", "stacks.0.env"
    std::string path;        // model path of the entry, for Site::where ("profiles.0.vars.2")
    NodeScope nodes = NodeScope::any;
    std::string conditions;  // the static conditions that held, as written ("library = rccl, ...")
    bool from_stack = false;  // the stack's env: set by the module only, never by the wrapper
};

// Every entry that applies to the stack, in application order (collectives.env, then each
// profile after the ones it extends), before later entries replace earlier ones: check reads
// this for conflicts, explain for origins.
std::vector<EnvSetting> applied_settings(const Site& site, const Stack& stack);

// The resolved list: per name one entry for any node count, or one for single and/or one for
// multi; a later entry of the same name and scope replaces an earlier one in place; names the
// stack's env sets are the stack's (appended last, from_stack).
std::vector<EnvSetting> resolve_env(const Site& site, const Stack& stack);

// The plugin version a stack carries: its components entry named like collectives.network_plugin,
// else collectives.network_plugin_version ("" = unknown).
std::string plugin_version(const Site& site, const Stack& stack);

// Whether `spec` (">=1.4", "<1.4", ">1.4", "<=1.4", "=1.4.0") is well formed.
bool valid_version_spec(const std::string& spec);
// Whether `version` satisfies `spec`, comparing dot-separated numbers (missing ones are 0);
// false when either is not numeric.
bool version_matches(const std::string& spec, const std::string& version);
// Shell-style glob with `*` and `?` only.
bool glob_matches(const std::string& pattern, const std::string& text);

// "single-node" / "multi-node" / "".
const char* node_scope_text(NodeScope scope);

}  // namespace sitegen
