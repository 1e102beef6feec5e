// render: Environment Modules Tcl modulefiles and .modulerc defaults from the site's plan.
#pragma once

#include "plan/stack_plan.h"
#include "render/emit.h"

namespace sitegen {

OutputList render_tcl_modulefiles(const SitePlan& plan);

}  // namespace sitegen
