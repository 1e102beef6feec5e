// sitegen doctor against the seed sites' node fixtures: a matching node has no findings, and
// each planted mismatch is reported at the key it contradicts.
#include <catch2/catch.hpp>

#include <filesystem>

#include "node/doctor.h"
#include "test_support.h"

using namespace sitegen;

namespace {

NodeTopology fixture(const std::string& name) {
    NodeTopology topo;
    std::string error;
    INFO(error);
    REQUIRE(load_hwloc_topology(SITEGEN_SOURCE_DIR "/tests/fixtures/hwloc/" + name + ".xml", topo, error));
    return topo;
}

// The messages of the errors, each prefixed with the key's line:column.
std::vector<std::string> errors_of(const Diagnostics& diags) {
    std::vector<std::string> out;
    for (const auto& d : diags.sorted())
        if (d.severity == Severity::error)
            out.push_back(std::to_string(d.where.line) + ":" + std::to_string(d.where.column) + " " + d.message);
    return out;
}

struct Run {
    Diagnostics diags;
    std::vector<std::string> checked;
};

void run_doctor(const Site& site, const NodeTopology& topo, const std::string& root, Run& run) {
    DoctorOptions options;
    options.lmod = find_lmod();
    options.run_programs = false;
    options.modulepath = {"/modules"};
    for (const auto& s : site.stacks) options.stacks.push_back({"/sw/" + s.name, "/mf/" + s.name + ".lua"});
    auto probe = make_node_probe(root);
    doctor(site, topo, options, *probe, run.diags, run.checked);
}

}  // namespace

TEST_CASE("doctor: the cirrus fixture matches the cirrus site", "[doctor]") {
    test::require_tool("/usr/share/lmod/lmod/libexec/lmod");
    test::TempDir root("doctor");
    root.write("modules/python/3.12.1-gpu.lua", "whatis('python')\n");
    Site site = test::load_seed_site("cirrus");
    Run run;
    run_doctor(site, fixture("cirrus"), root.str(), run);
    CHECK(errors_of(run.diags).empty());
    CHECK(run.diags.warning_count() == 1);  // not deployed under root
    CHECK(run.checked.front() == "hardware: 40 cores x 1 thread, 4 GPUs and their nearest cores");
}

TEST_CASE("doctor: planted mismatches are reported at their keys", "[doctor]") {
    test::TempDir root("doctor");
    root.write("modules/python/3.12.1-gpu.lua", "whatis('python')\n");
    Site site = test::load_seed_site("cirrus");
    site.hardware.cores_per_node = 48;
    std::swap(site.hardware.device_cores[0], site.hardware.device_cores[2]);  // 20-29 and 0-9
    site.hardware.nics = {"ib1"};
    site.hardware.reserved_cores = {40};
    site.regions.set("hardware.reserved_cores.0", {"cirrus.toml", 99, 3});
    Run run;
    run_doctor(site, fixture("cirrus"), root.str(), run);
    const auto errors = errors_of(run.diags);
    // Lines of sites/cirrus/site.toml: cores_per_node 15, device_cores 17, nics 18.
    CHECK(errors == std::vector<std::string>{
                        "15:18 'cores_per_node' is 48 but the node of " SITEGEN_SOURCE_DIR
                        "/tests/fixtures/hwloc/cirrus.xml has 40 cores",
                        "17:17 device 0 is listed with cores 20-29, but on the node of " SITEGEN_SOURCE_DIR
                        "/tests/fixtures/hwloc/cirrus.xml it is near 0-19",
                        "17:33 device 2 is listed with cores 0-9, but on the node of " SITEGEN_SOURCE_DIR
                        "/tests/fixtures/hwloc/cirrus.xml it is near 20-39",
                        "18:9 NIC 'ib1' does not exist on the node of " SITEGEN_SOURCE_DIR
                        "/tests/fixtures/hwloc/cirrus.xml",
                        "99:3 reserved core 40 is not a core of the node of " SITEGEN_SOURCE_DIR
                        "/tests/fixtures/hwloc/cirrus.xml",
                    });
}

TEST_CASE("doctor: GPU count and vendor against another node", "[doctor]") {
    test::TempDir root("doctor");
    Site site = test::load_seed_site("cirrus");
    Run run;
    run_doctor(site, fixture("lumi"), root.str(), run);
    const auto errors = errors_of(run.diags);
    CHECK(std::any_of(errors.begin(), errors.end(), [](const std::string& e) {
        return e.find("'cores_per_node' is 40 but") != std::string::npos && e.find("has 64 cores") != std::string::npos;
    }));
    CHECK(std::any_of(errors.begin(), errors.end(), [](const std::string& e) {
        return e.find("'devices_per_node' is 4 but the node of") != std::string::npos && e.find("has 8 GPUs") != std::string::npos;
    }));
    CHECK(std::any_of(errors.begin(), errors.end(), [](const std::string& e) {
        return e.find("'gpu_vendor' is 'nvidia' but the GPUs of") != std::string::npos && e.find("are amd's") != std::string::npos;
    }));
}

TEST_CASE("doctor: container binds and image under --root", "[doctor]") {
    test::TempDir root("doctor");
    Site site = test::load_seed_site("lumi");
    for (const auto& b : site.container.binds) std::filesystem::create_directories(root.path / b.host.substr(1));
    std::filesystem::remove(root.path / "pfs");
    Run run;
    run_doctor(site, fixture("lumi"), root.str(), run);
    const auto errors = errors_of(run.diags);
    CHECK(std::any_of(errors.begin(), errors.end(), [](const std::string& e) {
        return e.find("bind path '/pfs' does not exist") != std::string::npos;
    }));
    CHECK(std::any_of(errors.begin(), errors.end(), [&](const std::string& e) {
        return e.find("image '" + site.stacks[0].image + "' of stack") != std::string::npos;
    }));
    // The image in the stack's install dir is found too.
    root.write("sw/PyTorch/" + site.stacks[0].image, "");
    std::filesystem::create_directories(root.path / "pfs");
    Run again;
    run_doctor(site, fixture("lumi"), root.str(), again);
    for (const auto& e : errors_of(again.diags)) CHECK_THAT(e, !Catch::Contains("bind path") && !Catch::Contains("image"));
}

TEST_CASE("doctor: the probe runs programs and reports what did not run", "[doctor]") {
    auto probe = make_node_probe("/");
    std::string out;
    CHECK(probe->run({"/bin/sh", "-c", "echo hi; echo err >&2; exit 3"}, {"PATH=/bin"}, out) == 3);
    CHECK(out == "hi\nerr\n");
    CHECK(probe->run({"/nonexistent/python"}, {}, out) == -1);
    CHECK_THAT(out, Catch::Contains("cannot run /nonexistent/python"));
}

// The driver gate's check on the node: stacks.N.min_driver against the driver's version file
// under --root, as the module's gate compares them (numbers, not text: 535.129 > 535.13).
TEST_CASE("doctor: a stack's min_driver against the node's GPU driver", "[doctor][driver]") {
    Site site = test::load_seed_site("cirrus");  // NVIDIA V100
    site.stacks[0].min_driver = "535.129.03";
    site.regions.set("stacks.0.min_driver", {"cirrus.toml", 77, 14});
    DoctorOptions options;
    test::require_tool("/usr/share/lmod/lmod/libexec/lmod");
    options.lmod = find_lmod();
    options.modulepath = {"/modules"};
    options.run_programs = false;
    options.driver_version_file = "/proc/driver/nvidia/version";
    options.driver = "NVIDIA GPU driver";
    const std::string module = site.stacks[0].module_full_name();
    auto run = [&](const test::TempDir& root, Run& r) {
        root.write("modules/python/3.12.1-gpu.lua", "whatis('python')\n");  // cirrus's base module
        auto probe = make_node_probe(root.str());
        doctor(site, fixture("cirrus"), options, *probe, r.diags, r.checked);
    };
    auto driver_line = [](const Run& r) {
        for (const auto& c : r.checked)
            if (c.rfind("driver: ", 0) == 0) return c;
        return std::string("(no driver line)");
    };
    SECTION("older: an error at min_driver") {
        test::TempDir root("doctor");
        root.write("proc/driver/nvidia/version",
                   "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
                   "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
        Run r;
        run(root, r);
        CHECK(errors_of(r.diags) ==
              std::vector<std::string>{"77:14 stack '" + module +
                                       "' needs the NVIDIA GPU driver 535.129.03 or newer, but the node of " SITEGEN_SOURCE_DIR
                                       "/tests/fixtures/hwloc/cirrus.xml has 535.104.05, read from /proc/driver/nvidia/version (under " +
                                       root.str() + "): its module refuses to load here"});
        CHECK(driver_line(r) == "driver: NVIDIA GPU driver 535.104.05, 0 of 1 stack minimum met");
    }
    SECTION("newer by number (535.161.7 > 535.129.03): no error") {
        test::TempDir root("doctor");
        root.write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.7  Thu\n");
        Run r;
        run(root, r);
        CHECK(errors_of(r.diags).empty());
        CHECK(driver_line(r) == "driver: NVIDIA GPU driver 535.161.7, 1 of 1 stack minimum met");
    }
    SECTION("no version file: not a GPU node, nothing to report but the line") {
        test::TempDir root("doctor");
        root.write("etc/hostname", "login1\n");
        Run r;
        run(root, r);
        CHECK(errors_of(r.diags).empty());
        CHECK(driver_line(r) == "driver: /proc/driver/nvidia/version (under " + root.str() +
                                    ") not found (no NVIDIA GPU driver on this node): 1 stack minimum not checked");
    }
    SECTION("a file without a version") {
        test::TempDir root("doctor");
        root.write("proc/driver/nvidia/version", "garbage\n");
        Run r;
        run(root, r);
        CHECK(errors_of(r.diags) == std::vector<std::string>{"77:14 cannot check the GPU driver: /proc/driver/nvidia/version (under " +
                                                             root.str() + ") holds no version"});
    }
}
