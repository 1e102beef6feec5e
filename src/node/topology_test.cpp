// CPU binding: the LUMI and Aurora seed bindings reproduced literally, plus edge cases.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "node/topology.h"

using namespace sitegen;

namespace {

std::vector<int> cores(int first, int last) {
    std::vector<int> out;
    for (int c = first; c <= last; ++c) out.push_back(c);
    return out;
}

std::vector<std::vector<int>> ranks_of(const Hardware& hw, const Binding& binding) {
    std::string error;
    auto ranks = rank_cores(hw, binding, error);
    INFO(error);
    REQUIRE(ranks);
    return *ranks;
}

// LUMI-G: GCD i sits next to CCD [6,7,2,3,0,1,4,5][i]; the first core of each CCD is reserved.
Hardware lumi_hardware() {
    Hardware hw;
    hw.devices_per_node = 8;
    hw.cores_per_node = 64;
    for (int ccd : {6, 7, 2, 3, 0, 1, 4, 5}) hw.device_cores.push_back(cores(8 * ccd, 8 * ccd + 7));
    for (int ccd = 0; ccd < 8; ++ccd) hw.reserved_cores.push_back(8 * ccd);
    return hw;
}

// Aurora: 2 x 52 cores, 12 tiles; tiles 0-5 on 0-7 .. 40-47, tiles 6-11 on 52-59 .. 92-99.
Hardware aurora_hardware() {
    Hardware hw;
    hw.devices_per_node = 12;
    hw.cores_per_node = 104;
    for (int socket_base : {0, 52})
        for (int tile = 0; tile < 6; ++tile) hw.device_cores.push_back(cores(socket_base + 8 * tile, socket_base + 8 * tile + 7));
    return hw;
}

}  // namespace

TEST_CASE("LUMI: mask_cpu list equals the seed's MYMASKS with c=fe", "[topology]") {
    const auto ranks = ranks_of(lumi_hardware(), Binding{});
    // lumi-pytorch.md: MYMASKS="0x${c}000000000000,0x${c}00000000000000,...", c=fe.
    CHECK(slurm_mask_list(ranks) ==
          "0xfe000000000000,0xfe00000000000000,0xfe0000,0xfe000000,0xfe,0xfe00,0xfe00000000,0xfe0000000000");
    CHECK(ranks[0] == cores(49, 55));  // 7 cores per rank: the seed's --cpus-per-task=7
}

TEST_CASE("Aurora: PALS list and affinity variables equal the seed", "[topology]") {
    Binding binding;
    binding.core_offset = 2;
    binding.cores_per_rank = 3;
    binding.verbose = true;
    const auto ranks = ranks_of(aurora_hardware(), binding);
    // aurora-pytorch.md, "CPU Affinity".
    CHECK(pals_cpu_bind_list(ranks, binding.verbose) ==
          "verbose,list:2-4:10-12:18-20:26-28:34-36:42-44:54-56:62-64:70-72:78-80:86-88:94-96");
    CHECK(pals_cpu_bind_list(ranks, false) ==
          "list:2-4:10-12:18-20:26-28:34-36:42-44:54-56:62-64:70-72:78-80:86-88:94-96");
    CHECK(affinity_list(ranks, "last") == "4,12,20,28,36,44,56,64,72,80,88,96");  // HOROVOD_THREAD_AFFINITY
    CHECK(affinity_list(ranks, "next") == "5,13,21,29,37,45,57,65,73,81,89,97");  // CCL_WORKER_AFFINITY
    CHECK_THROWS_AS(affinity_list(ranks, "first"), std::invalid_argument);
}

TEST_CASE("core_offset counts raw domain positions, reserved cores are dropped wherever they are",
          "[topology]") {
    Hardware hw;
    hw.device_cores = {cores(0, 7)};
    hw.reserved_cores = {3, 4};
    Binding binding;
    binding.core_offset = 2;  // skips 0 and 1
    CHECK(ranks_of(hw, binding) == std::vector<std::vector<int>>{{2, 5, 6, 7}});
    CHECK(pals_cpu_bind_list(ranks_of(hw, binding), false) == "list:2,5-7");
    binding.cores_per_rank = 2;
    CHECK(ranks_of(hw, binding) == std::vector<std::vector<int>>{{2, 5}});
    binding.core_offset = 3;  // lands on a reserved core: it is skipped, not counted
    CHECK(ranks_of(hw, binding) == std::vector<std::vector<int>>{{5, 6}});
}

TEST_CASE("a device with too few usable cores is an error naming it", "[topology]") {
    Hardware hw;
    hw.device_cores = {cores(0, 7), cores(8, 11)};
    hw.reserved_cores = {8};
    Binding binding;
    binding.cores_per_rank = 4;
    std::string error;
    CHECK_FALSE(rank_cores(hw, binding, error));
    CHECK(error.find("device 1 has 3 usable cores") != std::string::npos);

    binding.cores_per_rank = 0;
    binding.core_offset = 8;  // nothing left on device 0
    error.clear();
    CHECK_FALSE(rank_cores(hw, binding, error));
    CHECK(error.find("device 0 has 0 usable cores") != std::string::npos);

    binding.core_offset = -1;
    error.clear();
    CHECK_FALSE(rank_cores(hw, binding, error));
    CHECK_FALSE(error.empty());
}

TEST_CASE("CPU-only hardware has no ranks to bind", "[topology]") {
    std::string error;
    auto ranks = rank_cores(Hardware{}, Binding{}, error);
    REQUIRE(ranks);
    CHECK(ranks->empty());
    CHECK(slurm_mask_list(*ranks).empty());
    CHECK(affinity_list(*ranks, "last").empty());
}

TEST_CASE("masks past 64 cores are exact, unpadded, lowercase hex", "[topology]") {
    CHECK(slurm_mask_list({{0}}) == "0x1");
    CHECK(slurm_mask_list({{63}}) == "0x8000000000000000");
    CHECK(slurm_mask_list({{64}}) == "0x10000000000000000");
    CHECK(slurm_mask_list({{100, 101, 102, 103}}) == "0xf" + std::string(25, '0'));
    CHECK(slurm_mask_list({{255}}) == "0x8" + std::string(63, '0'));
    CHECK(slurm_mask_list({{1, 3, 10, 11}, {200}}) == "0xc0a,0x1" + std::string(50, '0'));
    CHECK(slurm_mask_list({{}}) == "0x0");
    CHECK_THROWS_AS(slurm_mask_list({{-1}}), std::invalid_argument);
}

TEST_CASE("core range lists parse strictly", "[topology]") {
    CHECK(parse_core_ranges("48-55") == cores(48, 55));
    CHECK(parse_core_ranges("7") == std::vector<int>{7});
    CHECK(parse_core_ranges("8-11,0-3") == std::vector<int>{0, 1, 2, 3, 8, 9, 10, 11});
    CHECK(parse_core_ranges("0-65535")->size() == 65536);
    for (const char* bad : {"", ",", "1,", ",1", "3-1", "-1", "1-", "a", "1-2-3", " 1", "1 ", "+1",
                            "0-3,2", "65536", "1..3", "0x10"}) {
        INFO(bad);
        CHECK_FALSE(parse_core_ranges(bad));
    }
}

TEST_CASE("Aurora with 4 CCS per tile: 48 ranks, the seed's BIND_LIST", "[topology][visibility]") {
    // aurora-pytorch.md, "Distributed Training with Multiple CCSs": 48 ranks, one core each,
    // every tile's 8 cores split into 4 slots of 2, the first core of each socket (0, 52) kept free.
    Hardware hw = aurora_hardware();
    hw.reserved_cores = {0, 52};
    Binding binding;
    binding.cores_per_rank = 1;
    binding.verbose = true;
    std::string error;
    auto ranks = rank_cores(hw, binding, 4, error);
    INFO(error);
    REQUIRE(ranks);
    CHECK(ranks->size() == 48);
    CHECK(pals_cpu_bind_list(*ranks, true) ==
          "verbose,list:1:2:4:6:8:10:12:14:16:18:20:22:24:26:28:30:32:34:36:38:40:42:44:46:53:54:56:58:60:62:64:66:68:"
          "70:72:74:76:78:80:82:84:86:88:90:92:94:96:98");
    // The 12-rank binding of the same site is unchanged by the reserved cores (core_offset 2 skips them).
    Binding twelve;
    twelve.core_offset = 2;
    twelve.cores_per_rank = 3;
    CHECK(pals_cpu_bind_list(*rank_cores(hw, twelve, 1, error), false) ==
          "list:2-4:10-12:18-20:26-28:34-36:42-44:54-56:62-64:70-72:78-80:86-88:94-96");
}

TEST_CASE("ranks per device: slots of equal size, remainder from the front, errors name the rank",
          "[topology][visibility]") {
    Hardware hw;
    hw.device_cores = {cores(0, 6), cores(8, 15)};
    Binding binding;
    std::string error;
    auto ranks = rank_cores(hw, binding, 2, error);
    REQUIRE(ranks);
    // 7 cores: slots [0,3) and [3,7); 8 cores: 4 + 4.
    CHECK(*ranks == std::vector<std::vector<int>>{{0, 1, 2}, {3, 4, 5, 6}, {8, 9, 10, 11}, {12, 13, 14, 15}});
    CHECK(slurm_mask_list(*ranks) == "0x7,0x78,0xf00,0xf000");
    CHECK(*rank_cores(hw, binding, 1, error) == std::vector<std::vector<int>>{cores(0, 6), cores(8, 15)});
    binding.cores_per_rank = 4;  // the first slot of device 0 has 3 cores
    CHECK_FALSE(rank_cores(hw, binding, 2, error));
    CHECK(error == "rank 0 (device 0) has 3 usable cores after core_offset 0 and reserved cores, but 4 are needed per rank");
    binding.cores_per_rank = 0;
    CHECK_FALSE(rank_cores(hw, binding, 8, error));
    CHECK(error == "device 0 has 7 cores for 8 ranks");
    CHECK_FALSE(rank_cores(hw, binding, 0, error));
}

TEST_CASE("map_ldom list: each local rank's device's NUMA node", "[topology][visibility]") {
    Hardware hw;
    hw.device_numa = {3, 3, 1, 1, 0, 0, 2, 2};  // Frontier/LUMI-G: GCD i next to NUMA node [3,3,1,1,0,0,2,2][i]
    CHECK(numa_domain_list(hw, 1) == "3,3,1,1,0,0,2,2");
    hw.device_numa = {0, 1};
    CHECK(numa_domain_list(hw, 3) == "0,0,0,1,1,1");
    CHECK(numa_domain_list(Hardware{}, 1).empty());
}
