// emit: Lmod Lua modulefiles and .modulerc.lua for every stack.
#pragma once

#include <string>
#include <vector>

#include "render/emit.h"

namespace sitegen {

OutputList emit_modulefiles(const Site& site, const EmitOptions& options);

// The pieces of a stack's modulefile, for other writers that must produce an equivalent
// module (EasyBuild's modluafooter). `body` expects a Lua local `root` (the install dir).
struct ModulefileParts {
    std::string dependencies;  // family / conflict / depends_on lines
    std::string body;          // every environment change
    std::string help;          // the help text
    std::vector<std::string> variables;
};
ModulefileParts modulefile_parts(const Site& site, const Stack& stack, const EmitOptions& options);

// True if the stack's module computes `name` itself (SIF, CONDA_PREFIX, ...) or it is a path
// list or Lmod state that a plain setenv from the site's env would clobber.
bool module_owns_variable(const Site& site, const Stack& stack, const std::string& name);

}  // namespace sitegen
