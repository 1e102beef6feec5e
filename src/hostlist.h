// Slurm hostlist expressions ("nid[001-003,007],login1", "rack[1-2]n[01-04]"): full
// expansion in C++ (tests, checks) and a pure-bash first-host function for runscripts.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sitegen {

// Expands a hostlist into host names in Slurm's order, keeping zero padding. nullopt with
// `error` set on malformed input or more than max_hosts names.
std::optional<std::vector<std::string>> expand_hostlist(std::string_view expr, std::string& error,
                                                        size_t max_hosts = 1'000'000);

// Bash source of `sitegen_first_host LIST`: prints the first host of a hostlist without
// forking (no python, no scontrol); returns 2 with a message on malformed input.
std::string bash_first_host_function();

}  // namespace sitegen
