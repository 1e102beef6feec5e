// emit: rank wrapper, get-master and batch scripts for every stack (not written yet).
#include "emit_runscripts.h"

namespace sitegen {

OutputList emit_runscripts(const Site&, const EmitOptions&) { return {}; }

}  // namespace sitegen
