// emit: EasyBuild easyconfigs for every stack (not written yet).
#include "emit_easyconfig.h"

namespace sitegen {

OutputList emit_easyconfigs(const Site&, const EmitOptions&) { return {}; }

}  // namespace sitegen
