// Manifest and build-state text.
#include "out/manifest.h"
#include "out/beside.h"

#include <algorithm>
#include <charconv>
#include <sstream>
#include <string_view>
#include <utility>

#include "text/lines.h"

namespace sitegen {

namespace {

constexpr const char* kStateHeader =
    "# sitegen build state v3: not part of the output tree; a rebuild skips stacks whose key and files are unchanged\n";

}  // namespace

namespace {

// Calls `line(path, hash, mode)` for each file line of a manifest's text, in order.
template <typename Line>
void for_each_manifest_line(std::string_view rest, const Line& line_of) {
    while (!rest.empty()) {
        const auto end = rest.find('\n');
        const std::string_view line = rest.substr(0, end);
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
        if (line.empty() || line[0] == '#') continue;
        const auto a = line.find(' ');
        const auto b = a == std::string_view::npos ? a : line.find(' ', a + 1);
        if (b == std::string_view::npos) continue;
        line_of(line.substr(b + 1), line.substr(0, a), line.substr(a + 1, b - a - 1) == "755" ? 0755u : 0644u);
    }
}

}  // namespace

TreeIndex parse_manifest(const std::string& text) {
    TreeIndex out;
    out.reserve(count_newlines(text));  // one file per line: no rehash
    for_each_manifest_line(text, [&](std::string_view path, std::string_view hash, unsigned mode) {
        out[std::string(path)] = {std::string(hash), mode};
    });
    return out;
}

ManifestLines manifest_lines(std::string_view text) {
    ManifestLines out;
    out.reserve(count_newlines(text));
    for_each_manifest_line(text, [&](std::string_view path, std::string_view hash, unsigned mode) {
        out.push_back({path, {hash, mode}});
    });
    return out;
}

namespace {

void put_stat(std::string& out, const char* kind, const FileStat& s, std::string_view path) {
    char numbers[4 * 21];  // " <n>" four times (to_chars: no string per number)
    char* end = numbers;
    for (unsigned long long n : {s.size, s.mtime_ns, s.ino, static_cast<unsigned long long>(s.mode)}) {
        *end++ = ' ';
        end = std::to_chars(end, numbers + sizeof numbers, n).ptr;
    }
    out += kind;
    out.append(numbers, end);
    out += ' ';
    out += path;
    out += '\n';
}

// A line-at-a-time reader of the state text (string views, no stream: a 10,000-stack state
// has 100,000 lines, and an up-to-date build reads nothing else of size).
struct StateReader {
    std::string_view text;
    bool ok = true;
    std::string_view word() {
        // (A plain loop: find_first_of searches its set once per character of the text.)
        size_t end = 0;
        while (end < text.size() && text[end] != ' ' && text[end] != '\n') ++end;
        std::string_view w = text.substr(0, end);
        text.remove_prefix(end);
        if (!text.empty() && text.front() == ' ') text.remove_prefix(1);
        return w;
    }
    unsigned long long number() {
        const std::string_view w = word();
        unsigned long long n = 0;
        const auto [ptr, ec] = std::from_chars(w.data(), w.data() + w.size(), n);
        if (ec != std::errc() || ptr != w.data() + w.size() || w.empty()) ok = false;
        return n;
    }
    std::string_view rest_of_line_view() {
        const size_t end = text.find('\n');
        if (end == std::string_view::npos) { ok = false; return {}; }
        const std::string_view out = text.substr(0, end);
        text.remove_prefix(end + 1);
        return out;
    }
    std::string rest_of_line() {
        const size_t end = text.find('\n');
        if (end == std::string_view::npos) { ok = false; return {}; }
        std::string out(text.substr(0, end));
        text.remove_prefix(end + 1);
        return out;
    }
    std::string bytes(size_t n) {
        if (n > text.size()) { ok = false; return {}; }
        std::string out(text.substr(0, n));
        text.remove_prefix(n);
        return out;
    }
    FileStat stat() {
        FileStat s;
        s.size = number();
        s.mtime_ns = number();
        s.ino = number();
        s.mode = static_cast<unsigned>(number());
        return s;
    }
};

bool one_line(std::string_view s) { return s.find('\n') == std::string_view::npos; }

}  // namespace

bool append_listing_line(std::string& out, const TreeEntry& e) {
    if (!one_line(e.path)) return false;
    if (e.type == TreeEntry::Type::dir) {
        put_stat(out, "d", stat_of(e), e.path);
    } else if (e.type == TreeEntry::Type::file) {
        char number[24];
        out += "f ";
        out.append(number, std::to_chars(number, number + sizeof number, e.ino).ptr);
        out += ' ';
        out += e.path;
        out += '\n';
    } else {
        return false;
    }
    return true;
}

bool parse_listing(std::string_view lines, std::vector<TreeEntry>& dirs, std::vector<ListedFile>& files) {
    StateReader in{lines};
    dirs.clear();
    files.clear();
    while (in.ok && !in.text.empty()) {
        const std::string_view kind = in.word();
        if (kind == "d") {
            const FileStat s = in.stat();
            TreeEntry& e = dirs.emplace_back();
            e.type = TreeEntry::Type::dir;
            e.size = s.size;
            e.mtime_ns = s.mtime_ns;
            e.ino = s.ino;
            e.mode = s.mode;
            e.path = in.rest_of_line_view();
            if (e.path.empty()) return false;
        } else if (kind == "f") {
            ListedFile& f = files.emplace_back();
            f.ino = in.number();
            f.path = in.rest_of_line_view();
            if (f.path.empty()) return false;
        } else {
            return false;
        }
    }
    return in.ok;
}

std::string state_text(const BuildState& state, bool threads) { return state_text_pieces(state, threads).joined(); }

StateText state_text_pieces(const BuildState& state, bool threads) {
    // Each path and name is one line of the text: one with a newline cannot be written.
    for (const auto& q : state.queries)
        if (!one_line(q.path)) return {};
    for (const auto& d : state.rule_dirs)
        if (!one_line(d)) return {};
    StateText result;
    PieceWriter w{result};
    std::string& head = w.text(4096);
    head = kStateHeader;
    if (!state.inputs.empty()) {
        head += "inputs " + state.inputs + "\n";
        for (const auto& dir : state.rule_dirs) head += "ruledir " + dir + "\n";
        for (const auto& q : state.queries) {
            head += "query ";
            head += static_cast<char>(q.op);
            head += ' ' + q.path + "\n";
        }
        for (const auto& d : state.findings)
            head += "finding " + std::to_string(static_cast<int>(d.severity)) + " " + std::to_string(d.where.line) + " " +
                    std::to_string(d.where.column) + " " + std::to_string(d.where.file.size()) + " " +
                    std::to_string(d.message.size()) + " " + std::to_string(d.hint.size()) + " " + d.where.file +
                    d.message + d.hint + "\n";
    }
    for (const auto& [root, s] : state.manifests) put_stat(head, "manifest", s, root);
    for (const auto& [root, at] : state.looked) {
        if (!one_line(root)) return {};
        head += "looked " + std::to_string(at) + " " + root + "\n";
    }
    for (const auto& [root, spare] : state.spares) {
        const std::string_view lines = spare.text();
        if (!one_line(root) || (!lines.empty() && lines.back() != '\n')) return {};
        put_stat(w.text(), "spare", spare.top, root);
        w.view(lines);
    }
    size_t dir_bytes = 0;  // (in path order, the map's: the same state, the same text)
    for (const auto& [dir, stat] : state.dirs) {
        if (!one_line(dir)) return {};
        dir_bytes += 8 + 5 * 21 + dir.size();
    }
    std::string& dir_text = w.text(dir_bytes);
    for (const auto& [dir, stat] : state.dirs) put_stat(dir_text, "dir", stat, dir);
    // The stacks' lines (false: one cannot be written), the second half made beside the first
    // when there are many to make (a kept stack's are a view of the last state's).
    using Stacks = decltype(state.stacks);
    const auto put_stacks = [&state](StateText& part, Stacks::const_iterator from, Stacks::const_iterator to) {
        PieceWriter p{part};
        // (No regrowth copying megabytes: an upper bound of the lines still to make, each
        // "file" and five numbers, reserved when a string is opened for them.)
        size_t rest = 0;
        for (auto it = from; it != to; ++it) {
            const auto& [id, record] = *it;
            if (!record.same_record.empty()) continue;
            rest += 16 + record.key.size() + id.size();
            if (record.same_lines.empty())
                for (const auto& path : record.files) rest += 8 + 5 * 21 + path.size();
        }
        for (auto it = from; it != to; ++it) {
            const auto& [id, record] = *it;
            if (!one_line(id)) return false;
            if (!record.same_record.empty()) {
                p.view(record.same_record);
                continue;
            }
            std::string& text = p.text(rest);
            const size_t before = text.size();
            text += "stack " + record.key + (record.rebuilt ? " rebuilt " : " kept ") + id + "\n";
            if (!record.same_lines.empty()) {
                p.view(record.same_lines);
                continue;
            }
            for (const auto& path : record.files) {
                const auto file = state.files.find(path);
                if (file == state.files.end() || !one_line(path)) return false;
                put_stat(text, "file", file->second.stat, path);
            }
            rest -= std::min(rest, text.size() - before);
        }
        p.close();
        return true;
    };
    const auto middle = std::next(state.stacks.begin(), static_cast<std::ptrdiff_t>(state.stacks.size() / 2));
    StateText first, second;
    bool first_ok = false, second_ok = false;
    run_beside(threads && state.files.size() >= 4096,
               [&] { second_ok = put_stacks(second, middle, state.stacks.end()); },
               [&] { first_ok = put_stacks(first, state.stacks.begin(), middle); });
    if (!first_ok || !second_ok) return {};
    w.append(first);
    w.append(second);
    return result;
}

namespace {

// The lines of a state from `from` (an offset into `text`) that belong to `parts` (see
// StateParts): true at the end of the text, or with `stop` at the first line of the next part
// (`stop` = its offset); false when a line is not one a state has there. (`kept`: the state
// keeps `text`, so its spares' listings may be views into it.)
bool read_state_lines(std::string_view text, size_t from, BuildState& state, StateParts parts, bool kept, size_t& stop) {
    StateReader in{std::string_view(text).substr(from)};
    BuildState::StackRecord* current = nullptr;
    while (in.ok && !in.text.empty()) {
        const std::string_view line = in.text;
        const std::string_view kind = in.word();
        const bool head_kind = kind == "manifest" || kind == "dir" || kind == "spare" || kind == "looked";
        if ((parts == StateParts::inputs && (head_kind || kind == "file" || kind == "stack")) ||
            (parts == StateParts::head && kind == "stack")) {
            stop = static_cast<size_t>(line.data() - text.data());
            return true;
        }
        if (parts == StateParts::stacks && kind != "stack" && kind != "file") return false;
        if (kind == "inputs") {
            state.inputs = in.rest_of_line();
        } else if (kind == "ruledir") {
            state.rule_dirs.push_back(in.rest_of_line());
        } else if (kind == "query") {
            const std::string_view op = in.word();
            static constexpr std::string_view kOps = "redtlf";
            if (op.size() != 1 || kOps.find(op[0]) == std::string_view::npos) return false;
            state.queries.push_back({static_cast<InputQuery::Op>(op[0]), in.rest_of_line()});
        } else if (kind == "finding") {
            Diagnostic d;
            const auto severity = in.number();
            d.where.line = static_cast<int>(in.number());
            d.where.column = static_cast<int>(in.number());
            const size_t file = in.number(), message = in.number(), hint = in.number();
            if (severity > 2) return false;
            d.severity = static_cast<Severity>(severity);
            d.where.file = in.bytes(file);
            d.message = in.bytes(message);
            d.hint = in.bytes(hint);
            if (in.rest_of_line() != "") return false;
            state.findings.push_back(std::move(d));
        } else if (kind == "looked") {
            const unsigned long long at = in.number();
            state.looked[in.rest_of_line()] = at;
        } else if (kind == "file") {
            const FileStat s = in.stat();
            const std::string_view path = in.rest_of_line_view();
            if (!current) return false;
            const uint32_t line = state.files_read++;
            if (current->files.empty()) current->first_line = line;
            else if (current->first_line != KnownFile::kNoLine && current->first_line + current->files.size() != line)
                current->first_line = KnownFile::kNoLine;
            current->files.push_back(kept ? path : state.own(std::string(path)));  // (a view: the state keeps its text)
            state.files.insert_or_assign(std::string(path), KnownFile{s, line});
            current->lines_size = static_cast<size_t>(in.text.data() - text.data()) - current->lines_at;
        } else if (kind == "manifest" || kind == "dir") {
            const FileStat s = in.stat();
            std::string path = in.rest_of_line();
            if (kind == "manifest") state.manifests[path] = s;
            else state.dirs.insert_or_assign(state.dirs.end(), path, s);  // (in order: at the end)
        } else if (kind == "spare") {
            // Its listing: the lines after it that start with "d " or "f ".
            SpareListing spare;
            spare.top = in.stat();
            const std::string root = in.rest_of_line();
            size_t end = 0;
            while (end + 1 < in.text.size() && (in.text[end] == 'd' || in.text[end] == 'f') && in.text[end + 1] == ' ') {
                const size_t eol = in.text.find('\n', end);
                if (eol == std::string_view::npos) return false;
                end = eol + 1;
            }
            if (kept) spare.read = in.text.substr(0, end);  // (a view: the state keeps its text)
            else spare.lines = std::string(in.text.substr(0, end));
            in.text.remove_prefix(end);
            state.spares[root] = std::move(spare);
        } else if (kind == "stack") {
            const std::string key(in.word());
            const std::string_view how = in.word();
            current = &state.stacks[in.rest_of_line()];
            current->files.reserve(16);  // (a stack has about a dozen files: no regrowth for each)
            current->key = key;
            current->rebuilt = how == "rebuilt";
            current->lines_at = static_cast<size_t>(in.text.data() - text.data());
            current->lines_size = 0;
        } else {
            return false;
        }
    }
    stop = text.size();
    return in.ok;
}

// A state's text into `state`: its inputs, its head, or all (both parts) of it.
bool parse_state_text(std::string_view text, BuildState& state, StateParts parts, bool kept) {
    state = {};
    const size_t header = std::char_traits<char>::length(kStateHeader);
    if (parts == StateParts::stacks || text.substr(0, header) != kStateHeader) return false;
    if (parts != StateParts::inputs) state.files.reserve(count_newlines(text));  // (an upper bound: no rehash)
    size_t stop = 0;
    if (!read_state_lines(text, header, state, parts == StateParts::all ? StateParts::head : parts, kept, stop))
        return state = {}, false;
    if (parts == StateParts::all && !read_state_lines(text, stop, state, StateParts::stacks, kept, stop))
        return state = {}, false;
    state.stacks_at = parts == StateParts::head ? stop : std::string::npos;
    return true;
}

}  // namespace

bool parse_state(std::string_view text, BuildState& state, StateParts parts) {
    return parse_state_text(text, state, parts, false);
}

bool parse_state(FileText&& text, BuildState& state, StateParts parts) {
    if (!parse_state_text(text, state, parts, true)) return false;
    state.text = std::move(text);  // (the spans are offsets into it)
    return true;
}

bool parse_state_stacks(BuildState& state) {
    if (state.stacks_at == std::string::npos) return true;  // (read already)
    size_t stop = 0;
    const bool ok = state.stacks_at <= state.text.size() &&
                    read_state_lines(state.text, state.stacks_at, state, StateParts::stacks, true, stop);
    state.stacks_at = std::string::npos;
    if (!ok) {
        state.stacks.clear();
        state.files.clear();
        state.files_read = 0;
    }
    return ok;
}

std::string_view BuildState::kept_record(const std::string& id, const std::string& key, size_t files,
                                         std::string_view* lines_out) const {
    const std::string_view lines = file_lines(id, files);
    if (lines_out) *lines_out = lines;
    if (lines.empty()) return {};
    const std::string line = "stack " + key + " kept " + id + "\n";
    const size_t at = static_cast<size_t>(lines.data() - text.data());
    if (at < line.size() || text.view().substr(at - line.size(), line.size()) != line) return {};
    return text.view().substr(at - line.size(), line.size() + lines.size());
}

std::string_view BuildState::file_lines(const std::string& id, size_t files) const {
    const auto it = stacks.find(id);
    if (it == stacks.end() || !it->second.lines_size || it->second.lines_at + it->second.lines_size > text.size()) return {};
    const auto lines = text.view().substr(it->second.lines_at, it->second.lines_size);
    return count_newlines(lines) == files ? lines : std::string_view();
}

std::string state_path(const std::string& dir, const std::string& site_name) { return dir + "/" + site_name; }

}  // namespace sitegen
