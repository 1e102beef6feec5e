// render: every output format, in the order their files are produced (publish sorts them).
#include "render/renderers.h"

#include "render/easyconfig.h"
#include "render/install_files.h"
#include "render/lmod_lua.h"
#include "render/tcl_modulefile.h"

namespace sitegen {

namespace {
// A site's modulefiles are written for the module system it names.
bool uses_lmod(const Site& site) { return site.site.module_system == ModuleSystem::lmod; }
bool uses_environment_modules(const Site& site) { return site.site.module_system == ModuleSystem::environment_modules; }

constexpr Renderer kRenderers[] = {
    {"Lmod Lua modulefiles", render_lmod_lua, uses_lmod},
    {"Environment Modules Tcl modulefiles", render_tcl_modulefiles, uses_environment_modules},
    {"installed files (runscripts, extend-venv-activate)", render_install_files},
    {"EasyBuild easyconfigs", render_easyconfigs},
};
}  // namespace

std::span<const Renderer> renderers() { return kRenderers; }

}  // namespace sitegen
