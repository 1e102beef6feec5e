// Modulefile self-check: a recorder of Lmod's API run in the sandbox, then per-file and load/unload checks.
#include "lua/selfcheck.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <regex>
#include <stdexcept>
#include <utility>

#include "lua/lua_sandbox.h"
#include "lua/supervisor.h"
#include "site/suggest.h"

namespace sitegen {

namespace {

// Lmod's modulefile API as a recorder. Trusted host code; its arguments are host functions.
// Returns begin(): it reads the next evaluation's input and returns a fresh environment
// table for the modulefile, reading through to the API (Lmod's sandbox: these names only).
constexpr const char* kRecorder = R"lua(-- modulefile recorder: Lmod's modulefile API, recording what a load or unload changes
local record, input, host_is_file, host_is_dir, host_check_name, host_setenv, host_strings, host_getenv,
      host_path_join = ...
local type, tostring, select, error, concat, ipairs, pairs = type, tostring, select, error, table.concat, ipairs, pairs
local setmetatable, sort = setmetatable, table.sort
local mode, full_name, file_name, loading  -- set by begin() for each evaluation

local function fail(message) error(message, 0) end  -- the position is the modulefile's frame
-- note(kind, x[, y[, z]]): record() finds the modulefile's line itself. No Lua wrappers around
-- it: each call costs the sandbox's call hook.
local note = record

local function arity(fn, n, min, max, usage)
  if n < min or (max and n > max) then
    fail(("%s expects %s, got %d argument%s"):format(fn, usage, n, n == 1 and "" or "s"))
  end
end

local function want_string(fn, i, v)
  if type(v) ~= "string" then fail(("%s: argument #%d must be a string, got %s"):format(fn, i, type(v))) end
end

-- Lmod's rule for setenv and friends: every argument a string, the last may be a number or boolean.
local function with_value(fn, n, ...)
  for i = 1, n - 1 do want_string(fn, i, (select(i, ...))) end
  local t = type((select(n, ...)))
  if t ~= "string" and t ~= "number" and t ~= "boolean" then
    fail(("%s: argument #%d must be a string, number or boolean, got %s"):format(fn, n, t))
  end
end

-- strings(fn, min, ...): { ... } once each is a string and there are at least `min`, else the
-- error "<fn> expects at least <min> string argument(s), got <n>" or want_string's. In C (as
-- check_name, getenv and pathJoin are): a Lua loop over the arguments costs a call of the
-- sandbox's call hook for every select() and type() in it.
local strings = host_strings

-- check_name(fn, name): notes the error "<fn>: '<name>' is not a valid environment variable name
-- (^[A-Za-z_][A-Za-z0-9_]*$)" unless the name matches that pattern.
local check_name = host_check_name

local function text_of(...)
  local parts = {}
  for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
  return concat(parts, "")
end

local getenv = host_getenv  -- getenv(name): the variable's value in this evaluation's environment, or nil

-- Lmod's pathJoin (host C, l_path_join): the parts that are neither nil, false nor "" (each
-- must be a string), trimmed of spaces, joined with "/"; then "//+" and "/./" collapsed to "/"
-- and a trailing "/" dropped. The Lua frame keeps the call hook's view: a host function.
local function path_join(...) return (host_path_join(...)) end

local os_table = setmetatable({ getenv = function(name)
  want_string("os.getenv", 1, name)
  return getenv(name)
end }, { __index = function(_, k) fail("os." .. tostring(k) .. " is not available to modulefiles in the self-check") end })

local api = {}

-- setenv(name, value[, respect]), the call modulefiles make most, is host C (l_setenv): checked
-- as arity() and with_value() would, then setenv on load (unless respect and the variable is
-- set), unsetenv on unload (unless respect and the variable holds another value). The Lua
-- frame keeps what the sandbox's call hook sees the same: a host function, not a C one.
function api.setenv(...) host_setenv(...) end

function api.unsetenv(...)
  local n = select("#", ...)
  arity("unsetenv", n, 1, 3, "a name, an optional value and an optional respect flag")
  with_value("unsetenv", n, ...)
  local name = ...
  check_name("unsetenv", name)
  if loading then note("change", "unsetenv", name) end
end

function api.pushenv(...)
  local n = select("#", ...)
  arity("pushenv", n, 2, 2, "a name and a value")
  with_value("pushenv", n, ...)
  local name, value = ...
  check_name("pushenv", name)
  if loading then note("change", "pushenv", name, tostring(value)) else note("change", "popenv", name) end
end

-- prepend_path(name, value[, delim]) or prepend_path{name, value, delim=, priority=}
local function path_args(fn, ...)
  local n = select("#", ...)
  local name, value, delim = ...
  if n == 2 and type(name) == "string" and type(value) == "string" then  -- every check below passes but the name's
    check_name(fn, name)
    return name, value
  end
  if n == 1 and type((...)) == "table" then
    local t = ...
    name, value, delim = t[1], t[2], t.delim
  else
    arity(fn, n, 2, 3, "a name, a value and an optional delimiter (or one table)")
    name, value, delim = ...
  end
  want_string(fn, 1, name)
  want_string(fn, 2, value)
  if delim ~= nil then want_string(fn, 3, delim) end
  check_name(fn, name)
  return name, value
end

function api.prepend_path(...)
  local name, value = path_args("prepend_path", ...)
  note("change", loading and "prepend_path" or "remove_path", name, value)
end

function api.append_path(...)
  local name, value = path_args("append_path", ...)
  note("change", loading and "append_path" or "remove_path", name, value)
end

function api.remove_path(...)
  local name, value = path_args("remove_path", ...)
  note("change", "remove_path", name, value)
end

function api.set_alias(...)
  local n = select("#", ...)
  arity("set_alias", n, 2, 2, "a name and a value")
  with_value("set_alias", n, ...)
  local name, value = ...
  if loading then note("change", "set_alias", name, tostring(value)) else note("change", "unset_alias", name) end
end

function api.unset_alias(...)
  local name = strings("unset_alias", 1, ...)[1]
  if loading then note("change", "unset_alias", name) end
end

function api.set_shell_function(...)
  local n = select("#", ...)
  arity("set_shell_function", n, 2, 3, "a name, a bash body and an optional csh body")
  local a = strings("set_shell_function", 2, ...)
  if loading then note("change", "set_shell_function", a[1], a[2]) else note("change", "unset_shell_function", a[1]) end
end

function api.unset_shell_function(...)
  local name = strings("unset_shell_function", 1, ...)[1]
  if loading then note("change", "unset_shell_function", name) end
end

-- Module calls: what each records on load and on unload (nil: nothing), as Lmod 8.6.
local function module_call(fn, on_load, on_unload)
  return function(...)
    local names = strings(fn, 1, ...)
    local kind = loading and on_load or (not loading and on_unload)
    if kind then
      for _, m in ipairs(names) do note(kind, m) end
    end
  end
end
api.load = module_call("load", "load", "unload")
api.try_load = module_call("try_load", "load", "unload")
api.try_add = module_call("try_add", "load", "unload")
api.load_any = module_call("load_any", "load", "unload")
api.always_load = module_call("always_load", "load", nil)
api.depends_on = module_call("depends_on", "load", "unload")
api.unload = module_call("unload", "unload", "unload")
api.always_unload = module_call("always_unload", "unload", "unload")
api.prereq = module_call("prereq", "prereq", nil)
api.prereq_any = module_call("prereq_any", "prereq", nil)
api.conflict = module_call("conflict", "conflict", nil)

function api.family(...)
  local n = select("#", ...)
  arity("family", n, 1, 1, "one family name")
  note("family", strings("family", 1, ...)[1])
end

function api.whatis(...)
  for _, line in ipairs(strings("whatis", 1, ...)) do note("whatis", line) end
end

function api.help(...) note("help", concat(strings("help", 1, ...), "")) end

function api.LmodError(...)
  if loading then fail("LmodError: " .. text_of(...)) end
  note("message", "LmodError (a warning on unload): " .. text_of(...))
end
function api.LmodWarning(...) note("message", "LmodWarning: " .. text_of(...)) end
function api.LmodMessage(...) note("message", text_of(...)) end
api.LmodMsgRaw = api.LmodMessage
function api.print(...)
  local parts = {}
  for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
  note("message", concat(parts, "\t"))
end

function api.mode() return mode end
function api.isloaded(...) strings("isloaded", 1, ...) return false end
function api.isAvail(...) strings("isAvail", 1, ...) return false end
function api.isPending(...) strings("isPending", 1, ...) return false end
function api.isFile(...) return host_is_file(strings("isFile", 1, ...)[1]) end
function api.isDir(...) return host_is_dir(strings("isDir", 1, ...)[1]) end
api.pathJoin = path_join
function api.atleast(m) want_string("atleast", 1, m) return m end
function api.between(m) want_string("between", 1, m) return m end
function api.latest(m) want_string("latest", 1, m) return m end
function api.LmodVersion() return "8.6" end
function api.myModuleFullName() return full_name end
function api.myModuleUsrName() return full_name end
function api.myModuleName() return (full_name:match("^(.*)/[^/]*$") or full_name) end
function api.myModuleVersion() return (full_name:match("/([^/]*)$") or "") end
function api.myFileName() return file_name end
function api.myShellName() return "bash" end
function api.myShellType() return "sh" end
function api.userInGroups(...) strings("userInGroups", 1, ...) return false end
function api.add_property(...) strings("add_property", 2, ...) end
function api.remove_property(...) strings("remove_property", 2, ...) end
function api.extensions(...) strings("extensions", 1, ...) end
function api.requireFullName() end

local function refused(fn, why)
  return function() fail(fn .. "() is refused: " .. why) end
end
api.execute = refused("execute", "generated modulefiles must not run commands")
api.capture = refused("capture", "generated modulefiles must not run commands")
api.subprocess = refused("subprocess", "generated modulefiles must not run commands")
api.source_sh = refused("source_sh", "generated modulefiles must not run commands")
api.inherit = refused("inherit", "generated modulefiles are complete on their own")
api.require = refused("require", "modulefiles load no Lua modules")
api.loadfile = refused("loadfile", "modulefiles read no other files")

-- The plain Lua Lmod offers modulefiles.
api.assert, api.ipairs, api.next, api.pairs, api.pcall = assert, ipairs, next, pairs, pcall
api.tonumber, api.tostring, api.type, api.unpack = tonumber, tostring, type, table.unpack
api._VERSION = _VERSION
api.string = { byte = string.byte, char = string.char, find = string.find, format = string.format,
               gmatch = string.gmatch, gsub = string.gsub, len = string.len, lower = string.lower,
               match = string.match, rep = string.rep, reverse = string.reverse, sub = string.sub,
               upper = string.upper }
api.table = { insert = table.insert, remove = table.remove, sort = table.sort, concat = table.concat,
              unpack = table.unpack }
api.math = { floor = math.floor, ceil = math.ceil, min = math.min, max = math.max }
api.os = os_table
-- A driver gate (plan/traits.h: driver_traits) reads its GPU driver's version file: only
-- those files may be opened, for reading, and the self-check reads none of them (the gate's
-- missing-file path, as on a node without that driver).
local function driver_version_file(path)
  return path == "/proc/driver/nvidia/version" or path:match("^/sys/module/[%w_]+/version$") ~= nil
end
api.io = setmetatable({ open = function(path, how)
  want_string("io.open", 1, path)
  if not driver_version_file(path) or (how ~= nil and how ~= "r") then
    fail("io.open is refused: modulefiles must not touch files (but read a GPU driver's version file)")
  end
  return nil, path .. ": not read by the self-check"
end }, { __index = function(_, k) fail("io." .. tostring(k) .. " is refused: modulefiles must not touch files") end })

-- .modulerc.lua files see a different, smaller API.
local rc = { os = os_table, pathJoin = path_join, isFile = api.isFile, isDir = api.isDir }
function rc.module_version(...)
  local a = strings("module_version", 2, ...)
  note("change", "module_version", a[1], concat(a, " ", 2))
end
function rc.module_alias(...)
  local n = select("#", ...)
  arity("module_alias", n, 2, 2, "an alias and a module")
  local a = strings("module_alias", 2, ...)
  note("change", "module_alias", a[1], a[2])
end
function rc.hide_version(...) note("change", "hide_version", strings("hide_version", 1, ...)[1]) end
function rc.hide_modulefile(...) note("change", "hide_modulefile", strings("hide_modulefile", 1, ...)[1]) end

-- Each evaluation's globals land in a fresh table; the API behind it is shared, as in Lmod.
local api_meta, rc_meta = { __index = api }, { __index = rc }

for _, set in ipairs({ { api, "api" }, { rc, "rc" } }) do
  local names = {}
  for k in pairs(set[1]) do names[#names + 1] = k end
  sort(names)
  for _, k in ipairs(names) do record(set[2], k) end
end

return function()
  local modulerc
  mode, full_name, file_name, modulerc = input()
  loading = mode == "load"
  return setmetatable({}, modulerc and rc_meta or api_meta)
end
)lua";

constexpr size_t kMaxRecordBytes = size_t{16} << 20;  // real modulefiles record a few KiB

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// What the host functions of the recorder read and write during one evaluation.
struct Recording {
    ModuleRecord* record = nullptr;
    size_t recorded_bytes = 0;  // of `record`, against kMaxRecordBytes
    const RecordOptions* options = nullptr;
    const std::map<std::string, std::string>* env = nullptr;
    std::string mode, full_name, file;
    std::vector<std::string> api_names, rc_names;  // for "did you mean"
};

Recording& recording_of(lua_State* L) { return *static_cast<Recording*>(host_context(L)); }

// The value of `name` in the evaluation's environment (os.getenv), or null.
const std::string* env_value(lua_State* L, const Recording& r, std::string_view name) {
    const std::string* found = nullptr;
    host_guard(L, [&] {
        const auto it = r.env->find(std::string(name));
        found = it == r.env->end() ? nullptr : &it->second;
        return 0;
    });
    return found;
}

// Keeps one call the modulefile made (the API names while the recorder loads); false, keeping
// nothing, once the recording would pass its cap.
bool add_record(Recording& r, std::string_view kind, std::string_view x, std::string_view y, std::string_view z,
                int line) {
    if (r.record) {
        // The recording lives outside the sandbox's memory cap: it has a cap of its own.
        r.recorded_bytes += kind.size() + x.size() + y.size() + z.size() + 64;
        if (r.recorded_bytes > kMaxRecordBytes) return false;
    }
    std::string a(x);
    if (kind == "api") r.api_names.push_back(std::move(a));
    else if (kind == "rc") r.rc_names.push_back(std::move(a));
    if (!r.record) return true;  // the API names come while the recorder loads, before any record
    ModuleRecord& rec = *r.record;
    if (kind == "change") rec.changes.push_back({std::move(a), std::string(y), std::string(z), line});
    else if (kind == "load") rec.loads.push_back(std::move(a));
    else if (kind == "unload") rec.unloads.push_back(std::move(a));
    else if (kind == "prereq") rec.prereqs.push_back(std::move(a));
    else if (kind == "conflict") rec.conflicts.push_back(std::move(a));
    else if (kind == "whatis") rec.whatis.push_back(std::move(a));
    else if (kind == "family") rec.families.push_back(std::move(a));
    else if (kind == "help") rec.help += a;
    else if (kind == "message") rec.messages.push_back(std::move(a));
    else if (kind == "error") rec.errors.push_back(r.file + ":" + std::to_string(line) + ": " + a);
    return true;
}

// add_record from a host C function, at the modulefile's line; raises past the cap.
int record_or_raise(lua_State* L, std::string_view kind, std::string_view x, std::string_view y = {},
                    std::string_view z = {}) {
    Recording& r = recording_of(L);
    const int line = LuaSandbox::caller_line(L);
    bool kept = true;
    host_guard(L, [&] {
        kept = add_record(r, kind, x, y, z, line);
        return 0;
    });
    if (!kept)
        return luaL_error(L, "the modulefile makes more than %d MiB of changes and calls", static_cast<int>(kMaxRecordBytes >> 20));
    return 0;
}

std::string_view string_at(lua_State* L, int idx) {
    size_t len = 0;
    const char* p = luaL_checklstring(L, idx, &len);
    return {p, len};
}

std::string_view opt_string_at(lua_State* L, int idx) {
    size_t len = 0;
    const char* p = luaL_optlstring(L, idx, "", &len);
    return {p, len};
}

// record(kind, x[, y[, z]]): one call the modulefile made, at its line.
int l_record(lua_State* L) {
    return record_or_raise(L, string_at(L, 1), string_at(L, 2), opt_string_at(L, 3), opt_string_at(L, 4));
}

bool valid_variable_name(std::string_view name) {  // ^[A-Za-z_][A-Za-z0-9_]*$, in bytes
    const auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
    if (name.empty() || !letter(name[0])) return false;
    return std::all_of(name.begin() + 1, name.end(), [&](char c) { return letter(c) || (c >= '0' && c <= '9'); });
}

// Notes an invalid variable name as an error. The message is built in the sandbox, under its
// memory cap, as string.format built it when this was Lua.
int check_name(lua_State* L, std::string_view fn, std::string_view name) {
    if (valid_variable_name(name)) return 0;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, fn.data(), fn.size());
    luaL_addstring(&b, ": '");
    luaL_addlstring(&b, name.data(), name.size());
    luaL_addstring(&b, "' is not a valid environment variable name (^[A-Za-z_][A-Za-z0-9_]*$)");
    luaL_pushresult(&b);
    size_t len = 0;
    const char* message = lua_tolstring(L, -1, &len);
    return record_or_raise(L, "error", {message, len});
}

// check_name(fn, name) for the recorder's Lua.
int l_check_name(lua_State* L) { return check_name(L, string_at(L, 1), string_at(L, 2)); }

// setenv's argument errors, as the recorder's arity() and with_value() word them.
int check_setenv_args(lua_State* L, int n) {
    if (n < 2 || n > 3) {
        lua_pushfstring(L, "setenv expects a name, a value and an optional respect flag, got %d argument%s", n,
                        n == 1 ? "" : "s");
        return lua_error(L);
    }
    for (int i = 1; i < n; ++i)
        if (lua_type(L, i) != LUA_TSTRING) {
            lua_pushfstring(L, "setenv: argument #%d must be a string, got %s", i, luaL_typename(L, i));
            return lua_error(L);
        }
    const int t = lua_type(L, n);
    if (t != LUA_TSTRING && t != LUA_TNUMBER && t != LUA_TBOOLEAN) {
        lua_pushfstring(L, "setenv: argument #%d must be a string, number or boolean, got %s", n, luaL_typename(L, n));
        return lua_error(L);
    }
    return 0;
}

// setenv(name, value[, respect]) as the recorder's Lua did it (see api.setenv).
int l_setenv(lua_State* L) {
    const int n = lua_gettop(L);
    if (n != 2 || lua_type(L, 1) != LUA_TSTRING || lua_type(L, 2) != LUA_TSTRING) check_setenv_args(L, n);
    const std::string_view name = string_at(L, 1);
    check_name(L, "setenv", name);
    const Recording& r = recording_of(L);
    const bool respect = n == 3 && lua_toboolean(L, 3);
    size_t len = 0;
    const char* text = luaL_tolstring(L, 2, &len);  // tostring(value)
    const std::string_view value(text, len);
    const std::string* now = respect ? env_value(L, r, name) : nullptr;  // os.getenv(name)
    if (r.mode == "load") {
        if (!(respect && now)) return record_or_raise(L, "change", "setenv", name, value);
    } else if (!(respect && (!now || *now != value))) {
        return record_or_raise(L, "change", "unsetenv", name);
    }
    return 0;
}

// input(): mode, full module name, file name, modulerc flag.
int l_input(lua_State* L) {
    const Recording& r = recording_of(L);
    lua_pushlstring(L, r.mode.data(), r.mode.size());
    lua_pushlstring(L, r.full_name.data(), r.full_name.size());
    lua_pushlstring(L, r.file.data(), r.file.size());
    lua_pushboolean(L, r.options->modulerc);
    return 4;
}

// getenv(name): the value or nil.
int l_getenv(lua_State* L) {
    const std::string* value = env_value(L, recording_of(L), string_at(L, 1));
    if (value) lua_pushlstring(L, value->data(), value->size());
    else lua_pushnil(L);
    return 1;
}

[[noreturn]] void fail_with(lua_State* L) { lua_error(L); std::abort(); }  // the message is on the stack

// strings(fn, min, ...): see the recorder.
int l_strings(lua_State* L) {
    const char* fn = luaL_checkstring(L, 1);
    const auto min = static_cast<int>(luaL_checkinteger(L, 2));
    const int n = lua_gettop(L) - 2;
    if (n < min) {
        lua_pushfstring(L, "%s expects at least %d string argument%s, got %d", fn, min, min == 1 ? "" : "s", n);
        fail_with(L);
    }
    for (int i = 1; i <= n; ++i)
        if (lua_type(L, i + 2) != LUA_TSTRING) {
            lua_pushfstring(L, "%s: argument #%d must be a string, got %s", fn, i, luaL_typename(L, i + 2));
            fail_with(L);
        }
    lua_createtable(L, n, 0);
    for (int i = 1; i <= n; ++i) {
        lua_pushvalue(L, i + 2);
        lua_rawseti(L, -2, i);
    }
    return 1;
}

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }  // Lua's %s

// pathJoin(...): see the recorder. Builds in the sandbox (luaL_Buffer), under its memory cap.
int l_path_join(lua_State* L) {
    const int n = lua_gettop(L);
    luaL_Buffer joined;
    luaL_buffinit(L, &joined);
    bool first = true;
    for (int i = 1; i <= n; ++i) {
        if (!lua_toboolean(L, i) || (lua_type(L, i) == LUA_TSTRING && lua_rawlen(L, i) == 0)) continue;
        if (lua_type(L, i) != LUA_TSTRING) {
            lua_pushfstring(L, "pathJoin: argument #%d must be a string, got %s", i, luaL_typename(L, i));
            fail_with(L);
        }
        size_t len = 0;
        const char* v = lua_tolstring(L, i, &len);
        size_t from = 0, to = len;
        while (from < to && is_space(v[from])) ++from;
        while (to > from && is_space(v[to - 1])) --to;
        if (!first) luaL_addchar(&joined, '/');
        luaL_addlstring(&joined, v + from, to - from);
        first = false;
    }
    luaL_pushresult(&joined);
    size_t len = 0;
    const char* s = lua_tolstring(L, -1, &len);
    const std::string_view all(s, len);
    if (all.find("//") != std::string_view::npos || all.find("/./") != std::string_view::npos) {
        luaL_Buffer out;  // gsub("//+", "/"), then gsub("/%./", "/") over that
        luaL_buffinit(L, &out);
        for (size_t i = 0; i < len; ++i) {
            luaL_addchar(&out, s[i]);
            if (s[i] == '/')
                while (i + 1 < len && s[i + 1] == '/') ++i;
        }
        luaL_pushresult(&out);
        s = lua_tolstring(L, -1, &len);
        if (std::string_view(s, len).find("/./") != std::string_view::npos) {
            luaL_Buffer dots;
            luaL_buffinit(L, &dots);
            for (size_t i = 0; i < len;) {
                if (i + 2 < len && s[i] == '/' && s[i + 1] == '.' && s[i + 2] == '/') {
                    luaL_addchar(&dots, '/');
                    i += 3;
                } else {
                    luaL_addchar(&dots, s[i++]);
                }
            }
            luaL_pushresult(&dots);
            s = lua_tolstring(L, -1, &len);
        }
    }
    if (len > 1 && s[len - 1] == '/') lua_pushlstring(L, s, len - 1);
    return 1;
}

int ask_predicate(lua_State* L, bool is_dir) {
    size_t len = 0;
    const char* path = luaL_checklstring(L, 1, &len);
    const Recording& r = recording_of(L);
    bool answer = false;
    host_guard(L, [&] {
        const auto& predicate = is_dir ? r.options->is_dir : r.options->is_file;
        answer = predicate && predicate(std::string(path, len));
        return 0;
    });
    lua_pushboolean(L, answer);
    return 1;
}

int l_is_file(lua_State* L) { return ask_predicate(L, false); }
int l_is_dir(lua_State* L) { return ask_predicate(L, true); }

// "PyTorch/2.3.1" from ".../modulefiles/PyTorch/2.3.1.lua" (or the last two components).
std::string full_name_of(const std::string& file) {
    std::string p = file;
    if (ends_with(p, ".lua")) p.resize(p.size() - 4);
    const auto at = p.rfind("modulefiles/");
    if (at != std::string::npos) return p.substr(at + 12);
    const auto last = p.rfind('/');
    if (last == std::string::npos || last == 0) return p;
    const auto before = p.rfind('/', last - 1);
    return before == std::string::npos ? p : p.substr(before + 1);
}

// The Lua error as a finding: unknown functions named as such, with a suggestion.
// (At namespace scope, made before main: not a function's static, see prime_statics.)
const std::regex kCallNil(R"(attempt to call a nil value \((global|field|method) '([^']*)'\))");

std::string describe_failure(const LuaResult& r, const std::string& file, const std::vector<std::string>& api) {
    const std::regex& call_nil = kCallNil;
    std::string message = r.message;
    std::smatch m;
    if (r.syntax_error) {
        message = "syntax error: " + message;
    } else if (std::regex_search(message, m, call_nil)) {
        const std::string name = m[2];
        message = "unknown function '" + name + "'";
        const std::string hint = did_you_mean(name, api);
        if (!hint.empty()) message += " (" + hint + ")";
    }
    return (r.file.empty() ? file : r.file) + ":" + std::to_string(r.line) + ": " + message;
}

bool is_modulefile(const std::string& path) {
    return ends_with(path, ".lua") && (path.rfind("modulefiles/", 0) == 0 || path.find("/modulefiles/") != std::string::npos);
}

// The environment a load leaves behind (as far as later os.getenv calls can see it).
std::map<std::string, std::string> after_load(const ModuleRecord& load) {
    std::map<std::string, std::string> env;
    for (const auto& c : load.changes) {
        if (c.op == "setenv" || c.op == "pushenv") env[c.name] = c.value;
        else if (c.op == "unsetenv") env.erase(c.name);
        else if (c.op == "prepend_path") env[c.name] = env.count(c.name) ? c.value + ":" + env[c.name] : c.value;
        else if (c.op == "append_path") env[c.name] = env.count(c.name) ? env[c.name] + ":" + c.value : c.value;
    }
    return env;
}

// The unload change that undoes a load change ("" op: none expected).
EnvChange undo_of(const EnvChange& c) {
    if (c.op == "setenv") return {"unsetenv", c.name, "", 0};
    if (c.op == "pushenv") return {"popenv", c.name, "", 0};
    if (c.op == "prepend_path" || c.op == "append_path" || c.op == "remove_path") return {"remove_path", c.name, c.value, 0};
    if (c.op == "set_alias") return {"unset_alias", c.name, "", 0};
    if (c.op == "set_shell_function") return {"unset_shell_function", c.name, "", 0};
    return {};
}

std::string key_of(const EnvChange& c) { return c.op + '\n' + c.name + '\n' + c.value; }

// key_of(a) == key_of(b) without building the keys (the symmetry check compares every pair):
// equal fields give equal keys, and unequal ones unequal keys unless a field holds a newline.
bool same_key(const EnvChange& a, const EnvChange& b) {
    if (a.op == b.op && a.name == b.name && a.value == b.value) return true;
    for (const EnvChange* c : {&a, &b})
        for (const std::string* f : {&c->op, &c->name, &c->value})
            if (f->find('\n') != std::string::npos) return key_of(a) == key_of(b);
    return false;
}

std::string missing_undo(const EnvChange& c) {
    if (c.op == "prepend_path" || c.op == "append_path")
        return "'" + c.value + "' is added to '" + c.name + "' on load (" + c.op + ") but not removed on unload";
    if (c.op == "remove_path")
        return "'" + c.value + "' is removed from '" + c.name + "' on load but not on unload";
    return "'" + c.name + "' is set on load (" + c.op + ") but not unset on unload";
}

std::string unexpected_undo(const EnvChange& c) {
    if (c.op == "remove_path") return "unload removes '" + c.value + "' from '" + c.name + "', which load never added";
    return "unload " + (c.op == "popenv" ? std::string("pops") : "unsets") + " '" + c.name + "', which load never set";
}

void check_symmetry(const std::string& file, const ModuleRecord& load, const ModuleRecord& unload, Diagnostics& diags) {
    std::vector<const EnvChange*> pending;  // unload changes not yet matched to a load change
    for (const auto& c : unload.changes) pending.push_back(&c);
    for (const auto& c : load.changes) {
        const EnvChange want = undo_of(c);
        if (want.op.empty()) continue;
        auto it = std::find_if(pending.begin(), pending.end(), [&](const EnvChange* u) { return same_key(*u, want); });
        if (it != pending.end()) {
            pending.erase(it);
            continue;
        }
        diags.error({file, c.line, 0}, missing_undo(c) + " (load/unload asymmetry) [self-check]");
    }
    for (const EnvChange* u : pending)
        diags.error({file, u->line, 0}, unexpected_undo(*u) + " (load/unload asymmetry) [self-check]");
}

void report_errors(const std::string& file, const std::vector<std::string>& errors, Diagnostics& diags,
                   std::vector<std::string>& seen) {
    for (const auto& e : errors) {
        if (std::find(seen.begin(), seen.end(), e) != seen.end()) continue;
        seen.push_back(e);
        std::string f, message;
        int line = 0;
        if (!split_lua_position(e, f, line, message)) message = e;
        diags.error({file, line, 0}, message + " [self-check]");
    }
}

// One sandbox with the recorder loaded, reused for many evaluations (each in fresh tables).
class ModulefileRecorder {
public:
    ModulefileRecorder() {
        std::vector<int> kept;
        ready_ = sandbox_.run_host_chunk(
            kRecorder, "=[modulefile recorder]",
            {{l_record, &now_}, {l_input, &now_}, {l_is_file, &now_}, {l_is_dir, &now_}, {l_check_name, &now_},
             {l_setenv, &now_}, {l_strings, &now_}, {l_getenv, &now_}, {l_path_join, &now_}},
            kept);
        if (ready_.ok && !kept.empty()) begin_ = kept.front();
    }

    // A modulefile compiled once for its evaluations in both modes (compiling is a third of an
    // evaluation's cost); a compile error is kept and is each evaluation's error, as recompiling
    // would give it again.
    struct Compiled {
        bool tried = false;
        int ref = LUA_NOREF;
        LuaResult failure;  // ok unless the text did not compile
    };

    ModuleRecord record(const std::string& text, const std::string& chunkname, const std::string& mode,
                        const std::map<std::string, std::string>& env, const RecordOptions& options,
                        Compiled* compiled = nullptr) {
        ModuleRecord rec;
        const bool named = !chunkname.empty() && (chunkname[0] == '@' || chunkname[0] == '=');
        const std::string source = named ? chunkname : "@" + chunkname;
        now_.record = &rec;
        now_.recorded_bytes = 0;
        now_.options = &options;
        now_.env = &env;
        now_.mode = mode;
        now_.file = source.substr(1);
        now_.full_name = options.module_full_name.empty() ? full_name_of(now_.file) : options.module_full_name;
        if (mode != "load" && mode != "unload") {
            rec.errors.push_back(now_.file + ":0: unknown mode '" + mode + "' (load or unload)");
        } else if (begin_ == LUA_NOREF) {
            rec.errors.push_back(now_.file + ":0: internal error: the recorder failed: " + ready_.describe());
        } else {
            evaluate(text, source, rec, compiled);
        }
        now_.record = nullptr;
        return rec;
    }

    void release(Compiled& compiled) {
        if (compiled.ref != LUA_NOREF) sandbox_.release(compiled.ref);
        compiled = {};
    }

private:
    void evaluate(const std::string& text, const std::string& source, ModuleRecord& rec, Compiled* compiled) {
        std::vector<int> env;
        const LuaResult fresh = sandbox_.call_kept(begin_, {}, &env);
        if (!fresh.ok || env.empty()) {
            rec.errors.push_back(now_.file + ":0: internal error: the recorder failed: " + fresh.describe());
            return;
        }
        LuaResult result;
        if (!compiled) {
            result = sandbox_.run(text, source, env.front());
        } else {
            if (!compiled->tried) {
                compiled->tried = true;
                compiled->failure = sandbox_.compile(text, source, compiled->ref);
            }
            result = compiled->failure.ok ? sandbox_.run_compiled(compiled->ref, env.front()) : compiled->failure;
        }
        for (int ref : env) sandbox_.release(ref);
        if (!result.ok)
            rec.errors.push_back(describe_failure(result, now_.file, now_.options->modulerc ? now_.rc_names : now_.api_names));
    }

    LuaSandbox sandbox_;
    Recording now_;
    LuaResult ready_;
    int begin_ = LUA_NOREF;
};

// Checks one modulefile with `recorder`: errors of each mode, then load/unload symmetry.
void check_one(ModulefileRecorder& recorder, const OutputFile& f, Diagnostics& diags) {
    RecordOptions options;  // evaluate as on the installed system: every path exists
    options.is_file = [](const std::string&) { return true; };
    options.is_dir = [](const std::string&) { return true; };
    options.modulerc = ends_with(f.path, "/.modulerc.lua");
    std::vector<std::string> seen;
    ModulefileRecorder::Compiled compiled;
    const ModuleRecord load = recorder.record(f.contents, f.path, "load", {}, options, &compiled);
    report_errors(f.path, load.errors, diags, seen);
    if (options.modulerc) {
        recorder.release(compiled);
        return;
    }
    const ModuleRecord unload = recorder.record(f.contents, f.path, "unload", after_load(load), options, &compiled);
    recorder.release(compiled);
    report_errors(f.path, unload.errors, diags, seen);
    if (load.errors.empty() && unload.errors.empty()) check_symmetry(f.path, load, unload, diags);
}

// Messages from the child running the self-check to the parent.
enum Message : uint8_t {
    kStep = 's',     // index of the modulefile now evaluated
    kDone = 'd',     // it is done
    kFinding = 'f',  // a Diagnostic
    kRecord = 'r',   // record_modulefile's ModuleRecord
};

void put_strings(MessageWriter& w, const std::vector<std::string>& v) {
    w.i64(static_cast<int64_t>(v.size()));
    for (const auto& x : v) w.str(x);
}

std::vector<std::string> get_strings(MessageReader& r) {
    std::vector<std::string> out;
    for (int64_t n = r.i64(); n > 0 && r.ok(); --n) out.push_back(r.str());
    return out;
}

std::string encode(const ModuleRecord& rec) {
    MessageWriter w;
    w.u8(kRecord).i64(static_cast<int64_t>(rec.changes.size()));
    for (const auto& c : rec.changes) w.str(c.op).str(c.name).str(c.value).i64(c.line);
    for (const auto* v : {&rec.loads, &rec.unloads, &rec.prereqs, &rec.conflicts, &rec.whatis, &rec.families,
                          &rec.errors, &rec.messages})
        put_strings(w, *v);
    w.str(rec.help);
    return w.bytes();
}

ModuleRecord decode(MessageReader& r) {
    ModuleRecord rec;
    for (int64_t n = r.i64(); n > 0 && r.ok(); --n) {
        EnvChange c;
        c.op = r.str();
        c.name = r.str();
        c.value = r.str();
        c.line = static_cast<int>(r.i64());
        rec.changes.push_back(std::move(c));
    }
    for (auto* v : {&rec.loads, &rec.unloads, &rec.prereqs, &rec.conflicts, &rec.whatis, &rec.families,
                    &rec.errors, &rec.messages})
        *v = get_strings(r);
    rec.help = r.str();
    return rec;
}

}  // namespace

ModuleRecord record_modulefile(const std::string& text, const std::string& chunkname, const std::string& mode,
                               const std::map<std::string, std::string>& env, const RecordOptions& options) {
    ModuleRecord out;
    bool got = false;
    const RunEnd end = run_supervised(
        [&](Outbox& box) {
            ModuleRecord rec;
            try {
                rec = ModulefileRecorder().record(text, chunkname, mode, env, options);
            } catch (const std::exception& e) {
                rec.errors.push_back(chunkname + ":0: the recorder could not run: " + e.what());
            }
            box.send(encode(rec));
        },
        [&](std::string_view bytes) {
            MessageReader m(bytes);
            if (m.u8() != kRecord) return;
            ModuleRecord rec = decode(m);
            if (m.ok()) {
                out = std::move(rec);
                got = true;
            }
        });
    if (end.kind != RunEnd::Kind::finished || !got) {
        const std::string file = chunkname.empty() || (chunkname[0] != '@' && chunkname[0] != '=') ? chunkname : chunkname.substr(1);
        out = {};
        out.errors.push_back((end.file.empty() ? file : end.file) + ":" + std::to_string(end.line) + ": " +
                             (end.why.empty() ? "the recorder sent no result" : end.why));
    }
    return out;
}

namespace {

// Checks modulefiles[start...] one after the other, each between a step and a done message
// with its findings.
void check_modulefiles(const std::vector<const OutputFile*>& modulefiles, size_t start, Outbox& box) {
    try {
        ModulefileRecorder recorder;
        for (size_t i = start; i < modulefiles.size(); ++i) {
            box.send(MessageWriter().u8(kStep).i64(static_cast<int64_t>(i)).bytes());
            Diagnostics found(std::numeric_limits<size_t>::max());
            check_one(recorder, *modulefiles[i], found);
            for (const auto& d : found.all()) {
                MessageWriter w;
                w.u8(kFinding);
                put_diagnostic(w, d);
                box.send(w.bytes());
            }
            box.send(MessageWriter().u8(kDone).bytes());
        }
    } catch (const std::exception& e) {  // e.g. no memory for the sandbox: nothing goes out unchecked
        Diagnostic d;
        d.message = std::string("the modulefile self-check could not run: ") + e.what();
        MessageWriter w;
        w.u8(kFinding);
        put_diagnostic(w, d);
        box.send(w.bytes());
    }
}

// What an early child checks: the modulefiles, each its path and text.
std::string early_input(const std::vector<const OutputFile*>& modulefiles) {
    size_t bytes = 8;
    for (const OutputFile* f : modulefiles) bytes += 17 + f->path.size() + f->contents.size();
    MessageWriter w;
    w.reserve(bytes);
    w.i64(static_cast<int64_t>(modulefiles.size()));
    for (const OutputFile* f : modulefiles) w.str(f->path).str(f->contents).u8(f->executable ? 1 : 0);
    return w.take();
}

}  // namespace

EarlyChild::Body early_self_check() {
    return [](std::string_view input, Outbox& box) {
        MessageReader m(input);
        const int64_t n = m.i64();
        OutputList files;
        for (int64_t i = 0; m.ok() && i < n; ++i) {
            OutputFile& f = files.emplace_back();
            f.path = m.str();
            f.contents = m.str();
            f.executable = m.u8() != 0;
        }
        if (!m.ok()) throw std::runtime_error("the self-check's input is cut short");  // (its child exits 3: crashed)
        std::vector<const OutputFile*> modulefiles;
        for (const OutputFile& f : files) modulefiles.push_back(&f);
        check_modulefiles(modulefiles, 0, box);
    };
}

size_t self_check_each(const OutputList& files, const std::function<void(size_t, Diagnostic)>& report,
                       EarlyChild* early) {
    std::vector<const OutputFile*> modulefiles;
    std::vector<size_t> index;  // of each in `files`
    for (size_t i = 0; i < files.size(); ++i)
        if (is_modulefile(files[i].path)) {
            modulefiles.push_back(&files[i]);
            index.push_back(i);
        }
    size_t next = 0, step = 0;  // where the next child starts; the file being evaluated
    bool running = false;
    // (In process, messages update `next` while the body runs: it starts where it stood.)
    const auto body = [&](Outbox& box) { check_modulefiles(modulefiles, next, box); };
    const auto on_message = [&](std::string_view bytes) {
        MessageReader m(bytes);
        switch (m.u8()) {
            case kStep: step = static_cast<size_t>(m.i64()); running = true; break;
            case kDone: running = false; next = step + 1; break;
            case kFinding: {
                Diagnostic d = get_diagnostic(m);
                if (m.ok()) report(index[running ? step : next], std::move(d));
                break;
            }
            default: break;
        }
    };
    while (next < modulefiles.size()) {
        // (The early child, when given, checks from the first file: it holds the same files.)
        const RunEnd end = early && next == 0 ? std::exchange(early, nullptr)->run(early_input(modulefiles), on_message)
                                              : run_supervised(body, on_message);
        // Finished before the last file was done: the check could not go on (its finding is sent).
        if (end.kind == RunEnd::Kind::finished) return next < modulefiles.size() ? index[running ? step : next] : files.size();
        const size_t at = running ? step : next;
        // Every file was checked and reported before the child died (on its way out, or killed
        // right after its last message): no file's findings are missing.
        if (at >= modulefiles.size()) return files.size();
        const std::string& path = modulefiles[at]->path;
        Diagnostic d;
        d.where = {end.file.empty() ? path : end.file, end.file.empty() ? 0 : end.line, 0};
        d.message = (running ? "" : "the modulefile self-check could not run: ") + end.why + " [self-check]";
        report(index[at], std::move(d));
        running = false;
        next = at + 1;
    }
    return files.size();
}

void self_check_modulefiles(const OutputList& files, Diagnostics& diags) {
    self_check_each(files, [&](size_t, Diagnostic d) { diags.add(std::move(d)); });
}

}  // namespace sitegen

namespace sitegen {
bool is_self_checked(const std::string& path) { return is_modulefile(path); }
}  // namespace sitegen
