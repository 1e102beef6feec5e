// extend-venv-activate is emitted exactly for the stacks that ask for it, with the module
// baked in as a quoted shell word and the hook markers carrying the module and format.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "plan/venv_extension.h"
#include "render/emit.h"
#include "site/load.h"
#include "test_support.h"

using namespace sitegen;

namespace {

// Every stack's planned extend-venv-activate, at its output path.
OutputList emit_venv_extensions(const Site& site, const PlanOptions&) {
    OutputList out;
    for (const auto& stack : site.stacks) {
        std::vector<PlannedFile> files;
        plan_venv_extension(stack, files);
        for (auto& f : files) out.push_back({stack_output_path(site, stack, f.rel), std::move(f.contents), f.executable});
    }
    return out;
}

Site one_stack_site(const std::string& name, const std::string& version, const std::string& python) {
    Site site;
    site.site.name = "s";
    Stack stack;
    stack.name = name;
    stack.version = version;
    stack.python.version = python;
    stack.venv_extension = true;
    site.stacks.push_back(stack);
    return site;
}

bool has(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

}  // namespace

TEST_CASE("only venv_extension stacks get extend-venv-activate", "[venv]") {
    for (const auto& name : sitegen::test::seed_site_names()) {
        const Site site = sitegen::test::load_seed_site(name);
        const auto files = emit_venv_extensions(site, {"/p"});
        size_t wanted = 0;
        for (const auto& s : site.stacks) wanted += s.venv_extension ? 1 : 0;
        INFO(name);
        CHECK(files.size() == wanted);
        for (const auto& f : files) {
            CHECK(f.executable);
            CHECK(f.path.ends_with("/bin/extend-venv-activate"));
        }
    }
}

TEST_CASE("cirrus: the script loads pytorch/2.3.1-gpu built for Python 3.12", "[venv]") {
    const Site site = sitegen::test::load_seed_site("cirrus");
    const auto files = emit_venv_extensions(site, {"/p"});
    REQUIRE(files.size() == 1);
    CHECK(files[0].path == "modules-out/cirrus/software/pytorch/2.3.1-gpu/bin/extend-venv-activate");
    const std::string& s = files[0].contents;
    CHECK(s.starts_with("#!/usr/bin/env bash\n"));
    CHECK(has(s, "\nMODULE=pytorch/2.3.1-gpu\n"));
    CHECK(has(s, "\nMODULE_PYTHON=3.12\n"));
    CHECK(has(s, "\nBEGIN='# >>> sitegen venv extension for pytorch/2.3.1-gpu (format 2) >>>'\n"));
    CHECK(has(s, "\nEND='# <<< sitegen venv extension for pytorch/2.3.1-gpu <<<'\n"));
    CHECK(has(s, "\n            if module -q load pytorch/2.3.1-gpu ; then _SITEGEN_VENV_MODULE=pytorch/2.3.1-gpu ; fi\n"));
    CHECK(has(s, "\n                module -q unload \"$_SITEGEN_VENV_MODULE\"\n"));
}

TEST_CASE("the module name is baked in as one quoted shell word", "[venv]") {
    // Not a valid module name, but the writers must still hold.
    const auto files = emit_venv_extensions(one_stack_site("py'torch", "1", "3.11"), {"/p"});
    REQUIRE(files.size() == 1);
    const std::string& s = files[0].contents;
    CHECK(has(s, "\nMODULE='py'\\''torch/1'\n"));
    // The hook holds the word 'py'\''torch/1', and the hook itself is one quoted word,
    // so each of that word's quotes is quoted once more: ' -> '\''.
    CHECK(has(s, "module -q load '\\''py'\\''\\'\\'''\\''torch/1'\\'' ;"));
}

TEST_CASE("a module name with a line break is refused (it would end the marker comment)", "[venv]") {
    CHECK_THROWS_AS(emit_venv_extensions(one_stack_site("torch\nrm", "1", "3.11"), {"/p"}), std::invalid_argument);
}

TEST_CASE("the module's Python is cut to X.Y, none is an empty word", "[venv]") {
    CHECK(has(emit_venv_extensions(one_stack_site("t", "1", "3.12.1"), {"/p"})[0].contents, "\nMODULE_PYTHON=3.12\n"));
    CHECK(has(emit_venv_extensions(one_stack_site("t", "1", ""), {"/p"})[0].contents, "\nMODULE_PYTHON=''\n"));
}

TEST_CASE("same site, same bytes", "[venv]") {
    const auto a = emit_venv_extensions(one_stack_site("t", "1", "3.11"), {"/p"});
    const auto b = emit_venv_extensions(one_stack_site("t", "1", "3.11"), {"/p"});
    REQUIRE(a.size() == 1);
    CHECK(a[0].contents == b[0].contents);
}
