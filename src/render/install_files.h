// render: the files each stack installs (scripts, extend-venv-activate) at their place in
// modules-out/<site>/software/<name>/<version>/.
#pragma once

#include "plan/stack_plan.h"
#include "render/emit.h"

namespace sitegen {

OutputList render_install_files(const SitePlan& plan);

}  // namespace sitegen
