// `sitegen explain`: what each rank of a stack gets from the collective environment, and where
// each setting comes from (file:line, profile, conditions), in the spirit of
// `git config --show-origin`.
#pragma once

#include <string>

#include "site/model.h"

namespace sitegen {

// One line per setting the stack's ranks get (the module's and the rank wrapper's, run-time
// conditions included): NAME=value  file:line  origin  (conditions). With `var`, only that
// variable, with the settings it overrides first, each marked "(overridden)". "" when `var`
// is set by nothing.
std::string explain_text(const Site& site, const Stack& stack, const std::string& var);

}  // namespace sitegen
