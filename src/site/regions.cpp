// Regions: a site's keys by path, a stack's kept with its stack, each file named once.
#include "site/regions.h"

#include <algorithm>
#include <stdexcept>

namespace sitegen {

namespace {

constexpr std::string_view kStacks = "stacks.";

// "stacks.<index>" and what follows it ("" or ".key..."): the index and the rest. False for
// any other path, an index written otherwise than a size_t prints it ("stacks.01") included,
// so that two spellings never name one stack's key.
bool split_stack(std::string_view path, size_t& index, std::string_view& below) {
    if (path.substr(0, kStacks.size()) != kStacks) return false;
    size_t at = kStacks.size(), n = 0;
    while (at < path.size() && path[at] >= '0' && path[at] <= '9') {
        if (n > (SIZE_MAX - 9) / 10) return false;
        n = n * 10 + static_cast<size_t>(path[at] - '0');
        ++at;
    }
    const size_t digits = at - kStacks.size();
    if (digits == 0 || (digits > 1 && path[kStacks.size()] == '0')) return false;
    if (at < path.size() && path[at] != '.') return false;
    index = n;
    below = path.substr(at);
    return true;
}

const auto by_path = [](const auto& entry, std::string_view path) { return std::string_view(entry.first) < path; };

}  // namespace

uint32_t Regions::file_index(const std::string& file) {
    // (A site has a few files: the last one named is nearly always the one named again.)
    for (size_t i = files_.size(); i-- > 0;)
        if (files_[i] == file) return static_cast<uint32_t>(i);
    files_.push_back(file);
    return static_cast<uint32_t>(files_.size() - 1);
}

const Regions::At* Regions::find_at(std::string_view path) const {
    size_t index = 0;
    std::string_view below;
    if (split_stack(path, index, below)) {
        if (index >= stacks_.size()) return nullptr;
        const StackKeys& keys = stacks_[index];
        const auto it = std::lower_bound(keys.begin(), keys.end(), below, by_path);
        return it != keys.end() && it->first == below ? &it->second : nullptr;
    }
    const auto it = top_.find(path);
    return it == top_.end() ? nullptr : &it->second;
}

Regions::At* Regions::find_at(std::string_view path) {
    return const_cast<At*>(static_cast<const Regions&>(*this).find_at(path));
}

std::optional<SourceRegion> Regions::find(std::string_view path) const {
    const At* at = find_at(path);
    if (!at) return std::nullopt;
    return region(*at);
}

bool Regions::has(std::string_view path) const { return find_at(path) != nullptr; }

SourceRegion Regions::at(std::string_view path) const {
    const At* at = find_at(path);
    if (!at) throw std::out_of_range("no source region for '" + std::string(path) + "'");
    return region(*at);
}

void Regions::set(std::string_view path, const SourceRegion& r) {
    const At at{file_index(r.file), r.line, r.column};
    size_t index = 0;
    std::string_view below;
    if (!split_stack(path, index, below)) {
        top_.insert_or_assign(std::string(path), at);
        return;
    }
    if (index >= stacks_.size()) stacks_.resize(index + 1);
    StackKeys& keys = stacks_[index];
    if (keys.empty() || std::string_view(keys.back().first) < below) {  // (the loader's usual order)
        keys.emplace_back(std::string(below), at);
        return;
    }
    const auto it = std::lower_bound(keys.begin(), keys.end(), below, by_path);
    if (it != keys.end() && it->first == below) it->second = at;
    else keys.emplace(it, std::string(below), at);
}

SourceRegion Regions::touch(std::string_view path) {
    if (const At* at = find_at(path)) return region(*at);
    set(path, SourceRegion{});
    return SourceRegion{};
}

size_t Regions::size() const {
    size_t n = top_.size();
    for (const StackKeys& keys : stacks_) n += keys.size();
    return n;
}

void Regions::set_stack(size_t index, const std::string& file, const std::vector<Below>& keys) {
    if (index >= stacks_.size()) stacks_.resize(index + 1);
    const uint32_t f = file_index(file);
    StackKeys& out = stacks_[index];
    out.clear();
    out.reserve(keys.size());
    bool in_order = true;
    for (const Below& k : keys) {
        in_order = in_order && (out.empty() || std::string_view(out.back().first) < k.path);
        out.emplace_back(std::string(k.path), At{f, k.line, k.column});
    }
    if (in_order) return;
    // (Not as a memo writes them: in path order, the last of two with one path kept.)
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    StackKeys unique;
    for (auto& k : out) {
        if (!unique.empty() && unique.back().first == k.first) unique.back() = std::move(k);
        else unique.push_back(std::move(k));
    }
    out = std::move(unique);
}

std::vector<std::pair<std::string, SourceRegion>> Regions::all() const {
    std::vector<std::pair<std::string, SourceRegion>> out;
    out.reserve(size());
    for (const auto& [path, at] : top_) out.emplace_back(path, region(at));
    for (size_t i = 0; i < stacks_.size(); ++i) {
        const std::string prefix = std::string(kStacks) + std::to_string(i);
        for (const auto& [below, at] : stacks_[i]) out.emplace_back(prefix + below, region(at));
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return out;
}

}  // namespace sitegen
