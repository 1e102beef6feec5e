// The site as rules see it: a read-only Lua value tree, one field per TOML key.
#pragma once

#include "lua/lua_sandbox.h"
#include "site/model.h"

namespace sitegen {

// Every model field under its TOML key, enums by name, with the dotted path of each value
// for pathof() and read-only errors.
LuaValue site_to_lua(const Site& site);

}  // namespace sitegen
