// plan: how a stack is installed (the steps before its files are written) and what the
// sanity check tests afterwards, as shell commands any install renderer can write.
#pragma once

#include <vector>

#include "plan/stack_plan.h"

namespace sitegen {

InstallPlan plan_install(const Site& site, const Stack& stack, const std::vector<PlannedFile>& files);

// Whether the stack's layout installs its components with pip (and so reads [[stacks.install]]).
bool installs_with_pip(const Stack& stack);

// The pip commands that install the stack's components, one per [[stacks.install]] step and one
// more for the components no step names: each is `before` + `python` + " -m pip install" +
// `user_option` + " --no-cache-dir" + the step's options + its requirements.
// (`site`: kept for the layouts' calls; the settings are all the stack's.)
std::vector<ShellCommand> pip_commands(const Site& site, const Stack& stack, const ShellCommand& python,
                                       const std::string& user_option);

// The sanity checks of the steps that have a `check`: its words, its output (stdout and
// stderr) kept, and each `check_expect` text searched in it.
std::vector<ShellCommand> install_step_checks(const Stack& stack);

}  // namespace sitegen
