// extend-venv-activate is emitted exactly for the stacks that ask for it, module baked in.
#include <catch2/catch.hpp>

#include "emit_venv_extension.h"
#include "load.h"

using namespace sitegen;

TEST_CASE("only venv_extension stacks get extend-venv-activate", "[venv]") {
    auto fs = make_disk_fs();
    for (const char* name : {"lumi", "frontier", "cirrus", "aurora", "local"}) {
        Site site;
        Diagnostics diags;
        REQUIRE(load_site(*fs, SITEGEN_SOURCE_DIR "/sites", name, site, diags));
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

TEST_CASE("the module name is baked in as one quoted shell word", "[venv]") {
    Site site;
    site.site.name = "s";
    Stack stack;
    stack.name = "py'torch";  // not a valid module name, but the writer must still hold
    stack.version = "1";
    stack.venv_extension = true;
    site.stacks.push_back(stack);
    const auto files = emit_venv_extensions(site, {"/p"});
    REQUIRE(files.size() == 1);
    CHECK(files[0].contents.find("\nMODULE='py'\\''torch/1'\n") != std::string::npos);
}
