// Where things live: one place that decides install paths and output paths, shared by all
// emitters so the modulefile, runscripts and easyconfig always agree.
//
// On the site, a stack is installed at <prefix>/software/<name>/<module_version>/ with
// bin/ (commands users run: start-shell, extend-venv-activate, ...) and runscripts/ (rank
// wrapper, get-master, batch templates); modulefiles at <prefix>/modulefiles/<name>/.
// modules-out/<site>/ mirrors <prefix>/ exactly, so `cp -a modules-out/<site>/. <prefix>/`
// deploys it, and tests use --prefix "$PWD/modules-out/<site>" to run it in place.
#pragma once

#include <cctype>
#include <string>

#include "render/emit.h"
#include "site/model.h"

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

// "PyTorch" -> "PYTORCH", "Torch-Box" -> "TORCHBOX": the suffix of SIF<NAME>, RUNSCRIPTS<NAME>.
inline std::string stack_ident(const std::string& name) {
    std::string out;
    for (char c : name)
        if (std::isalnum(static_cast<unsigned char>(c)))
            out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

// "3.12.1" -> "3.12" (the lib/pythonX.Y directory name).
inline std::string python_major_minor(const std::string& version) {
    auto first = version.find('.');
    auto second = first == std::string::npos ? first : version.find('.', first + 1);
    return second == std::string::npos ? version : version.substr(0, second);
}

// The stack's Python lives in the site's container image.
inline bool runs_in_container(const Site& site, const Stack& stack) {
    return site.container.enabled && stack.python.layout == PythonLayout::container_venv;
}

// The modulepath users `module use` for this site's tree.
inline std::string modulepath_of(const std::string& prefix) { return prefix + "/modulefiles"; }

}  // namespace sitegen
