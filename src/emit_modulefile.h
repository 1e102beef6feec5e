// emit: Lmod Lua modulefiles and .modulerc.lua for every stack.
#pragma once

#include "emit.h"

namespace sitegen {

OutputList emit_modulefiles(const Site& site, const EmitOptions& options);

}  // namespace sitegen
