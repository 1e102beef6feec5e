// Loading site TOML: values, source regions, extends layering, and error reporting.
#include <catch2/catch.hpp>

#include "site/check.h"
#include "site/load.h"

using namespace sitegen;

namespace {

const char* kMinimal = R"([site]
name = "t"
description = "d"
scheduler = "pbs"
launcher = "mpiexec"
install_prefix = "/opt/t"

[hardware]
gpu_vendor = "intel"
devices_per_node = 2
cores_per_node = 16
device_cores = ["0-7", "8-15"]

[collectives]
library = "oneccl"

[collectives.env]
CCL_LOG_LEVEL = "WARN"

[python]
layout = "system"
version = "3.11"

[[stacks]]
name = "frameworks"
version = "2024.2"
description = "x"
homepage = "https://example.org/"
)";

bool load(MemoryFs& fs, const std::string& text, Site& site, Diagnostics& diags) {
    fs.files["sites/t/site.toml"] = {text, false};
    return load_site(fs, "sites", "t", site, diags);
}

}  // namespace

TEST_CASE("a minimal site loads with every value and region", "[load]") {
    MemoryFs fs;
    Site site;
    Diagnostics diags;
    REQUIRE(load(fs, kMinimal, site, diags));
    check_site(site, "t", diags);
    CHECK_FALSE(diags.has_errors());
    CHECK(site.site.scheduler == Scheduler::pbs);
    CHECK(site.hardware.gpu_vendor == GpuVendor::intel);
    CHECK(site.hardware.device_cores == std::vector<std::vector<int>>{{0, 1, 2, 3, 4, 5, 6, 7},
                                                                      {8, 9, 10, 11, 12, 13, 14, 15}});
    CHECK(site.collectives.env == EnvList{{"CCL_LOG_LEVEL", "WARN"}});
    REQUIRE(site.stacks.size() == 1);
    CHECK(site.stacks[0].module_full_name() == "frameworks/2024.2");
    auto r = site.where("collectives.env.CCL_LOG_LEVEL");
    CHECK(r.file == "sites/t/site.toml");
    CHECK(r.line == 18);
    CHECK(r.column == 1);
    CHECK(site.where("stacks.0.version").line == 26);
    // An unknown path falls back to its nearest recorded parent.
    CHECK(site.where("hardware.no_such_key").line == 8);
}

TEST_CASE("extends layers fragments under the site, key by key", "[load]") {
    MemoryFs fs;
    fs.files["sites/shared/node.toml"] = {"[hardware]\ncores_per_node = 99\nnics = [\"hsn0\"]\n"
                                          "[collectives.env]\nA = \"fragment\"\nB = \"fragment\"\n", false};
    std::string text = std::string("extends = [\"../shared/node.toml\"]\n") + kMinimal;
    text += "\n";
    Site site;
    Diagnostics diags;
    REQUIRE(load(fs, text, site, diags));
    CHECK(site.hardware.cores_per_node == 16);           // the site overrides
    CHECK(site.hardware.nics == std::vector<std::string>{"hsn0"});  // the fragment provides
    CHECK(site.where("hardware.nics").file == "sites/shared/node.toml");
    CHECK(site.collectives.env.size() == 3);
    CHECK(site.files == std::vector<std::string>{"sites/t/site.toml", "sites/shared/node.toml"});
}

TEST_CASE("every error in a file is reported in one run", "[load]") {
    MemoryFs fs;
    std::string text = kMinimal;
    text.replace(text.find("scheduler = \"pbs\""), 17, "scheduler = \"pbz\"");
    text.replace(text.find("cores_per_node = 16"), 19, "cores_per_nod = 16");
    text += "colour = \"blue\"\n";
    Site site;
    Diagnostics diags;
    CHECK_FALSE(load(fs, text, site, diags));
    auto all = diags.sorted();
    REQUIRE(all.size() == 3);
    CHECK(all[0].message == "'site.scheduler' must be one of 'slurm', 'pbs', found 'pbz'");
    CHECK(all[0].hint == "did you mean 'pbs'?");
    CHECK(all[1].message == "unknown key 'cores_per_nod' in [hardware]");
    CHECK(all[1].hint == "did you mean 'cores_per_node'?");
    CHECK(all[2].message == "unknown key 'colour' in [[stacks]]");
}

TEST_CASE("an extends chain deeper than the limit is refused, not followed forever", "[load]") {
    MemoryFs fs;
    for (int i = 0; i < 40; ++i)
        fs.files["sites/shared/f" + std::to_string(i) + ".toml"] = {
            "extends = [\"f" + std::to_string(i + 1) + ".toml\"]\n", false};
    fs.files["sites/shared/f40.toml"] = {"", false};
    Site site;
    Diagnostics diags;
    CHECK_FALSE(load(fs, std::string("extends = [\"../shared/f0.toml\"]\n") + kMinimal, site, diags));
    REQUIRE(diags.error_count() == 1);
    CHECK(diags.all()[0].message == "'extends' chain deeper than 16 files");
}

TEST_CASE("rendered diagnostics carry file:line:col, the source line and a caret", "[diagnostics]") {
    MemoryFs fs;
    std::string text = kMinimal;
    text.replace(text.find("cores_per_node = 16"), 19, "cores_per_node = \"16\"");
    Site site;
    Diagnostics diags;
    CHECK_FALSE(load(fs, text, site, diags));
    SourceReader read = [&](const std::string& path, std::string& out) {
        std::string error;
        return fs.read(path, out, error);
    };
    CHECK(render_all(diags, read) ==
          "sites/t/site.toml:11:18: error: 'hardware.cores_per_node' must be an integer, found a string\n"
          "  cores_per_node = \"16\"\n"
          "                   ^\n"
          "1 error, 0 warnings\n");
}
