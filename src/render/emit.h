// What every emitter returns: files relative to the output root, with their bytes and mode.
#pragma once

#include <string>
#include <vector>

#include "site/model.h"

namespace sitegen {

struct OutputFile {
    std::string path;      // relative, '/'-separated, e.g. modules-out/lumi/modulefiles/PyTorch/2.3.1.lua
    std::string contents;  // exact bytes
    bool executable = false;
};

using OutputList = std::vector<OutputFile>;

// Options every emitter sees (resolved from the CLI).
struct EmitOptions {
    std::string prefix;  // install prefix to write into outputs (site's unless --prefix)
};

// Directory roots of a site's outputs (relative to --out-dir).
inline std::string modules_root(const Site& s) { return "modules-out/" + s.site.name; }
inline std::string easyconfigs_root(const Site& s) { return "easyconfigs-out/" + s.site.name; }

}  // namespace sitegen
