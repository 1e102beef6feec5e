// emit: rank wrapper, get-master and batch scripts for every stack.
#pragma once

#include "emit.h"

namespace sitegen {

OutputList emit_runscripts(const Site& site, const EmitOptions& options);
// The same for one stack of the site.
OutputList emit_stack_runscripts(const Site& site, const Stack& stack, const EmitOptions& options);

// "conda-python-distributed" for container stacks (LUMI's name), else "python-distributed".
std::string rank_wrapper_name(const Site& site, const Stack& stack);

}  // namespace sitegen
