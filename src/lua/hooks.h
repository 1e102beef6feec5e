// hooks: the site's escape hatch, sites/<name>/hooks/*.lua, run sandboxed like the rules. A hook
// adds module statements (family, properties, load messages) and job prologue commands through
// a builder of typed calls; what it adds is plan data (plan/stack_plan.h HookAdditions), never
// text. The API is documented in docs/hooks.md.
#pragma once

#include <string>
#include <vector>

#include "lua/lua_sandbox.h"
#include "plan/stack_plan.h"
#include "site/diagnostics.h"
#include "site/model.h"

namespace sitegen {

// At most this many additions per hook and stack (bounds what crosses to the parent).
constexpr size_t kMaxHookAdditions = 256;

// Runs the site's hooks (sites/<name>/hooks/*.lua beside its site.toml, sorted by file name),
// each file in a fresh sandbox of a supervised child, each hook once per stack. Returns what
// they add, one entry per stack in site order, or nothing when the site has no hooks
// directory. Misuse is reported at the hook's file:line with the suffix " [hook <name>]".
std::vector<HookAdditions> run_hooks(const Site& site, Diagnostics& diags);

// The same for exactly these files (tests), each call under `limits`.
std::vector<HookAdditions> run_hook_files(const Site& site, const std::vector<std::string>& files,
                                          Diagnostics& diags, const SandboxLimits& limits = {});

}  // namespace sitegen
