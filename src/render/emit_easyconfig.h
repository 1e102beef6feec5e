// emit: EasyBuild easyconfigs for every stack.
#pragma once

#include <string>

#include "render/emit.h"

namespace sitegen {

OutputList emit_easyconfigs(const Site& site, const EmitOptions& options);

// EasyBuild's file name: <name>-<version>[-<toolchain>-<tcversion>]<versionsuffix>.eb.
std::string easyconfig_file_name(const Stack& stack);

}  // namespace sitegen
