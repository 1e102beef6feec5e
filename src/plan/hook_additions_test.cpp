// What site hooks may add: each validator's accepted and refused values, Lmod's default
// properties, and the job prologue's bash (every value one word).
#include <catch2/catch.hpp>

#include "plan/hook_additions.h"
#include "test_support.h"

using namespace sitegen;

TEST_CASE("hook values: families, properties and messages", "[plan][hooks]") {
    CHECK(hook_family_problem("pytorch").empty());
    CHECK(hook_family_problem("Torch_2").empty());
    for (const char* bad : {"", "2torch", "my-family", "a b", "x\n"}) CHECK(!hook_family_problem(bad).empty());
    CHECK(hook_family_problem(std::string(65, 'a')) != "");
    CHECK(hook_property_problem("arch", "gpu:mic").empty());
    CHECK(hook_property_problem("state", "v1.2-x").empty());
    for (const auto& [n, v] : std::vector<std::pair<std::string, std::string>>{
             {"", "gpu"}, {"arch", ""}, {"arch", ":gpu"}, {"arch", "gpu:"}, {"arch", "a::b"}, {"arch", "g\"pu"}, {"a-b", "x"}})
        CHECK(!hook_property_problem(n, v).empty());
    // Lmod 8.6's init/lmodrc.lua propT, each ':'-part checked.
    CHECK(lmod_default_property("arch", "gpu"));
    CHECK(lmod_default_property("arch", "gpu:mic:offload"));
    CHECK(lmod_default_property("state", "experimental"));
    CHECK(lmod_default_property("lmod", "sticky"));
    CHECK(!lmod_default_property("arch", "gpu:cuda"));
    CHECK(!lmod_default_property("site", "fast"));
    CHECK(hook_message_problem("two\nlines, UTF-8: Grüße").empty());
    for (const char* bad : {"", "\r", "tab\t", "\x7f", "\xc2\x9b" "31m", "\xff"}) CHECK(!hook_message_problem(bad).empty());
}

TEST_CASE("hook values: job commands", "[plan][hooks]") {
    const Site site = test::load_seed_site("local");
    const Stack& stack = site.stacks.front();
    CHECK(job_setenv_problem(site, stack, "MIOPEN_USER_DB_PATH", "/tmp/$USER 'x'\n").empty());
    for (const char* name : {"PATH", "RUNSCRIPTS", "LMOD_X", "IFS", "BASH_ENV", "SITEGEN_NRANKS", "PS4", "A-B", ""})
        CHECK(!job_setenv_problem(site, stack, name, "v").empty());
    CHECK(!job_setenv_problem(site, stack, "X", std::string(1, '\0')).empty());
    CHECK(job_module_problem("rocm/6.0.3").empty());
    for (const char* bad : {"", "-x", "/abs", "a b", "a;b"}) CHECK(!job_module_problem(bad).empty());
    CHECK(job_run_problem({"/usr/bin/env", "-i", "A=1"}).empty());
    CHECK(!job_run_problem({}).empty());
    CHECK(!job_run_problem({"-i"}).empty());
    CHECK(!job_run_problem({"A=1"}).empty());
    CHECK(!job_run_problem(std::vector<std::string>(65, "x")).empty());
}

TEST_CASE("the job prologue: one bash word per value, programs through env", "[plan][hooks]") {
    const Site site = test::load_seed_site("local");
    PlanOptions options{"/p"};
    CHECK(job_prologue_lines(site, site.stacks.front(), options).empty());
    HookAdditions a;
    a.job_prologue = {{JobCommand::Kind::setenv, {"A", "x'y"}},
                      {JobCommand::Kind::module_load, {"m/1"}},
                      {JobCommand::Kind::run, {"eval", "$(id)"}}};
    options.hooks = {a};
    CHECK(job_prologue_lines(site, site.stacks.front(), options) ==
          "# Job prologue from the site's Lua hooks (hooks/*.lua); each value is one quoted word.\n"
          "export A='x'\\''y'\n"
          "module load m/1\n"
          "# shellcheck disable=SC2016\n"
          "env -- eval '$(id)'\n");
    // A stack that is not one of the site's gets nothing.
    const Stack other = site.stacks.front();
    CHECK(job_prologue_lines(site, other, options).empty());
}
