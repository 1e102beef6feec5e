// emit: extend-venv-activate for every stack that offers a venv.
#pragma once

#include "emit.h"

namespace sitegen {

OutputList emit_venv_extensions(const Site& site, const EmitOptions& options);

}  // namespace sitegen
