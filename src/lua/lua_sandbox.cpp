// Lua sandbox: capped allocator, instruction/time hook, library allow-list and protected entry points.
#include "lua/lua_sandbox.h"
#include "lua/read_log.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>

#include "lua/supervisor.h"

namespace sitegen {

namespace {

constexpr int kHookInterval = 1000;          // instructions between limit checks
constexpr size_t kMaxPrinted = 64 * 1024;    // print() output kept (C++ memory, outside the cap)

// Trusted Lua run once per state before any untrusted chunk: refuses what chunks must not
// reach, keeps errors raised after a limit uncatchable, and makes raw access respect the
// read-only proxies. Its arguments are C helpers.
constexpr const char* kCore = R"lua(-- sandbox core: refusals, uncatchable limits and read-only tables
local killed, print_line, text_load, guarded_rep, is_proxy, proxy_next, proxy_refuse = ...
local raw_setmetatable, raw_getmetatable, raw_rawset, raw_rawget = setmetatable, getmetatable, rawset, rawget
local raw_next, raw_pcall, raw_xpcall, raw_collectgarbage = next, pcall, xpcall, collectgarbage
local error, type, tostring, select, concat = error, type, tostring, select, table.concat

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
-- Lua runs a message handler with hooks off when the error came from the hook (a limit), so
-- a handler that loops could never be stopped: after a limit, the user's handler is skipped.
xpcall = function(f, handler, ...)
  if type(handler) ~= "function" then return raw_xpcall(f, handler, ...) end
  return pass(raw_xpcall(f, function(e)
    if killed() then return e end
    return handler(e)
  end, ...))
end

-- Read-only proxies (built in C) refuse raw writes and metatables too, and iterate with next.
setmetatable = function(t, mt)
  if is_proxy(t) then proxy_refuse(t) end
  if type(mt) == "table" and raw_rawget(mt, "__gc") ~= nil then
    error("setmetatable: __gc metamethods are not allowed in the sandbox", 2)
  end
  return raw_setmetatable(t, mt)
end

rawset = function(t, k, v)
  if is_proxy(t) then proxy_refuse(t, k) end
  return raw_rawset(t, k, v)
end

next = function(t, k)
  if is_proxy(t) then return proxy_next(t, k) end
  return raw_next(t, k)
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
    std::chrono::steady_clock::time_point started, deadline;
    int64_t cpu_at_start = 0;  // this thread's CPU time when the call began (ns)
    const char* kill_reason = nullptr;  // set when a limit is hit; errors stay uncatchable
    char sample_source[512] = {0};      // where the hook last saw the script
    int sample_line = 0;
    char memory_source[512] = {0};      // where untrusted code was when memory was last refused
    int memory_line = 0;
    bool have_error = false;
    bool compile_failed = false;        // run_chunk could not compile its chunk
    LuaResult error;                    // filled by the message handler
    std::string printed;
    struct Chunk {
        std::string shown;  // as positions print it: "rules/x.lua"
        bool host;          // trusted host code: never blamed for an error
    };
    // Chunks compiled by run*(), by the name positions print; host chunks also by source
    // ("=[sandbox core]"), which the hook and the message handler compare on every frame.
    std::map<std::string, Chunk> chunks{{"[sandbox core]", {"[sandbox core]", true}}};
    std::vector<std::string> host_sources{"=[sandbox core]"};
    std::vector<std::shared_ptr<const LuaValue>> trees;  // what read-only proxies point into
    std::vector<std::unique_ptr<std::string>> labels;    // their labels, at stable addresses
    ReadLog* reads = nullptr;                            // where reads of the proxies go (track_reads)

    void arm() {
        executed = 0;
        started = std::chrono::steady_clock::now();
        deadline = started + limits.wall;
        cpu_at_start = thread_cpu_ns();
        kill_reason = nullptr;
        memory_refused = false;
        sample_source[0] = 0;
        sample_line = 0;
        memory_source[0] = 0;
        memory_line = 0;
        have_error = false;
        compile_failed = false;
        error = LuaResult{};
    }

    // Past the deadline: whether the call may run on, by its CPU time (call_time_left_ns: a
    // busy machine's waits do not count); if so the deadline moves on (the parent follows).
    bool time_left() {
        const auto now = std::chrono::steady_clock::now();
        const int64_t left = call_time_left_ns(
            thread_cpu_ns() - cpu_at_start, std::chrono::duration_cast<std::chrono::nanoseconds>(now - started).count(),
            std::chrono::duration_cast<std::chrono::nanoseconds>(limits.wall).count());
        if (left == 0) return false;
        deadline = now + std::chrono::nanoseconds(left);
        watch_call_extends(deadline);
        return true;
    }

    void add_chunk(const std::string& source, bool host) {
        const std::string shown = display_name(source.c_str(), source.c_str());
        if (chunks.emplace(shown, Chunk{shown, host}).second && host) host_sources.push_back(source);
    }

    // The chunk a position names, from the (possibly truncated "...tail") name Lua printed.
    const Chunk* known_chunk(const std::string& shown) const {
        auto it = chunks.find(shown);
        if (it != chunks.end()) return &it->second;
        if (shown.size() <= 3 || shown.compare(0, 3, "...") != 0) return nullptr;
        for (const auto& [name, c] : chunks)
            if (name.size() >= shown.size() - 3 &&
                name.compare(name.size() - (shown.size() - 3), std::string::npos, shown, 3) == 0)
                return &c;
        return nullptr;
    }

    // (strcmp, not std::string ==: it stops at the first differing byte instead of measuring
    // the source, and the call hook asks this for most calls.)
    bool is_host_source(const char* source) const noexcept {
        for (const auto& h : host_sources)
            if (std::strcmp(h.c_str(), source) == 0) return true;
        return false;
    }

    LuaResult result_of(int status) const;
};

namespace {

// The innermost frame from `level` outwards that is untrusted Lua code at a known line, in
// `ar` (with "S" and "l"); false if there is none. The source comes first: host and C frames,
// most of those walked, then cost no line lookup (which scans the function's line info).
// Reads the stack only: lua_getstack/lua_getinfo "S" and "l" allocate nothing.
bool untrusted_frame(lua_State* L, const LuaSandbox::State& st, int level, lua_Debug& ar) noexcept {
    for (; lua_getstack(L, level, &ar); ++level) {
        if (!lua_getinfo(L, "S", &ar) || ar.what[0] == 'C' || st.is_host_source(ar.source)) continue;
        if (lua_getinfo(L, "l", &ar) && ar.currentline > 0) return true;
    }
    return false;
}

// Lua calls no message handler for memory errors, so the allocator records where untrusted
// code was when it refused: the innermost Lua frame that is not host code. Lua keeps the
// stack consistent at every allocation, since any allocation may raise.
void note_memory_position(LuaSandbox::State& st) noexcept {
    if (!st.L) return;  // the state is being created
    lua_Debug ar;
    if (!untrusted_frame(st.L, st, 0, ar)) return;
    std::strncpy(st.memory_source, ar.source, sizeof st.memory_source - 1);
    st.memory_line = ar.currentline;
}

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
        note_memory_position(st);
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
// In a supervised child (supervisor.h) it also hooks calls: a C function can run long without
// a count hook, so the line calling it is what the parent reports if it must kill the child.
void limit_hook(lua_State* L, lua_Debug* ar) {
    auto& st = state_of(L);
    if (ar->event == LUA_HOOKCALL || ar->event == LUA_HOOKTAILCALL) {
        // Most calls are host code calling Lua or C: the caller's line is looked up only when
        // the caller is untrusted (this hook runs on every call, so its cost is the check's).
        lua_Debug caller;
        if (lua_getinfo(L, "S", ar) && ar->what[0] == 'C' && lua_getstack(L, 1, &caller) &&
            lua_getinfo(L, "S", &caller) && caller.what[0] != 'C' && !st.is_host_source(caller.source) &&
            lua_getinfo(L, "l", &caller) && caller.currentline > 0)
            watch_position(caller.source, caller.currentline);
        return;
    }
    if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0 && !st.is_host_source(ar->source)) {
        std::strncpy(st.sample_source, ar->source, sizeof st.sample_source - 1);
        st.sample_line = ar->currentline;
        watch_position(ar->source, ar->currentline);
    }
    st.executed += kHookInterval;
    if (!st.kill_reason) {
        if (st.executed > st.limits.instructions) st.kill_reason = "instructions";
        else if (std::chrono::steady_clock::now() > st.deadline && !st.time_left()) st.kill_reason = "time";
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
        } else if (chunk || (positioned && (file.rfind("[string ", 0) == 0 || file == st.error.file))) {
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
    if (untrusted_frame(L, st, 1, ar)) {
        line = ar.currentline;
        source = ar.source;
        short_src = ar.short_src;
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

// ---- read-only proxies ----------------------------------------------------------------
// A proxy is an empty table sharing one metatable; a weak registry table maps it to a
// ProxyInfo userdata (its LuaValue node and label) whose user value is its dotted path.
// Children become proxies only when first read, so a large tree costs nothing until used.

struct ProxyInfo {
    const LuaValue* node;
    const char* label;  // e.g. "site table"; owned by the sandbox
};

char kProxiesKey;  // registry: proxy -> ProxyInfo (weak keys)
char kCacheKey;    // registry: node -> proxy (weak values), so a node keeps one identity
char kMetaKey;     // registry: the proxies' shared metatable

// The ProxyInfo of the value at `idx`, with its path pushed; or null with nothing pushed.
ProxyInfo* proxy_info(lua_State* L, int idx) {
    if (lua_type(L, idx) != LUA_TTABLE) return nullptr;
    idx = lua_absindex(L, idx);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &kProxiesKey);
    lua_pushvalue(L, idx);
    lua_rawget(L, -2);
    auto* info = static_cast<ProxyInfo*>(lua_touserdata(L, -1));
    if (!info) {
        lua_pop(L, 2);
        return nullptr;
    }
    lua_getiuservalue(L, -1, 1);
    lua_replace(L, -3);
    lua_pop(L, 1);
    return info;
}

void push_proxy(lua_State* L, const LuaValue& node, int path, const char* label) {
    path = lua_absindex(L, path);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &kCacheKey);
    if (lua_rawgetp(L, -1, &node) != LUA_TNIL) {
        lua_remove(L, -2);
        return;
    }
    lua_pop(L, 1);
    lua_createtable(L, 0, 0);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &kMetaKey);
    lua_setmetatable(L, -2);
    auto* info = static_cast<ProxyInfo*>(lua_newuserdatauv(L, sizeof(ProxyInfo), 1));
    info->node = &node;
    info->label = label;
    lua_pushvalue(L, path);
    lua_setiuservalue(L, -2, 1);
    lua_rawgetp(L, LUA_REGISTRYINDEX, &kProxiesKey);
    lua_pushvalue(L, -3);
    lua_pushvalue(L, -3);
    lua_rawset(L, -3);
    lua_pop(L, 2);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, -3, &node);
    lua_remove(L, -2);
}

// The child of `node` under the key at `key` (1-based items, then named fields), or null.
const LuaValue* child_of(lua_State* L, const LuaValue& node, int key) {
    if (lua_type(L, key) == LUA_TNUMBER && lua_isinteger(L, key)) {
        const lua_Integer i = lua_tointeger(L, key);
        return i >= 1 && static_cast<size_t>(i) <= node.items.size() ? &node.items[i - 1] : nullptr;
    }
    if (lua_type(L, key) != LUA_TSTRING) return nullptr;
    size_t len = 0;
    const char* k = lua_tolstring(L, key, &len);
    for (const auto& field : node.fields)
        if (field.key.size() == len && std::memcmp(field.key.data(), k, len) == 0) return &field.value;
    return nullptr;
}

// Pushes the dotted path of the key at `key` below the path at `path`: the child's own path
// when it has one, else path.key (items count from 0, as the site loader writes them).
void push_child_path(lua_State* L, const LuaValue* child, int path, int key) {
    if (child && !child->path.empty()) {
        lua_pushlstring(L, child->path.data(), child->path.size());
        return;
    }
    const char* parent = lua_tostring(L, path);
    const char* dot = parent[0] ? "." : "";
    if (lua_type(L, key) == LUA_TNUMBER && lua_isinteger(L, key))
        lua_pushfstring(L, "%s%s%I", parent, dot, static_cast<lua_Integer>(lua_tointeger(L, key) - 1));
    else if (lua_type(L, key) == LUA_TSTRING)
        lua_pushfstring(L, "%s%s%s", parent, dot, lua_tostring(L, key));
    else
        lua_pushfstring(L, "%s%s(%s)", parent, dot, luaL_typename(L, key));
}

void push_value(lua_State* L, const LuaValue& v, int path, const char* label) {
    switch (v.kind) {
        case LuaValue::Kind::nil: lua_pushnil(L); return;
        case LuaValue::Kind::boolean: lua_pushboolean(L, v.flag); return;
        case LuaValue::Kind::integer: lua_pushinteger(L, v.number); return;
        case LuaValue::Kind::string: lua_pushlstring(L, v.text.data(), v.text.size()); return;
        case LuaValue::Kind::table: push_proxy(L, v, path, label); return;
    }
}

// Pushes the child under the key at `key` of the proxy whose info and path (at `path`) are given.
void push_child(lua_State* L, const ProxyInfo& info, int path, int key) {
    const LuaValue* child = child_of(L, *info.node, key);
    if (!child) {
        lua_pushnil(L);
        return;
    }
    if (child->kind != LuaValue::Kind::table) return push_value(L, *child, 0, info.label);
    if (ReadLog* log = state_of(L).reads) {
        if (lua_type(L, key) == LUA_TNUMBER) log->reached_item(info.node, child);
        else log->reached_field(info.node, child, lua_tostring(L, key));
    }
    push_child_path(L, child, path, key);
    push_value(L, *child, -1, info.label);
    lua_remove(L, -2);
}

// Records that the script read the key at `key` of `node` (item or field) in the read log, if any.
void log_key(lua_State* L, const LuaValue& node, int key) {
    ReadLog* log = state_of(L).reads;
    if (!log) return;
    if (lua_type(L, key) == LUA_TNUMBER) {
        log->items(&node);  // (a float key finds nothing: that it is not an item is still read)
    } else if (lua_type(L, key) == LUA_TSTRING) {
        size_t len = 0;
        const char* k = lua_tolstring(L, key, &len);
        log->field(&node, std::string_view(k, len));
    }  // (other keys find nothing in any tree)
}

int proxy_index(lua_State* L) {
    ProxyInfo* info = proxy_info(L, 1);  // pushes the path at 3
    if (!info) return 0;
    log_key(L, *info->node, 2);
    push_child(L, *info, 3, 2);
    return 1;
}

// proxy_refuse(t [, key]): the read-only error for writing t[key] (or t's metatable).
int proxy_refuse(lua_State* L) {
    const bool metatable = lua_gettop(L) < 2;
    lua_settop(L, 2);
    ProxyInfo* info = proxy_info(L, 1);  // path at 3
    if (!info) return luaL_error(L, "read-only table");
    if (metatable) {
        const char* path = lua_tostring(L, 3);
        return luaL_error(L, "%s is read-only: cannot set the metatable of %s", info->label, path[0] ? path : "its root");
    }
    log_key(L, *info->node, 2);
    push_child_path(L, child_of(L, *info->node, 2), 3, 2);
    return luaL_error(L, "%s is read-only: %s", info->label, lua_tostring(L, -1));
}

int proxy_len(lua_State* L) {
    ProxyInfo* info = proxy_info(L, 1);
    if (info && state_of(L).reads) state_of(L).reads->items(info->node);
    lua_pushinteger(L, info ? static_cast<lua_Integer>(info->node->items.size()) : 0);
    return 1;
}

// next() over a proxy: items 1..n, then the named fields in order.
int proxy_next(lua_State* L) {
    lua_settop(L, 2);
    ProxyInfo* info = proxy_info(L, 1);  // path at 3
    if (!info) return luaL_argerror(L, 1, "not a read-only host table");
    const LuaValue& node = *info->node;
    if (ReadLog* log = state_of(L).reads) log->all(&node);
    size_t next_item = 0, next_field = 0;  // 1-based position to return; 0 = none
    if (lua_isnil(L, 2)) {
        next_item = 1;
    } else if (lua_type(L, 2) == LUA_TNUMBER && lua_isinteger(L, 2)) {
        next_item = static_cast<size_t>(lua_tointeger(L, 2)) + 1;
    } else if (lua_type(L, 2) == LUA_TSTRING) {
        const LuaValue* at = child_of(L, node, 2);
        for (size_t j = 0; at && j < node.fields.size(); ++j)
            if (&node.fields[j].value == at) next_field = j + 2;
        if (!at) return luaL_error(L, "invalid key to 'next'");
    }
    if (next_item >= 1 && next_item > node.items.size()) {
        next_field = 1;
        next_item = 0;
    }
    if (next_item >= 1) {
        lua_pushinteger(L, static_cast<lua_Integer>(next_item));
    } else if (next_field >= 1 && next_field <= node.fields.size()) {
        const auto& name = node.fields[next_field - 1].key;
        lua_pushlstring(L, name.data(), name.size());
    } else {
        lua_pushnil(L);
        return 1;
    }
    push_child(L, *info, 3, 4);
    return 2;
}

int proxy_pairs(lua_State* L) {
    lua_pushcfunction(L, proxy_next);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

int l_is_proxy(lua_State* L) {
    const bool yes = proxy_info(L, 1) != nullptr;
    lua_pushboolean(L, yes);
    return 1;
}

// pathof(t [, key]): the dotted path of a proxy, or of one of its keys.
int l_pathof(lua_State* L) {
    lua_settop(L, 2);
    ProxyInfo* info = proxy_info(L, 1);  // path at 3
    if (!info) return luaL_argerror(L, 1, "not a read-only host table");
    if (lua_isnil(L, 2)) return 1;
    log_key(L, *info->node, 2);
    push_child_path(L, child_of(L, *info->node, 2), 3, 2);
    return 1;
}

void create_proxy_registry(lua_State* L) {
    lua_createtable(L, 0, 0);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &kProxiesKey);
    lua_createtable(L, 0, 0);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &kCacheKey);
    static const luaL_Reg meta[] = {{"__index", proxy_index},  {"__newindex", proxy_refuse},
                                    {"__len", proxy_len},      {"__pairs", proxy_pairs},
                                    {nullptr, nullptr}};
    luaL_newlib(L, meta);
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_rawsetp(L, LUA_REGISTRYINDEX, &kMetaKey);
}

int open_sandbox(lua_State* L) {
    static const luaL_Reg libs[] = {{LUA_GNAME, luaopen_base},         {LUA_STRLIBNAME, luaopen_string},
                                    {LUA_TABLIBNAME, luaopen_table},   {LUA_MATHLIBNAME, luaopen_math},
                                    {LUA_UTF8LIBNAME, luaopen_utf8}};
    for (const auto& lib : libs) {
        luaL_requiref(L, lib.name, lib.func, 1);
        lua_pop(L, 1);
    }
    create_proxy_registry(L);
    lua_pushcfunction(L, l_pathof);
    lua_setglobal(L, "pathof");
    if (luaL_loadbufferx(L, kCore, std::strlen(kCore), "=[sandbox core]", "t") != LUA_OK) return lua_error(L);
    lua_pushcfunction(L, l_killed);
    lua_pushcfunction(L, l_print_line);
    lua_pushcfunction(L, l_text_load);
    lua_getglobal(L, LUA_STRLIBNAME);
    lua_getfield(L, -1, "rep");
    lua_remove(L, -2);
    lua_pushcclosure(L, l_guarded_rep, 1);
    lua_pushcfunction(L, l_is_proxy);
    lua_pushcfunction(L, proxy_next);
    lua_pushcfunction(L, proxy_refuse);
    lua_call(L, 7, 0);
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
        lua_pushlstring(L, field.key.data(), field.key.size());
        push_plain(L, field.value);
        lua_rawset(L, -3);
    }
}

struct ChunkCall {
    const std::string* text;
    const std::string* name;
    const std::vector<HostFunction>* host;  // null: run with no arguments, keep nothing
    std::vector<int>* kept;
    int env_ref;                            // LUA_NOREF: the globals
};

// Pops the values above `base` into registry references appended to `kept`.
void keep_results(lua_State* L, int base, std::vector<int>* kept) {
    const int top = lua_gettop(L);
    for (int i = base + 1; kept && i <= top; ++i) {
        lua_pushvalue(L, i);
        const int ref = luaL_ref(L, LUA_REGISTRYINDEX);
        host_guard(L, [&] {
            kept->push_back(ref);
            return 0;
        });
    }
    lua_settop(L, base);
}

int run_chunk(lua_State* L) {
    auto* c = static_cast<ChunkCall*>(lua_touserdata(L, 1));
    lua_settop(L, 0);
    if (luaL_loadbufferx(L, c->text->data(), c->text->size(), c->name->c_str(), "t") != LUA_OK) {
        state_of(L).compile_failed = true;
        return lua_error(L);
    }
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
    keep_results(L, 0, c->kept);
    return 0;
}

struct CompileCall {
    const std::string* text;
    const std::string* name;
    int* ref;
};

int compile_chunk(lua_State* L) {
    auto* c = static_cast<CompileCall*>(lua_touserdata(L, 1));
    lua_settop(L, 0);
    if (luaL_loadbufferx(L, c->text->data(), c->text->size(), c->name->c_str(), "t") != LUA_OK) {
        state_of(L).compile_failed = true;
        return lua_error(L);
    }
    *c->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

struct CompiledCall {
    int ref;
    int env_ref;
};

int run_compiled_chunk(lua_State* L) {
    const auto* c = static_cast<const CompiledCall*>(lua_touserdata(L, 1));
    lua_settop(L, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->ref);
    if (c->env_ref != LUA_NOREF) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, c->env_ref);
        lua_setupvalue(L, -2, 1);  // a main chunk's only upvalue is _ENV
    }
    lua_call(L, 0, 0);
    return 0;
}

struct KeptCall {
    int ref;
    const std::vector<LuaValue>* args;
    std::vector<int>* results;
};

int call_kept_function(lua_State* L) {
    auto* c = static_cast<KeptCall*>(lua_touserdata(L, 1));
    lua_settop(L, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->ref);
    luaL_checkstack(L, static_cast<int>(c->args->size()), "too many arguments");
    for (const auto& a : *c->args) push_plain(L, a);
    lua_call(L, static_cast<int>(c->args->size()), c->results ? LUA_MULTRET : 0);
    keep_results(L, 0, c->results);
    return 0;
}

int release_ref(lua_State* L) {
    luaL_unref(L, LUA_REGISTRYINDEX, *static_cast<int*>(lua_touserdata(L, 1)));
    return 0;
}

struct GlobalCall {
    const std::string* name;
    const LuaValue* value;
    const char* label;
};

int set_proxy_global(lua_State* L) {
    auto* c = static_cast<GlobalCall*>(lua_touserdata(L, 1));
    lua_pushlstring(L, c->value->path.data(), c->value->path.size());
    push_value(L, *c->value, -1, c->label);
    lua_setglobal(L, c->name->c_str());
    return 0;
}

int l_caller(lua_State* L) {
    lua_Debug ar;
    if (untrusted_frame(L, state_of(L), 1, ar)) {
        lua_pushinteger(L, ar.currentline);
        lua_pushstring(L, ar.source[0] == '@' || ar.source[0] == '=' ? ar.source + 1 : ar.short_src);
        return 2;
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
        const char* where = memory_source[0] ? memory_source : sample_source;
        r.file = display_name(where[0] ? where : nullptr, "");
        r.line = memory_source[0] ? memory_line : sample_line;
        return r;
    }
    if (have_error) r = error;
    r.ok = false;
    r.syntax_error = compile_failed;
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
    lua_sethook(st.L, limit_hook, LUA_MASKCOUNT | (supervised_page() ? LUA_MASKCALL : 0), kHookInterval);
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
    watch_call_begins(st.deadline, st.limits.wall);
    const int status = lua_pcall(L, 1, 0, base + 1);
    watch_call_ends();
    LuaResult result = st.result_of(status);
    lua_settop(L, base);
    return result;
}

LuaResult LuaSandbox::run(const std::string& text, const std::string& chunkname, int env_ref) {
    state_->add_chunk(chunkname, false);
    ChunkCall c{&text, &chunkname, nullptr, nullptr, env_ref};
    return call(run_chunk, &c);
}

LuaResult LuaSandbox::run_host_chunk(const std::string& text, const std::string& chunkname,
                                     const std::vector<HostFunction>& args, std::vector<int>& kept) {
    state_->add_chunk(chunkname, true);
    ChunkCall c{&text, &chunkname, &args, &kept, LUA_NOREF};
    return call(run_chunk, &c);
}

LuaResult LuaSandbox::call_kept(int ref, const std::vector<LuaValue>& args, std::vector<int>* results) {
    KeptCall c{ref, &args, results};
    return call(call_kept_function, &c);
}

void LuaSandbox::release(int ref) { call(release_ref, &ref); }

LuaResult LuaSandbox::compile(const std::string& text, const std::string& chunkname, int& ref) {
    state_->add_chunk(chunkname, false);
    ref = LUA_NOREF;
    CompileCall c{&text, &chunkname, &ref};
    return call(compile_chunk, &c);
}

LuaResult LuaSandbox::run_compiled(int ref, int env_ref) {
    CompiledCall c{ref, env_ref};
    return call(run_compiled_chunk, &c);
}

LuaResult LuaSandbox::set_readonly_global(const std::string& name, std::shared_ptr<const LuaValue> value) {
    State& st = *state_;
    st.trees.push_back(std::move(value));
    st.labels.push_back(std::make_unique<std::string>(name + " table"));
    GlobalCall c{&name, st.trees.back().get(), st.labels.back()->c_str()};
    return call(set_proxy_global, &c);
}

LuaResult LuaSandbox::set_readonly_global(const std::string& name, const LuaValue& value) {
    return set_readonly_global(name, std::make_shared<const LuaValue>(value));
}

void LuaSandbox::track_reads(ReadLog* log) { state_->reads = log; }

const std::string& LuaSandbox::printed() const { return state_->printed; }
size_t LuaSandbox::memory_used() const { return state_->used; }
const SandboxLimits& LuaSandbox::limits() const { return state_->limits; }

HostFunction LuaSandbox::caller_function() { return {l_caller, nullptr}; }

int LuaSandbox::caller_line(lua_State* L) {
    lua_Debug ar;
    return untrusted_frame(L, state_of(L), 1, ar) ? ar.currentline : 0;
}

}  // namespace sitegen
