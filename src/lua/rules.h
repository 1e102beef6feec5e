// rules: site rules written in Lua (rules/*.lua and sites/<name>/rules/*.lua), run sandboxed.
// The rule API is documented in docs/rules.md.
#pragma once

#include <string>
#include <vector>

#include "site/diagnostics.h"
#include "lua/lua_sandbox.h"
#include "lua/site_view.h"
#include "site/model.h"

namespace sitegen {

struct RuleInfo {
    std::string name;
    std::string file;
    std::string description;
};

// Runs the built-in rules (default_rules_dir()), the rules in `rule_dirs` (--rules DIR) and
// the site's own sites/<name>/rules/*.lua, all sorted by file name, each file in a fresh
// sandbox against the read-only site. Findings go to `diags` at the TOML location of their
// path, with the suffix " [rule <name>]"; a rule that fails or runs away is reported at its
// own file:line.
void run_rules(const Site& site, const std::vector<std::string>& rule_dirs, Diagnostics& diags);

// Every rule the built-in dir and `rule_dirs` define (files that fail to load are listed
// under their file stem with the reason as description).
std::vector<RuleInfo> list_rules(const std::vector<std::string>& rule_dirs);

// The built-in rules: share/sitegen/rules next to an installed binary, else the source tree's.
std::string default_rules_dir();

// The *.lua files of `dirs`, sorted by file name (then by directory order); a directory that
// does not exist is reported to `diags` when given.
std::vector<std::string> rule_files(const std::vector<std::string>& dirs, Diagnostics* diags = nullptr);

// Runs exactly these rule files against `site` (what run_rules does after collecting them).
void run_rule_files(const Site& site, const std::vector<std::string>& files, Diagnostics& diags);

}  // namespace sitegen
