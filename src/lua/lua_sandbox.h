// Lua sandbox: one Lua 5.4 state that runs untrusted text chunks under memory, instruction and time limits.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <lua.hpp>

namespace sitegen {

struct SandboxLimits {
    size_t memory_bytes = size_t{64} << 20;  // everything the state holds at once
    uint64_t instructions = 20'000'000;      // Lua VM instructions per call (about 0.1 s)
    // Time per call: of the CPU, and kWallStretch times it of wall clock (call_time_left_ns,
    // lua/supervisor.h: a busy machine's waits do not count). Checked by the hook with the
    // budget (Lua code stops at its line); in a supervised child the parent also kills the
    // process 50 ms after it, which stops a call stuck in a C function the hook cannot interrupt.
    std::chrono::milliseconds wall{500};
};

// What running something in the sandbox came to: ok, or an error with its position.
struct LuaResult {
    bool ok = true;
    std::string message;    // without the "file:line: " prefix
    std::string file;       // chunk name without '@' (e.g. rules/gpu-masks.lua); "" if unknown
    int line = 0;           // 0 = unknown
    std::string traceback;  // Lua's stack traceback at the error, when one could be taken
    bool syntax_error = false;  // the chunk did not compile (it never ran)

    // "file:line: message", leaving out what is unknown.
    std::string describe() const;
};

// A value handed to scripts read-only: a scalar, or a table with an array part (`items`,
// 1-based in Lua) and named `fields`. `path` is the dotted key path of the value in its source
// (what pathof() returns and what read-only errors name), e.g. "hardware.device_cores.3";
// empty means derived: the parent's path plus ".key" (items count from 0, as in site files).
struct LuaField;
struct ReadLog;

struct LuaValue {
    enum class Kind { nil, boolean, integer, string, table };
    Kind kind = Kind::nil;
    bool flag = false;
    long long number = 0;
    std::string text;
    std::vector<LuaValue> items;
    std::vector<LuaField> fields;  // (not pair<string, LuaValue>: clang needs LuaValue complete for that)
    std::string path;

    static LuaValue make_bool(bool v, std::string path = {});
    static LuaValue make_int(long long v, std::string path = {});
    static LuaValue make_string(std::string v, std::string path = {});
    static LuaValue make_table(std::string path = {});
    LuaValue& add(std::string key, LuaValue v);  // a named field; returns *this
    LuaValue& push(LuaValue v);                  // the next array item; returns *this
};

struct LuaField {
    std::string key;
    LuaValue value;
    LuaField(std::string k, LuaValue v) : key(std::move(k)), value(std::move(v)) {}
};

// A C function given to a host chunk as an argument, with `context` as its only upvalue
// (read it with host_context()).
struct HostFunction {
    lua_CFunction fn = nullptr;
    void* context = nullptr;
};

// The context pointer of a HostFunction, from inside it.
inline void* host_context(lua_State* L) { return lua_touserdata(L, lua_upvalueindex(1)); }

// Runs `fn` (plain C++ that must not call Lua) and turns a C++ exception into a Lua error
// only after fn's frame is gone, so Lua's longjmp never skips a C++ destructor. Returns
// fn's result. Use it in every lua_CFunction that does C++ work.
template <typename Fn>
int host_guard(lua_State* L, Fn&& fn) {
    char what[256] = {0};
    bool failed = false;
    int result = 0;
    {
        try {
            result = fn();
        } catch (const std::exception& e) {
            failed = true;
            std::strncpy(what, e.what(), sizeof what - 1);
        } catch (...) {
            failed = true;
            std::strncpy(what, "unknown C++ exception", sizeof what - 1);
        }
    }
    if (failed) return luaL_error(L, "host error: %s", what);
    return result;
}

// Splits "file:line: message" as Lua formats positions; false (outputs untouched) if `text`
// does not start with a position.
bool split_lua_position(const std::string& text, std::string& file, int& line, std::string& message);

// One Lua 5.4 state with only base (no dofile/loadfile/bytecode), string (no dump, guarded
// rep), table, math and utf8; io, os, package, require and debug refuse with a clear message.
// Every entry point runs protected: no Lua error escapes as a longjmp or an abort.
class LuaSandbox {
public:
    // Throws std::runtime_error if the state cannot be created within the limits.
    explicit LuaSandbox(SandboxLimits limits = {});
    ~LuaSandbox();
    LuaSandbox(const LuaSandbox&) = delete;
    LuaSandbox& operator=(const LuaSandbox&) = delete;

    // Compiles `text` as a text chunk (never bytecode) named `chunkname` ("@rules/x.lua", so
    // errors read rules/x.lua:12) and runs it with the globals as its environment, or with the
    // kept table `env_ref` (from run_host_chunk) instead.
    LuaResult run(const std::string& text, const std::string& chunkname, int env_ref = LUA_NOREF);

    // Runs a trusted host chunk with `args` as its `...`; each value it returns is kept in the
    // registry and its reference appended to `kept` (for call_kept).
    LuaResult run_host_chunk(const std::string& text, const std::string& chunkname,
                             const std::vector<HostFunction>& args, std::vector<int>& kept);

    // Calls a kept function with plain (writable) copies of `args`; its results are kept
    // (references appended to `results`) when `results` is given, else dropped.
    LuaResult call_kept(int ref, const std::vector<LuaValue>& args, std::vector<int>* results = nullptr);

    // Drops a kept value so it can be collected.
    void release(int ref);

    // run() in two steps, for text run more than once: compile() keeps the compiled chunk
    // (its reference in `ref`; a syntax error fails as run() would), and run_compiled() runs
    // it, with the kept table `env_ref` as its environment, as often as wanted.
    LuaResult compile(const std::string& text, const std::string& chunkname, int& ref);
    LuaResult run_compiled(int ref, int env_ref);

    // Makes `value` the read-only global `name`: writes, rawset and setmetatable on it or on
    // any table inside raise "<name> table is read-only: <path>". Tables become Lua proxies
    // only when first read, so sharing one large tree between sandboxes is cheap.
    LuaResult set_readonly_global(const std::string& name, std::shared_ptr<const LuaValue> value);
    LuaResult set_readonly_global(const std::string& name, const LuaValue& value);  // copies

    // Runs fn(L) protected and under the limits, with `arg` as its only argument (light
    // userdata). fn must hold no C++ object with a destructor while it calls Lua.
    LuaResult call(lua_CFunction fn, void* arg);

    // From now on, what chunks read of the read-only globals goes to `log` (null: nothing
    // is recorded); `log->root` must be the tree they read (lua/read_log.h).
    void track_reads(ReadLog* log);

    // What the chunks printed with print(), one line per call.
    const std::string& printed() const;
    size_t memory_used() const;
    const SandboxLimits& limits() const;

    // A HostFunction returning the line and file of the innermost frame that is not host code
    // (0 and nil when there is none): lets host chunks say where the untrusted caller is.
    static HostFunction caller_function();
    // From inside a HostFunction: the line caller_function() would return, without the call
    // from Lua (and its hook) that asking it costs.
    static int caller_line(lua_State* L);

    struct State;

private:
    std::unique_ptr<State> state_;
};

}  // namespace sitegen
