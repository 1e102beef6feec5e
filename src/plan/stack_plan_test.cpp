// Unit tests: a build computes each stack's plan once, and every renderer reads that plan.
#include <catch2/catch.hpp>

#include "pipeline.h"
#include "plan/stack_plan.h"
#include "render/renderers.h"
#include "test_support.h"

using namespace sitegen;

TEST_CASE("a build plans each stack exactly once", "[plan]") {
    for (const auto& name : test::seed_site_names()) {
        INFO(name);
        const Site site = test::load_seed_site(name);
        const size_t before = plans_computed();
        const OutputList outputs = emit_all(site, PlanOptions{site.site.install_prefix});
        CHECK(plans_computed() - before == site.stacks.size());
        CHECK(!outputs.empty());
    }
}

TEST_CASE("a site of many stacks is planned once per stack for all renderers", "[plan]") {
    Site site = test::load_seed_site("local");
    const Stack first = site.stacks.front();
    for (int i = 0; i < 40; ++i) {
        Stack s = first;
        s.version = "9." + std::to_string(i);
        s.is_default = false;
        site.stacks.push_back(s);
    }
    const size_t before = plans_computed();
    emit_all(site, PlanOptions{"/opt/p"});
    CHECK(plans_computed() - before == site.stacks.size());
    CHECK(renderers().size() == 4);
}

TEST_CASE("the plan holds what every renderer needs", "[plan]") {
    const Site lumi = test::load_seed_site("lumi");
    const SitePlan plan = plan_site(lumi, PlanOptions{"/p"});
    REQUIRE(plan.stacks.size() == lumi.stacks.size());
    const StackPlan& p = plan.stacks.front();
    CHECK(p.module.install_dir == "/p/software/PyTorch/" + lumi.stacks.front().module_version());
    CHECK(p.module.depends_on.empty());  // depend_on_base_modules = false: any LUMI stack or CrayEnv
    CHECK(p.install.method == InstallMethod::copy_image);
    CHECK(p.install.image == lumi.stacks.front().image);
    // The module's variables in the order it sets them, and the site env marked as such.
    REQUIRE(p.module.variables.size() >= 4);
    CHECK(p.module.variables[0] == "SIF");
    CHECK(p.module.variables[1] == "SIFPYTORCH");
    size_t site_env = 0;
    for (const auto& op : p.module.ops)
        if (op.section == ModuleSection::site_env && op.kind == ModuleOp::Kind::setenv) ++site_env;
    CHECK(site_env == 2);  // NCCL_NET_GDR_LEVEL, NCCL_SOCKET_IFNAME
    // Files: the rank wrapper first, in install order.
    REQUIRE(!p.files.empty());
    CHECK(p.files.front().rel == "runscripts/conda-python-distributed");
    // One parse per file (python3's for acceptance.py, bash -n for the rest), then the
    // payload check (torch at the listed version, in the image), then the venv check (the
    // demo's `which python` in the container is the venv's).
    REQUIRE(p.install.sanity_commands.size() == p.files.size() + 2);
    CHECK(p.files[p.files.size() - 2].rel == "runscripts/acceptance.py");
    CHECK(p.install.sanity_commands[p.files.size() - 2].front().text.starts_with("python3 -c 'import ast"));
    CHECK(p.install.sanity_commands[p.files.size()].front().text.find("singularity exec \"$SIF\" python3.12 -c \"import torch;") == 0);
    CHECK(p.install.sanity_commands.back().front().text ==
          "singularity exec \"$SIF\" bash -c 'test \"$(command -v python)\" = /user-software/venv/pytorch/bin/python'");
}

TEST_CASE("a user-installed stack's help says where pip works and how to get a copy", "[plan]") {
    const Site lumi = test::load_seed_site("lumi");
    const ModulePlan m = plan_site(lumi, PlanOptions{"/p"}).stacks.front().module;
    for (const char* line : {"This stack is installed per user or project with EasyBuild into $EBU_USER_PREFIX.\n",
                             "  module load LUMI/24.03 partition/container EasyBuild-user\n"
                             "  eb PyTorch-2.3.1-rocm-6.0.3-python-3.12-singularity-20240923.eb\n",
                             "but pip cannot install there.\n",
                             "The job script loads LUMI/24.03 first; this module needs none of them\n"}) {
        INFO(line);
        CHECK(m.help.find(line) != std::string::npos);
    }
    CHECK(m.help.find("To add\npackages, `pip install` inside the container") == std::string::npos);
    // Sites that keep depend_on_base_modules (the default) still depend on theirs.
    const Site frontier = test::load_seed_site("frontier");
    CHECK(plan_site(frontier, PlanOptions{"/p"}).stacks.front().module.depends_on == frontier.site.base_modules);
}
