// emit: extend-venv-activate for every stack that offers a venv.
#pragma once

#include "render/emit.h"

namespace sitegen {

OutputList emit_venv_extensions(const Site& site, const EmitOptions& options);
// The same for one stack (empty unless it has venv_extension = true).
OutputList emit_stack_venv_extension(const Site& site, const Stack& stack, const EmitOptions& options);

}  // namespace sitegen
