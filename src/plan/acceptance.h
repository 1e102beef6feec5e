// plan: the acceptance job of a stack. runscripts/acceptance.py checks, on every rank, the CPU
// affinity the site's binding implies, the devices the visibility policy promises, an exact
// all_reduce and its bus bandwidth, and (NCCL/RCCL) the network plugin; it prints one
// PASS/FAIL verdict. runscripts/acceptance.<scheduler> submits it as is (sbatch / qsub) by
// running the stack's own batch script with it; `acceptance.py --direct N` runs N ranks on one
// node without a scheduler.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "plan/stack_plan.h"

namespace sitegen {

// Appends runscripts/acceptance.py and runscripts/acceptance.<slurm|pbs>. The stack's batch
// script (runscripts/job.<scheduler>) must already be in `files`: the acceptance job copies
// its directives and runs it. Throws std::invalid_argument when it is not.
void plan_acceptance(const Site& site, const Stack& stack, const PlanOptions& options,
                     std::vector<PlannedFile>& files);

// The site's values as the Python literals acceptance.py starts with (for tests).
std::string acceptance_site_values(const Site& site, const Stack& stack);

// The driver and bandwidth expectations acceptance.py checks, as Python literals (after the above).
std::string acceptance_expectations(const Site& site, const Stack& stack);

// The fixed parts of acceptance.py (plan/acceptance_program.cpp).
std::string_view acceptance_program_imports();
std::string_view acceptance_program_body();

}  // namespace sitegen
