// CPU binding from the site topology: which cores each local rank gets, rendered as
// Slurm masks (LUMI), PALS cpu-bind lists and affinity variables (Aurora).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "site/model.h"

namespace sitegen {

// "48-55", "0-3,8-11", "7" -> sorted core ids; nullopt if malformed.
std::optional<std::vector<int>> parse_core_ranges(std::string_view text);

// Cores of local rank r (= device r): skip binding.core_offset cores of the device's domain
// (raw positions, reserved cores counted), drop reserved cores, keep binding.cores_per_rank
// of them (0 = all that remain). nullopt and `error` if a device ends up with too few cores.
std::optional<std::vector<std::vector<int>>> rank_cores(const Hardware& hw, const Binding& binding,
                                                        std::string& error);

// The same with ranks_per_device ranks on each device (local ranks d*k .. d*k+k-1 on device d):
// the device's domain is first cut into k consecutive slots of equal size (raw positions, the
// remainder spread from the front), then each slot is treated as above. k = 1 is rank_cores.
std::optional<std::vector<std::vector<int>>> rank_cores(const Hardware& hw, const Binding& binding,
                                                        int ranks_per_device, std::string& error);

// "0,0,1,1" for srun --cpu-bind=map_ldom: the NUMA node of each local rank's device
// (hw.device_numa), ranks_per_device ranks per device.
std::string numa_domain_list(const Hardware& hw, int ranks_per_device);

// "0xfe000000000000,0xfe00000000000000,..." for srun --cpu-bind=mask_cpu: one lowercase,
// unpadded hex mask per rank, any core count. Throws std::invalid_argument on a negative core.
std::string slurm_mask_list(const std::vector<std::vector<int>>& ranks);

// "verbose,list:2-4:10-12:..." for mpiexec --cpu-bind (PALS): ranks joined by ':', each as
// runs "a-b" or "n", a rank's separate runs joined by ','.
std::string pals_cpu_bind_list(const std::vector<std::vector<int>>& ranks, bool verbose);

// One core per rank, comma-joined: "last" = the rank's last core, "next" = the core after it
// (not checked against reserved cores or the domain). Other picks throw std::invalid_argument.
std::string affinity_list(const std::vector<std::vector<int>>& ranks, std::string_view pick);

}  // namespace sitegen
