// plan: the module of a stack as format-neutral operations (what Lmod Lua, Tcl and
// EasyBuild's module all render), its help text and the variables it sets.
#pragma once

#include <string>
#include <vector>

#include "plan/stack_plan.h"

namespace sitegen {

// The module of `stack`; `files` (the stack's planned files) feed the help's command lists.
// Throws std::invalid_argument when the site's env names a variable the module owns (check
// reports those at their TOML location first).
ModulePlan plan_module(const Site& site, const Stack& stack, const PlanOptions& options,
                       const std::vector<PlannedFile>& files);

// True if the stack's module computes `name` itself (SIF, CONDA_PREFIX, ...) or it is a path
// list or Lmod state that a plain setenv from the site's env would clobber.
bool module_owns_variable(const Site& site, const Stack& stack, const std::string& name);

// The variables the stack's module computes itself, in the order it sets them: computed once
// per stack by checks that ask about many names (building the ops per name cost a site of
// 2,000 stacks most of its check time). With module_owns_variable(owned, name) the same
// answer as module_owns_variable(site, stack, name).
std::vector<std::string> module_owned_variables(const Site& site, const Stack& stack);
bool module_owns_variable(const std::vector<std::string>& owned, const std::string& name);

}  // namespace sitegen
