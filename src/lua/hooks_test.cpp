// Site hooks: what the builder adds (exactly, per stack, in call order), how it reaches the
// modulefile, the easyconfig and the job script, and every misuse at the hook's file:line.
#include <catch2/catch.hpp>

#include <algorithm>

#include "lua/hooks.h"
#include "pipeline.h"
#include "test_support.h"

using namespace sitegen;

namespace {

using sitegen::test::TempDir;
using Lines = std::vector<std::string>;

std::string line_of(const Diagnostic& d) {
    static const char* names[] = {"error", "warning", "note"};
    return d.where.file + ":" + std::to_string(d.where.line) + ":" + std::to_string(d.where.column) + ": " +
           names[static_cast<int>(d.severity)] + ": " + d.message;
}

// The local seed site with a second stack (version 2.0).
Site two_stacks() {
    Site site = test::load_seed_site("local");
    Stack second = site.stacks.front();
    second.version = "2.0";
    second.is_default = false;
    site.stacks.push_back(second);
    return site;
}

struct Ran {
    std::vector<HookAdditions> adds;
    Lines findings;
};

Ran run(const Site& site, const std::vector<std::string>& files) {
    Diagnostics diags(1000);
    Ran r;
    r.adds = run_hook_files(site, files, diags);
    for (const auto& d : diags.all()) r.findings.push_back(line_of(d));
    return r;
}

// One hook file `h.lua` whose stack function body is `body` (starting at line 3).
Ran run_body(const Site& site, const TempDir& tmp, const std::string& body) {
    return run(site, {tmp.write("h.lua", "-- test hook\nhook { name = \"h\", stack = function(site, stack, out)\n" + body +
                                             "\nend }\n")});
}

const OutputFile& output_ending(const OutputList& outputs, const std::string& suffix) {
    auto it = std::find_if(outputs.begin(), outputs.end(), [&](const OutputFile& f) {
        return f.path.size() >= suffix.size() && f.path.compare(f.path.size() - suffix.size(), suffix.size(), suffix) == 0;
    });
    REQUIRE(it != outputs.end());
    return *it;
}

}  // namespace

TEST_CASE("hooks add typed data to each stack, in call order", "[lua][hooks]") {
    const Site site = two_stacks();
    TempDir tmp("hooks");
    const Ran r = run(site, {tmp.write("a.lua", R"(-- Test hooks.
hook {
  name = "mark",
  description = "family and property for 2.0 only",
  stack = function(site, stack, out)
    if stack.version == "2.0" then
      out.module.family("torch")
      out.module.property("state", "testing")
      out.module.property("state", "testing")
    end
    out.module.message("on " .. site.site.name .. " " .. stack.module_full_name)
    out.job.setenv("HOOK_A", "x y")
    out.job.module_load("cray-python/3.11")
    out.job.run{"hostname", "-s"}
  end,
}
)")});
    CHECK(r.findings == Lines{});
    REQUIRE(r.adds.size() == 2);
    CHECK(r.adds[0].family == "");
    CHECK(r.adds[0].properties.empty());
    CHECK(r.adds[0].messages == Lines{"on local pytorch/1.13.1-cpu"});
    CHECK(r.adds[1].family == "torch");
    // (the same property twice is one)
    CHECK(r.adds[1].properties == std::vector<std::pair<std::string, std::string>>{{"state", "testing"}});
    CHECK(r.adds[1].messages == Lines{"on local pytorch/2.0-cpu"});
    for (const auto& a : r.adds) {
        REQUIRE(a.job_prologue.size() == 3);
        CHECK(a.job_prologue[0].kind == JobCommand::Kind::setenv);
        CHECK(a.job_prologue[0].words == Lines{"HOOK_A", "x y"});
        CHECK(a.job_prologue[1].kind == JobCommand::Kind::module_load);
        CHECK(a.job_prologue[1].words == Lines{"cray-python/3.11"});
        CHECK(a.job_prologue[2].kind == JobCommand::Kind::run);
        CHECK(a.job_prologue[2].words == Lines{"hostname", "-s"});
    }
}

TEST_CASE("a site without a hooks directory has no additions", "[lua][hooks]") {
    const Site site = test::load_seed_site("local");
    Diagnostics diags;
    CHECK(run_hooks(site, diags).empty());
    CHECK(diags.all().empty());
    // sites/<name>/hooks beside site.toml is found.
    TempDir tmp("hooks-dir");
    Site own = site;
    own.files = {tmp.write("sites/x/site.toml", "")};
    tmp.write("sites/x/hooks/b.lua", "-- b\nhook { name = \"b\", stack = function(site, stack, out) out.module.message(\"b\") end }\n");
    tmp.write("sites/x/hooks/a.lua", "-- a\nhook { name = \"a\", stack = function(site, stack, out) out.module.message(\"a\") end }\n");
    const auto adds = run_hooks(own, diags);
    CHECK(diags.all().empty());
    REQUIRE(adds.size() == 1);
    CHECK(adds[0].messages == Lines{"a", "b"});  // sorted by file name
}

TEST_CASE("hook additions reach the modulefile, the easyconfig and the job script, quoted", "[lua][hooks]") {
    const Site site = test::load_seed_site("local");
    PlanOptions options{"/opt/p"};
    HookAdditions a;
    a.family = "torch";
    a.properties = {{"arch", "gpu"}};
    a.messages = {"Say \"hi\" ]] ]=] $(id)\nline two"};
    a.job_prologue = {{JobCommand::Kind::setenv, {"HOOK_VAR", "it's $(id) `id`\n]]"}},
                      {JobCommand::Kind::module_load, {"rocm/6.0.3"}},
                      {JobCommand::Kind::run, {"printf", "%s\\n", "$HOME", "a b"}}};
    options.hooks = {a};
    const OutputList outputs = emit_all(site, options);
    const std::string& module = output_ending(outputs, "modulefiles/pytorch/1.13.1-cpu.lua").contents;
    CHECK_THAT(module, Catch::Contains("\n\nfamily(\"torch\")\n\n"));
    CHECK_THAT(module, Catch::EndsWith("-- From the site's Lua hooks (hooks/*.lua).\n"
                                       "add_property(\"arch\", \"gpu\")\n"
                                       "if mode() == \"load\" then\n"
                                       "  LmodMessage(\"Say \\\"hi\\\" ]] ]=] $(id)\\nline two\")\n"
                                       "end\n"));
    CHECK_THAT(module, Catch::Contains("\\n\\nFrom the site's hooks (messages are shown when the module is loaded):\\n"
                                       "  property arch = gpu\\n  Say \\\"hi\\\" ]] ]=] $(id)\\n  line two\\n\")"));
    const std::string& job = output_ending(outputs, "runscripts/job.slurm").contents;
    CHECK_THAT(job, Catch::Contains("module load pytorch/1.13.1-cpu\n"
                                    "# Job prologue from the site's Lua hooks (hooks/*.lua); each value is one quoted word.\n"
                                    "# shellcheck disable=SC2016\n"
                                    "export HOOK_VAR='it'\\''s $(id) `id`\n]]'\n"
                                    "module load rocm/6.0.3\n"
                                    "# shellcheck disable=SC2016\n"
                                    "env -- printf '%s\\n' '$HOME' 'a b'\n"
                                    "# sbatch --export=NONE"));
    const std::string& eb = output_ending(outputs, "pytorch-1.13.1-cpu.eb").contents;
    CHECK_THAT(eb, Catch::Contains("    'family(\"torch\")',\n"));
    CHECK_THAT(eb, Catch::Contains("    'add_property(\"arch\", \"gpu\")',\n    'if mode() == \"load\" then',\n"));
    // Without hooks nothing changes.
    const OutputList plain = emit_all(site, PlanOptions{"/opt/p"});
    CHECK_THAT(output_ending(plain, "runscripts/job.slurm").contents, Catch::Contains("module load pytorch/1.13.1-cpu\n# sbatch --export=NONE"));
}

TEST_CASE("the plan refuses invalid hook additions that bypassed the hooks", "[lua][hooks]") {
    const Site site = test::load_seed_site("local");
    const auto refused = [&](HookAdditions a) {
        PlanOptions options{"/opt/p"};
        options.hooks = {std::move(a)};
        CHECK_THROWS_AS(emit_all(site, options), std::invalid_argument);
    };
    HookAdditions a;
    a.family = "x-y";
    refused(a);
    a = {};
    a.messages = {"\x1b[2J"};
    refused(a);
    a = {};
    a.job_prologue = {{JobCommand::Kind::setenv, {"PATH", "/x"}}};
    refused(a);
    a = {};
    a.job_prologue = {{JobCommand::Kind::run, {"X=1", "id"}}};
    refused(a);
}

TEST_CASE("misused builders are reported at the hook's file:line", "[lua][hooks]") {
    const Site site = test::load_seed_site("local");
    TempDir tmp("hooks-misuse");
    const std::string h = tmp.file("h.lua");
    const auto one = [&](const std::string& body) {
        const Ran r = run_body(site, tmp, body);
        REQUIRE(r.findings.size() == 1);
        return r.findings[0];
    };
    const std::string at = h + ":3:0: error: hook failed: ";
    CHECK(one("out.module.famly('x')") ==
          at + "out.module has no 'famly' (did you mean 'family'?) (it offers family, message, property) [hook h]");
    CHECK(one("out.jobs.run{'id'}") == at + "out has no 'jobs' (did you mean 'job'?) (it offers job, module) [hook h]");
    CHECK(one("out.module.family('a', 'b')") == at + "out.module.family expects 1 argument (a family name), got 2 [hook h]");
    CHECK(one("out.module.property('arch', 1)") == at + "out.module.property: its value must be a string, got number [hook h]");
    CHECK(one("out.module.family('my-family')") ==
          at + "out.module.family: a family name is a letter, then letters, digits or '_' (at most 64), e.g. 'pytorch' [hook h]");
    CHECK(one("out.module.message('\\27[2Jhi')") ==
          at + "out.module.message: the message holds a control character (only newlines may be used) [hook h]");
    CHECK(one("out.module.message(('x'):rep(1025))") == at + "out.module.message: the message is longer than 1024 bytes [hook h]");
    CHECK(one("out.job.setenv('LD_LIBRARY_PATH', '/x')") ==
          at + "out.job.setenv: LD_LIBRARY_PATH is managed by the module (or by Lmod); a hook cannot set it in the job [hook h]");
    CHECK(one("out.job.setenv('BASH_ENV', '/x')") ==
          at + "out.job.setenv: BASH_ENV is read by bash or by the generated scripts; a hook cannot set it [hook h]");
    CHECK(one("out.job.setenv('1X', 'v')") ==
          at + "out.job.setenv: '1X' is not a variable name (letters, digits and '_', not first a digit) [hook h]");
    CHECK(one("out.job.run{'A=1', 'id'}") ==
          at + "out.job.run: the program must be a name or a path, without '=' and not starting with '-' [hook h]");
    CHECK(one("out.job.run{}") == at + "out.job.run: a command needs at least its program [hook h]");
    CHECK(one("out.job.run('id')") == at + "out.job.run expects one list of words, e.g. out.job.run{\"hostname\"} [hook h]");
    CHECK(one("out.job.run{'id', x = 1}") == at + "out.job.run: expects a list of words only (no other keys) [hook h]");
    CHECK(one("out.job.module_load('-rf')") ==
          at + "out.job.module_load: a module name is letters, digits and '._+/-', not starting with '-' or '/', e.g. 'rocm/6.0.3' [hook h]");
    CHECK(one("out.module.message('a\\0b')") == at + "out.module.message: the message is not UTF-8 text (or holds a NUL byte) [hook h]");
    CHECK(one("out.module = nil") == at + "out is read-only [hook h]");
    CHECK(one("for i = 1, 300 do out.module.message('m') end") ==
          at + "out.module.message: a hook adds at most 256 things to one stack [hook h]");
    // Lmod refuses a property its lmodrc.lua lacks: a warning, the module still gets it.
    const Ran r = run_body(site, tmp, "out.module.property('arch', 'gpu:mic')\nout.module.property('site', 'fast')");
    CHECK(r.findings == Lines{h + ":4:0: warning: property site = fast is not in Lmod's own lmodrc.lua: loading the "
                                  "module fails unless the site's lmodrc.lua defines it [hook h]"});
    REQUIRE(r.adds.size() == 1);
    CHECK(r.adds[0].properties.size() == 2);
}

TEST_CASE("a builder kept past its call is refused", "[lua][hooks]") {
    Site site = two_stacks();
    TempDir tmp("hooks-kept");
    const Ran r = run(site, {tmp.write("k.lua", R"(-- keeps its builder
local kept
hook { name = "k", stack = function(site, stack, out)
  if kept then kept.module.message("late") end
  kept = out
end }
)")});
    CHECK(r.findings == Lines{tmp.file("k.lua") + ":4:0: error: hook failed: out.module.message can only be called while "
                                                  "the stack function it was given to runs [hook k]"});
    CHECK(r.adds.at(0).messages.empty());
    CHECK(r.adds.at(1).messages.empty());
}

TEST_CASE("hook files: purpose comment, hook{} keys, names unique across files", "[lua][hooks]") {
    const Site site = test::load_seed_site("local");
    TempDir tmp("hooks-files");
    const std::string a = tmp.write("a.lua", "-- a\nhook { name = \"same\", stack = function() end }\n");
    const std::string b = tmp.write("b.lua", "-- b\n\nhook { name = \"same\", stack = function() end }\n");
    const std::string c = tmp.write("c.lua", "hook { name = \"c\", stack = function() end }\n");
    const std::string d = tmp.write("d.lua", "-- d\nhook { nme = \"d\", stack = function() end }\n");
    const std::string e = tmp.write("e.lua", "-- e\nlocal x = 1\n");
    const std::string f = tmp.write("f.lua", "-- f\nhook { name = \"f\", stack = function(site, stack, out)\n  out.module.message(site.x.y)\nend }\n");
    const Ran r = run(site, {a, b, c, d, e, f});
    CHECK(r.findings == Lines{
                            b + ":3:0: error: hook 'same' is already defined in " + a,
                            c + ":1:1: error: a hook file starts with a one-line purpose comment: -- <what its hooks add>",
                            d + ":2:0: error: hook file failed to load: hook: unknown key 'nme' (did you mean 'name'?) "
                                "(a hook has name, description and stack)",
                            e + ":1:1: warning: hook file defines no hooks (call hook{name = ..., stack = function(site, "
                                "stack, out) ... end})",
                            f + ":3:0: error: hook failed: attempt to index a nil value (field 'x') [hook f]",
                        });
}

TEST_CASE("a runaway hook is stopped at its line and the next hook still runs", "[lua][hooks]") {
    const Site site = test::load_seed_site("local");
    TempDir tmp("hooks-runaway");
    const std::string h = tmp.write("h.lua", R"(-- runaway hooks
hook { name = "loop", stack = function() while true do end end }
hook { name = "c-loop", stack = function()
  local x = ("a"):rep(40):match(("a*"):rep(12) .. "b")
end }
hook { name = "after", stack = function(site, stack, out) out.module.message("still runs") end }
)");
    SandboxLimits limits;
    limits.wall = std::chrono::milliseconds(300);
    Diagnostics diags;
    const auto adds = run_hook_files(site, {h}, diags, limits);
    Lines findings;
    for (const auto& d : diags.all()) findings.push_back(line_of(d));
    REQUIRE(findings.size() == 2);
    CHECK_THAT(findings[0], Catch::StartsWith(h + ":2:0: error: hook failed: "));
    CHECK_THAT(findings[0], Catch::Contains("limit exceeded"));
    CHECK_THAT(findings[0], Catch::EndsWith("[hook loop]"));
    CHECK(findings[1] == h + ":4:0: error: hook failed: time limit exceeded: ran longer than 300 ms (stopped in a library "
                             "call, e.g. a backtracking pattern?) [hook c-loop]");
    REQUIRE(adds.size() == 1);
    CHECK(adds[0].messages == Lines{"still runs"});
}

TEST_CASE("a module has one family: a hook's family may not differ from the stack's or another hook's", "[lua][hooks]") {
    Site site = test::load_seed_site("local");
    TempDir tmp("hooks-family");
    const std::string h = tmp.write("h.lua", R"(-- families
hook { name = "one", stack = function(site, stack, out) out.module.family("torch") end }
hook { name = "two", stack = function(site, stack, out) out.module.family("other") end }
hook { name = "same", stack = function(site, stack, out) out.module.family("torch") end }
)");
    Ran r = run(site, {h});
    CHECK(r.findings == Lines{h + ":3:0: error: family 'other' for stack pytorch/1.13.1-cpu differs from the family "
                                  "'torch' set at " + h + ":2 [hook two]"});
    // The stack's own family: the same is fine, another is an error here with a note at the key.
    site.stacks[0].family = "torch";
    site.regions.set("stacks.0.family", {"sites/local/site.toml", 44, 10});
    const std::string g = tmp.write("g.lua", "-- same\nhook { name = \"g\", stack = function(site, stack, out) out.module.family(\"torch\") end }\n");
    CHECK(run(site, {g}).findings == Lines{});
    site.stacks[0].family = "pytorch";
    r = run(site, {g});
    CHECK(r.findings ==
          Lines{g + ":2:0: error: family 'torch' conflicts with the family 'pytorch' of stack pytorch/1.13.1-cpu "
                    "(stacks.0.family): a module belongs to one family [hook g]",
                "sites/local/site.toml:44:10: note: the stack's family, which the hook's family 'torch' conflicts with"});
}
