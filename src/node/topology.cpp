// Rank-to-core assignment and its Slurm / PALS renderings.
#include "node/topology.h"

#include <algorithm>
#include <charconv>
#include <span>
#include <stdexcept>

namespace sitegen {

namespace {

std::optional<int> parse_int(std::string_view s) {
    int v = 0;
    if (s.empty()) return std::nullopt;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size() || v < 0 || v > 65535) return std::nullopt;
    return v;
}

// A rank's cores as "a-b" runs joined by `sep`.
std::string compress(const std::vector<int>& cores, char sep) {
    std::string out;
    for (size_t i = 0; i < cores.size();) {
        size_t j = i;
        while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1) ++j;
        if (!out.empty()) out += sep;
        out += std::to_string(cores[i]);
        if (j > i) out += "-" + std::to_string(cores[j]);
        i = j + 1;
    }
    return out;
}

// The domain's cores from core_offset on (raw position, reserved ones counted), minus
// reserved cores, at most cores_per_rank of them (0 = all).
std::vector<int> usable_cores(std::span<const int> domain, const std::vector<int>& reserved,
                              const Binding& binding) {
    std::vector<int> cores;
    cores.reserve(domain.size());
    for (size_t i = static_cast<size_t>(binding.core_offset); i < domain.size(); ++i) {
        if (binding.cores_per_rank > 0 && cores.size() == static_cast<size_t>(binding.cores_per_rank)) break;
        if (std::find(reserved.begin(), reserved.end(), domain[i]) == reserved.end()) cores.push_back(domain[i]);
    }
    std::sort(cores.begin(), cores.end());
    return cores;
}

}  // namespace

std::optional<std::vector<int>> parse_core_ranges(std::string_view text) {
    std::vector<int> out;
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        std::string_view part = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
        size_t dash = part.find('-');
        auto lo = parse_int(part.substr(0, dash));
        auto hi = dash == std::string_view::npos ? lo : parse_int(part.substr(dash + 1));
        if (!lo || !hi || *hi < *lo) return std::nullopt;
        for (int c = *lo; c <= *hi; ++c) out.push_back(c);
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    std::sort(out.begin(), out.end());
    if (std::adjacent_find(out.begin(), out.end()) != out.end()) return std::nullopt;
    return out;
}

std::optional<std::vector<std::vector<int>>> rank_cores(const Hardware& hw, const Binding& binding,
                                                        std::string& error) {
    return rank_cores(hw, binding, 1, error);
}

std::optional<std::vector<std::vector<int>>> rank_cores(const Hardware& hw, const Binding& binding,
                                                        int ranks_per_device, std::string& error) {
    if (binding.core_offset < 0 || binding.cores_per_rank < 0) {
        error = "core_offset and cores_per_rank must not be negative";
        return std::nullopt;
    }
    if (ranks_per_device < 1) {
        error = "ranks_per_device must be at least 1";
        return std::nullopt;
    }
    const size_t k = static_cast<size_t>(ranks_per_device);
    std::vector<std::vector<int>> ranks;
    ranks.reserve(hw.device_cores.size() * k);
    for (size_t d = 0; d < hw.device_cores.size(); ++d) {
        const std::vector<int>& domain = hw.device_cores[d];
        if (domain.size() < k) {
            error = "device " + std::to_string(d) + " has " + std::to_string(domain.size()) + " cores for " +
                    std::to_string(k) + " ranks";
            return std::nullopt;
        }
        for (size_t slot = 0; slot < k; ++slot) {
            const size_t r = d * k + slot;
            // Slot boundaries at i * n / k: sizes differ by at most one core.
            const std::span<const int> part(domain.data() + slot * domain.size() / k,
                                            domain.data() + (slot + 1) * domain.size() / k);
            std::vector<int> cores = usable_cores(part, hw.reserved_cores, binding);
            const size_t needed = static_cast<size_t>(std::max(1, binding.cores_per_rank));
            if (cores.size() < needed) {
                error = (k == 1 ? "device " + std::to_string(d) : "rank " + std::to_string(r) + " (device " + std::to_string(d) + ")") +
                        " has " + std::to_string(cores.size()) + " usable cores after core_offset " +
                        std::to_string(binding.core_offset) + " and reserved cores, but " + std::to_string(needed) +
                        " are needed per rank";
                return std::nullopt;
            }
            if (cores.front() < 0) {
                error = "device " + std::to_string(d) + " lists a negative core id";
                return std::nullopt;
            }
            ranks.push_back(std::move(cores));
        }
    }
    return ranks;
}

std::string numa_domain_list(const Hardware& hw, int ranks_per_device) {
    std::string out;
    for (int node : hw.device_numa)
        for (int i = 0; i < std::max(1, ranks_per_device); ++i) out += (out.empty() ? "" : ",") + std::to_string(node);
    return out;
}

std::string slurm_mask_list(const std::vector<std::vector<int>>& ranks) {
    std::string out;
    for (const auto& cores : ranks) {
        int top = cores.empty() ? 0 : *std::max_element(cores.begin(), cores.end());
        std::vector<int> nibbles(static_cast<size_t>(top / 4 + 1), 0);
        for (int c : cores) {
            if (c < 0) throw std::invalid_argument("negative core id " + std::to_string(c));
            nibbles[static_cast<size_t>(c / 4)] |= 1 << (c % 4);
        }
        std::string hex;
        for (auto it = nibbles.rbegin(); it != nibbles.rend(); ++it) hex += "0123456789abcdef"[*it];
        hex.erase(0, std::min(hex.find_first_not_of('0'), hex.size() - 1));
        if (!out.empty()) out += ',';
        out += "0x" + hex;
    }
    return out;
}

std::string pals_cpu_bind_list(const std::vector<std::vector<int>>& ranks, bool verbose) {
    std::string out = verbose ? "verbose,list:" : "list:";
    for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ":" : "") + compress(ranks[i], ',');
    return out;
}

std::string affinity_list(const std::vector<std::vector<int>>& ranks, std::string_view pick) {
    if (pick != "last" && pick != "next")
        throw std::invalid_argument("affinity pick must be \"last\" or \"next\", not \"" + std::string(pick) + "\"");
    std::string out;
    for (const auto& cores : ranks) {
        if (cores.empty()) continue;
        int core = pick == "next" ? cores.back() + 1 : cores.back();
        if (!out.empty()) out += ',';
        out += std::to_string(core);
    }
    return out;
}

}  // namespace sitegen
