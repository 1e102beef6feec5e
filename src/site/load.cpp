// Loads site TOML into the model: parse, follow `extends`, read each layer row by row (fields.h).
#include "site/load.h"

#include <algorithm>
#include <filesystem>

#include <toml++/toml.h>

#include "site/fields.h"
#include "site/stack_memo.h"
#include "site/toml_pieces.h"
#include "site/toml_reader.h"
#include "node/topology.h"
#include "out/threads.h"
#include "text/lines.h"

namespace sitegen {

namespace {

// ---- one table's keys, row by row (fields.h) ------------------------------------------------

template <typename T>
void read_rows(TomlReader& r, T& object);

// "'a' or 'b'", "'a', 'b' or 'c'".
std::string alternatives(const std::vector<const char*>& choices) {
    std::string out;
    for (size_t i = 0; i < choices.size(); ++i)
        out += (i == 0 ? "'" : i + 1 == choices.size() ? " or '" : ", '") + std::string(choices[i]) + "'";
    return out;
}

template <typename T>
void read_key(TomlReader& r, const Field<T>& row, std::string& value) {
    if (row.choices.empty()) r.read(row.key, value);
    else r.read_choice(row.key, value, row.choices);
}

template <typename T>
void read_key(TomlReader& r, const Field<T>& row, int& value) { r.read(row.key, value, row.min, row.max); }

template <typename T>
void read_key(TomlReader& r, const Field<T>& row, bool& value) { r.read(row.key, value); }

template <typename T>
void read_key(TomlReader& r, const Field<T>& row, std::vector<std::string>& values) { r.read(row.key, values); }

template <typename T>
void read_key(TomlReader& r, const Field<T>& row, std::vector<int>& values) {
    r.read(row.key, values, row.min, row.max);
}

template <typename T, typename E>
    requires std::is_enum_v<E>
void read_key(TomlReader& r, const Field<T>& row, E& value) { r.read_enum(row.key, value); }

// Core ranges per device ("48-55", "0-3,8-11"); kept only when every entry parses.
template <typename T>
void read_key(TomlReader& r, const Field<T>& row, CoreLists& lists) {
    std::vector<std::string> ranges;
    if (!r.read(row.key, ranges)) return;
    CoreLists parsed_lists;
    bool ok = true;
    for (size_t i = 0; i < ranges.size(); ++i) {
        auto parsed = parse_core_ranges(ranges[i]);
        if (!parsed) {
            r.diags().error(r.regions().touch(r.child(row.key) + "." + std::to_string(i)),
                            "'" + ranges[i] + "' is not a core list such as \"48-55\" or \"0-3,8-11\"");
            ok = false;
            continue;
        }
        parsed_lists.push_back(*parsed);
    }
    if (ok) lists = std::move(parsed_lists);
}

// A table of strings, merged by name into what earlier layers set. With `choices`, every value
// must be one of them and the table is taken only when all are.
template <typename T>
void read_key(TomlReader& r, const Field<T>& row, EnvList& entries) {
    const bool env_vars = row.key_names == KeyNames::env_vars;
    if (row.choices.empty()) {
        r.read_string_table(row.key, entries, env_vars);
        return;
    }
    EnvList picks = entries;
    if (!r.read_string_table(row.key, picks, env_vars)) return;
    bool ok = true;
    for (const auto& [name, pick] : picks)
        if (std::find(row.choices.begin(), row.choices.end(), std::string_view(pick)) ==
            row.choices.end()) {
            const std::string path = r.child(row.key) + "." + name;
            r.diags().error(r.regions().touch(path),
                            "'" + path + "' must be " + alternatives(row.choices) + ", found '" + pick + "'");
            ok = false;
        }
    if (ok) entries = std::move(picks);
}

// A table present in the file; the container table's presence is what makes a container site.
template <typename C>
void on_table_present(C&) {}
void on_table_present(Container& container) { container.enabled = true; }

// A nested table: its own reader, its own unknown keys.
template <typename T, FieldTable C>
void read_key(TomlReader& r, const Field<T>& row, C& child) {
    const toml::table* table = r.table(row.key);
    if (!table) return;
    TomlReader nested(*table, child_path(r.schema_path(), row.key), r.child(row.key), r.regions(), r.diags());
    on_table_present(child);
    read_rows(nested, child);
    nested.report_unknown_keys();
}

// [container] binds = [...]: each file's list replaces the previous one; entries are numbered
// as written, and `container` defaults to `host`.
template <typename T>
void read_array(TomlReader& r, const Field<T>& row, const T&, std::vector<Bind>& binds) {
    const toml::array* items = r.array(row.key);
    if (!items) return;
    std::vector<Bind> out;
    size_t i = 0;
    for (const auto& item : *items) {
        const std::string path = r.child(row.key) + "." + std::to_string(i++);
        r.regions().set(path, region_of(item.source()));
        if (!item.is_table()) {
            r.diags().error(region_of(item.source()), "'" + path + "' must be a table such as { host = \"/opt/cray\" }, found " +
                                                          toml_type_name(item));
            continue;
        }
        TomlReader entry(*item.as_table(), child_path(r.schema_path(), row.key) + "[]", path, r.regions(), r.diags());
        if (!entry.has("host"))
            r.diags().error(region_of(item.source()), "'" + path + "' is missing required key 'host'");
        Bind bind;
        read_rows(entry, bind);
        if (bind.container.empty()) bind.container = bind.host;
        entry.report_unknown_keys();
        out.push_back(bind);
    }
    binds = std::move(out);
}

// [[stacks]]: every file adds its stacks, numbered across files. Each starts as the site's
// [python], which its own python table then overrides key by key.
template <typename T>
void read_stack(TomlReader& r, const Field<T>& row, const T& parent, const toml::node& item,
                std::vector<Stack>& stacks) {
    const std::string path = r.child(row.key) + "." + std::to_string(stacks.size());
    r.regions().set(path, region_of(item.source()));
    if (!item.is_table()) {
        r.diags().error(region_of(item.source()),
                        std::string("'stacks' entries must be tables ([[stacks]]), found ") + toml_type_name(item));
        return;
    }
    TomlReader entry(*item.as_table(), child_path(r.schema_path(), row.key) + "[]", path, r.regions(), r.diags());
    Stack stack;
    if constexpr (std::is_same_v<T, Site>) stack.python = parent.python;  // stacks live at the top level
    read_rows(entry, stack);
    entry.report_unknown_keys();
    stacks.push_back(std::move(stack));
}

template <typename T>
void read_array(TomlReader& r, const Field<T>& row, const T& parent, std::vector<Stack>& stacks) {
    const toml::array* items = r.array(row.key);
    if (!items) return;
    stacks.reserve(stacks.size() + items->size());  // (no regrowth moving thousands of stacks)
    for (const auto& item : *items) read_stack(r, row, parent, item, stacks);
}

// An array of tables whose entries are read row by row: each file's entries are added to what
// earlier files read ([[profiles]]: a shared fragment's profiles and the site's own) or, with
// `replace`, take its place (a profile's vars). Entries are numbered across files.
template <typename T, FieldTable C>
void read_entries(TomlReader& r, const Field<T>& row, std::vector<C>& entries, bool replace) {
    const toml::array* items = r.array(row.key);
    if (!items) return;
    if (replace) entries.clear();
    for (const auto& item : *items) {
        const std::string path = r.child(row.key) + "." + std::to_string(entries.size());
        r.regions().set(path, region_of(item.source()));
        if (!item.is_table()) {
            r.diags().error(region_of(item.source()), "'" + path + "' must be a table ([[" +
                                                          child_path(r.schema_path(), row.key) + "]]), found " +
                                                          toml_type_name(item));
            continue;
        }
        TomlReader entry(*item.as_table(), child_path(r.schema_path(), row.key) + "[]", path, r.regions(), r.diags());
        for (const Field<C>& field : fields_of<C>())
            if (std::string(field.requirement) == "required" && !entry.has(field.key))
                r.diags().error(region_of(item.source()), "'" + path + "' is missing required key '" + field.key + "'");
        C object;
        read_rows(entry, object);
        entry.report_unknown_keys();
        entries.push_back(std::move(object));
    }
}

template <typename T>
void read_array(TomlReader& r, const Field<T>& row, const T&, std::vector<Profile>& profiles) {
    read_entries(r, row, profiles, false);
}

template <typename T>
void read_array(TomlReader& r, const Field<T>& row, const T&, std::vector<ProfileVar>& vars) {
    read_entries(r, row, vars, true);
}

// [[stacks.install]]: the steps as written, numbered in order; `packages` is required.
template <typename T>
void read_array(TomlReader& r, const Field<T>& row, const T&, std::vector<InstallStep>& steps) {
    const toml::array* items = r.array(row.key);
    if (!items) return;
    std::vector<InstallStep> out;
    size_t i = 0;
    for (const auto& item : *items) {
        const std::string path = r.child(row.key) + "." + std::to_string(i++);
        r.regions().set(path, region_of(item.source()));
        if (!item.is_table()) {
            r.diags().error(region_of(item.source()), "'" + path + "' must be a table ([[stacks.install]] with "
                                                          "packages = [...]), found " + toml_type_name(item));
            continue;
        }
        TomlReader entry(*item.as_table(), child_path(r.schema_path(), row.key) + "[]", path, r.regions(), r.diags());
        if (!entry.has("packages"))
            r.diags().error(region_of(item.source()), "'" + path + "' is missing required key 'packages'");
        InstallStep step;
        read_rows(entry, step);
        entry.report_unknown_keys();
        out.push_back(std::move(step));
    }
    steps = std::move(out);
}

template <typename T>
void read_row(TomlReader& r, const Field<T>& row, T& object) {
    std::visit([&](auto member) {
        using V = member_value_t<decltype(member)>;
        if constexpr (std::is_same_v<V, ExtendsPaths>) return;  // applied first, by the Loader
        else if constexpr (is_table_array<V>::value) read_array(r, row, object, object.*member);
        else read_key(r, row, object.*member);
    }, row.member);
}

template <typename T>
void read_rows(TomlReader& r, T& object) {
    for (const Field<T>& row : fields_of<T>()) read_row(r, row, object);
}

// ---- which files may be read: those under the sites directory ---------------------------

namespace stdfs = std::filesystem;

std::string lexical(const std::string& p) {
    return stdfs::path(p).lexically_normal().generic_string();
}

// Normalised, without a trailing separator (so that lexically_relative compares names only).
stdfs::path normal(stdfs::path p) {
    p = p.lexically_normal();
    if (p.has_relative_path() && !p.has_filename()) p = p.parent_path();
    return p;
}

bool is_under(const stdfs::path& path, const stdfs::path& root) {
    const stdfs::path relative = path.lexically_relative(root);
    return !relative.empty() && *relative.begin() != "..";
}

// `path` made absolute against the working directory, without touching the file system.
stdfs::path absolute_lexical(const std::string& path) {
    std::error_code ec;
    stdfs::path out = stdfs::absolute(path, ec);
    return normal(ec ? stdfs::path(path) : out);
}

// Why `target` may not be read ("" when it may): it must lie under the sites directory as
// written and, on the real disk, once symbolic links are resolved on both sides. MemoryFs has
// no links (and its paths are not on disk), so the second test is for the disk only; a
// FileSystem::real_path would let this ask `fs` instead.
std::string outside_sites_dir(FileSystem& files, const std::string& target, const std::string& sites_dir) {
    const std::string where = "the sites directory '" + sites_dir + "'";
    if (!is_under(absolute_lexical(target), absolute_lexical(sites_dir))) return "is outside " + where;
    if (dynamic_cast<MemoryFs*>(&files)) return "";
    std::error_code ec;
    const stdfs::path real_target = normal(stdfs::weakly_canonical(target, ec));
    if (ec) return "cannot be resolved: " + ec.message();
    const stdfs::path real_root = normal(stdfs::weakly_canonical(sites_dir, ec));
    if (ec) return "cannot be resolved: " + ec.message();
    if (!is_under(real_target, real_root)) return "leads outside " + where + " through a symbolic link";
    return "";
}

// ---- layers ------------------------------------------------------------------------------

// A `[[stacks]]` entry of a file loaded with a stack memo: its bytes (from its header to the
// next), its first line, its key, and what it is read from: the memo's entry, read back, or its
// item in the table of the run of entries it was parsed with.
struct MemoPiece {
    size_t begin = 0, end = 0;
    int line = 0;
    std::string key;
    StackMemo::Entry entry;  // the memo's (empty text: parsed)
    MemoStack read;          // the entry read back
    const toml::node* item = nullptr;
    const toml::array* array = nullptr;  // the `stacks` array holding `item`
};

// Parses the pieces that are neither read back from the memo nor parsed yet, neighbours
// together, each run at its lines (toml_pieces' parse_parts), on up to split_threads() threads;
// their tables are added to `roots`. False when one fails or holds other than one entry per piece.
bool parse_runs(std::string_view text, const std::string& path, std::vector<MemoPiece>& pieces,
                std::vector<toml::table>& roots) {
    const auto wanted = [&](size_t i) { return pieces[i].entry.text.empty() && !pieces[i].item; };
    size_t bytes = 0;
    for (size_t i = 0; i < pieces.size(); ++i)
        if (wanted(i)) bytes += pieces[i].end - pieces[i].begin;
    // A long run is cut in about as many parts as there are threads (a first build reads every
    // entry from the text), none smaller than toml_pieces' pieces.
    const unsigned threads = split_threads();
    const size_t part_bytes = std::max(TomlPieces().piece_bytes, bytes / threads);
    std::vector<std::pair<size_t, size_t>> runs;  // [first, last) pieces
    size_t run_bytes = 0;
    for (size_t i = 0; i < pieces.size(); ++i) {
        if (!wanted(i)) continue;
        if (!runs.empty() && runs.back().second == i && run_bytes < part_bytes) {
            ++runs.back().second;
        } else {
            runs.push_back({i, i + 1});
            run_bytes = 0;
        }
        run_bytes += pieces[i].end - pieces[i].begin;
    }
    if (runs.empty()) return true;
    std::vector<TomlPart> parts;
    parts.reserve(runs.size());
    for (const auto& [a, b] : runs)
        parts.push_back({pieces[a].begin, pieces[b - 1].end, static_cast<size_t>(pieces[a].line - 1)});
    const size_t first = roots.size();
    if (!parse_parts(text, path, parts, runs.size() > 1 ? threads : 1, roots)) return false;
    for (size_t r = 0; r < runs.size(); ++r) {
        const toml::array* items = roots[first + r].get_as<toml::array>("stacks");
        if (!items || roots[first + r].size() != 1 || items->size() != runs[r].second - runs[r].first) return false;
        for (size_t i = runs[r].first; i < runs[r].second; ++i) {
            pieces[i].item = &(*items)[i - runs[r].first];
            pieces[i].array = items;
        }
    }
    return true;
}

struct Loader {
    FileSystem& fs;
    Site& site;
    Diagnostics& diags;
    std::string sites_dir;           // nothing outside it is read
    std::vector<std::string> chain;  // canonical paths currently being applied
    StackMemo* memo = nullptr;       // loaded stacks of the last build (see apply_with_memo)

    void apply_file(const std::string& path, const std::string& text, const SourceRegion& from, int depth);
    bool apply_with_memo(const std::string& path, std::string_view text, const TomlOutline& outline, int depth);
    void apply_layer(const toml::table& root, const std::string& path, int depth,
                     std::string_view text = {}, std::vector<MemoPiece>* pieces = nullptr);
    void read_pieces(TomlReader& top, const Field<Site>& row, const std::string& path, std::string_view text,
                     std::vector<MemoPiece>& pieces);
    void apply_extends(TomlReader& top, const std::string& path, int depth);
};

void Loader::apply_file(const std::string& path, const std::string& text, const SourceRegion& from,
                        int depth) {
    const std::string key = lexical(path);
    for (const auto& c : chain)
        if (c == key) {
            std::string cycle;
            for (const auto& c2 : chain) cycle += c2 + " -> ";
            diags.error(from, "'extends' cycle: " + cycle + key);
            return;
        }
    if (depth > kMaxExtendsDepth) {
        diags.error(from, "'extends' chain deeper than " + std::to_string(kMaxExtendsDepth) + " files");
        return;
    }
    if (text.size() > kMaxSiteFileBytes) {
        diags.error({path, 0, 0}, "file is " + std::to_string(text.size()) +
                                      " bytes; site files are limited to " +
                                      std::to_string(kMaxSiteFileBytes) + " bytes");
        return;
    }
    const TomlOutline outline = outline_toml(text, kMaxDottedKeyDepth);
    if (const auto& deep = outline.too_deep) {  // toml++ would overflow the stack
        diags.error({path, deep->line, deep->column},
                    "dotted keys and table headers nest tables more than " + std::to_string(kMaxDottedKeyDepth) +
                        " deep");
        return;
    }
    if (memo && apply_with_memo(path, text, outline, depth)) return;
    toml::table root;
    try {
        root = parse_in_pieces(text, path, outline);
    } catch (const toml::parse_error& e) {
        diags.error(region_of(e.source()), std::string(e.description()));
        return;
    }
    site.files.push_back(path);
    chain.push_back(key);
    apply_layer(root, path, depth);
    chain.pop_back();
}

// With `pieces`, the stacks are those pieces of `text` (see apply_with_memo), not root's.
void Loader::apply_layer(const toml::table& root, const std::string& path, int depth, std::string_view text,
                         std::vector<MemoPiece>* pieces) {
    TomlReader top(root, "", "", site.regions, diags);
    apply_extends(top, path, depth);
    for (const Field<Site>& row : fields_of<Site>()) {
        if (pieces && std::holds_alternative<std::vector<Stack> Site::*>(row.member)) read_pieces(top, row, path, text, *pieces);
        else read_row(top, row, site);
    }
    top.report_unknown_keys();
}

// A file loaded with a stack memo: the text before its first `[[stacks]]` header is parsed
// alone; each entry (from its header to the next) whose key the memo holds is read back from
// it, and the others are parsed in runs of neighbours, each at its lines, so every position
// is the file's. False, with nothing read, when the text does not split so (or the part before
// the entries names `stacks`) or a part fails to parse: then the whole text is parsed, for
// toml++'s own error. (The first entry is always parsed: the region of `stacks` is its array's.)
bool Loader::apply_with_memo(const std::string& path, std::string_view text, const TomlOutline& outline,
                             int depth) {
    const std::vector<size_t> starts = entry_starts(text, outline);
    if (starts.empty()) return false;
    toml::table head;
    try {
        head = toml::parse(text.substr(0, starts[0]), path);
    } catch (const toml::parse_error&) {
        return false;
    }
    if (head.contains("stacks")) return false;
    std::vector<MemoPiece> pieces(starts.size());
    int line = 1 + static_cast<int>(count_newlines(text.substr(0, starts[0])));
    for (size_t i = 0; i < pieces.size(); ++i) {
        MemoPiece& p = pieces[i];
        p.begin = starts[i];
        p.end = i + 1 < starts.size() ? starts[i + 1] : text.size();
        p.line = line;
        const std::string_view bytes = text.substr(p.begin, p.end - p.begin);
        line += static_cast<int>(count_newlines(bytes));
        p.key = stack_memo_key(memo->identity, path, bytes);
        if (const auto it = memo->entries.find(p.key); i > 0 && it != memo->entries.end()) p.entry = it->second;
    }
    // Read back before anything is read into the site; a broken entry is parsed instead.
    share_out(pieces.size(), pieces.size() >= 256 ? split_threads() : 1, [&](size_t i, unsigned) {
        MemoPiece& p = pieces[i];
        if (!p.entry.text.empty() && !stack_from_memo(p.entry.text, p.line, p.read)) p.entry = {};
    });
    // Entries changed here and there, each parsed after as many newlines as precede it, could
    // cost more than the whole text: then it is parsed whole (memo or not).
    size_t padding = 0;
    for (size_t i = 0; i < pieces.size(); ++i)
        if (pieces[i].entry.text.empty() && (i == 0 || !pieces[i - 1].entry.text.empty())) padding += static_cast<size_t>(pieces[i].line);
    if (padding > text.size()) return false;
    std::vector<toml::table> roots;
    if (!parse_runs(text, path, pieces, roots)) return false;
    site.files.push_back(path);
    chain.push_back(lexical(path));
    apply_layer(head, path, depth, text, &pieces);
    chain.pop_back();
    return true;
}

// The stacks of a file loaded with a memo, in order, at the `stacks` row: each read back from
// the memo when its stack started from the [python] it starts from now, else read from its item.
void Loader::read_pieces(TomlReader& top, const Field<Site>& row, const std::string& path, std::string_view text,
                         std::vector<MemoPiece>& pieces) {
    site.regions.set(row.key, region_of(pieces[0].array->source()));  // (as fetch records it)
    const std::string python = stack_memo_python(site.python);
    for (MemoPiece& p : pieces)
        if (!p.entry.text.empty() && stack_memo_python_of(p.entry.text) != python) p.entry = {};
    std::vector<toml::table> roots;
    if (!parse_runs(text, path, pieces, roots)) {
        // Only entries of another memo can fail here (this sitegen parsed every entry it keeps).
        try {
            (void)toml::parse(text, path);
        } catch (const toml::parse_error& e) {
            diags.error(region_of(e.source()), std::string(e.description()));
            return;
        }
        diags.error({path, 0, 0}, "internal: a [[stacks]] entry from the stack memo cannot be parsed",
                    "remove the build state directory's *.stacks files and build again");
        return;
    }
    site.stacks.reserve(site.stacks.size() + pieces.size());  // (no regrowth moving thousands of stacks)
    for (MemoPiece& p : pieces) {
        const size_t index = site.stacks.size();
        const size_t findings = diags.error_count() + diags.warning_count() + diags.note_count();
        if (!p.entry.text.empty()) {
            site.regions.set_stack(index, path, p.read.regions);  // (in path order, as the entry lists them)
            site.stacks.push_back(std::move(p.read.stack));
            ++memo->taken;
        } else {
            read_stack(top, row, site, *p.item, site.stacks);
        }
        const bool clean = diags.error_count() + diags.warning_count() + diags.note_count() == findings;
        memo->pieces.push_back({p.key, python, path, index, p.line, p.entry, clean});
    }
}

// The files named by `extends`, in order, before the rest of this file.
void Loader::apply_extends(TomlReader& top, const std::string& path, int depth) {
    std::vector<std::string> extends;
    if (!top.read("extends", extends)) return;
    const auto dir = stdfs::path(path).parent_path();
    for (size_t i = 0; i < extends.size(); ++i) {
        SourceRegion at = site.regions.touch("extends." + std::to_string(i));
        std::string target = lexical((dir / extends[i]).generic_string());
        if (const std::string why = outside_sites_dir(fs, target, sites_dir); !why.empty()) {
            diags.error(at, "'" + extends[i] + "' " + why + ": only files under it can be extended");
            continue;
        }
        std::string text, error;
        if (!fs.read(target, text, error)) {
            diags.error(at, "cannot read extended file: " + error);
            continue;
        }
        apply_file(target, text, at, depth + 1);
    }
}

}  // namespace

std::string site_file(const std::string& sites_dir, const std::string& name) {
    return lexical(sites_dir + "/" + name + "/site.toml");
}

std::vector<std::string> list_sites(FileSystem& fs, const std::string& sites_dir) {
    std::vector<std::string> out;
    for (const auto& d : fs.list_dirs(sites_dir))
        if (fs.exists(site_file(sites_dir, d))) out.push_back(d);
    return out;
}

namespace {

// Conda environment files are part of the site: read once here, relative to the file that
// names them and only under the sites directory, so the plan carries their bytes.
constexpr size_t kMaxEnvironmentFileBytes = 1024 * 1024;

void read_environment_file(FileSystem& fs, const std::string& sites_dir, Site& site, Python& py,
                           const std::string& key, Diagnostics& diags) {
    if (py.environment_file.empty()) return;
    const SourceRegion at = site.where(key);
    if (py.environment_file.front() == '/') {
        diags.error(at, "'" + py.environment_file + "' is an absolute path: an environment file is part of the site",
                    "give it relative to " + at.file + ", inside the sites directory");
        return;
    }
    const std::string target =
        lexical((stdfs::path(at.file).parent_path() / py.environment_file).generic_string());
    if (const std::string why = outside_sites_dir(fs, target, sites_dir); !why.empty()) {
        diags.error(at, "environment file '" + py.environment_file + "' " + why);
        return;
    }
    std::string error;
    if (!fs.read(target, py.environment, error, kMaxEnvironmentFileBytes)) {
        diags.error(at, "cannot read environment file '" + py.environment_file + "': " + error);
        return;
    }
    if (py.environment.find('\0') != std::string::npos)
        diags.error(at, "environment file '" + py.environment_file + "' holds a NUL byte: it is not a text file");
}

void read_environment_files(FileSystem& fs, const std::string& sites_dir, Site& site, Diagnostics& diags) {
    read_environment_file(fs, sites_dir, site, site.python, "python.environment_file", diags);
    for (size_t i = 0; i < site.stacks.size(); ++i) {
        Python& py = site.stacks[i].python;
        const std::string own = "stacks." + std::to_string(i) + ".python.environment_file";
        if (site.regions.count(own))
            read_environment_file(fs, sites_dir, site, py, own, diags);
        else if (py.environment_file == site.python.environment_file)
            py.environment = site.python.environment;  // the site's file, read (and reported) once
        else
            read_environment_file(fs, sites_dir, site, py, "python.environment_file", diags);
    }
}

bool load_layers(FileSystem& fs, const std::string& sites_dir, const std::string& path, const std::string& text,
                 Site& out, Diagnostics& diags, StackMemo* memo) {
    size_t before = diags.error_count();
    Loader loader{fs, out, diags, sites_dir, {}, memo};
    loader.apply_file(path, text, {path, 0, 0}, 0);
    if (diags.error_count() == before) read_environment_files(fs, sites_dir, out, diags);
    return diags.error_count() == before;
}

}  // namespace

bool load_site_text(FileSystem& fs, const std::string& path, const std::string& text, Site& out,
                    Diagnostics& diags, StackMemo* memo) {
    const std::string sites_dir = stdfs::path(path).parent_path().parent_path().generic_string();
    return load_layers(fs, sites_dir, path, text, out, diags, memo);
}

bool load_site(FileSystem& fs, const std::string& sites_dir, const std::string& name, Site& out,
               Diagnostics& diags, StackMemo* memo) {
    const std::string path = site_file(sites_dir, name);
    std::string text, error;
    if (const std::string why = outside_sites_dir(fs, path, sites_dir); !why.empty()) {
        diags.error({}, "cannot read site '" + name + "': " + path + " " + why);
        return false;
    }
    if (!fs.read(path, text, error)) {
        diags.error({}, "cannot read site '" + name + "': " + error);
        return false;
    }
    return load_layers(fs, sites_dir, path, text, out, diags, memo);
}

}  // namespace sitegen
