// Sandbox escape attempts, each refused with a clear message and its file:line within 1 s.
#include <catch2/catch.hpp>

#include <chrono>
#include <ctime>
#include <thread>

#include "lua/lua_sandbox.h"

using namespace sitegen;

namespace {

const char* kChunk = "@rules/escape.lua";

// A small read-only tree shaped like a piece of the site model.
LuaValue hardware_tree() {
    LuaValue nics = LuaValue::make_table("hardware.nics");
    nics.push(LuaValue::make_string("hsn0", "hardware.nics.0")).push(LuaValue::make_string("hsn1", "hardware.nics.1"));
    LuaValue hardware = LuaValue::make_table("hardware");
    hardware.add("nics", nics).add("cores_per_node", LuaValue::make_int(64, "hardware.cores_per_node"));
    LuaValue root = LuaValue::make_table("");
    root.add("hardware", hardware);
    return root;
}

// The default limits, except that the wall clock cannot stop anything: a busy machine slows
// the wall clock down, never the instruction count or the memory cap, so tests that expect
// those limits stay deterministic. (The time limit has tests of its own.)
SandboxLimits deterministic() {
    SandboxLimits limits;
    limits.wall = std::chrono::hours(1);
    return limits;
}

double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Runs `code` in a fresh sandbox with a read-only global `site`; fails the test if it took 1 s
// of CPU (or 10 s of wall clock on however busy a machine).
LuaResult attempt(const std::string& code, SandboxLimits limits = deterministic()) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = cpu_seconds();
    LuaSandbox sandbox(limits);
    REQUIRE(sandbox.set_readonly_global("site", hardware_tree()).ok);
    LuaResult r = sandbox.run(code, kChunk);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    const double cpu = cpu_seconds() - cpu_start;
    INFO(code << " -> " << r.describe() << " in " << took.count() << " s (" << cpu << " s CPU)");
    CHECK(cpu < 1.0);
    CHECK(took.count() < 10.0);
    return r;
}

void refused(const std::string& code, const std::string& message_part, int line) {
    const LuaResult r = attempt(code);
    INFO(code << " -> " << r.describe());
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.message, Catch::Matchers::Contains(message_part));
    CHECK(r.file == "rules/escape.lua");
    CHECK(r.line == line);
}

}  // namespace

TEST_CASE("a well-behaved chunk runs and prints into the sandbox's buffer", "[lua]") {
    LuaSandbox sandbox;
    const LuaResult r = sandbox.run("local t = {} for i = 1, 10 do t[i] = i * i end print('sum', #t, t[10])", kChunk);
    INFO(r.describe());
    CHECK(r.ok);
    CHECK(sandbox.printed() == "sum\t10\t100\n");
}

TEST_CASE("errors carry the chunk's file and line, a message without the prefix and a traceback", "[lua]") {
    LuaSandbox sandbox;
    const LuaResult r = sandbox.run("local x = 1\n\nlocal y = nil + x\n", kChunk);
    CHECK_FALSE(r.ok);
    CHECK(r.file == "rules/escape.lua");
    CHECK(r.line == 3);
    CHECK(r.message == "attempt to perform arithmetic on a nil value");
    CHECK_THAT(r.traceback, Catch::Matchers::Contains("stack traceback"));
    CHECK(r.describe() == "rules/escape.lua:3: attempt to perform arithmetic on a nil value");

    const LuaResult syntax = sandbox.run("local = 1", kChunk);
    CHECK(syntax.file == "rules/escape.lua");
    CHECK(syntax.line == 1);
    CHECK_THAT(syntax.message, Catch::Matchers::Contains("near '='"));
}

TEST_CASE("long chunk names that Lua shortens still map back to the full file", "[lua]") {
    LuaSandbox sandbox;
    const std::string name = "modules-out/lumi/modulefiles/PyTorch/2.3.1-rocm-6.0.3-python-3.12-singularity-20240923.lua";
    const LuaResult r = sandbox.run("\nerror('boom')", "@" + name);
    CHECK(r.file == name);
    CHECK(r.line == 2);
    CHECK(r.message == "boom");
}

TEST_CASE("io, os, require, dofile and loadfile are refused by name", "[lua]") {
    refused("local f = io.open('/etc/passwd')", "io.open is not available in the sandbox", 1);
    refused("\nos.execute('touch /tmp/pwned')", "os.execute is not available in the sandbox", 2);
    refused("local lfs = require('lfs')", "require is not available in the sandbox", 1);
    refused("dofile('/etc/passwd')", "dofile is not available in the sandbox", 1);
    refused("loadfile('/etc/passwd')", "loadfile is not available in the sandbox", 1);
    refused("debug.sethook()", "debug.sethook is not available in the sandbox", 1);
    refused("package.loadlib('libc.so.6', 'system')", "package.loadlib is not available", 1);
}

TEST_CASE("bytecode cannot be loaded: mode 'b', a binary string, string.dump", "[lua]") {
    refused("local f, err = load('return 1', 'x', 'b')\nerror(err)", "binary chunks are not allowed", 2);
    refused("local f, err = load('\\27Lua\\84\\0\\25\\147\\13\\10\\26\\10')\nerror(err)",
            "attempt to load a binary chunk (mode is 't')", 2);
    refused("local f, err = load(function() return nil end)\nerror(err)", "only text chunks", 2);
    refused("local s = string.dump(print)", "string.dump is not available in the sandbox", 1);
    // Text chunks still load, with a chosen environment.
    const LuaResult ok = attempt("local f = assert(load('return x + 1', '=inner', 't', {x = 41}))\nassert(f() == 42)");
    CHECK(ok.ok);
}

TEST_CASE("string.rep memory bombs are refused before allocating", "[lua]") {
    refused("local s = string.rep('x', 1 << 40)", "string.rep: a result of", 1);
    refused("local s = ('x'):rep(1 << 30, ',')", "would exceed the sandbox memory limit of 64 MiB", 1);
    refused("local s = string.rep('abc', 100)\nlocal t = string.rep(s, 1e12 // 1)", "string.rep", 2);
}

TEST_CASE("a table-growth memory bomb stops at the cap with the loop's line", "[lua]") {
    const LuaResult r = attempt("local t = {}\nlocal i = 0\nwhile true do\n  i = i + 1\n  t[i] = {i, i, i, i}\nend");
    CHECK_FALSE(r.ok);
    CHECK(r.message == "memory limit exceeded: the sandbox may use at most 64 MiB");
    CHECK(r.file == "rules/escape.lua");
    CHECK(r.line >= 3);
    CHECK(r.line <= 5);
    // Strings that grow by concatenation hit the same cap.
    const LuaResult s = attempt("local s = 'x'\nwhile true do s = s .. s end");
    CHECK_FALSE(s.ok);
    CHECK_THAT(s.message, Catch::Matchers::Contains("64 MiB"));
}

TEST_CASE("runaway loops stop on the instruction budget, even inside pcall", "[lua]") {
    refused("local n = 0\nwhile true do n = n + 1 end", "instruction limit exceeded", 2);
    refused("while true do\n  pcall(function() while true do end end)\nend", "instruction limit exceeded", 2);
    refused("local function f() return f() end\nf()", "instruction limit exceeded", 1);
    SandboxLimits slow;
    slow.instructions = uint64_t{1} << 50;  // only the wall clock can stop this one
    slow.wall = std::chrono::milliseconds(200);
    const LuaResult r = attempt("local n = 0\nwhile true do n = n + 1 end", slow);
    CHECK_THAT(r.message, Catch::Matchers::Contains("time limit exceeded: ran longer than 200 ms"));
    CHECK(r.line == 2);
}

namespace {
int nap(lua_State*) {  // off the CPU for 2 ms, as a call on a machine too busy to run it
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return 0;
}
}  // namespace

TEST_CASE("the time limit counts a call's CPU time, and four times it of wall clock", "[lua]") {
    SandboxLimits limits;
    limits.instructions = uint64_t{1} << 50;
    limits.wall = std::chrono::milliseconds(100);
    LuaSandbox sandbox(limits);
    std::vector<int> env;
    REQUIRE(sandbox.run_host_chunk("local nap = ...\nreturn { nap = nap }", "=[host]", {{nap, nullptr}}, env).ok);
    REQUIRE(env.size() == 1);
    // ~300 ms off the CPU, the hook looking at the clock ~300 times meanwhile: runs to its end.
    const auto start = std::chrono::steady_clock::now();
    const LuaResult waited = sandbox.run("for i = 1, 150 do nap() for j = 1, 2000 do end end", "@rules/nap.lua", env.front());
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    INFO(waited.describe() << " after " << took.count() << " s");
    CHECK(waited.ok);
    CHECK(took.count() >= 0.3);
    // Off the CPU for much longer: stopped once 400 ms of wall clock passed.
    const LuaResult stuck = sandbox.run("for i = 1, 100000 do nap() for j = 1, 2000 do end end", "@rules/nap.lua", env.front());
    CHECK_FALSE(stuck.ok);
    CHECK_THAT(stuck.message, Catch::Matchers::Contains("time limit exceeded: ran longer than 100 ms"));
    CHECK(stuck.line == 1);
}

TEST_CASE("read-only tables refuse writes, rawset and setmetatable, naming the key", "[lua]") {
    refused("site.hardware.nics = {}", "site table is read-only: hardware.nics", 1);
    refused("\nsite.hardware.nics[1] = 'eth0'", "site table is read-only: hardware.nics.0", 2);
    refused("table.insert(site.hardware.nics, 'eth0')", "site table is read-only: hardware.nics.2", 1);
    refused("rawset(site.hardware, 'nics', {})", "site table is read-only: hardware.nics", 1);
    refused("setmetatable(site.hardware, {})", "site table is read-only: cannot set the metatable of hardware", 1);
    refused("site.extra = 1", "site table is read-only: extra", 1);
    // Reads work as on plain tables.
    const LuaResult ok = attempt(R"(
local h = site.hardware
assert(#h.nics == 2 and h.nics[2] == 'hsn1' and h.cores_per_node == 64)
local seen = {}
for i, n in ipairs(h.nics) do seen[#seen + 1] = n end
for k, v in pairs(h) do seen[#seen + 1] = k end
assert(#seen == 4 and next(h) ~= nil and getmetatable(h) == false)
assert(pathof(h.nics, 2) == 'hardware.nics.1' and pathof(h) == 'hardware' and pathof(h, 'nics') == 'hardware.nics')
assert(table.concat(h.nics, ',') == 'hsn0,hsn1')
assert(site.hardware == h and rawequal(site.hardware.nics, h.nics))  -- one proxy per table
assert(type(h) == 'table' and rawget(h, 'nics') == nil and rawlen(h.nics) == 0)
local keys = {}
for k in next, h do keys[#keys + 1] = k end
assert(#keys == 2 and keys[1] == 'nics' and keys[2] == 'cores_per_node')
)");
    INFO(ok.describe());
    CHECK(ok.ok);
}

TEST_CASE("non-string errors and failing metamethods give clear messages", "[lua]") {
    refused("\nerror({code = 1})", "error object is a table value", 2);
    refused("error(setmetatable({}, {__tostring = function() return 'custom failure' end}))", "custom failure", 1);
    refused("local bad = setmetatable({}, {__tostring = function() error('tostring broke') end})\nerror(bad)",
            "error object is a table value (its __tostring failed: rules/escape.lua:1: tostring broke)", 2);
    refused("local bad = setmetatable({}, {__tostring = function() while true do end end})\nerror(bad)",
            "its __tostring failed", 2);
    refused("local t = setmetatable({}, {__tostring = function() error('in tostring') end})\nprint(t)",
            "in tostring", 1);
    refused("setmetatable({}, {__gc = function() error('in gc') end})\ncollectgarbage()",
            "__gc metamethods are not allowed in the sandbox", 1);
    refused("collectgarbage('stop')", "collectgarbage('stop') is not allowed", 1);
    refused("error()", "error object is a nil value", 1);
}

TEST_CASE("the cap counts what the state holds and frees it again", "[lua]") {
    SandboxLimits small = deterministic();
    small.memory_bytes = size_t{8} << 20;  // string.rep briefly holds its result twice
    LuaSandbox sandbox(small);
    const size_t base = sandbox.memory_used();
    CHECK(base < (size_t{1} << 20));
    CHECK(sandbox.run("big = string.rep('x', 3 << 20)", kChunk).ok);
    CHECK(sandbox.memory_used() > (size_t{3} << 20));
    const LuaResult more = sandbox.run("local again = big .. big", kChunk);
    CHECK_FALSE(more.ok);
    CHECK(more.message == "memory limit exceeded: the sandbox may use at most 8 MiB");
    CHECK(sandbox.run("big = nil collectgarbage()", kChunk).ok);
    CHECK(sandbox.memory_used() < base + (size_t{1} << 20));
    CHECK(sandbox.run("local s = string.rep('y', 2 << 20)", kChunk).ok);
}

TEST_CASE("positions are parsed the way Lua writes them", "[lua]") {
    std::string file, message;
    int line = 0;
    CHECK(split_lua_position("rules/a.lua:12: boom: 3", file, line, message));
    CHECK(file == "rules/a.lua");
    CHECK(line == 12);
    CHECK(message == "boom: 3");
    CHECK_FALSE(split_lua_position("no position here", file, line, message));
    CHECK_FALSE(split_lua_position(":3: x", file, line, message));
}

TEST_CASE("message handlers, error objects and close handlers cannot outrun the limits", "[lua]") {
    // Lua runs a message handler with hooks off when the error came from the hook itself: the
    // sandbox's xpcall skips the user's handler after a limit, so none of these can loop on.
    const char* runaway[] = {
        "xpcall(error, function() while true do end end)",
        "xpcall(function() while true do end end, function() while true do end end)",
        "xpcall(error, function(e) return xpcall(error, function() while true do end end) end)",
        "xpcall(function() local n = 0 while true do n = n + 1 end end, function(e) while true do end end)",
        "while true do xpcall(error, function() while true do end end) end",
        "while true do pcall(function() while true do end end) end",
        "do local x <close> = setmetatable({}, {__close = function() while true do end end}) end",
        "local x <close> = setmetatable({}, {__close = function() while true do end end})\nwhile true do end",
        "string.gsub(('x'):rep(100), 'x', function() while true do end end)",
        "table.sort({3, 2, 1, 5, 4}, function(a, b) while true do end end)",
        "local t = setmetatable({}, {__lt = function() while true do end end})\nlocal _ = t < t",
        "local t = setmetatable({}, {__index = function() while true do end end})\nlocal _ = t.x",
        "print(setmetatable({}, {__tostring = function() while true do end end}))",
        "load('while true do end')()",
    };
    for (const char* code : runaway) {
        const LuaResult r = attempt(code);
        INFO(code << " -> " << r.describe());
        CHECK_FALSE(r.ok);
        CHECK(r.message.rfind("instruction limit exceeded", 0) == 0);  // one position, not two
        CHECK((r.file == "rules/escape.lua" || r.file == "(load)"));    // load()'s chunk is its own
        CHECK(r.line >= 1);
    }
    // The limit error reaches the top through a __tostring or a loaded chunk: still stopped.
    const LuaResult tostring = attempt("error(setmetatable({}, {__tostring = function() while true do end end}))");
    CHECK(tostring.message == "error object is a table value (its __tostring failed: rules/escape.lua:1: instruction "
                              "limit exceeded: more than 20000000 Lua instructions (runaway loop?))");
    const LuaResult loaded = attempt("local f = load('return function() while true do end end')()\nxpcall(f, f)");
    CHECK(loaded.message == "(load):1: instruction limit exceeded: more than 20000000 Lua instructions (runaway loop?)");
    CHECK(loaded.line == 2);
    // Handlers that fail or recurse end at once (the error is handled, or "error in error handling").
    const char* bounded[] = {
        "xpcall(error, function() error(setmetatable({}, {__tostring = function() while true do end end})) end)",
        "xpcall(error, function(e) local function f() return 1 + f() end return f() end)",
        "xpcall(error, function(e) error(e) end)",
        "xpcall(error, 42)",
        "local ok = pcall(error, setmetatable({}, {__tostring = function() while true do end end}))\nassert(not ok)",
    };
    for (const char* code : bounded) attempt(code);
    // Coroutines are absent: no second thread can run without the hook.
    refused("local co = coroutine.wrap(function() end)", "attempt to index a nil value (global 'coroutine')", 1);
}

TEST_CASE("memory-limit errors carry the file and line of the allocation that failed", "[lua]") {
    // Before this, a script that hit the cap before the hook first fired had no line.
    const LuaResult doubling = attempt("local a = 1\nlocal s = 'x'\nwhile true do s = s .. s end");
    CHECK(doubling.message == "memory limit exceeded: the sandbox may use at most 64 MiB");
    CHECK(doubling.file == "rules/escape.lua");
    CHECK(doubling.line == 3);
    const LuaResult nested = attempt("local function grow(s)\n  return s .. s\nend\nlocal s = 'x'\nfor i = 1, 40 do s = grow(s) end");
    CHECK(nested.line == 2);
    SandboxLimits small = deterministic();
    small.memory_bytes = size_t{8} << 20;
    const LuaResult concat = attempt("local s = ('x'):rep(3 << 20)\nlocal t = s .. s .. s", small);
    CHECK(concat.message == "memory limit exceeded: the sandbox may use at most 8 MiB");
    CHECK(concat.line == 2);
    const LuaResult table = attempt("local t = {}\nfor i = 1, 1e9 do\n  t[i] = i\nend", small);
    CHECK_THAT(table.message, Catch::Matchers::Contains("memory limit exceeded"));
    CHECK(table.line == 3);
    // Caught by pcall, then raised again elsewhere: the later position wins.
    const LuaResult later = attempt("pcall(function() local s = 'x' while true do s = s .. s end end)\n\n"
                                    "local s = 'y'\nwhile true do s = s .. s end", small);
    CHECK(later.line == 4);
}

namespace {
int caller_line_of(lua_State* L) {  // a host function answering LuaSandbox::caller_line
    lua_pushinteger(L, LuaSandbox::caller_line(L));
    return 1;
}
}  // namespace

TEST_CASE("caller_line finds the untrusted caller through host frames, as caller_function does", "[lua]") {
    LuaSandbox sandbox;
    std::vector<int> env;
    const std::string host = R"(local line_of, caller = ...
local function deeper()
  local a, b = line_of(), (caller())
  return a, b
end
return { ask = function() local a, b = deeper() return a, b end, assert = assert, tostring = tostring })";
    REQUIRE(sandbox.run_host_chunk(host, "=[host]", {{caller_line_of, nullptr}, LuaSandbox::caller_function()}, env).ok);
    REQUIRE(env.size() == 1);
    const std::string text = R"(local function via(f)
  local a, b = f()
  return a, b
end
local a, b = via(ask)
assert(a == 2 and b == 2, tostring(a) .. " " .. tostring(b))
local c, d = ask()
assert(c == 7 and d == 7, tostring(c) .. " " .. tostring(d))
)";
    const LuaResult r = sandbox.run(text, "@untrusted.lua", env.front());
    INFO(r.describe());
    CHECK(r.ok);
}
