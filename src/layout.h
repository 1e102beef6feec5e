// Where things live: one place that decides install paths and output paths, shared by all
// emitters so the modulefile, runscripts and easyconfig always agree.
//
// On the site, a stack is installed at <prefix>/software/<name>/<module_version>/ with
// bin/ (commands users run: start-shell, extend-venv-activate, ...) and runscripts/ (rank
// wrapper, get-master, batch templates); modulefiles at <prefix>/modulefiles/<name>/.
// modules-out/<site>/ mirrors <prefix>/ exactly, so `cp -a modules-out/<site>/. <prefix>/`
// deploys it, and tests use --prefix "$PWD/modules-out/<site>" to run it in place.
#pragma once

#include <string>

#include "emit.h"
#include "model.h"

namespace sitegen {

// <prefix>/software/<name>/<module_version>
inline std::string stack_install_dir(const std::string& prefix, const Stack& s) {
    return prefix + "/software/" + s.name + "/" + s.module_version();
}

// Output path (relative to --out-dir) of a file inside a stack's install dir.
inline std::string stack_output_path(const Site& site, const Stack& s, const std::string& rel) {
    return modules_root(site) + "/software/" + s.name + "/" + s.module_version() + "/" + rel;
}

// Output path of a stack's modulefile and of a module name's .modulerc.lua.
inline std::string modulefile_output_path(const Site& site, const Stack& s) {
    return modules_root(site) + "/modulefiles/" + s.name + "/" + s.module_version() + ".lua";
}
inline std::string modulerc_output_path(const Site& site, const std::string& name) {
    return modules_root(site) + "/modulefiles/" + name + "/.modulerc.lua";
}

// The modulepath users `module use` for this site's tree.
inline std::string modulepath_of(const std::string& prefix) { return prefix + "/modulefiles"; }

}  // namespace sitegen
