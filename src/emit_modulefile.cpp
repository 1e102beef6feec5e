// emit: Lmod Lua modulefiles and .modulerc.lua for every stack (not written yet).
#include "emit_modulefile.h"

namespace sitegen {

OutputList emit_modulefiles(const Site&, const EmitOptions&) { return {}; }

}  // namespace sitegen
