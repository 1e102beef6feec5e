// Where a value came from in a site file, so every later finding can point at it.
#pragma once

#include <string>

namespace sitegen {

struct SourceRegion {
    std::string file;  // path as given on the command line (e.g. sites/lumi/site.toml)
    int line = 0;      // 1-based; 0 = unknown
    int column = 0;    // 1-based; 0 = unknown
};

}  // namespace sitegen
