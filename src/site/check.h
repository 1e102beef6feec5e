// check: whole-site schema checks the loader cannot make key by key (required keys,
// cross-field consistency). Lua rules (rules.h) run after these.
#pragma once

#include <string>

#include "site/diagnostics.h"
#include "site/model.h"

namespace sitegen {

// `expected_name` is the sites/<name>/ directory the site was loaded from.
void check_site(const Site& site, const std::string& expected_name, Diagnostics& diags);

}  // namespace sitegen
