// emit: extend-venv-activate for every stack that offers a venv (not written yet).
#include "emit_venv_extension.h"

namespace sitegen {

OutputList emit_venv_extensions(const Site&, const EmitOptions&) { return {}; }

}  // namespace sitegen
