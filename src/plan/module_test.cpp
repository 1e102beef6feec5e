// Unit tests [module]: what the module sets for the python layouts without conda in the
// image (a venv over the image's python) and for the host venv over a python module, and
// what the conda env made from an environment file sets; values written by hand.
#include <catch2/catch.hpp>

#include <algorithm>

#include "out/fs.h"
#include "plan/module.h"
#include "plan/stack_plan.h"
#include "plan/traits.h"
#include "site/check.h"
#include "site/load.h"
#include "test_support.h"

using namespace sitegen;

namespace {

StackPlan plan_of(const std::string& runtime, const std::string& python) {
    std::string text = R"([site]
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
)";
    if (!runtime.empty()) text += "\n[container]\nruntime = \"" + runtime + "\"\nimage_dir = \"/images\"\n";
    text += "\n[python]\n" + python +
            "\n[[stacks]]\nname = \"torch\"\nversion = \"2.4.0\"\ndescription = \"t\"\nhomepage = \"https://pytorch.org/\"\n";
    if (!runtime.empty()) text += "image = \"torch.sif\"\n";
    const Site site = test::load_checked_site(text, {{"sites/t/env.yml", "dependencies:\n  - python=3.11\n"}});
    return plan_site(site, PlanOptions{"/opt/t"}).stacks.front();
}

std::string value_text(const ModuleValue& v) {
    std::string out;
    for (const auto& p : v) {
        std::string parts;
        for (const auto& part : p.parts) parts += "/" + part;
        switch (p.kind) {
            case ValuePiece::Kind::text: out += p.text; break;
            case ValuePiece::Kind::root: out += "{root}"; break;
            case ValuePiece::Kind::under_root: out += "{root}" + parts; break;
            case ValuePiece::Kind::local: out += "{" + p.text + "}"; break;
            case ValuePiece::Kind::under_local: out += "{" + p.text + "}" + parts; break;
        }
    }
    return out;
}

// setenv and prepend_path operations as "NAME=value" / "NAME+=value", in order.
std::vector<std::string> variable_ops(const StackPlan& p) {
    std::vector<std::string> out;
    for (const auto& op : p.module.ops) {
        if (op.kind == ModuleOp::Kind::setenv) out.push_back(op.name + "=" + value_text(op.value));
        if (op.kind == ModuleOp::Kind::prepend_path) out.push_back(op.name + "+=" + value_text(op.value));
    }
    return out;
}

bool mentions_conda(const StackPlan& p) {
    for (const auto& v : variable_ops(p))
        if (v.find("CONDA") != std::string::npos || v.find("conda") != std::string::npos) return true;
    for (const auto& f : p.files)
        if (f.contents.find("CONDA") != std::string::npos || f.contents.find("conda") != std::string::npos) return true;
    return false;
}

const char* const kVenvPython = "layout = \"container-system-venv\"\nversion = \"3.11\"\nvenv = \"/user-software/venv/torch\"\n";

}  // namespace

TEST_CASE("container-system-venv under singularity: the venv activated in the container, no conda", "[module]") {
    const StackPlan p = plan_of("singularity", kVenvPython);
    CHECK(variable_ops(p) == std::vector<std::string>{
                                 "SIF={image}", "SIFTORCH={image}", "CONTAINERROOT={root}",
                                 "RUNSCRIPTSTORCH={root}/runscripts", "SINGULARITY_BIND={binds}",
                                 "SINGULARITYENV_PREPEND_PATH=/runscripts:/user-software/venv/torch/bin",
                                 "SINGULARITYENV_VIRTUAL_ENV=/user-software/venv/torch",
                                 "PATH+={root}/bin",  // start-shell
                                 "RUNSCRIPTS={root}/runscripts"});
    CHECK_FALSE(mentions_conda(p));
}

TEST_CASE("container-system-venv under charliecloud: the rank wrapper activates the venv", "[module]") {
    const StackPlan p = plan_of("charliecloud", kVenvPython);
    CHECK(variable_ops(p) == std::vector<std::string>{"SIF={image}", "SIFTORCH={image}", "CONTAINERROOT={root}",
                                                      "RUNSCRIPTSTORCH={root}/runscripts", "CONTAINER_BINDS={binds}",
                                                      "PATH+={root}/bin", "RUNSCRIPTS={root}/runscripts"});
    CHECK_FALSE(mentions_conda(p));
    REQUIRE(p.files.front().rel == "runscripts/python-distributed");
    const std::string& wrapper = p.files.front().contents;
    CHECK(wrapper.find("export VIRTUAL_ENV=/user-software/venv/torch\n"
                       "export PATH=\"$VIRTUAL_ENV/bin:$PATH\"\n"
                       "unset PYTHONHOME\n") != std::string::npos);
    CHECK(wrapper.ends_with("exec python3 \"$@\"\n"));
}

TEST_CASE("conda-env from an environment file: the env in the install dir, activated by prefix", "[module]") {
    const StackPlan p = plan_of("", "layout = \"conda-env\"\nversion = \"3.11\"\nenvironment_file = \"env.yml\"\n");
    CHECK(variable_ops(p) == std::vector<std::string>{"CONDA_PREFIX={conda_env}", "CONDA_DEFAULT_ENV={conda_env}",
                                                      "PATH+={conda_env}/bin", "RUNSCRIPTS={root}/runscripts"});
}

TEST_CASE("module-venv: the venv's bin first on PATH, its site-packages on PYTHONPATH", "[module]") {
    const StackPlan p = plan_of("", "layout = \"module-venv\"\nversion = \"3.12.1\"\n");
    CHECK(variable_ops(p) == std::vector<std::string>{"PATH+={venv}/bin",
                                                      "PYTHONPATH+={venv}/lib/python3.12/site-packages",
                                                      "RUNSCRIPTS={root}/runscripts"});
    CHECK(p.files.front().contents.ends_with("exec python \"$@\"\n"));
}

TEST_CASE("the variables a module owns are ones its full plan sets", "[module]") {
    // module_owned_variables builds names only (no values, no binds); the full plan must set
    // each of them, for every stack of every seed site, the binds' variable included.
    for (const auto& name : test::seed_site_names()) {
        const Site site = test::load_seed_site(name);
        PlanOptions options;
        options.prefix = site.site.install_prefix;
        for (const Stack& stack : site.stacks) {
            INFO(name << " " << stack.module_full_name());
            const std::vector<std::string> owned = module_owned_variables(site, stack);
            const std::vector<std::string>& all = plan_stack(site, stack, options).module.variables;
            REQUIRE_FALSE(owned.empty());
            for (const auto& v : owned) {
                INFO("variable " << v);
                CHECK(std::find(all.begin(), all.end(), v) != all.end());
            }
            if (site.container.enabled && !traits(site.container.runtime).host_filesystem)
                CHECK(std::any_of(owned.begin(), owned.end(), [](const std::string& v) {
                    return v == "CONTAINER_BINDS" || (v.size() > 5 && v.compare(v.size() - 5, 5, "_BIND") == 0);
                }));
        }
    }
}
