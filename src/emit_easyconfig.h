// emit: EasyBuild easyconfigs for every stack.
#pragma once

#include "emit.h"

namespace sitegen {

OutputList emit_easyconfigs(const Site& site, const EmitOptions& options);

}  // namespace sitegen
