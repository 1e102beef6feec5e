// hwloc topology: the seed sites' node fixtures (tests/fixtures/hwloc/*.xml, written from their
// documented layouts) give back the sites' [hardware] values; this machine's lstopo output
// gives the local site's.
#include <catch2/catch.hpp>

#include "node/hwloc_topology.h"
#include "test_support.h"

using namespace sitegen;

namespace {

NodeTopology load_fixture(const std::string& name) {
    NodeTopology topo;
    std::string error;
    INFO(error);
    REQUIRE(load_hwloc_topology(SITEGEN_SOURCE_DIR "/tests/fixtures/hwloc/" + name + ".xml", topo, error));
    return topo;
}

std::vector<std::string> high_speed_nics(const NodeTopology& topo) {
    std::vector<std::string> out;
    for (const auto& n : topo.nics)
        if (n.high_speed) out.push_back(n.name);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("hwloc fixtures of the seed sites give back their [hardware]", "[hwloc]") {
    for (const std::string name : {"lumi", "frontier", "cirrus", "aurora", "local"}) {
        INFO("site " << name);
        const Site site = test::load_seed_site(name);
        const NodeTopology topo = load_fixture(name);
        const Hardware& hw = site.hardware;
        CHECK(topo.cores() == hw.cores_per_node);
        CHECK(topo.threads_per_core == hw.threads_per_core);
        CHECK(static_cast<int>(topo.gpus.size()) == hw.devices_per_node);
        CHECK(topology_gpu_vendor(topo) == hw.gpu_vendor);
        CHECK(suggested_device_cores(topo) == hw.device_cores);
        std::vector<std::string> nics = hw.nics;
        std::sort(nics.begin(), nics.end());
        CHECK(high_speed_nics(topo) == nics);
    }
}

TEST_CASE("hwloc: GPU order, locality and tiles", "[hwloc]") {
    const NodeTopology lumi = load_fixture("lumi");
    REQUIRE(lumi.gpus.size() == 8);
    CHECK(lumi.gpus[0].name == "rsmi0");
    CHECK(lumi.gpus[0].pci_busid == "0000:c1:00.0");
    CHECK(format_core_ranges(lumi.gpus[0].locality.cores) == "48-63");
    CHECK(lumi.gpus[0].locality.numa == std::vector<int>{3});
    CHECK(lumi.numa_nodes == 4);
    CHECK(lumi.pus == 128);
    CHECK(gpu_names(lumi) == "rsmi0-rsmi7");
    // The management NIC is listed, but not as a high-speed one.
    auto nmn = std::find_if(lumi.nics.begin(), lumi.nics.end(), [](const TopologyNic& n) { return n.name == "nmn0"; });
    REQUIRE(nmn != lumi.nics.end());
    CHECK_FALSE(nmn->high_speed);

    const NodeTopology aurora = load_fixture("aurora");
    REQUIRE(aurora.gpus.size() == 12);
    CHECK(aurora.gpus[0].name == "ze0.0");
    CHECK(aurora.gpus[11].name == "ze5.1");
    CHECK(aurora.gpus[11].pci_busid == "0001:6c:00.0");
    CHECK(format_core_ranges(aurora.gpus[6].locality.cores) == "52-103");
}

TEST_CASE("hwloc: import prints the [hardware] table with its sources", "[hwloc]") {
    const std::string toml = hardware_toml(load_fixture("cirrus"));
    CHECK_THAT(toml, Catch::Contains("gpu_vendor = \"nvidia\"  # PCI vendor 0x10de\n"));
    CHECK_THAT(toml, Catch::Contains("devices_per_node = 4  # 4 GPUs (cuda0-cuda3)\n"));
    CHECK_THAT(toml, Catch::Contains("cores_per_node = 40  # Core objects in 2 packages, 2 NUMA nodes\n"));
    CHECK_THAT(toml, Catch::Contains(
        "  \"10-19\",  # device 1: cuda1, PCI 0000:1c:00.0, near cores 0-19 (NUMA node 0), under Package P#0, part 2 of 2\n"));
    CHECK_THAT(toml, Catch::Contains("  \"ib0\",  # PCI 0000:18:00.0 (InfiniBand)"));
    CHECK_THAT(toml, Catch::Contains("# not in nics: eth0 (PCI 0000:3d:00.0, PCI link 0.98 GB/s, no RDMA device: not a high-speed NIC)\n"));
}

TEST_CASE("hwloc: unreadable and invalid files are errors", "[hwloc]") {
    NodeTopology topo;
    std::string error;
    CHECK_FALSE(load_hwloc_topology("/nonexistent/node.xml", topo, error));
    CHECK_THAT(error, Catch::Contains("cannot read '/nonexistent/node.xml'"));
    test::TempDir dir("hwloc");
    const std::string bad = dir.write("bad.xml", "<topology><object type=");
    error.clear();
    CHECK_FALSE(load_hwloc_topology(bad, topo, error));
    CHECK_THAT(error, Catch::Contains("hwloc cannot"));
}

TEST_CASE("hwloc: the live machine loads", "[hwloc]") {
    NodeTopology topo;
    std::string error;
    INFO(error);
    REQUIRE(load_hwloc_topology("", topo, error));
    CHECK(topo.source == "this node");
    CHECK(topo.cores() >= 1);
}
