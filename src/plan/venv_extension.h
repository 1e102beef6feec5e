// plan: bin/extend-venv-activate, for stacks with venv_extension = true.
#pragma once

#include <vector>

#include "plan/stack_plan.h"

namespace sitegen {

// Appends bin/extend-venv-activate to `files` when the stack offers it.
void plan_venv_extension(const Stack& stack, std::vector<PlannedFile>& files);

}  // namespace sitegen
