// The acceptance job of every seed site: the expected affinity is the binding the batch script
// applies, site values only as literals, and the Python passes pycodestyle.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "plan/acceptance.h"
#include "plan/stack_plan.h"
#include "test_support.h"

using namespace sitegen;

namespace {

const PlannedFile& planned(const StackPlan& plan, const std::string& rel) {
    for (const auto& f : plan.files)
        if (f.rel == rel) return f;
    FAIL("no planned file " << rel);
    throw std::logic_error("unreachable");
}

StackPlan plan_of(const Site& site) { return plan_stack(site, site.stacks.front(), {site.site.install_prefix}); }

}  // namespace

TEST_CASE("acceptance: every seed stack ships acceptance.py and acceptance.<scheduler>", "[acceptance]") {
    for (const auto& name : test::seed_site_names()) {
        INFO("site " << name);
        const Site site = test::load_seed_site(name);
        const StackPlan plan = plan_of(site);
        const std::string sched = site.site.scheduler == Scheduler::slurm ? "slurm"
                                  : site.site.scheduler == Scheduler::flux ? "flux"
                                                                            : "pbs";
        const PlannedFile& job = planned(plan, "runscripts/acceptance." + sched);
        const PlannedFile& py = planned(plan, "runscripts/acceptance.py");
        CHECK(job.executable);
        CHECK(py.executable);
        // The acceptance job runs the stack's own batch script, with its directives.
        CHECK_THAT(job.contents, Catch::Contains("\"$runscripts/job." + sched + "\" \"$program\" \"$@\""));
        const std::string& batch = planned(plan, "runscripts/job." + sched).contents;
        const std::string directive = sched == "slurm" ? "#SBATCH --nodes=" : sched == "flux" ? "# flux: -N " : "#PBS -l select=";
        const size_t at = batch.find(directive);
        REQUIRE(at != std::string::npos);
        CHECK_THAT(job.contents, Catch::Contains(batch.substr(at, batch.find('\n', at) - at + 1)));
        CHECK_THAT(py.contents, Catch::Contains("SITE = '" + name + "'\n"));
    }
}

TEST_CASE("acceptance: the expected cores are the launcher's binding", "[acceptance]") {
    // LUMI: mask binding, GCD 0 on CCD 6 without its first (reserved) core.
    CHECK_THAT(planned(plan_of(test::load_seed_site("lumi")), "runscripts/acceptance.py").contents,
               Catch::Contains("RANK_CORES = [\n    [49, 50, 51, 52, 53, 54, 55],\n    [57, 58, 59, 60, 61, 62, 63],\n"));
    // Aurora: PALS list binding, 3 cores from offset 2 of each tile's 8.
    CHECK_THAT(planned(plan_of(test::load_seed_site("aurora")), "runscripts/acceptance.py").contents,
               Catch::Contains("RANK_CORES = [\n    [2, 3, 4],\n    [10, 11, 12],\n"));
    // local: no binding; the check is then that ranks do not share their CPUs.
    const std::string local = planned(plan_of(test::load_seed_site("local")), "runscripts/acceptance.py").contents;
    CHECK_THAT(local, Catch::Contains("RANK_CORES = None\n"));
    CHECK_THAT(local, Catch::Contains("CPUS_PER_TASK = 1\n"));
    CHECK_THAT(local, Catch::Contains("COLLECTIVE_ENV = [\n    ('GLOO_SOCKET_IFNAME', 'lo'),\n]\n"));
    CHECK_THAT(local, Catch::StartsWith("#!/usr/bin/python3\n"));
    // A mask binding on a PBS site is not applied by job.pbs: nothing to expect then.
    Site pbs_mask = test::load_seed_site("aurora");
    pbs_mask.binding.style = BindingStyle::mask;
    CHECK_THAT(planned(plan_of(pbs_mask), "runscripts/acceptance.py").contents, Catch::Contains("RANK_CORES = None\n"));
}

TEST_CASE("acceptance: site values are literals, never code", "[acceptance]") {
    Site site = test::load_seed_site("lumi");
    site.collectives.network_plugin = "x'); import os; os.system('id') #";
    site.collectives.env.emplace_back("NCCL_IB_HCA", std::string(150, 'm') + "\n'\"");
    site.site.name = "lu mi'$(id)";
    const StackPlan plan = plan_of(site);
    const std::string py = planned(plan, "runscripts/acceptance.py").contents;
    CHECK_THAT(py, Catch::Contains("NETWORK_PLUGIN = 'x\\'); import os; os.system(\\'id\\') #'"));
    CHECK_THAT(py, Catch::Contains("'" + std::string(150, 'm') + "\\n\\'\"'),  # noqa: E501\n"));
    CHECK_THAT(planned(plan, "runscripts/acceptance.slurm").contents, Catch::Contains(" 'lu mi'\\''$(id)' \"$status\"\n"));
    // The file still parses and passes pycodestyle.
    test::require_tool("/usr/bin/python3");
    test::TempDir dir("acceptance");
    const std::string path = dir.write("acceptance.py", py);
    CHECK(test::run("/usr/bin/python3 -c 'import ast,sys; ast.parse(open(sys.argv[1]).read())' " + path) == 0);
    CHECK(test::run("/usr/bin/python3 -m pycodestyle --max-line-length=120 " + path) == 0);
}

TEST_CASE("acceptance: needs the batch script planned first", "[acceptance]") {
    const Site site = test::load_seed_site("local");
    std::vector<PlannedFile> files;
    CHECK_THROWS_AS(plan_acceptance(site, site.stacks.front(), {"/p"}, files), std::invalid_argument);
}

TEST_CASE("acceptance: the visibility policy and rank starter are literals", "[acceptance]") {
    // LUMI as seeded: narrow, one rank per GCD, ranks started by srun.
    const std::string lumi = planned(plan_of(test::load_seed_site("lumi")), "runscripts/acceptance.py").contents;
    CHECK_THAT(lumi, Catch::Contains("\nVISIBILITY = 'narrow'\nRANKS_PER_DEVICE = 1\n"));
    CHECK_THAT(lumi, Catch::Contains("\nRANK_STARTER = 'launcher'\n"));
    // Aurora's 48-rank CCS run: 4 ranks share each tile.
    Site ccs = test::load_seed_site("aurora");
    ccs.collectives.visibility = VisibilityPolicy::shared;
    ccs.collectives.ranks_per_device = 4;
    CHECK_THAT(planned(plan_of(ccs), "runscripts/acceptance.py").contents,
               Catch::Contains("\nVISIBILITY = 'shared'\nRANKS_PER_DEVICE = 4\n"));
    // ranks_per_device only counts under shared.
    Site all = test::load_seed_site("aurora");
    all.collectives.visibility = VisibilityPolicy::all;
    all.collectives.ranks_per_device = 4;
    CHECK_THAT(planned(plan_of(all), "runscripts/acceptance.py").contents,
               Catch::Contains("\nVISIBILITY = 'all'\nRANKS_PER_DEVICE = 1\n"));
    // torchrun: no per-rank binding to expect.
    Site torchrun = test::load_seed_site("local");
    torchrun.batch.rank_starter = RankStarter::torchrun;
    const std::string tr = planned(plan_of(torchrun), "runscripts/acceptance.py").contents;
    CHECK_THAT(tr, Catch::Contains("\nRANK_STARTER = 'torchrun'\n"));
    CHECK_THAT(tr, Catch::Contains("\nRANK_CORES = None\n"));
}

TEST_CASE("acceptance: the driver and bandwidth expectations as literals", "[acceptance][driver]") {
    Site site = test::load_seed_site("local");
    CHECK(acceptance_expectations(site, site.stacks.front()) ==
          "# The GPU driver the stack needs (stacks.min_driver; \"\" = not checked), read from its version\n"
          "# file as the module's driver gate does (SITEGEN_DRIVER_VERSION_FILE names another).\n"
          "MIN_DRIVER = ''\n"
          "DRIVER_VERSION_FILE = ''\n"
          "DRIVER = 'GPU driver'\n"
          "# Across nodes, the best all_reduce bus bandwidth as a share of NETWORK_LINKS x LINK_GBPS\n"
          "# (hardware.network_links, link_gbps); under MIN_BUSBW_PERCENT (collectives.min_busbw_percent) fails.\n"
          "NETWORK_LINKS = 0\n"
          "LINK_GBPS = 0\n"
          "MIN_BUSBW_PERCENT = 0\n");
    site.hardware.gpu_vendor = GpuVendor::intel;
    site.hardware.network_links = 8;
    site.hardware.link_gbps = 200;
    site.collectives.min_busbw_percent = 60;
    site.stacks.front().min_driver = "1.23.10'\"";  // check refuses it; the writer still quotes it
    const std::string s = acceptance_expectations(site, site.stacks.front());
    CHECK(s.find("MIN_DRIVER = '1.23.10\\'\"'\n"
                 "DRIVER_VERSION_FILE = '/sys/module/i915/version'\n"
                 "DRIVER = 'Intel GPU driver (i915)'\n") != std::string::npos);
    CHECK(s.find("NETWORK_LINKS = 8\nLINK_GBPS = 200\nMIN_BUSBW_PERCENT = 60\n") != std::string::npos);
    // It is in acceptance.py, after the site's values.
    const std::string program = planned(plan_of(site), "runscripts/acceptance.py").contents;
    CHECK(program.find(acceptance_site_values(site, site.stacks.front()) + s) != std::string::npos);
}
