// The site as rules see it: a read-only Lua value tree, one field per TOML key.
#pragma once

#include "lua/lua_sandbox.h"
#include "lua/read_log.h"
#include "site/model.h"

namespace sitegen {

// Every model field under its TOML key, enums by name, with the dotted path of each value
// for pathof() and read-only errors. With `needs`, only what they name (a model table's rows
// that no read reaches are left out; the values they keep are whole): what a rules' memo
// compares, without the rest of a big site.
LuaValue site_to_lua(const Site& site, const ViewNeeds* needs = nullptr);

// The Markdown table of docs/rules.md's "The site as rules see it": every table of the view
// with its fields (enumerations with their names), walked out of the view of a sample site so
// that derived fields are listed too. `sitegen schema --lua-view` prints it.
std::string site_view_reference();

}  // namespace sitegen
