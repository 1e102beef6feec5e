// Unit tests [install]: the install steps of the python layouts, written out by hand: the
// venv over an image's python (no conda), the conda env from an environment file or from
// channels, the venv over a python module.
#include <catch2/catch.hpp>

#include <map>

#include "out/fs.h"
#include "plan/stack_plan.h"
#include "site/check.h"
#include "site/load.h"
#include "test_support.h"

using namespace sitegen;

namespace {

// A site with one stack; `container` and `python` are TOML text for those tables.
std::string site_text(const std::string& container, const std::string& python) {
    return R"([site]
name = "t"
description = "t"
scheduler = "slurm"
launcher = "srun"
install_prefix = "/opt/t"

[hardware]
gpu_vendor = "none"
devices_per_node = 0
cores_per_node = 4

[collectives]
library = "gloo"
)" + container + "\n[python]\n" + python + R"(
[[stacks]]
name = "torch"
version = "2.4.0"
description = "t"
homepage = "https://pytorch.org/"
)" + (container.empty() ? "" : "image = \"torch.sif\"\n") + R"(
[stacks.components]
torch = "2.4.0"
numpy = "1.26.4"
)";
}

Site load_checked(const std::string& text, const std::map<std::string, std::string>& extra = {}) {
    return test::load_checked_site(text, extra);
}

// The steps as one line each: install-dir paths as {I}/rel.
std::vector<std::string> steps_of(const Site& site) {
    const SitePlan plan = plan_site(site, PlanOptions{"/opt/t"});
    std::vector<std::string> out;
    for (const auto& cmd : plan.stacks.front().install.steps) {
        std::string line;
        for (const auto& p : cmd) line += p.in_install_dir ? "{I}/" + p.text : p.text;
        out.push_back(line);
    }
    return out;
}

const std::string kCharliecloud = "[container]\nruntime = \"charliecloud\"\nimage_dir = \"/images\"\n";

}  // namespace

TEST_CASE("container-system-venv: the image's python makes the venv in /user-software, no conda", "[install]") {
    const Site site = load_checked(site_text(kCharliecloud, "layout = \"container-system-venv\"\nversion = \"3.11\"\n"
                                                            "interpreter = \"/usr/bin/python3\"\n"
                                                            "venv = \"/user-software/venv/torch\"\n"));
    CHECK(steps_of(site) == std::vector<std::string>{
                                "mkdir -p {I}/bin {I}/runscripts",  // bin: start-shell
                                "mkdir -p {I}/user-software",
                                "ch-run -b {I}/user-software:/user-software {I}/torch.sif -- bash -c "
                                "'mkdir -p /user-software/venv && /usr/bin/python3 -m venv --system-site-packages "
                                "/user-software/venv/torch'",
                            });
}

TEST_CASE("container-system-venv under singularity: python3 by default, exec in the image", "[install]") {
    const Site site = load_checked(site_text("[container]\nruntime = \"singularity\"\nimage_dir = \"/images\"\n",
                                             "layout = \"container-system-venv\"\nversion = \"3.11\"\n"
                                             "venv = \"/user-software/venv/torch\"\n"));
    const auto steps = steps_of(site);
    REQUIRE(steps.size() == 3);
    CHECK(steps[2] == "singularity exec --bind {I}/user-software:/user-software {I}/torch.sif bash -c "
                      "'mkdir -p /user-software/venv && python3 -m venv --system-site-packages /user-software/venv/torch'");
}

TEST_CASE("conda-env from an environment file: its bytes written, then conda env create", "[install]") {
    const std::string yml = "name: t\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.11\n  - numpy # 100% 'quoted'\n";
    const Site site = load_checked(site_text("", "layout = \"conda-env\"\nversion = \"3.11\"\n"
                                                 "environment_file = \"env/torch.yml\"\n"),
                                   {{"sites/t/env/torch.yml", yml}});
    CHECK(site.stacks.front().python.environment == yml);
    CHECK(steps_of(site) == std::vector<std::string>{
                                "mkdir -p {I}/runscripts",
                                "printf %s 'name: t\nchannels:\n  - conda-forge\ndependencies:\n  - python=3.11\n"
                                "  - numpy # 100% '\\''quoted'\\''\n' > {I}/conda-environment.yml",
                                "conda env create --prefix {I}/conda-env --file {I}/conda-environment.yml",
                            });
}

TEST_CASE("conda-env with channels only: conda create from those channels, then pip", "[install]") {
    const Site site = load_checked(site_text("", "layout = \"conda-env\"\nversion = \"3.11.4\"\n"
                                                 "channels = [\"conda-forge\", \"https://conda.example.org/a;b\"]\n"));
    CHECK(steps_of(site) == std::vector<std::string>{
                                "mkdir -p {I}/runscripts",
                                "conda create --yes --prefix {I}/conda-env --override-channels -c conda-forge "
                                "-c 'https://conda.example.org/a;b' python=3.11",
                                "{I}/conda-env/bin/python -m pip install --no-cache-dir numpy==1.26.4 torch==2.4.0",
                            });
}

TEST_CASE("module-venv: the module's pythonX.Y makes the venv, pip installs into it", "[install]") {
    const Site site = load_checked(site_text("", "layout = \"module-venv\"\nversion = \"3.12.1\"\n"));
    CHECK(steps_of(site) == std::vector<std::string>{
                                "mkdir -p {I}/runscripts",
                                "python3.12 -m venv --system-site-packages {I}/venv",
                                "{I}/venv/bin/python -m pip install --no-cache-dir numpy==1.26.4 torch==2.4.0",
                            });
    // The payload check runs the venv's python, not the base interpreter.
    const SitePlan plan = plan_site(site, PlanOptions{"/opt/t"});
    const ShellCommand& check = plan.stacks.front().install.sanity_commands.back();
    REQUIRE(check.size() == 2);
    CHECK(check[0].in_install_dir);
    CHECK(check[0].text == "venv/bin/python");
    CHECK(check[1].text.starts_with(" -c \"import torch;"));
}
