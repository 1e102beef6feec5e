// emit: rank wrapper, get-master and batch scripts for every stack.
#pragma once

#include "emit.h"

namespace sitegen {

OutputList emit_runscripts(const Site& site, const EmitOptions& options);

}  // namespace sitegen
