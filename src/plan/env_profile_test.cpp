// Profiles resolve per stack: every condition kind, extends, overrides, the stack's env.
#include <catch2/catch.hpp>

#include "plan/env_profile.h"
#include "site/load.h"

using namespace sitegen;

namespace {

// A site from TOML text (only the tables the resolution reads need to be meaningful).
Site site_from(const std::string& toml) {
    MemoryFs fs;
    fs.files["sites/t/site.toml"] = {toml, false};
    Site site;
    Diagnostics diags;
    REQUIRE(load_site(fs, "sites", "t", site, diags));
    return site;
}

// "NAME=value [scope]" per resolved setting, in order.
std::vector<std::string> shown(const std::vector<EnvSetting>& settings) {
    std::vector<std::string> out;
    for (const auto& s : settings)
        out.push_back(s.name + "=" + s.value + (s.nodes == NodeScope::any ? "" : std::string(" [") + node_scope_text(s.nodes) + "]") +
                      (s.from_stack ? " [stack]" : ""));
    return out;
}

const char* const kProfiles = R"(
[collectives]
library = "rccl"
network_plugin = "aws-ofi-rccl"
env = { NCCL_DEBUG = "WARN" }
profiles = ["site"]

[[profiles]]
name = "fabric"
[[profiles.vars]]
name = "NCCL_SOCKET_IFNAME"
value = "hsn0"
reason = "r1"
[[profiles.vars]]
name = "NCCL_NET"
value = "AWS Libfabric"
reason = "old plugin"
when = { plugin_version = "<1.6", nodes = "multi" }
[[profiles.vars]]
name = "NCCL_NET"
value = "OFI"
reason = "new plugin"
when = { plugin_version = ">=1.6", nodes = "multi" }
[[profiles.vars]]
name = "ONLY_NCCL"
value = "1"
reason = "library"
when = { library = "nccl" }

[[profiles]]
name = "site"
extends = ["fabric"]
[[profiles.vars]]
name = "IN_CONTAINER"
value = "yes"
reason = "container"
when = { in_container = "yes" }
[[profiles.vars]]
name = "BARE"
value = "yes"
reason = "bare metal"
when = { in_container = "no" }
[[profiles.vars]]
name = "OLD_STACKS"
value = "1"
reason = "stack glob"
when = { stack = "PyTorch/2.1*" }
[[profiles.vars]]
name = "SIF_ONLY"
value = "1"
reason = "image glob"
when = { image = "*rocm-6.0*.sif" }
[[profiles.vars]]
name = "ONE_NODE"
value = "1"
reason = "single"
when = { nodes = "single" }

[[stacks]]
name = "PyTorch"
version = "2.1.0"
image = "pytorch-rocm-6.0.3.sif"
components = { aws-ofi-rccl = "1.4.0" }

[[stacks]]
name = "PyTorch"
version = "2.3.1"
image = "pytorch-rocm-6.2.sif"
env = { NCCL_SOCKET_IFNAME = "hsn1" }
)";

}  // namespace

TEST_CASE("versions and globs compare as documented", "[env_profile]") {
    CHECK(version_matches(">=1.6", "1.6"));
    CHECK(version_matches(">=1.6", "1.10.0"));  // numbers, not text
    CHECK_FALSE(version_matches(">=1.6", "1.4.0"));
    CHECK(version_matches("<1.6", "1.5.9"));
    CHECK(version_matches("=1.6.0", "1.6"));  // missing parts are 0
    CHECK(version_matches("<=1.6", "1.6.0"));
    CHECK_FALSE(version_matches(">1.6", "1.6"));
    CHECK_FALSE(version_matches(">=1.6", ""));  // unknown: no match
    CHECK_FALSE(version_matches(">=1.6", "1.6-rc1"));
    CHECK(valid_version_spec("<1.6"));
    CHECK_FALSE(valid_version_spec("1.6"));
    CHECK_FALSE(valid_version_spec(">= 1.6"));
    CHECK(glob_matches("PyTorch/2.1*", "PyTorch/2.1.0"));
    CHECK(glob_matches("*rocm-6.0*.sif", "pytorch-rocm-6.0.3.sif"));
    CHECK_FALSE(glob_matches("*rocm-6.0*.sif", "pytorch-rocm-6.2.sif"));
    CHECK(glob_matches("a?c", "abc"));
    CHECK_FALSE(glob_matches("a?c", "ac"));
}

TEST_CASE("each condition kind selects per stack, node counts stay run-time settings", "[env_profile]") {
    Site site = site_from(kProfiles);
    // Bare metal, plugin 1.4.0 (the stack's components), stack 2.1.0 with a rocm-6.0 image.
    CHECK(shown(resolve_env(site, site.stacks[0])) ==
          std::vector<std::string>{"NCCL_DEBUG=WARN", "NCCL_SOCKET_IFNAME=hsn0", "NCCL_NET=AWS Libfabric [multi-node]",
                                   "BARE=yes", "OLD_STACKS=1", "SIF_ONLY=1", "ONE_NODE=1 [single-node]"});
    // No plugin version for the second stack: neither NCCL_NET; its env overrides the profile.
    CHECK(shown(resolve_env(site, site.stacks[1])) ==
          std::vector<std::string>{"NCCL_DEBUG=WARN", "BARE=yes", "ONE_NODE=1 [single-node]", "NCCL_SOCKET_IFNAME=hsn1 [stack]"});
    // The site's version applies where the stack declares none.
    site.collectives.network_plugin_version = "1.6.2";
    CHECK(shown(resolve_env(site, site.stacks[1]))[1] == "NCCL_NET=OFI [multi-node]");
    // A container site and another library.
    site.container.enabled = true;
    site.stacks[0].python.layout = PythonLayout::container_system;  // a layout in the image
    site.collectives.library = CollectiveLib::nccl;
    const auto names = shown(resolve_env(site, site.stacks[0]));
    CHECK(std::find(names.begin(), names.end(), "IN_CONTAINER=yes") != names.end());
    CHECK(std::find(names.begin(), names.end(), "BARE=yes") == names.end());
    CHECK(std::find(names.begin(), names.end(), "ONLY_NCCL=1") != names.end());
}

TEST_CASE("profiles apply after those they extend, each once, origins name the entry", "[env_profile]") {
    Site site = site_from(kProfiles);
    site.collectives.profiles = {"site", "fabric", "nosuch"};
    CHECK(profile_order(site) == std::vector<size_t>{0, 1});
    const auto applied = applied_settings(site, site.stacks[0]);
    REQUIRE(applied.size() >= 2);
    CHECK(applied[0].origin == "collectives.env");
    CHECK(applied[0].path == "collectives.env.NCCL_DEBUG");
    CHECK(applied[1].origin == "profile fabric");
    CHECK(applied[1].path == "profiles.0.vars.0");
    CHECK(applied[1].reason == "r1");
    CHECK(applied[2].conditions == "plugin <1.6 (1.4.0)");
}

TEST_CASE("a later setting of the same name and node scope replaces the earlier in place", "[env_profile]") {
    Site site = site_from(R"(
[collectives]
library = "gloo"
profiles = ["b"]
[[profiles]]
name = "a"
vars = [ { name = "X", value = "1", reason = "a" }, { name = "Y", value = "1", reason = "a" } ]
[[profiles]]
name = "b"
extends = ["a"]
vars = [ { name = "X", value = "2", reason = "b" }, { name = "X", value = "3", reason = "b", when = { nodes = "multi" } } ]
[[stacks]]
name = "S"
version = "1"
)");
    CHECK(shown(resolve_env(site, site.stacks[0])) == std::vector<std::string>{"X=2", "Y=1", "X=3 [multi-node]"});
}

TEST_CASE("a stack's place in its site comes from its address, and a copy has none", "[env]") {
    Site site;
    site.stacks.resize(3);
    CHECK(stack_index(site, site.stacks[0]) == 0u);
    CHECK(stack_index(site, site.stacks[2]) == 2u);
    const Stack copy = site.stacks[1];
    CHECK_FALSE(stack_index(site, copy).has_value());
    CHECK_FALSE(stack_index(Site{}, copy).has_value());
}
