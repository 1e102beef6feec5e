// render: every output format, in the order their files are produced (publish sorts them).
#include "render/renderers.h"

#include "render/easyconfig.h"
#include "render/install_files.h"
#include "render/lmod_lua.h"

namespace sitegen {

namespace {
constexpr Renderer kRenderers[] = {
    {"Lmod Lua modulefiles", render_lmod_lua},
    {"installed files (runscripts, extend-venv-activate)", render_install_files},
    {"EasyBuild easyconfigs", render_easyconfigs},
};
}  // namespace

std::span<const Renderer> renderers() { return kRenderers; }

}  // namespace sitegen
