// Lua sandbox: capped allocator, instruction/time hook, library allow-list and protected entry points.
#include "lua_sandbox.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace sitegen {

namespace {

constexpr int kHookInterval = 1000;          // instructions between limit checks
constexpr size_t kMaxPrinted = 64 * 1024;    // print() output kept (C++ memory, outside the cap)

// Trusted Lua run once per state before any untrusted chunk: refuses what chunks must not
// reach, keeps errors raised after a limit uncatchable, and builds read-only proxy tables.
// Its arguments are C helpers; it returns the function that freezes a table.
constexpr const char* kCore = R"lua(-- sandbox core: refusals, uncatchable limits and read-only tables
local killed, print_line, text_load, guarded_rep = ...
local raw_setmetatable, raw_getmetatable, raw_rawset, raw_rawget = setmetatable, getmetatable, rawset, rawget
local raw_next, raw_pcall, raw_xpcall, raw_collectgarbage = next, pcall, xpcall, collectgarbage
local error, type, tostring, select, concat, mtype = error, type, tostring, select, table.concat, math.type

local function refusing_function(name, why)
  return function() error(name .. " is not available in the sandbox (" .. why .. ")", 2) end
end

local function refusing_table(name, why)
  return raw_setmetatable({}, {
    __index = function(_, k) error(name .. "." .. tostring(k) .. " is not available in the sandbox (" .. why .. ")", 2) end,
    __newindex = function(_, k) error(name .. "." .. tostring(k) .. " cannot be defined in the sandbox", 2) end,
    __metatable = false,
  })
end

io = refusing_table("io", "no file access")
os = refusing_table("os", "no processes, files or clocks")
debug = refusing_table("debug", "no introspection")
package = refusing_table("package", "no modules")
require = refusing_function("require", "no modules")
dofile = refusing_function("dofile", "no file access")
loadfile = refusing_function("loadfile", "no file access")
string.dump = refusing_function("string.dump", "no bytecode")
string.rep = guarded_rep
load = text_load
raw_getmetatable("").__metatable = false

local allowed_gc = { collect = true, count = true, step = true, isrunning = true }
collectgarbage = function(opt, ...)
  opt = opt or "collect"
  if not allowed_gc[opt] then
    error("collectgarbage('" .. tostring(opt) .. "') is not allowed in the sandbox", 2)
  end
  return raw_collectgarbage(opt, ...)
end

print = function(...)
  local parts = {}
  for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
  print_line(concat(parts, "\t"))
end

-- Once a limit is hit every error is final: pcall must not let a runaway loop go on.
local function pass(ok, ...)
  if not ok and killed() then error((...), 0) end
  return ok, ...
end
pcall = function(f, ...) return pass(raw_pcall(f, ...)) end
xpcall = function(f, handler, ...) return pass(raw_xpcall(f, handler, ...)) end

local frozen = raw_setmetatable({}, { __mode = "k" })  -- proxy -> its data, paths and label

local function child_path(info, k)
  local p = info.paths[k]
  if p then return p end
  if mtype(k) == "integer" and k >= 1 then k = k - 1 end  -- paths count array items from 0
  if info.path == "" then return tostring(k) end
  return info.path .. "." .. tostring(k)
end

setmetatable = function(t, mt)
  local info = frozen[t]
  if info then
    error(info.label .. " is read-only: cannot set the metatable of " ..
          (info.path == "" and "its root" or info.path), 2)
  end
  if type(mt) == "table" and raw_rawget(mt, "__gc") ~= nil then
    error("setmetatable: __gc metamethods are not allowed in the sandbox", 2)
  end
  return raw_setmetatable(t, mt)
end

rawset = function(t, k, v)
  local info = frozen[t]
  if info then error(info.label .. " is read-only: " .. child_path(info, k), 2) end
  return raw_rawset(t, k, v)
end

next = function(t, k)
  local info = frozen[t]
  if info then return raw_next(info.data, k) end
  return raw_next(t, k)
end

pathof = function(t, k)
  local info = frozen[t]
  if not info then error("pathof: argument #1 is not a read-only host table", 2) end
  if k == nil then return info.path end
  return child_path(info, k)
end

return function(data, paths, path, label)
  local proxy = {}
  local info = { data = data, paths = paths, path = path, label = label }
  frozen[proxy] = info
  return raw_setmetatable(proxy, {
    __index = data,
    __newindex = function(_, k) error(label .. " is read-only: " .. child_path(info, k), 2) end,
    __len = function() return #data end,
    __pairs = function() return function(_, k) return raw_next(data, k) end, proxy, nil end,
    __metatable = false,
  })
end
)lua";

LuaSandbox::State& state_of(lua_State* L) {
    return **static_cast<LuaSandbox::State**>(lua_getextraspace(L));
}

// "rules/x.lua" for "@rules/x.lua" and "=x"; Lua's own short form for string chunks.
std::string display_name(const char* source, const char* short_src) {
    if (source && (source[0] == '@' || source[0] == '=')) return source + 1;
    return short_src ? short_src : "";
}

}  // namespace

struct LuaSandbox::State {
    SandboxLimits limits;
    lua_State* L = nullptr;
    size_t used = 0;
    bool memory_refused = false;
    uint64_t executed = 0;
    std::chrono::steady_clock::time_point deadline;
    const char* kill_reason = nullptr;  // set when a limit is hit; errors stay uncatchable
    char sample_source[512] = {0};      // where the hook last saw the script (for memory errors)
    int sample_line = 0;
    bool have_error = false;
    LuaResult error;                    // filled by the message handler
    std::string printed;
    struct Chunk {
        std::string source;  // as given to load: "@rules/x.lua"
        std::string shown;   // as positions print it: "rules/x.lua"
        bool host;           // trusted host code: never blamed for an error
    };
    std::vector<Chunk> chunks{{"=[sandbox core]", "[sandbox core]", true}};
    int freeze_ref = LUA_NOREF;

    void arm() {
        executed = 0;
        deadline = std::chrono::steady_clock::now() + limits.wall;
        kill_reason = nullptr;
        memory_refused = false;
        sample_source[0] = 0;
        sample_line = 0;
        have_error = false;
        error = LuaResult{};
    }

    void add_chunk(const std::string& source, bool host) {
        for (const auto& c : chunks)
            if (c.source == source) return;
        chunks.push_back({source, display_name(source.c_str(), source.c_str()), host});
    }

    // The chunk a position names, from the (possibly truncated "...tail") name Lua printed.
    const Chunk* known_chunk(const std::string& shown) const {
        for (const auto& c : chunks) {
            if (c.shown == shown) return &c;
            if (shown.size() > 3 && shown.compare(0, 3, "...") == 0 && c.shown.size() >= shown.size() - 3 &&
                c.shown.compare(c.shown.size() - (shown.size() - 3), std::string::npos, shown, 3) == 0)
                return &c;
        }
        return nullptr;
    }

    bool is_host_source(const char* source) const noexcept {
        for (const auto& c : chunks)
            if (c.host && c.source == source) return true;
        return false;
    }

    LuaResult result_of(int status) const;
};

namespace {

void* capped_alloc(void* ud, void* ptr, size_t osize, size_t nsize) {
    auto& st = *static_cast<LuaSandbox::State*>(ud);
    const size_t old = ptr ? osize : 0;  // with ptr == NULL, osize encodes an object kind
    if (nsize == 0) {
        std::free(ptr);
        st.used -= old;
        return nullptr;
    }
    if (nsize > old && st.used - old + nsize > st.limits.memory_bytes) {
        st.memory_refused = true;
        return nullptr;
    }
    void* p = std::realloc(ptr, nsize);
    if (p) st.used = st.used - old + nsize;
    return p;
}

int panic(lua_State* L) {
    const char* msg = lua_tostring(L, -1);
    std::fprintf(stderr, "sitegen: unprotected Lua error: %s\n", msg ? msg : "(not a string)");
    std::abort();
}

// Count hook: samples the position and raises once the instruction or time budget is spent.
void limit_hook(lua_State* L, lua_Debug* ar) {
    auto& st = state_of(L);
    if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0 && !st.is_host_source(ar->source)) {
        std::strncpy(st.sample_source, ar->source, sizeof st.sample_source - 1);
        st.sample_line = ar->currentline;
    }
    st.executed += kHookInterval;
    if (!st.kill_reason) {
        if (st.executed > st.limits.instructions) st.kill_reason = "instructions";
        else if (std::chrono::steady_clock::now() > st.deadline) st.kill_reason = "time";
        else return;
    }
    const char* src = ar->source && (ar->source[0] == '@' || ar->source[0] == '=') ? ar->source + 1 : ar->short_src;
    if (st.kill_reason[0] == 'i')
        lua_pushfstring(L, "%s:%d: instruction limit exceeded: more than %I Lua instructions (runaway loop?)",
                        src, ar->currentline, static_cast<lua_Integer>(st.limits.instructions));
    else
        lua_pushfstring(L, "%s:%d: time limit exceeded: ran longer than %d ms (runaway loop?)", src,
                        ar->currentline, static_cast<int>(st.limits.wall.count()));
    lua_error(L);
}

// Records an error message (with or without a position) and the innermost Lua position.
void note_error(LuaSandbox::State& st, const char* text, size_t len, const char* source,
                const char* short_src, int line) noexcept {
    try {
        st.have_error = true;
        st.error = LuaResult{};
        st.error.ok = false;
        st.error.file = source ? display_name(source, short_src) : "";
        st.error.line = line;
        if (!text) return;
        std::string message(text, len), file, rest;
        int at = 0;
        const bool positioned = split_lua_position(message, file, at, rest);
        const LuaSandbox::State::Chunk* chunk = positioned ? st.known_chunk(file) : nullptr;
        if (chunk && chunk->host) {
            st.error.message = rest;  // keep the caller's position found on the stack
        } else if (chunk || (positioned && file.rfind("[string ", 0) == 0)) {
            st.error.file = chunk ? chunk->shown : file;
            st.error.line = at;
            st.error.message = rest;
        } else {
            st.error.message = message;
        }
    } catch (...) {
    }
}

void note_message(LuaSandbox::State& st, const char* prefix, const char* text, const char* suffix = "") noexcept {
    try {
        st.error.message = std::string(prefix) + (text ? text : "") + suffix;
    } catch (...) {
    }
}

void note_traceback(LuaSandbox::State& st, const char* text) noexcept {
    try {
        if (text) st.error.traceback = text;
    } catch (...) {
    }
}

int tostring_error_object(lua_State* L) {
    luaL_tolstring(L, 1, nullptr);
    return 1;
}

// A non-string error object: its __tostring (run protected: it is untrusted code) or its type.
void describe_error_object(lua_State* L, LuaSandbox::State& st) {
    const int type = lua_type(L, 1);
    const bool has_tostring = type == LUA_TNUMBER || luaL_getmetafield(L, 1, "__tostring") != LUA_TNIL;
    if (type != LUA_TNUMBER && has_tostring) lua_pop(L, 1);
    char what[64];
    std::snprintf(what, sizeof what, "error object is a %s value", lua_typename(L, type));
    if (!has_tostring) {
        note_message(st, what, "");
        return;
    }
    lua_pushcfunction(L, tostring_error_object);
    lua_pushvalue(L, 1);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK) {
        note_message(st, "", lua_tostring(L, -1));
    } else {
        std::strncat(what, " (its __tostring failed: ", sizeof what - std::strlen(what) - 1);
        note_message(st, what, lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?", ")");
    }
    lua_pop(L, 1);
}

// Message handler of every protected call: message, innermost Lua position, traceback.
int message_handler(lua_State* L) {
    auto& st = state_of(L);
    lua_Debug ar;
    int line = 0;
    const char* source = nullptr;
    const char* short_src = nullptr;
    for (int level = 1; lua_getstack(L, level, &ar); ++level) {
        if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0 && !st.is_host_source(ar.source)) {
            line = ar.currentline;
            source = ar.source;
            short_src = ar.short_src;
            break;
        }
    }
    size_t len = 0;
    const char* text = lua_type(L, 1) == LUA_TSTRING ? lua_tolstring(L, 1, &len) : nullptr;
    note_error(st, text, len, source, short_src, line);
    if (!text) describe_error_object(L, st);
    // Last: it allocates, and a failure here still leaves the message recorded.
    luaL_traceback(L, L, nullptr, 1);
    note_traceback(st, lua_tostring(L, -1));
    lua_settop(L, 1);
    return 1;
}

int l_killed(lua_State* L) {
    lua_pushboolean(L, state_of(L).kill_reason != nullptr);
    return 1;
}

int l_print_line(lua_State* L) {
    size_t len = 0;
    const char* text = luaL_checklstring(L, 1, &len);
    auto& st = state_of(L);
    return host_guard(L, [&] {
        if (st.printed.size() >= kMaxPrinted) return 0;
        st.printed.append(text, std::min(len, kMaxPrinted - st.printed.size()));
        st.printed += st.printed.size() >= kMaxPrinted ? "\n[print output truncated]\n" : "\n";
        return 0;
    });
}

// load() for text only: strings, mode "t"; a function reader or mode "b" is refused.
int l_text_load(lua_State* L) {
    if (lua_type(L, 1) != LUA_TSTRING) {
        luaL_pushfail(L);
        lua_pushliteral(L, "load: only text chunks given as strings are allowed in the sandbox");
        return 2;
    }
    size_t len = 0;
    const char* text = lua_tolstring(L, 1, &len);
    const char* name = luaL_optstring(L, 2, "=(load)");
    const char* mode = luaL_optstring(L, 3, "t");
    if (std::strchr(mode, 'b')) {
        luaL_pushfail(L);
        lua_pushliteral(L, "load: binary chunks are not allowed in the sandbox (mode must be \"t\")");
        return 2;
    }
    if (luaL_loadbufferx(L, text, len, name, "t") != LUA_OK) {
        luaL_pushfail(L);
        lua_insert(L, -2);
        return 2;
    }
    if (!lua_isnone(L, 4)) {
        lua_pushvalue(L, 4);
        if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
    }
    return 1;
}

// string.rep that refuses, before allocating, a result larger than the memory left.
int l_guarded_rep(lua_State* L) {
    size_t len = 0, seplen = 0;
    luaL_checklstring(L, 1, &len);
    const lua_Integer n = luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &seplen);
    if (n > 0) {
        const auto& st = state_of(L);
        const double total = double(len) * double(n) + double(seplen) * double(n - 1);
        const double room = double(st.limits.memory_bytes) - double(st.used);
        if (total > room)
            return luaL_error(L, "string.rep: a result of %f bytes would exceed the sandbox memory limit of %d MiB",
                              static_cast<lua_Number>(total), static_cast<int>(st.limits.memory_bytes >> 20));
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

int open_sandbox(lua_State* L) {
    auto& st = state_of(L);
    static const luaL_Reg libs[] = {{LUA_GNAME, luaopen_base},         {LUA_STRLIBNAME, luaopen_string},
                                    {LUA_TABLIBNAME, luaopen_table},   {LUA_MATHLIBNAME, luaopen_math},
                                    {LUA_UTF8LIBNAME, luaopen_utf8}};
    for (const auto& lib : libs) {
        luaL_requiref(L, lib.name, lib.func, 1);
        lua_pop(L, 1);
    }
    if (luaL_loadbufferx(L, kCore, std::strlen(kCore), "=[sandbox core]", "t") != LUA_OK) return lua_error(L);
    lua_pushcfunction(L, l_killed);
    lua_pushcfunction(L, l_print_line);
    lua_pushcfunction(L, l_text_load);
    lua_getglobal(L, LUA_STRLIBNAME);
    lua_getfield(L, -1, "rep");
    lua_remove(L, -2);
    lua_pushcclosure(L, l_guarded_rep, 1);
    lua_call(L, 4, 1);
    st.freeze_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

void push_plain(lua_State* L, const LuaValue& v) {
    switch (v.kind) {
        case LuaValue::Kind::nil: lua_pushnil(L); return;
        case LuaValue::Kind::boolean: lua_pushboolean(L, v.flag); return;
        case LuaValue::Kind::integer: lua_pushinteger(L, v.number); return;
        case LuaValue::Kind::string: lua_pushlstring(L, v.text.data(), v.text.size()); return;
        case LuaValue::Kind::table: break;
    }
    luaL_checkstack(L, 4, "value nested too deeply");
    lua_createtable(L, static_cast<int>(v.items.size()), static_cast<int>(v.fields.size()));
    for (size_t i = 0; i < v.items.size(); ++i) {
        push_plain(L, v.items[i]);
        lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
    }
    for (const auto& field : v.fields) {
        lua_pushlstring(L, field.first.data(), field.first.size());
        push_plain(L, field.second);
        lua_rawset(L, -3);
    }
}

// Pushes `v` with every table behind a read-only proxy (built bottom-up by the core's freeze).
void push_frozen(lua_State* L, const LuaValue& v, int freeze, const char* label) {
    if (v.kind != LuaValue::Kind::table) return push_plain(L, v);
    luaL_checkstack(L, 8, "value nested too deeply");
    lua_pushvalue(L, freeze);
    lua_createtable(L, static_cast<int>(v.items.size()), static_cast<int>(v.fields.size()));
    lua_createtable(L, static_cast<int>(v.items.size()), static_cast<int>(v.fields.size()));
    const int data = lua_gettop(L) - 1, paths = lua_gettop(L);
    for (size_t i = 0; i < v.items.size(); ++i) {
        const auto key = static_cast<lua_Integer>(i + 1);
        push_frozen(L, v.items[i], freeze, label);
        lua_rawseti(L, data, key);
        lua_pushlstring(L, v.items[i].path.data(), v.items[i].path.size());
        lua_rawseti(L, paths, key);
    }
    for (const auto& field : v.fields) {
        lua_pushlstring(L, field.first.data(), field.first.size());
        push_frozen(L, field.second, freeze, label);
        lua_rawset(L, data);
        lua_pushlstring(L, field.first.data(), field.first.size());
        lua_pushlstring(L, field.second.path.data(), field.second.path.size());
        lua_rawset(L, paths);
    }
    lua_pushlstring(L, v.path.data(), v.path.size());
    lua_pushstring(L, label);
    lua_call(L, 4, 1);
}

struct ChunkCall {
    const std::string* text;
    const std::string* name;
    const std::vector<HostFunction>* host;  // null: run with no arguments, keep nothing
    std::vector<int>* kept;
    int env_ref;                            // LUA_NOREF: the globals
    bool compile_only = false;
};

int run_chunk(lua_State* L) {
    auto* c = static_cast<ChunkCall*>(lua_touserdata(L, 1));
    lua_settop(L, 0);
    if (luaL_loadbufferx(L, c->text->data(), c->text->size(), c->name->c_str(), "t") != LUA_OK) return lua_error(L);
    if (c->compile_only) return 0;
    if (c->env_ref != LUA_NOREF) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, c->env_ref);
        lua_setupvalue(L, -2, 1);  // a main chunk's only upvalue is _ENV
    }
    const int nargs = c->host ? static_cast<int>(c->host->size()) : 0;
    luaL_checkstack(L, nargs, "too many host functions");
    for (int i = 0; i < nargs; ++i) {
        lua_pushlightuserdata(L, (*c->host)[i].context);
        lua_pushcclosure(L, (*c->host)[i].fn, 1);
    }
    lua_call(L, nargs, c->kept ? LUA_MULTRET : 0);
    const int results = lua_gettop(L);
    for (int i = 1; c->kept && i <= results; ++i) {
        lua_pushvalue(L, i);
        const int ref = luaL_ref(L, LUA_REGISTRYINDEX);
        host_guard(L, [&] { c->kept->push_back(ref); return 0; });
    }
    return 0;
}

struct KeptCall {
    int ref;
    const std::vector<LuaValue>* args;
};

int call_kept_function(lua_State* L) {
    auto* c = static_cast<KeptCall*>(lua_touserdata(L, 1));
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->ref);
    luaL_checkstack(L, static_cast<int>(c->args->size()), "too many arguments");
    for (const auto& a : *c->args) push_plain(L, a);
    lua_call(L, static_cast<int>(c->args->size()), 0);
    return 0;
}

struct GlobalCall {
    const std::string* name;
    const LuaValue* value;
    const std::string* label;
};

int set_frozen_global(lua_State* L) {
    auto* c = static_cast<GlobalCall*>(lua_touserdata(L, 1));
    lua_rawgeti(L, LUA_REGISTRYINDEX, state_of(L).freeze_ref);
    push_frozen(L, *c->value, lua_gettop(L), c->label->c_str());
    lua_setglobal(L, c->name->c_str());
    return 0;
}

int l_caller(lua_State* L) {
    const auto& st = state_of(L);
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); ++level) {
        if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0 && !st.is_host_source(ar.source)) {
            lua_pushinteger(L, ar.currentline);
            lua_pushstring(L, ar.source[0] == '@' || ar.source[0] == '=' ? ar.source + 1 : ar.short_src);
            return 2;
        }
    }
    lua_pushinteger(L, 0);
    return 1;
}

}  // namespace

LuaResult LuaSandbox::State::result_of(int status) const {
    LuaResult r;
    if (status == LUA_OK) return r;
    if (status == LUA_ERRMEM) {
        r.ok = false;
        r.message = memory_refused ? "memory limit exceeded: the sandbox may use at most " +
                                         std::to_string(limits.memory_bytes >> 20) + " MiB"
                                   : "out of memory";
        r.file = display_name(sample_source[0] ? sample_source : nullptr, "");
        r.line = sample_line;
        return r;
    }
    if (have_error) r = error;
    r.ok = false;
    if (r.message.empty())
        r.message = status == LUA_ERRERR ? "error while handling an error (runaway __tostring or stack overflow?)"
                                         : "unknown error";
    return r;
}

std::string LuaResult::describe() const {
    std::string out;
    if (!file.empty()) out += file + ":";
    if (!file.empty() && line > 0) out += std::to_string(line) + ":";
    if (!out.empty()) out += " ";
    return out + message;
}

LuaValue LuaValue::make_bool(bool v, std::string path) {
    LuaValue out;
    out.kind = Kind::boolean;
    out.flag = v;
    out.path = std::move(path);
    return out;
}

LuaValue LuaValue::make_int(long long v, std::string path) {
    LuaValue out;
    out.kind = Kind::integer;
    out.number = v;
    out.path = std::move(path);
    return out;
}

LuaValue LuaValue::make_string(std::string v, std::string path) {
    LuaValue out;
    out.kind = Kind::string;
    out.text = std::move(v);
    out.path = std::move(path);
    return out;
}

LuaValue LuaValue::make_table(std::string path) {
    LuaValue out;
    out.kind = Kind::table;
    out.path = std::move(path);
    return out;
}

LuaValue& LuaValue::add(std::string key, LuaValue v) {
    fields.emplace_back(std::move(key), std::move(v));
    return *this;
}

LuaValue& LuaValue::push(LuaValue v) {
    items.push_back(std::move(v));
    return *this;
}

bool split_lua_position(const std::string& text, std::string& file, int& line, std::string& message) {
    for (size_t colon = text.find(':'); colon != std::string::npos; colon = text.find(':', colon + 1)) {
        size_t end = colon + 1;
        while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
        const size_t digits = end - colon - 1;
        if (digits == 0 || digits > 9 || end >= text.size() || text[end] != ':') continue;
        if (colon == 0) return false;
        file = text.substr(0, colon);
        line = std::stoi(text.substr(colon + 1, digits));
        message = text.substr(end + 1);
        if (!message.empty() && message[0] == ' ') message.erase(0, 1);
        return true;
    }
    return false;
}

LuaSandbox::LuaSandbox(SandboxLimits limits) : state_(std::make_unique<State>()) {
    State& st = *state_;
    st.limits = limits;
    st.L = lua_newstate(capped_alloc, &st);
    if (!st.L) throw std::runtime_error("cannot create a Lua state within the sandbox memory limit");
    *static_cast<State**>(lua_getextraspace(st.L)) = &st;
    lua_atpanic(st.L, panic);
    lua_sethook(st.L, limit_hook, LUA_MASKCOUNT, kHookInterval);
    const LuaResult r = call(open_sandbox, nullptr);
    if (!r.ok) {
        lua_close(st.L);
        st.L = nullptr;
        throw std::runtime_error("cannot set up the Lua sandbox: " + r.describe());
    }
}

LuaSandbox::~LuaSandbox() {
    if (state_ && state_->L) lua_close(state_->L);
}

LuaResult LuaSandbox::call(lua_CFunction fn, void* arg) {
    State& st = *state_;
    lua_State* L = st.L;
    st.arm();
    const int base = lua_gettop(L);
    // Three pushes of non-allocating values: within the slots every state starts with.
    lua_pushcfunction(L, message_handler);
    lua_pushcfunction(L, fn);
    lua_pushlightuserdata(L, arg);
    const int status = lua_pcall(L, 1, 0, base + 1);
    LuaResult result = st.result_of(status);
    lua_settop(L, base);
    return result;
}

LuaResult LuaSandbox::run(const std::string& text, const std::string& chunkname, int env_ref) {
    state_->add_chunk(chunkname, false);
    ChunkCall c{&text, &chunkname, nullptr, nullptr, env_ref};
    return call(run_chunk, &c);
}

LuaResult LuaSandbox::compile(const std::string& text, const std::string& chunkname) {
    state_->add_chunk(chunkname, false);
    ChunkCall c{&text, &chunkname, nullptr, nullptr, LUA_NOREF, true};
    return call(run_chunk, &c);
}

LuaResult LuaSandbox::run_host_chunk(const std::string& text, const std::string& chunkname,
                                     const std::vector<HostFunction>& args, std::vector<int>& kept) {
    state_->add_chunk(chunkname, true);
    ChunkCall c{&text, &chunkname, &args, &kept, LUA_NOREF};
    return call(run_chunk, &c);
}

LuaResult LuaSandbox::call_kept(int ref, const std::vector<LuaValue>& args) {
    KeptCall c{ref, &args};
    return call(call_kept_function, &c);
}

LuaResult LuaSandbox::set_readonly_global(const std::string& name, const LuaValue& value) {
    const std::string label = name + " table";
    GlobalCall c{&name, &value, &label};
    return call(set_frozen_global, &c);
}

const std::string& LuaSandbox::printed() const { return state_->printed; }
size_t LuaSandbox::memory_used() const { return state_->used; }
const SandboxLimits& LuaSandbox::limits() const { return state_->limits; }

HostFunction LuaSandbox::caller_function() { return {l_caller, nullptr}; }

}  // namespace sitegen
