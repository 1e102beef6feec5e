// toml_pieces: a big site file's `[[stacks]]` entries parsed on several threads and joined.
#include "site/toml_pieces.h"

#include <algorithm>
#include <string>
#include <vector>

#include "out/threads.h"
#include "text/lines.h"

namespace sitegen {

namespace {

bool under_stacks(const TomlHeader& h) { return h.first == "stacks"; }
bool is_entry(const TomlHeader& h) { return h.array && !h.dotted && under_stacks(h); }

// Moves the `[[stacks]]` entries of each later piece after the first piece's; false when a
// piece holds anything else.
bool join(std::vector<toml::table>& roots) {
    toml::array* entries = roots[0].get_as<toml::array>("stacks");
    if (!entries) return false;
    for (size_t i = 1; i < roots.size(); ++i) {
        toml::array* more = roots[i].size() == 1 ? roots[i].get_as<toml::array>("stacks") : nullptr;
        if (!more) return false;
        for (toml::node& entry : *more) {
            toml::table* t = entry.as_table();
            if (!t) return false;
            entries->push_back(std::move(*t));  // (a node's move keeps its source region)
        }
    }
    return true;
}

}  // namespace

// Entry headers about `piece_bytes` apart after the first entry; none when the file does not
// split so (a header after the first entry that is not under `stacks`, a quoted `"stacks"`).
std::vector<size_t> piece_starts(std::string_view text, const TomlOutline& outline, const TomlPieces& how) {
    const std::vector<size_t> entries = entry_starts(text, outline);
    std::vector<size_t> starts;
    for (size_t i = 1, next = entries.empty() ? 0 : entries[0] + how.piece_bytes; i < entries.size(); ++i) {
        if (entries[i] < next) continue;
        starts.push_back(entries[i]);
        next = entries[i] + how.piece_bytes;
    }
    return starts;
}

bool parse_parts(std::string_view text, std::string_view path, const std::vector<TomlPart>& parts, unsigned threads,
                 std::vector<toml::table>& roots) {
    const size_t first = roots.size();
    roots.resize(first + parts.size());
    std::vector<char> failed(parts.size(), 0);
    share_out(parts.size(), threads, [&](size_t i, unsigned) {
        std::string part(parts[i].lines, '\n');
        part.append(text.substr(parts[i].begin, parts[i].end - parts[i].begin));
        try {
            roots[first + i] = toml::parse(part, path);
        } catch (const toml::parse_error&) {
            failed[i] = 1;
        }
    });
    return std::find(failed.begin(), failed.end(), 1) == failed.end();
}

std::vector<size_t> entry_starts(std::string_view text, const TomlOutline& outline) {
    const auto& headers = outline.headers;
    const auto first = std::find_if(headers.begin(), headers.end(), is_entry);
    if (first == headers.end() || !std::all_of(first, headers.end(), under_stacks)) return {};
    std::vector<size_t> starts;
    for (auto h = first; h != headers.end(); ++h) {
        if (!is_entry(*h)) continue;
        if (h->offset > 0 && text[h->offset - 1] != '\n') return {};
        starts.push_back(h->offset);
    }
    return starts;
}

toml::table parse_in_pieces(std::string_view text, std::string_view path, const TomlOutline& outline,
                            const TomlPieces& how) {
    const unsigned cores = how.threads ? how.threads : split_threads();
    if (text.size() < how.min_bytes || cores < 2) return toml::parse(text, path);
    TomlPieces sized = how;
    if (how.piece_per_thread) sized.piece_bytes = std::max(how.piece_bytes, text.size() / cores);
    const std::vector<size_t> starts = piece_starts(text, outline, sized);
    if (starts.empty()) return toml::parse(text, path);
    std::vector<TomlPart> parts(starts.size() + 1);
    for (size_t i = 0; i < parts.size(); ++i) {
        parts[i].begin = i == 0 ? 0 : starts[i - 1];
        parts[i].end = i < starts.size() ? starts[i] : text.size();
        parts[i].lines = i == 0 ? 0 : parts[i - 1].lines + count_newlines(text.substr(parts[i - 1].begin, parts[i].begin - parts[i - 1].begin));
    }
    std::vector<toml::table> roots;
    // A piece that fails is parsed again whole, for toml++'s first error in the file.
    if (!parse_parts(text, path, parts, cores, roots) || !join(roots)) return toml::parse(text, path);
    return std::move(roots[0]);
}

}  // namespace sitegen
