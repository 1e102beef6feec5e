// Slurm hostlist expressions ("nid[001-003,007],login1", "rack[1-2]n[01-04]"): full
// expansion in C++ (tests, checks) and a pure-bash first-host function for runscripts.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sitegen {

// Expands a hostlist into host names in Slurm's order, keeping zero padding (the width of a
// range's low bound, as Slurm does). Brackets hold numbers only, several groups in one item
// form a product ("rack[1-2]n[01-04]" = rack1n01..rack1n04, rack2n01..). nullopt with
// `error` set on malformed input (unbalanced or nested brackets, empty items, bad or
// reversed ranges, numbers over 18 digits) or more than max_hosts names (checked before
// expanding, so a huge range allocates nothing).
std::optional<std::vector<std::string>> expand_hostlist(std::string_view expr, std::string& error,
                                                        size_t max_hosts = 1'000'000);

// Bash source of `sitegen_first_host LIST`: prints the first host of a hostlist without
// forking (no python, no scontrol), in a few steps per bracket group of the first item
// (well under a second for lists at the 128 KiB environment limit); clean under shellcheck and
// `set -euo pipefail`. Returns 2 with a message on stderr when the brackets of the list or
// the first item are malformed; later items are not checked (use expand_hostlist for that).
// Call it as `host=$(sitegen_first_host "$LIST")` or guard it with `||` under `set -e`.
std::string bash_first_host_function();

}  // namespace sitegen
