// plan: the scripts a stack ships (rank wrapper, get-master, the batch script, LUMI's
// container helpers) as bash text, written once per stack into its plan.
#pragma once

#include <vector>

#include "plan/stack_plan.h"
#include "site/diagnostics.h"

namespace sitegen {

// Appends the stack's scripts to `files`, in install order.
void plan_runscripts(const Site& site, const Stack& stack, const PlanOptions& options,
                     std::vector<PlannedFile>& files);

// Reports [batch] values that cannot go into a #SBATCH/#PBS directive of this site's
// scheduler (line breaks, blanks, quotes, '#'; ',' in a PBS -l resource) at their source.
// The planner refuses the same values by throwing.
void check_runscript_values(const Site& site, Diagnostics& diags);

// The directory part of the Slurm [batch] output pattern ("logs" for logs/%x_%j.out), or ""
// when it has none (or the scheduler writes no output directive): runscripts/submit creates it.
std::string batch_output_directory(const Site& site);

// "conda-python-distributed" for container stacks (LUMI's name), else "python-distributed".
std::string rank_wrapper_name(const Site& site, const Stack& stack);

}  // namespace sitegen
