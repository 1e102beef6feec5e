// The site as rules see it: a read-only Lua value tree, one field per TOML key.
#pragma once

#include "lua/lua_sandbox.h"
#include "site/model.h"

namespace sitegen {

// Every model field under its TOML key, enums by name, with the dotted path of each value
// for pathof() and read-only errors.
LuaValue site_to_lua(const Site& site);

// The Markdown table of docs/rules.md's "The site as rules see it": every table of the view
// with its fields (enumerations with their names), walked out of the view of a sample site so
// that derived fields are listed too. `sitegen schema --lua-view` prints it.
std::string site_view_reference();

}  // namespace sitegen
