// render: Lmod Lua modulefiles and .modulerc.lua defaults from the site's plan.
#pragma once

#include "plan/stack_plan.h"
#include "render/emit.h"

namespace sitegen {

OutputList render_lmod_lua(const SitePlan& plan);

}  // namespace sitegen
