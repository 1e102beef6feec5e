// render: EasyBuild easyconfigs from the site's plan.
#pragma once

#include <string>

#include "plan/stack_plan.h"
#include "render/emit.h"

namespace sitegen {

OutputList render_easyconfigs(const SitePlan& plan);

// EasyBuild's file name: <name>-<version>[-<toolchain>-<tcversion>]<versionsuffix>.eb.
std::string easyconfig_file_name(const Stack& stack);

}  // namespace sitegen
