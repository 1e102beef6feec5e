// Modulefile self-check: exact recording, each kind of broken modulefile rejected at its line,
// the seed sites' generated modulefiles accepted, and the recorder cross-checked with real Lmod.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <unistd.h>

#include "site/check.h"
#include "site/load.h"
#include "pipeline.h"
#include "lua/lua_sandbox.h"
#include "lua/selfcheck.h"
#include "test_support.h"

using namespace sitegen;
namespace fs = std::filesystem;

namespace {

using sitegen::test::TempDir;

const std::string kPath = "modules-out/t/modulefiles/X/1.0.lua";

using Lines = std::vector<std::string>;
using Env = std::map<std::string, std::string>;

Lines check(const std::string& text, const std::string& path = kPath) {
    Diagnostics diags(1000);
    self_check_modulefiles({{path, text, false}}, diags);
    Lines out;
    for (const auto& d : diags.all())
        out.push_back(d.where.file + ":" + std::to_string(d.where.line) + ": " +
                      (d.severity == Severity::error ? "error: " : "warning: ") + d.message);
    return out;
}

std::string at(int line, const std::string& message) {
    return kPath + ":" + std::to_string(line) + ": error: " + message + " [self-check]";
}

const char* kGood = R"(-- X/1.0: a good modulefile
local root = "/opt/x/1.0"
whatis("Description: X")
help("Use X.\n", "Really.")
depends_on("base/1")
conflict("Y")
family("ml")
setenv("X_ROOT", root)
setenv("X_N", 3)
prepend_path("PATH", pathJoin(root, "bin"))
append_path{"MANPATH", pathJoin(root, "/share//man/")}
pushenv("X_MODE", "fast")
if os.getenv("HOME") then setenv("X_HOME", os.getenv("HOME") .. "/x") end
unsetenv("X_OLD")
setenv("X_KEEP", "site", true)
if mode() == "load" then LmodMessage("loaded ", myModuleFullName(), " from ", myFileName()) end
)";

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// NUL-separated `env -0` output, without Lmod's bookkeeping (what is loaded, not what changed).
Env parse_env(const std::string& dump) {
    static const std::regex bookkeeping(R"(^(_ModuleTable.*|__LMOD_.*|LOADEDMODULES|_LMFILES_|LMOD_.*|BASH_FUNC_.*|_)$)");
    Env env;
    std::istringstream in(dump);
    std::string entry;
    while (std::getline(in, entry, '\0')) {
        const auto eq = entry.find('=');
        if (eq == std::string::npos) continue;
        const std::string name = entry.substr(0, eq);
        if (!std::regex_match(name, bookkeeping)) env[name] = entry.substr(eq + 1);
    }
    return env;
}

std::vector<std::string> split_path(const std::string& v) {
    std::vector<std::string> out;
    std::istringstream in(v);
    std::string part;
    while (std::getline(in, part, ':')) out.push_back(part);
    return out;
}

std::string join_path(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : ":") + p;
    return out;
}

// Applies recorded changes the way Lmod applies them to the user's environment.
struct Simulator {
    std::map<std::string, std::vector<std::optional<std::string>>> pushed;  // pushenv's saved values

    void apply(Env& env, const std::vector<EnvChange>& changes) {
        for (const auto& c : changes) {
            if (c.op == "setenv") env[c.name] = c.value;
            else if (c.op == "unsetenv") env.erase(c.name);
            else if (c.op == "pushenv") {
                pushed[c.name].push_back(env.count(c.name) ? std::optional<std::string>(env[c.name]) : std::nullopt);
                env[c.name] = c.value;
            } else if (c.op == "popenv") {
                auto& stack = pushed[c.name];
                REQUIRE_FALSE(stack.empty());
                if (stack.back()) env[c.name] = *stack.back();
                else env.erase(c.name);
                stack.pop_back();
            } else if (c.op == "prepend_path" || c.op == "append_path" || c.op == "remove_path") {
                std::vector<std::string> parts = env.count(c.name) ? split_path(env[c.name]) : std::vector<std::string>{};
                parts.erase(std::remove(parts.begin(), parts.end(), c.value), parts.end());
                if (c.op == "prepend_path") parts.insert(parts.begin(), c.value);
                if (c.op == "append_path") parts.push_back(c.value);
                if (parts.empty()) env.erase(c.name);
                else env[c.name] = join_path(parts);
            } else {
                FAIL("the simulator does not know " << c.op);
            }
        }
    }
};

}  // namespace

TEST_CASE("a good modulefile is recorded exactly, in load and in unload mode", "[lua][selfcheck]") {
    const Env env{{"HOME", "/home/u"}, {"X_KEEP", "user"}};
    const ModuleRecord load = record_modulefile(kGood, kPath, "load", env);
    INFO(load.errors.size());
    CHECK(load.errors.empty());
    CHECK(load.changes == std::vector<EnvChange>{
                             {"setenv", "X_ROOT", "/opt/x/1.0", 8},
                             {"setenv", "X_N", "3", 9},
                             {"prepend_path", "PATH", "/opt/x/1.0/bin", 10},
                             {"append_path", "MANPATH", "/opt/x/1.0/share/man", 11},
                             {"pushenv", "X_MODE", "fast", 12},
                             {"setenv", "X_HOME", "/home/u/x", 13},
                             {"unsetenv", "X_OLD", "", 14},
                         });
    CHECK(load.loads == Lines{"base/1"});
    CHECK(load.unloads.empty());
    CHECK(load.conflicts == Lines{"Y"});
    CHECK(load.families == Lines{"ml"});
    CHECK(load.whatis == Lines{"Description: X"});
    CHECK(load.help == "Use X.\nReally.");
    CHECK(load.messages == Lines{"loaded X/1.0 from " + kPath});

    const ModuleRecord unload = record_modulefile(kGood, kPath, "unload", {{"HOME", "/home/u"}, {"X_KEEP", "site"}});
    CHECK(unload.errors.empty());
    CHECK(unload.changes == std::vector<EnvChange>{
                               {"unsetenv", "X_ROOT", "", 8},
                               {"unsetenv", "X_N", "", 9},
                               {"remove_path", "PATH", "/opt/x/1.0/bin", 10},
                               {"remove_path", "MANPATH", "/opt/x/1.0/share/man", 11},
                               {"popenv", "X_MODE", "", 12},
                               {"unsetenv", "X_HOME", "", 13},
                               {"unsetenv", "X_KEEP", "", 15},
                           });
    CHECK(unload.loads.empty());
    CHECK(unload.unloads == Lines{"base/1"});
    CHECK(unload.conflicts.empty());
    CHECK(unload.messages.empty());
    CHECK(check(kGood).empty());
}

TEST_CASE("pathJoin trims, collapses // and /./ and drops a trailing /, whichever of its shortcuts applies", "[lua][selfcheck]") {
    // Expected values worked out by hand from the rules (each part trimmed of %s, joined by
    // "/", "//+" -> "/", then "/./" -> "/" left to right without overlap, one trailing "/" off).
    const std::string text = R"(setenv("J1", pathJoin("/opt/x", "bin"))
setenv("J2", pathJoin(" /a ", "b/./c//", ""))
setenv("J3", pathJoin("/"))
setenv("J4", pathJoin("a", "/"))
setenv("J5", pathJoin("\tx\n", "y"))
setenv("J6", pathJoin("/a/./", "./b"))
setenv("J7", pathJoin("/a", nil, "b"))
setenv("J8", pathJoin("", "rel", "x/"))
setenv("J9", pathJoin("/a//", "//b///c"))
)";
    const ModuleRecord load = record_modulefile(text, kPath, "load", {});
    REQUIRE(load.errors.empty());
    CHECK(load.changes == std::vector<EnvChange>{
                              {"setenv", "J1", "/opt/x/bin", 1},
                              {"setenv", "J2", "/a/b/c", 2},
                              {"setenv", "J3", "/", 3},
                              {"setenv", "J4", "a", 4},
                              {"setenv", "J5", "x/y", 5},
                              {"setenv", "J6", "/a/./b", 6},
                              {"setenv", "J7", "/a/b", 7},
                              {"setenv", "J8", "rel/x", 8},
                              {"setenv", "J9", "/a/b/c", 9},
                          });
}

// The recorder's pathJoin as it was in Lua before it became host C, for the cross-check below.
const char* kLuaPathJoin = R"lua(
local byte, find, sub, concat = string.byte, string.find, string.sub, table.concat
return function(...)
  local parts, args = {}, { ... }
  for i = 1, select("#", ...) do
    local v = args[i]
    if v and v ~= "" then
      if type(v) ~= "string" then error(("pathJoin: argument #%d must be a string, got %s"):format(i, type(v)), 0) end
      if byte(v) <= 32 or byte(v, -1) <= 32 then v = v:match("^%s*(.-)%s*$") end
      parts[#parts + 1] = v
    end
  end
  local s = concat(parts, "/")
  if find(s, "//", 1, true) then s = s:gsub("//+", "/") end
  if find(s, "/./", 1, true) then s = s:gsub("/%./", "/") end
  if #s > 1 and byte(s, -1) == 47 then s = sub(s, 1, -2) end
  return s
end
)lua";

// What kLuaPathJoin returns for the Lua argument list `args` (or its error message).
std::string lua_path_join(const std::string& args) {
    lua_State* L = luaL_newstate();
    luaL_openlibs(L);
    const std::string chunk = "local join = load(...)()\nlocal ok, r = pcall(join, " + args + ")\nreturn r";
    std::string out = "(did not run)";
    if (luaL_loadstring(L, chunk.c_str()) == LUA_OK) {
        lua_pushstring(L, kLuaPathJoin);
        if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_isstring(L, -1)) out = lua_tostring(L, -1);
    }
    lua_close(L);
    return out;
}

TEST_CASE("pathJoin gives what its Lua implementation gave, for every mix of awkward parts", "[lua][selfcheck]") {
    const std::vector<std::string> parts = {"\"\"", "\" \"", "\"/\"", "\"//\"", "\".\"", "\"./\"", "\"/./\"", "\"/.\"",
                                            "\"a\"", "\" b \"", "\"\\t/c/\\n\"", "\"x/\"", "\"\\1y\"", "nil", "false"};
    std::string text;
    std::vector<std::string> want;
    for (size_t i = 0; i < parts.size(); ++i)
        for (size_t j = 0; j < parts.size(); ++j)
            for (size_t k = 0; k < parts.size(); k += 3) {
                const std::string args = parts[i] + ", " + parts[j] + ", " + parts[k];
                text += "setenv(\"P\", pathJoin(" + args + "))\n";
                want.push_back(lua_path_join(args));
            }
    const ModuleRecord load = record_modulefile(text, kPath, "load", {});
    REQUIRE(load.errors.empty());
    REQUIRE(load.changes.size() == want.size());
    for (size_t n = 0; n < want.size(); ++n) {
        INFO("line " << n + 1);
        CHECK(load.changes[n].value == want[n]);
    }
    for (const std::string args : {"1", "'a', true", "'a', {}, 'b'"})
        CHECK(record_modulefile("pathJoin(" + args + ")\n", kPath, "load", {}).errors ==
              Lines{"modules-out/t/modulefiles/X/1.0.lua:1: " + lua_path_join(args)});
}

TEST_CASE("setenv's respect flag and values as Lmod takes them, in both modes", "[lua][selfcheck]") {
    const std::string text = R"(setenv("A", 1)
setenv("B", 1.5)
setenv("C", true)
setenv("SET", "x", true)
setenv("UNSET", "x", true)
setenv("OTHER", "y", true)
)";
    const ModuleRecord load = record_modulefile(text, kPath, "load", {{"SET", "old"}, {"OTHER", "z"}});
    REQUIRE(load.errors.empty());
    CHECK(load.changes == std::vector<EnvChange>{{"setenv", "A", "1", 1},
                                                 {"setenv", "B", "1.5", 2},
                                                 {"setenv", "C", "true", 3},
                                                 {"setenv", "UNSET", "x", 5}});
    const ModuleRecord unload = record_modulefile(text, kPath, "unload", {{"SET", "x"}, {"OTHER", "z"}});
    REQUIRE(unload.errors.empty());
    CHECK(unload.changes == std::vector<EnvChange>{{"unsetenv", "A", "", 1},
                                                   {"unsetenv", "B", "", 2},
                                                   {"unsetenv", "C", "", 3},
                                                   {"unsetenv", "SET", "", 4}});
    CHECK(check("setenv('A', 1, true)\n") == Lines{at(1, "setenv: argument #2 must be a string, got number")});
    CHECK(check("setenv('A', 'x', nil)\n") ==
          Lines{at(1, "setenv: argument #3 must be a string, number or boolean, got nil")});
    CHECK(check("setenv('A', 'x', {})\n") ==
          Lines{at(1, "setenv: argument #3 must be a string, number or boolean, got table")});
    CHECK(check("\nwhatis(1)\n") == Lines{at(2, "whatis: argument #1 must be a string, got number")});
    CHECK(check("help()\n") == Lines{at(1, "help expects at least 1 string argument, got 0")});
    CHECK(check("add_property('a')\n") == Lines{at(1, "add_property expects at least 2 string arguments, got 1")});
    CHECK(check("setenv('A-B', 'x')\nsetenv('A-B', 'x')\n") ==
          Lines{at(1, "setenv: 'A-B' is not a valid environment variable name (^[A-Za-z_][A-Za-z0-9_]*$)"),
                at(2, "setenv: 'A-B' is not a valid environment variable name (^[A-Za-z_][A-Za-z0-9_]*$)")});
}

TEST_CASE("a chunk compiled once runs in the environment each run gives it, and a syntax error fails as run does", "[lua][selfcheck]") {
    LuaSandbox sandbox;  // compile/run_compiled: how the self-check evaluates a modulefile twice
    std::vector<int> envs;
    REQUIRE(sandbox.run_host_chunk("return { error = error }, { error = error }", "=[envs]", {}, envs).ok);
    REQUIRE(envs.size() == 2);
    const std::string text = "if seen then error('globals shared between runs') end\nseen = true\n";
    int ref = -1;
    REQUIRE(sandbox.compile(text, "@m.lua", ref).ok);
    CHECK(sandbox.run_compiled(ref, envs[0]).ok);
    CHECK(sandbox.run_compiled(ref, envs[1]).ok);  // a fresh table: `seen` is unset again
    const LuaResult again = sandbox.run_compiled(ref, envs[0]);
    CHECK_FALSE(again.ok);
    CHECK(again.describe() == "m.lua:1: globals shared between runs");

    const std::string broken = "x = = 1\n";
    int unused = -1;
    const LuaResult compiled = sandbox.compile(broken, "@b.lua", unused);
    const LuaResult ran = sandbox.run(broken, "@b.lua", envs[0]);
    CHECK_FALSE(compiled.ok);
    CHECK(compiled.syntax_error);
    CHECK(compiled.describe() == "b.lua:1: unexpected symbol near '='");
    CHECK(ran.describe() == compiled.describe());
    CHECK(ran.syntax_error);
    // In the self-check: reported once, at its line, as before.
    CHECK(check(broken) == Lines{at(1, "syntax error: unexpected symbol near '='")});
}

TEST_CASE("broken modulefiles are rejected with their line", "[lua][selfcheck]") {
    CHECK(check("setenv('A', 'b')\nlocal = 3\n") == Lines{at(2, "syntax error: <name> expected near '='")});
    CHECK(check("-- typo\nsetenvv('A', 'b')\n") ==
          Lines{at(2, "unknown function 'setenvv' (did you mean 'setenv'?)")});
    CHECK(check("\n\nsetenv('A')\n") ==
          Lines{at(3, "setenv expects a name, a value and an optional respect flag, got 1 argument")});
    CHECK(check("setenv('1BAD', 'x')\n") ==
          Lines{at(1, "setenv: '1BAD' is not a valid environment variable name (^[A-Za-z_][A-Za-z0-9_]*$)")});
    CHECK(check("setenv('A', 'b')\nif mode() == \"load\" then setenv('B', 'c') end\n") ==
          Lines{at(2, "'B' is set on load (setenv) but not unset on unload (load/unload asymmetry)")});
    CHECK(check("if mode() == 'load' then\n  prepend_path('PATH', '/x/bin')\nend\n") ==
          Lines{at(2, "'/x/bin' is added to 'PATH' on load (prepend_path) but not removed on unload (load/unload asymmetry)")});
    CHECK(check("if mode() == 'unload' then setenv('HOME', 'x') end\n") ==
          Lines{at(1, "unload unsets 'HOME', which load never set (load/unload asymmetry)")});
    CHECK(check("prepend_path('PATH', 3)\n") == Lines{at(1, "prepend_path: argument #2 must be a string, got number")});
    CHECK(check("setenv('A', {})\n") == Lines{at(1, "setenv: argument #2 must be a string, number or boolean, got table")});
    // Around the recorder's shortcut for the usual two-string call: every other call fully checked.
    CHECK(check("setenv(1, 'x')\n") == Lines{at(1, "setenv: argument #1 must be a string, got number")});
    CHECK(check("setenv('A', 'b', true, 4)\n") ==
          Lines{at(1, "setenv expects a name, a value and an optional respect flag, got 4 arguments")});
    CHECK(check("prepend_path('PATH', '/a', 3)\n") == Lines{at(1, "prepend_path: argument #3 must be a string, got number")});
    CHECK(check("prepend_path(nil, '/a')\n") == Lines{at(1, "prepend_path: argument #1 must be a string, got nil")});
    CHECK(check("append_path('1X', '/a')\n") ==
          Lines{at(1, "append_path: '1X' is not a valid environment variable name (^[A-Za-z_][A-Za-z0-9_]*$)")});
    CHECK(check("load()\n") == Lines{at(1, "load expects at least 1 string argument, got 0")});
    CHECK(check("execute{cmd = 'rm -rf ~', modeA = {'load'}}\n") ==
          Lines{at(1, "execute() is refused: generated modulefiles must not run commands")});
    CHECK(check("local out = capture('id')\n") == Lines{at(1, "capture() is refused: generated modulefiles must not run commands")});
    CHECK(check("os.execute('id')\n") == Lines{at(1, "os.execute is not available to modulefiles in the self-check")});
    CHECK(check("io.open('/etc/passwd')\n") ==
          Lines{at(1, "io.open is refused: modulefiles must not touch files (but read a GPU driver's version file)")});
    CHECK(check("io.open('/sys/module/amdgpu/version', 'w')\n") ==
          Lines{at(1, "io.open is refused: modulefiles must not touch files (but read a GPU driver's version file)")});
    CHECK(check("io.lines('/sys/module/amdgpu/version')\n") ==
          Lines{at(1, "io.lines is refused: modulefiles must not touch files")});
    // A driver gate's read: allowed, and the self-check reads no file (no driver: the gate passes).
    CHECK(check("assert(io.open('/sys/module/amdgpu/version', 'r') == nil)\nassert(io.open('/proc/driver/nvidia/version') == nil)\n").empty());
    CHECK(check("-- Lmod has no error()\nerror('x')\n") == Lines{at(2, "unknown function 'error'")});
    CHECK(check("LmodError('always broken')\n") == Lines{at(1, "LmodError: always broken")});
    CHECK(check("\nwhile true do end\n") ==
          Lines{at(2, "instruction limit exceeded: more than 20000000 Lua instructions (runaway loop?)")});
}

TEST_CASE("only modulefiles are checked, and .modulerc.lua files use the rc API", "[lua][selfcheck]") {
    CHECK(check("this is not lua", "easyconfigs-out/t/x/X-1.0.eb").empty());
    CHECK(check("this is not lua", "modules-out/t/software/X/1.0/bin/tool.lua").empty());
    const std::string rc = "modules-out/t/modulefiles/X/.modulerc.lua";
    CHECK(check("module_version(\"X/1.0\", \"default\")\n", rc).empty());
    CHECK(check("setenv('A', 'b')\n", rc) ==
          Lines{rc + ":1: error: unknown function 'setenv' [self-check]"});
    RecordOptions options;
    options.modulerc = true;
    const ModuleRecord r = record_modulefile("module_version('X/1.0', 'default', 'stable')\nhide_version('X/0.9')\n",
                                             rc, "load", {}, options);
    CHECK(r.changes == std::vector<EnvChange>{{"module_version", "X/1.0", "default stable", 1},
                                              {"hide_version", "X/0.9", "", 2}});
}

TEST_CASE("isFile and isDir answer from the caller's predicates", "[lua][selfcheck]") {
    const char* text = "if isFile('/img.sif') then setenv('SIF', '/img.sif') else LmodError('no image') end\n";
    ModuleRecord none = record_modulefile(text, kPath, "load", {});
    CHECK(none.errors == Lines{kPath + ":1: LmodError: no image"});
    RecordOptions options;
    options.is_file = [](const std::string& p) { return p == "/img.sif"; };
    ModuleRecord found = record_modulefile(text, kPath, "load", {}, options);
    CHECK(found.errors.empty());
    CHECK(found.changes == std::vector<EnvChange>{{"setenv", "SIF", "/img.sif", 1}});
    // On unload LmodError only warns, as in Lmod.
    ModuleRecord unload = record_modulefile(text, kPath, "unload", {});
    CHECK(unload.errors.empty());
    CHECK(unload.messages == Lines{"LmodError (a warning on unload): no image"});
}

TEST_CASE("the seed sites' generated modulefiles pass the self-check", "[lua][selfcheck]") {
    for (const auto& name : sitegen::test::seed_site_names()) {
        const Site site = sitegen::test::load_seed_site(name);
        PlanOptions options;
        options.prefix = site.site.install_prefix;
        const OutputList outputs = emit_all(site, options);
        size_t modulefiles = 0;
        for (const auto& f : outputs) modulefiles += f.path.find("/modulefiles/") != std::string::npos;
        Diagnostics diags;
        self_check_modulefiles(outputs, diags);
        INFO(name << "\n" << render_all(diags, {}));
        CHECK(modulefiles >= 2);
        CHECK(diags.all().empty());
    }
}

TEST_CASE("the recorder agrees with real Lmod 8.6 on what load and unload change", "[lua][selfcheck][lmod]") {
    const std::string init = "/usr/share/lmod/lmod/init/bash";
    if (!fs::exists(init)) FAIL("Lmod is not installed (" << init << " is missing): install the lmod package");
    TempDir dir("selfcheck-test");
    const std::string module = R"(-- cross-check module for the recorder
local root = "/opt/xcheck/1.0"
whatis("Description: cross-check")
setenv("XCHECK_ROOT", root)
setenv("XCHECK_NUM", 42)
setenv("XCHECK_HOME", (os.getenv("HOME") or "") .. "/xcheck")
setenv("XCHECK_KEEP", "module", true)
prepend_path("PATH", pathJoin(root, "bin"))
append_path("XCHECK_PATH", pathJoin(root, "/lib//"))
prepend_path{"XCHECK_PATH", "/first"}
remove_path("XCHECK_LIST", "/drop")
pushenv("XCHECK_PUSHED", "pushed")
pushenv("XCHECK_FRESH", "fresh")
unsetenv("XCHECK_OLD")
if isloaded("nothing") then setenv("NEVER", "1") end
)";
    fs::create_directories(dir.path / "mf" / "xcheck");
    std::ofstream(dir.path / "mf" / "xcheck" / "1.0.lua") << module;
    const fs::path script = dir.path / "run.sh";
    std::ofstream(script) << "set -e\nsource " << init << "\nexport MODULEPATH=" << (dir.path / "mf").string() << "\n"
                          << "env -0 > before.env\nmodule load xcheck/1.0\nenv -0 > loaded.env\n"
                          << "module unload xcheck\nenv -0 > unloaded.env\n";
    const std::string command = "cd " + dir.path.string() +
                                " && env -i HOME=/home/tester PATH=/usr/bin:/bin LANG=C.UTF-8 XCHECK_OLD=old "
                                "XCHECK_KEEP=user XCHECK_PUSHED=orig XCHECK_LIST=/keep:/drop:/also "
                                "bash --noprofile --norc run.sh > lmod.log 2>&1";
    const int status = std::system(command.c_str());
    INFO(slurp(dir.path / "lmod.log"));
    REQUIRE(status == 0);
    const Env before = parse_env(slurp(dir.path / "before.env"));
    const Env loaded = parse_env(slurp(dir.path / "loaded.env"));
    const Env unloaded = parse_env(slurp(dir.path / "unloaded.env"));
    REQUIRE(loaded.count("XCHECK_ROOT"));  // the load really happened

    const std::string file = (dir.path / "mf" / "xcheck" / "1.0.lua").string();
    const ModuleRecord load = record_modulefile(module, file, "load", before);
    REQUIRE(load.errors.empty());
    Simulator lmod;
    Env expect_loaded = before;
    lmod.apply(expect_loaded, load.changes);
    CHECK(expect_loaded == loaded);

    const ModuleRecord unload = record_modulefile(module, file, "unload", loaded);
    REQUIRE(unload.errors.empty());
    Env expect_unloaded = loaded;
    lmod.apply(expect_unloaded, unload.changes);
    CHECK(expect_unloaded == unloaded);
    // Spot checks, so agreement cannot come from both sides doing nothing.
    CHECK(loaded.at("XCHECK_PATH") == "/first:/opt/xcheck/1.0/lib");
    CHECK(loaded.at("XCHECK_KEEP") == "user");
    CHECK(loaded.at("XCHECK_LIST") == "/keep:/also");
    CHECK(unloaded.at("XCHECK_PUSHED") == "orig");
    CHECK(unloaded.count("XCHECK_ROOT") == 0);
}

TEST_CASE("a modulefile stuck in a library call is stopped at its time limit, and the others are still checked", "[lua][selfcheck]") {
    const std::string stuck = "modules-out/t/modulefiles/X/1.0.lua", broken = "modules-out/t/modulefiles/Y/1.0.lua";
    const std::string pattern = "local x = ('a'):rep(40):match(('a*'):rep(12) .. 'b')\n";
    Diagnostics diags(1000);
    const auto start = std::chrono::steady_clock::now();
    self_check_modulefiles({{stuck, "setenv('A', 'b')\n" + pattern, false}, {broken, "setenvv('A', 'b')\n", false}}, diags);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    Lines out;
    for (const auto& d : diags.all()) out.push_back(d.where.file + ":" + std::to_string(d.where.line) + ": " + d.message);
    CHECK(out == Lines{stuck + ":2: time limit exceeded: ran longer than 500 ms (stopped in a library call, e.g. a "
                               "backtracking pattern?) [self-check]",
                       broken + ":1: unknown function 'setenvv' (did you mean 'setenv'?) [self-check]"});
    CHECK(took < 2.5);
    // record_modulefile is supervised the same way.
    const ModuleRecord r = record_modulefile(pattern, kPath, "load", {});
    CHECK(r.errors == Lines{kPath + ":1: time limit exceeded: ran longer than 500 ms (stopped in a library call, e.g. a "
                                    "backtracking pattern?)"});
}

TEST_CASE("what a modulefile records is capped like the sandbox's memory", "[lua][selfcheck]") {
    // 17 changes of 1 MiB each would be 17 MiB of C++ memory outside the sandbox's cap (and
    // 60 would be what the sandbox itself may hold).
    const Lines out = check("local s = ('x'):rep(1 << 20)\nfor i = 1, 60 do\n  setenv('A' .. i, s)\nend\n");
    CHECK(out == Lines{at(3, "the modulefile makes more than 16 MiB of changes and calls")});
}
