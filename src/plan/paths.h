// Where things live on the site: one place that decides install paths, so the modulefile,
// the runscripts and the easyconfig always agree.
//
// A stack is installed at <prefix>/software/<name>/<module_version>/ with bin/ (commands
// users run: start-shell, extend-venv-activate, ...) and runscripts/ (rank wrapper,
// get-master, batch scripts); modulefiles at <prefix>/modulefiles/<name>/.
#pragma once

#include <cctype>
#include <string>

#include "site/model.h"

namespace sitegen {

// <prefix>/software/<name>/<module_version>
inline std::string stack_install_dir(const std::string& prefix, const Stack& s) {
    return prefix + "/software/" + s.name + "/" + s.module_version();
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

// The modulepath users `module use` for this site's tree.
inline std::string modulepath_of(const std::string& prefix) { return prefix + "/modulefiles"; }

}  // namespace sitegen
