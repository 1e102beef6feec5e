// CPU binding from the site topology: which cores each local rank gets, rendered as
// Slurm masks (LUMI), PALS cpu-bind lists and affinity variables (Aurora).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model.h"

namespace sitegen {

// "48-55", "0-3,8-11", "7" -> sorted core ids; nullopt if malformed.
std::optional<std::vector<int>> parse_core_ranges(std::string_view text);

// Cores of local rank r (= device r): skip binding.core_offset cores of the device's domain,
// drop reserved cores, keep binding.cores_per_rank of them (0 = all that remain).
std::optional<std::vector<std::vector<int>>> rank_cores(const Hardware& hw, const Binding& binding,
                                                        std::string& error);

// "0xfe000000000000,0xfe00000000000000,..." for srun --cpu-bind=mask_cpu:
std::string slurm_mask_list(const std::vector<std::vector<int>>& ranks);

// "verbose,list:2-4:10-12:..." for mpiexec --cpu-bind (PALS).
std::string pals_cpu_bind_list(const std::vector<std::vector<int>>& ranks, bool verbose);

// One core per rank, comma-joined: "last" = the rank's last core, "next" = the core after it.
std::string affinity_list(const std::vector<std::vector<int>>& ranks, std::string_view pick);

}  // namespace sitegen
