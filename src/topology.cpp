// Rank-to-core assignment and its Slurm / PALS renderings.
#include "topology.h"

#include <algorithm>
#include <charconv>

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
    std::vector<std::vector<int>> ranks;
    for (size_t r = 0; r < hw.device_cores.size(); ++r) {
        const auto& domain = hw.device_cores[r];
        std::vector<int> cores;
        for (size_t i = static_cast<size_t>(binding.core_offset); i < domain.size(); ++i) {
            int c = domain[i];
            if (std::find(hw.reserved_cores.begin(), hw.reserved_cores.end(), c) != hw.reserved_cores.end())
                continue;
            if (binding.cores_per_rank > 0 && static_cast<int>(cores.size()) == binding.cores_per_rank) break;
            cores.push_back(c);
        }
        if (cores.empty() || (binding.cores_per_rank > 0 && static_cast<int>(cores.size()) < binding.cores_per_rank)) {
            error = "device " + std::to_string(r) + " has " + std::to_string(cores.size()) +
                    " usable cores after offset and reserved cores, but " +
                    std::to_string(std::max(1, binding.cores_per_rank)) + " are needed per rank";
            return std::nullopt;
        }
        ranks.push_back(std::move(cores));
    }
    return ranks;
}

std::string slurm_mask_list(const std::vector<std::vector<int>>& ranks) {
    std::string out;
    for (const auto& cores : ranks) {
        int top = cores.empty() ? 0 : *std::max_element(cores.begin(), cores.end());
        std::vector<int> nibbles(static_cast<size_t>(top / 4 + 1), 0);
        for (int c : cores) nibbles[static_cast<size_t>(c / 4)] |= 1 << (c % 4);
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
