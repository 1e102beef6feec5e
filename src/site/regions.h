// Regions: where each key of a loaded site came from, by its dotted model path.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "site/source_region.h"

namespace sitegen {

// Paths as the loader names them: "hardware.nics", "stacks.0.env.NCCL_DEBUG",
// "collectives.env.NCCL_SOCKET_IFNAME". A site of 2,000 stacks has ~100,000 of them, most a
// stack's: those are kept with their stack, by their path below its own ("stacks.<index>"),
// and each file is named once (no map node, full path and file name per key; a stack read back
// from the stack memo takes its keys in one step, and a lookup searches its stack's ~50 keys).
class Regions {
public:
    // Where `path` came from; nullopt when no site file had it.
    std::optional<SourceRegion> find(std::string_view path) const;
    size_t count(std::string_view path) const { return has(path) ? 1 : 0; }
    bool has(std::string_view path) const;
    SourceRegion at(std::string_view path) const;  // (std::out_of_range when absent)
    // Records (or replaces) where `path` came from.
    void set(std::string_view path, const SourceRegion& region);
    // Where `path` came from, recorded as nowhere (a default SourceRegion) when absent, as a
    // map's operator[] did for the loader's findings.
    SourceRegion touch(std::string_view path);
    size_t size() const;

    // A stack's key as its stack memo entry holds it: its path below the stack's ("" for the
    // stack's own, ".python.venv") and its place in the entry's file (line 0: unknown).
    struct Below {
        std::string_view path;
        int line = 0;
        int column = 0;
    };
    // The keys of stack `index`, all in `file` (replacing any it had).
    void set_stack(size_t index, const std::string& file, const std::vector<Below>& keys);
    // Each key of stack `index` in path order: f(path below the stack's, file, line, column).
    template <class F>
    void each_below_stack(size_t index, F&& f) const {
        if (index >= stacks_.size()) return;
        for (const auto& [below, at] : stacks_[index]) f(std::string_view(below), files_[at.file], at.line, at.column);
    }
    // Every key and where it came from, in path order.
    std::vector<std::pair<std::string, SourceRegion>> all() const;

private:
    struct At {
        uint32_t file = 0;  // index into files_
        int line = 0;
        int column = 0;
    };
    using StackKeys = std::vector<std::pair<std::string, At>>;  // in path order
    uint32_t file_index(const std::string& file);
    SourceRegion region(const At& at) const { return {files_[at.file], at.line, at.column}; }
    const At* find_at(std::string_view path) const;
    At* find_at(std::string_view path);

    std::vector<std::string> files_;
    std::map<std::string, At, std::less<>> top_;  // every key that is not a stack's
    std::vector<StackKeys> stacks_;               // by stack index
};

}  // namespace sitegen
