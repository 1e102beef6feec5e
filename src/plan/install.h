// plan: how a stack is installed (the steps before its files are written) and what the
// sanity check tests afterwards, as shell commands any install renderer can write.
#pragma once

#include <vector>

#include "plan/stack_plan.h"

namespace sitegen {

InstallPlan plan_install(const Site& site, const Stack& stack, const std::vector<PlannedFile>& files);

}  // namespace sitegen
