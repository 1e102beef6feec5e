// What every renderer returns: files relative to the output root, with their bytes and mode,
// and where each kind of output goes under --out-dir.
//
// modules-out/<site>/ mirrors the install prefix exactly, so `cp -a modules-out/<site>/.
// <prefix>/` deploys it, and tests use --prefix "$PWD/modules-out/<site>" to run it in place;
// easyconfigs-out/<site>/ follows EasyBuild's repository layout.
#pragma once

#include <string>
#include <vector>

#include "plan/traits.h"
#include "site/model.h"

namespace sitegen {

struct OutputFile {
    std::string path;      // relative, '/'-separated, e.g. modules-out/lumi/modulefiles/PyTorch/2.3.1.lua
    std::string contents;  // exact bytes
    bool executable = false;
};

using OutputList = std::vector<OutputFile>;

// Directory roots of a site's outputs (relative to --out-dir).
inline std::string modules_root(const std::string& site_name) { return "modules-out/" + site_name; }
inline std::string easyconfigs_root(const std::string& site_name) { return "easyconfigs-out/" + site_name; }
inline std::string modules_root(const Site& s) { return modules_root(s.site.name); }
inline std::string easyconfigs_root(const Site& s) { return easyconfigs_root(s.site.name); }

// Output path of a file inside a stack's install dir.
inline std::string stack_output_path(const Site& site, const Stack& s, const std::string& rel) {
    return modules_root(site) + "/software/" + s.name + "/" + s.module_version() + "/" + rel;
}

// Output path of a stack's modulefile and of a module name's defaults file (.modulerc.lua for
// Lmod, .modulerc for Environment Modules).
inline std::string modulefile_output_path(const Site& site, const Stack& s) {
    return modules_root(site) + "/modulefiles/" + s.name + "/" + s.module_version() +
           traits(site.site.module_system).modulefile_suffix;
}
inline std::string modulerc_output_path(const Site& site, const std::string& name) {
    return modules_root(site) + "/modulefiles/" + name + "/" + traits(site.site.module_system).defaults_file;
}

}  // namespace sitegen
