// emit: rank wrapper, get-master and batch scripts for every stack.
#pragma once

#include "site/diagnostics.h"
#include "render/emit.h"

namespace sitegen {

OutputList emit_runscripts(const Site& site, const EmitOptions& options);
// The same for one stack of the site.
OutputList emit_stack_runscripts(const Site& site, const Stack& stack, const EmitOptions& options);

// "conda-python-distributed" for container stacks (LUMI's name), else "python-distributed".
// Reports [batch] values that cannot go into a #SBATCH/#PBS directive of this site's
// scheduler (line breaks, blanks, quotes, '#'; ',' in a PBS -l resource) at their source.
// The emitter refuses the same values by throwing.
void check_runscript_values(const Site& site, Diagnostics& diags);

std::string rank_wrapper_name(const Site& site, const Stack& stack);

}  // namespace sitegen
