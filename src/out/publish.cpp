// Atomic, deterministic publishing with a hash manifest and hand-edit detection.
#include "out/publish.h"
#include "out/beside.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "out/manifest.h"
#include "out/sha256.h"
#include "out/threads.h"
#include "out/trace.h"

namespace sitegen {

namespace {

constexpr const char* kJournalName = ".sitegen-journal";
constexpr const char* kLockName = ".sitegen.lock";
constexpr unsigned kDirMode = 0755;  // every directory of a published tree (DiskFs::make_dirs)

std::string join(const std::string& dir, const std::string& rel) {
    if (dir.empty() || dir == ".") return rel;
    return dir + "/" + rel;
}

// modules-out/lumi -> modules-out/.lumi.sitegen-spare: where the next tree is staged, and
// where the tree it replaced stays afterwards, so the next publish rewrites only what changed.
std::string staging_of(const std::string& root) {
    auto slash = root.rfind('/');
    std::string parent = slash == std::string::npos ? "" : root.substr(0, slash + 1);
    std::string leaf = slash == std::string::npos ? root : root.substr(slash + 1);
    return parent + "." + leaf + ".sitegen-spare";
}

std::string octal(unsigned mode) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04o", mode);
    return buf;
}

// A tree as a fresh build leaves it: each file's hash and mode, by path relative to the root
// (the manifest included); directories are the files' parents, each with mode 0755.
// (FileSpec, TreeIndex and parse_manifest: out/manifest.h)

// Adds the parent directories of `path` to `dirs`, as views into it (which must outlive the
// set), from the nearest up, stopping at one already there (so are its parents).
void add_parent_dirs(std::unordered_set<std::string_view>& dirs, std::string_view path) {
    for (auto slash = path.rfind('/'); slash != std::string_view::npos && slash > 0; slash = path.rfind('/', slash - 1))
        if (!dirs.insert(path.substr(0, slash)).second) break;
}

// The parent directories of a tree's files, as views into its keys (which must outlive the set).
template <typename Tree>
std::unordered_set<std::string_view> parent_dir_views(const Tree& tree) {
    std::unordered_set<std::string_view> out;
    out.reserve(tree.size());
    for (const auto& [rel, f] : tree) add_parent_dirs(out, rel);
    return out;
}

// The manifest of a live root, if it is a regular file ("" otherwise).
std::string read_manifest(FileSystem& fs, const std::string& root) {
    std::string text, error;
    TreeEntry e;
    if (!fs.entry(root + "/" + kManifestName, e) || e.type != TreeEntry::Type::file) return {};
    if (!fs.read(root + "/" + kManifestName, text, error, kMaxOutputFileBytes)) return {};
    return text;
}

// The SHA-256 of a live file, or "" when it cannot be read (then it matches nothing).
std::string hash_of(FileSystem& fs, const std::string& path) {
    std::string text, error;
    if (!fs.read(path, text, error, kMaxOutputFileBytes)) return {};
    return sha256_hex(text);
}

// True when `live` is exactly the tree `spec` describes: a directory (0755) holding exactly
// these regular files with these hashes and modes, their parent directories (0755) and
// nothing else (no other file, directory, symlink, FIFO or socket).
bool tree_matches(FileSystem& fs, const std::string& live, const TreeIndex& spec) {
    TreeEntry root;
    if (!fs.entry(live, root) || root.type != TreeEntry::Type::dir || root.mode != kDirMode) return false;
    const auto dirs = parent_dir_views(spec);
    size_t files = 0;
    for (const TreeEntry& e : fs.scan(live)) {
        if (e.type == TreeEntry::Type::dir) {
            if (!dirs.count(e.path) || e.mode != kDirMode) return false;
            continue;
        }
        auto it = spec.find(e.path);
        if (e.type != TreeEntry::Type::file || it == spec.end() || e.mode != it->second.mode) return false;
        if (hash_of(fs, live + "/" + e.path) != it->second.hash) return false;
        ++files;
    }
    return files == spec.size();
}

// Swaps a staged root in: an exchange when something is at `live` (whatever it is), else a
// rename. Afterwards the old tree (if any) is at `staged`.
bool swap_in(FileSystem& fs, const std::string& staged, const std::string& live, std::string& error) {
    TreeEntry existing;
    return fs.entry(live, existing) ? fs.exchange(staged, live, error) : fs.rename(staged, live, error);
}

// One file of a manifest (views into what the caller holds).
struct ManifestRow {
    std::string_view path;
    std::string_view hash;
    unsigned mode;
    // The row's line as it is written, newline included, when another manifest's text holds it
    // (a kept file's line in the live manifest): copied from there with its neighbours.
    std::string_view line;
    bool operator<(const ManifestRow& other) const { return path < other.path; }
};

const char* mode_text(unsigned mode) { return mode == 0755u ? " 755 " : " 644 "; }

// The line a manifest has for `path` when `hash` (a view into a manifest's text) begins exactly
// that line as manifest_text_of writes it; empty otherwise (a line edited by hand, the last
// line without its newline).
std::string_view written_line(std::string_view text, std::string_view hash, unsigned mode, std::string_view path) {
    const size_t size = hash.size() + 5 + path.size() + 1;
    if (hash.data() < text.data() || hash.data() + size > text.data() + text.size()) return {};
    const std::string_view line(hash.data(), size);
    if (line.substr(hash.size(), 5) != mode_text(mode) || line.substr(hash.size() + 5, path.size()) != path ||
        line.back() != '\n')
        return {};
    return line;
}

// A manifest's text, row by row in path order, as pieces. (Rows whose lines another text
// holds one after the other are a view of them there: a one-stack rebuild of 2,000 stacks
// takes a 3.7 MB manifest in a few runs instead of writing 26,000 lines; the other rows are
// written into a buffer of the writer's own.)
class ManifestWriter {
public:
    explicit ManifestWriter(size_t bytes) {  // (`bytes`: about the size of the rows it writes)
        out_.reserve(sizeof kHeader - 1 + bytes);
        own(kHeader);
    }
    void add(const ManifestRow& row) {
        if (!row.line.empty() && row.line.data() == run_end_) {
            run_end_ += row.line.size();
            return;
        }
        flush();
        if (!row.line.empty()) {
            run_ = row.line.data();
            run_end_ = run_ + row.line.size();
            return;
        }
        own(row.hash);
        own(mode_text(row.mode));
        own(row.path);
        own("\n");
    }
    // The pieces, in order: the runs as views into the text that holds them, the rest into
    // `owned`, which keeps it.
    std::vector<std::string_view> pieces(std::string& owned) && {
        flush();
        owned = std::move(out_);
        std::vector<std::string_view> pieces;
        pieces.reserve(segments_.size());
        for (const Segment& g : segments_) pieces.emplace_back(g.at ? g.at : owned.data() + g.offset, g.size);
        return pieces;
    }
    // The text whole (where no row has a line elsewhere, the writer's own buffer as it is).
    std::string text() && {
        std::string owned;
        const std::vector<std::string_view> parts = std::move(*this).pieces(owned);
        if (parts.size() == 1 && parts.front().data() == owned.data()) return owned;
        std::string joined;
        for (const auto part : parts) joined += part;
        return joined;
    }

private:
    static constexpr char kHeader[] = "# sitegen manifest v1: sha256, mode, path relative to this directory\n";
    // A piece of the text: `size` bytes at `at` (a run of another text), or at `offset` in out_.
    struct Segment {
        const char* at = nullptr;
        size_t offset = 0, size = 0;
    };
    void own(std::string_view bytes) {
        if (!segments_.empty() && !segments_.back().at) segments_.back().size += bytes.size();
        else segments_.push_back({nullptr, out_.size(), bytes.size()});
        out_ += bytes;
    }
    void flush() {
        if (run_) segments_.push_back({run_, 0, static_cast<size_t>(run_end_ - run_)});
        run_ = run_end_ = nullptr;
    }
    std::string out_;
    std::vector<Segment> segments_;
    const char* run_ = nullptr;  // the run of lines to take, up to run_end_
    const char* run_end_ = nullptr;
};

// The manifest text of `rows`, which are in path order.
std::string manifest_text_of(const std::vector<ManifestRow>& rows) {
    size_t bytes = 0;
    for (const auto& row : rows) bytes += row.hash.size() + row.path.size() + 6;
    ManifestWriter w(bytes);
    for (const auto& row : rows) w.add(row);
    return std::move(w).text();
}

// The manifest of the files of `index` (a TreeIndex, or a map of values derived from FileSpec),
// sorted by path; the manifest itself is not listed.
template <typename Index>
std::string manifest_of(const Index& index) {
    std::vector<ManifestRow> rows;
    rows.reserve(index.size());
    for (const auto& [path, spec] : index)
        if (path != kManifestName) rows.push_back({path, spec.hash, spec.mode});
    std::sort(rows.begin(), rows.end());
    return manifest_text_of(rows);
}

}  // namespace

std::string manifest_text(const std::vector<const OutputFile*>& files_in_root, const std::string& root) {
    TreeIndex index;
    for (const OutputFile* f : files_in_root)
        index[f->path.substr(root.size() + 1)] = {sha256_hex(f->contents), f->executable ? 0755u : 0644u};
    return manifest_of(index);
}

namespace {

// How the journal names a root's new manifest: by the stat of the staged file ("file:" inode,
// size, mtime: a manifest is written anew by each publish, never in place, and a swap moves it
// whole), or, where the file system gives no inode (or the stat is missing), by the SHA-256
// of its bytes (`text_hash`). (A stat costs nothing; the hash of a 2,000-stack tree's 3.8 MB
// manifest took ~2 ms of a rebuild's tail.)
std::string manifest_identity(const FileStat* staged, const std::function<std::string()>& text_hash) {
    if (!staged || staged->ino == 0) return text_hash();
    return "file:" + std::to_string(staged->ino) + ":" + std::to_string(staged->size) + ":" +
           std::to_string(staged->mtime_ns);
}

// Whether the manifest of the tree at `dir` (its bytes: `text`) is the one `identity` names.
bool is_promised_manifest(FileSystem& fs, const std::string& dir, const std::string& text, const std::string& identity) {
    if (identity.rfind("file:", 0) != 0) return sha256_hex(text) == identity;  // (as a sitegen before names it, too)
    TreeEntry e;
    if (!fs.entry(dir + "/" + kManifestName, e) || e.type != TreeEntry::Type::file) return false;
    const FileStat stat = stat_of(e);
    return manifest_identity(&stat, [&] { return sha256_hex(text); }) == identity;
}

}  // namespace

bool recover_interrupted_publish(FileSystem& fs, const std::string& out_dir, Diagnostics& diags) {
    const std::string journal = join(out_dir, kJournalName);
    std::string text, error;
    if (!fs.read(journal, text, error, kMaxOutputFileBytes)) return true;  // nothing pending
    std::istringstream in(text);
    std::string identity, root;
    while (in >> identity >> root) {
        const std::string live = join(out_dir, root), staged = join(out_dir, staging_of(root));
        // Done when the live root is exactly the promised tree, byte for byte and mode for
        // mode: a manifest that merely matches is not enough (--force rewrites a tree whose
        // manifest is unchanged but whose files were edited).
        const std::string live_manifest = read_manifest(fs, live);
        bool done = is_promised_manifest(fs, live, live_manifest, identity);
        if (done) {
            TreeIndex spec = parse_manifest(live_manifest);
            spec[kManifestName] = {sha256_hex(live_manifest), 0644};
            done = tree_matches(fs, live, spec);
        }
        if (!done && fs.is_dir(staged) && is_promised_manifest(fs, staged, read_manifest(fs, staged), identity) &&
            !swap_in(fs, staged, live, error)) {
            diags.error({journal, 0, 0}, "cannot finish interrupted publish: " + error);
            return false;
        }
        TreeEntry left;
        if (fs.entry(staged, left) && !fs.remove_all(staged, error)) {
            diags.error({journal, 0, 0}, "cannot remove " + staged + ": " + error);
            return false;
        }
    }
    if (!fs.remove_all(journal, error)) {
        diags.error({journal, 0, 0}, "cannot remove journal: " + error);
        return false;
    }
    return true;
}

// One root being published: its live tree as the scan found it, what the new tree wants,
// and the spare it is staged in.
struct Publisher::Root {
    std::string root, live, staged;
    std::string old_text;  // the live manifest ("" when none)
    // What the last publish wrote (views into old_text): its lines in the text's order, and
    // whether that is path order (as sitegen writes it: the look then finds each live file's
    // line by walking both in order); by path, made when first asked for (old_index()).
    ManifestLines old_lines;
    bool old_sorted = false;
    std::optional<ManifestIndex> old;
    const ManifestIndex& old_index() {
        if (!old) {
            old.emplace();
            old->reserve(old_lines.size());
            for (const auto& [path, line] : old_lines) (*old)[path] = line;
        }
        return *old;
    }
    bool exists = false;   // something is at `live`
    TreeEntry top;         // what
    std::vector<TreeEntry> entries;  // the live tree, scanned once
    // A file of the spare, as the look found it (by path in `spare_files` below).
    struct SpareFile {
        unsigned long long ino = 0;
        bool kept = false;  // stage() found it as wanted: a fresh path's, left in place
    };
    // Each live regular file: its entry and hash, the manifest's when its stat is the one
    // recorded (it is not read), else read and hashed. (Fields ordered to pack: a root keeps
    // one per live file, tens of thousands; by path see live_at.)
    struct Live {
        const TreeEntry* entry = nullptr;
        std::string_view hash;              // the manifest's (`was`) when known, else in `read_hashes`
        const ManifestLine* was = nullptr;  // its line in the live manifest, if any
        bool hashed = false;                // `hash` is set
        bool known = false;              // its stat is the last build's: untouched since
        // Noted by the look, which has the manifest line and the entry at hand (the kept stacks'
        // lookups, in stack order, would fetch both from all over the tree): whether
        // as_last_built hands it out (known, listed, with the manifest's mode), and the
        // manifest's mode (0: not listed).
        bool as_built = false;
        unsigned was_mode = 0;
        // In the new tree as it is (add_kept with this record, as as_last_built found it): its
        // path, hash and mode are the live file's, so it is not copied into `fresh`, the map
        // of the other files (a rebuild of one stack keeps tens of thousands like this).
        bool kept = false;
        bool in_fresh = false;  // another file was added at its path (it is in `fresh`)
        // The spare's file at its path (null: none), when match_spares() noted it for
        // place_kept(); stage() clears it when it removes that file.
        SpareFile* spare = nullptr;
    };
    // Publisher::as_last_built of the live file `live` (null: none) at `path`.
    static bool as_last_built(std::string_view path, const Live* live, KeptFile& out) {
        if (!live || !live->as_built) return false;
        out = {path, {}, live->was_mode == 0755u, live};  // (the hash: the manifest's, which `found` holds)
        return true;
    }
    // A live file kept as it is, and not also added again (then `fresh` has the path).
    static bool kept_as_is(const Live* live) { return live && live->kept && !live->in_fresh; }
    // Whether a kept file (at `rel`, with `hash`, "" for the manifest's, and mode) is this
    // record as as_last_built handed it out: then place_kept() takes it as it is.
    static bool keeps(const Live& live, std::string_view rel, std::string_view hash, bool executable) {
        return live.known && live.was && live.was_mode == (executable ? 0755u : 0644u) &&
               (hash.empty() || live.was->hash == hash) && live.entry->path == rel;
    }
    // The live regular files but the manifest, in `entries` order (reserved before they are
    // made: `live_of` and the lookups point at them).
    std::vector<Live> live_records;
    std::vector<std::string> read_hashes;  // the hashes of the live files whose bytes were read
    std::vector<Live*> live_of;  // by index into `entries` (regular files but the manifest)
    // The live file at `rel` (null: none), found by binary search in `entries` (a scan gives
    // them in path order, FileSystem::scan): a rebuild of a few stacks asks a few dozen times,
    // and a hash index of 26,000 paths cost it more than all its lookups. Past kSearchedLookups
    // (a rebuild of many stacks) the index is made, once, and asked instead. (The const one
    // never makes it: kept_stacks asks from two threads. The other is asked on one thread.)
    const Live* live_at(std::string_view rel) const {
        if (live_of.size() != entries.size()) return nullptr;  // (not matched yet: no records)
        const auto it = std::lower_bound(entries.begin(), entries.end(), rel,
                                         [](const TreeEntry& e, std::string_view p) { return e.path < p; });
        return it != entries.end() && it->path == rel ? live_of[static_cast<size_t>(it - entries.begin())] : nullptr;
    }
    Live* live_at(std::string_view rel) {
        if (!live_indexed && ++live_lookups > kSearchedLookups) {
            live_index.reserve(live_records.size());
            for (Live& live : live_records) live_index.emplace(live.entry->path, &live);
            live_indexed = true;
        }
        if (!live_indexed) return const_cast<Live*>(std::as_const(*this).live_at(rel));
        const auto it = live_index.find(rel);
        return it == live_index.end() ? nullptr : it->second;
    }
    static constexpr size_t kSearchedLookups = 256;
    std::unordered_map<std::string_view, Live*> live_index;  // (keys: views into `entries`)
    bool live_indexed = false;
    size_t live_lookups = 0;
    // The known files by the place of their line in the states (KnownFile::line; null: not
    // one of this root's known files).
    std::vector<const Live*> live_by_line;
    // The known file at the path of each line of `old_lines` (null: none), when
    // find_known_lines() found them; empty otherwise.
    std::vector<const KnownFile*> known_of_line;
    // A file of the new tree, and what finish() learns about it while it compares the trees
    // (flags, not sets of its paths: a root has tens of thousands).
    struct Wanted : FileSpec {
        bool kept = false;      // the caller did not render it: it must be on the live tree as wanted
        bool present = false;   // on the live tree exactly as a fresh build writes it
        bool occupied = false;  // something other than a directory is at its path on the live tree
    };
    std::unordered_map<std::string, Wanted, PathHash, std::equal_to<>> fresh;  // the new tree (without the manifest)
    // The spare: regular files by inode, and directories, as the look found them.
    // (As scanned, or its directories as listed: the keys below are views into it, or into
    // the listing, which PublishOptions::spares holds.)
    std::vector<TreeEntry> spare;
    bool spare_reusable = false;   // a directory whose directories are all 0755 (a fresh tree's)
    std::vector<const TreeEntry*> spare_others;  // neither file nor directory (begin removes them)
    std::unordered_map<std::string_view, SpareFile> spare_files;
    // The spare's files in path order, when its listing gave them so (match_spares walks them
    // beside the live files instead of looking each up); empty otherwise.
    std::vector<std::pair<std::string_view, SpareFile*>> spare_in_order;
    // match_spares' walk: each live file's `spare` from spare_in_order; false (some noted, the
    // caller notes them all again) when either is not in path order or there is none.
    bool match_in_order() {
        if (spare_in_order.empty()) return false;
        size_t j = 0;
        std::string_view last;
        bool any = false;
        for (size_t i = 0; i < live_of.size(); ++i) {
            Live* live = live_of[i];
            if (!live) continue;
            const std::string_view path = live->entry->path;
            if (any && !(last < path)) return false;
            last = path, any = true;
            while (j < spare_in_order.size() && spare_in_order[j].first < path) ++j;
            live->spare = j < spare_in_order.size() && spare_in_order[j].first == path ? spare_in_order[j].second : nullptr;
        }
        return true;
    }
    bool spares_matched = false;  // each live file's `spare` is noted (match_spares)
    // Erases a spare file, and the live record's note of it.
    void forget_spare(std::unordered_map<std::string_view, SpareFile>::iterator it) {
        spare_in_order.clear();  // (it would point at the erased file)
        if (Live* live = live_at(it->first); live && live->spare == &it->second) live->spare = nullptr;
        spare_files.erase(it);
    }
    std::unordered_set<std::string_view> spare_dirs;
    size_t spare_kept = 0;  // how many of spare_files are kept (stage() removes the other fresh paths')
    std::unordered_set<std::string_view> fresh_dirs;  // every directory of `fresh` (finish() makes it)
    // New-tree files already as wanted on the live tree (linked into the spare by finish()),
    // with their hash and mode (views into a `fresh` value, or a kept file's manifest line).
    std::vector<std::pair<std::string, ManifestLine>> to_link;
    bool spare_made = false;  // begin() made the spare (empty): removed again if the root stays
    bool dir_stats_found = false;  // finish() found its directories' stats as swapped in, before the swap
    // Directories of the spare (relative to the root, "" = the root) in which this publish made
    // or removed an entry, with their parents (a made one may have been made with them): their
    // stat is not the look's any more.
    std::unordered_set<std::string, PathHash, std::equal_to<>> touched;
    void touch(std::string_view path) {  // `path`: the entry made or removed
        if (spare_made) return;  // (every directory of a spare made anew is new: none is the look's)
        for (;;) {
            const auto slash = path.rfind('/');
            const std::string_view dir = slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
            if (touched.find(dir) != touched.end()) return;  // (and so are its parents)
            touched.emplace(dir);
            if (dir.empty()) return;
            path = dir;
        }
    }
    // The live tree as look_live() found it, as a SpareListing's lines (it is the spare once
    // this root is swapped in), when it can vouch for it (`listing_ok`): made by finish().
    std::string listing;
    bool listing_ok = false;
    // What look() saw at the root's manifest and spare paths (begin() checks they still hold).
    bool manifest_exists = false, spare_exists = false;
    TreeEntry manifest_top, spare_top;
};

Publisher::Publisher(FileSystem& fs, std::vector<std::string> roots, PublishOptions options)
    : fs_(fs), roots_(std::move(roots)), options_(std::move(options)) {}

Publisher::~Publisher() = default;

const Publisher::Root* Publisher::root_of(std::string_view path) const {
    for (const auto& r : state_)
        if (path.size() > r.root.size() && path.compare(0, r.root.size(), r.root) == 0 && path[r.root.size()] == '/')
            return &r;
    return nullptr;
}

Publisher::Root* Publisher::root_of(std::string_view path) {
    return const_cast<Root*>(std::as_const(*this).root_of(path));
}

bool Publisher::as_last_built(std::string_view path, KeptFile& out) const {
    const Root* r = root_of(path);
    if (!r) return false;
    return Root::as_last_built(path, r->live_at(path.substr(r->root.size() + 1)), out);
}

bool Publisher::as_last_built(std::string_view path, uint32_t line, KeptFile& out) const {
    const Root* r = root_of(path);
    // (The look noted a known file at the place of the line that gave its path: the same path.)
    return r && line < r->live_by_line.size() && Root::as_last_built(path, r->live_by_line[line], out);
}

// Whether two looks at one path saw the same: absent both times, or the same type, mode,
// inode and mtime (a publish swaps whole roots, so a root or spare it touched is another inode).
static bool same_look(bool a_exists, const TreeEntry& a, bool b_exists, const TreeEntry& b) {
    if (a_exists != b_exists) return false;
    return !a_exists || (a.type == b.type && a.mode == b.mode && a.ino == b.ino && a.mtime_ns == b.mtime_ns);
}

namespace {
bool listing_of(const TreeEntry& top, const std::vector<TreeEntry>& entries, unsigned long long looked_at,
                std::string& out);
}  // namespace

void Publisher::look() {
    look_start();
    look_live();
    look_spares();
    look_end();
    match_spares();
}

void Publisher::match_spares() {
    const TraceSpan span("match_spares");
    if (!looked_) return;
    for (Root& r : state_) {
        if (r.spare_made) continue;  // (begin() made it anew: nothing in it to find)
        if (!r.match_in_order())
            for (Root::Live& live : r.live_records) {
                const auto spare = r.spare_files.find(live.entry->path);
                live.spare = spare == r.spare_files.end() ? nullptr : &spare->second;
            }
        r.spares_matched = true;
    }
}

void Publisher::look_start() {
    const std::string& out = options_.out_dir;
    state_.clear();
    state_.reserve(roots_.size());
    for (const auto& root : roots_) {
        Root& r = state_.emplace_back();
        r.root = root;
        r.live = join(out, root);
        r.staged = join(out, staging_of(root));
    }
    looked_ = looked_live_ = looked_spares_ = false;
}

void Publisher::look_end() {
    looked_ = looked_live_ && looked_spares_;
    if (looked_) ++looks_;
}

namespace {

unsigned long long now_ns() {
    return static_cast<unsigned long long>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

// Whether an entry whose mtime is `mtime_ns` had last changed long enough before `at` that any
// change after `at` gives it another mtime (kListingSettleNs: more than a clock tick).
bool settled_before(unsigned long long mtime_ns, unsigned long long at) { return mtime_ns + kListingSettleNs < at; }

// `entries` (a scanned tree) as a SpareListing's lines; false when the tree holds anything
// but directories (0755) and regular files, or a directory (or `top`) changed within
// kListingSettleNs before `looked_at`.
bool listing_of(const TreeEntry& top, const std::vector<TreeEntry>& entries, unsigned long long looked_at,
                std::string& out) {
    const auto settled = [&](const TreeEntry& e) { return settled_before(e.mtime_ns, looked_at); };
    if (top.type != TreeEntry::Type::dir || top.mode != kDirMode || !settled(top)) return false;
    size_t bytes = 0;
    for (const TreeEntry& e : entries) bytes += e.path.size() + 90;
    out.reserve(bytes);
    for (const TreeEntry& e : entries)
        if ((e.type == TreeEntry::Type::dir && (e.mode != kDirMode || !settled(e))) || !append_listing_line(out, e))
            return false;
    return true;
}

// The spare at `staged` as `listing` says, its directories into `out` and its files into
// `files` (views into `listing`), when the spare directory (`top`, as looked at) and each
// directory listed still have the recorded stat (checked in slices on up to stat_threads()
// threads, the file system allowing); false otherwise.
bool spare_from_listing(FileSystem& fs, const std::string& staged, const TreeEntry& top, const SpareListing& listing,
                        std::vector<TreeEntry>& out, std::vector<ListedFile>& files) {
    if (top.type != TreeEntry::Type::dir || !(stat_of(top) == listing.top) || !parse_listing(listing.text(), out, files))
        return false;
    return fs.same_dirs(staged, out, fs.concurrent_reads() ? stat_threads() : 1);
}

}  // namespace

// The live root as the last publish left it, when the options say (its directories, each
// settled or not by the time of that publish's look) and its manifest is read: its files.
KnownTree Publisher::known_tree(const Root& r) const {
    KnownTree known;
    const auto looked = options_.looked ? options_.looked->find(r.root) : decltype(options_.looked->end()){};
    // (A manifest out of order or with a path twice was not written by sitegen: its tree is read.)
    if (!options_.looked || looked == options_.looked->end() || !r.manifest_exists || !r.old_sorted) return known;
    const std::string prefix = r.root + "/";
    for (const auto* dirs : options_.known_dirs)
        for (const auto& [path, stat] : *dirs) {
            std::string_view rel;
            if (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0)
                rel = std::string_view(path).substr(prefix.size());
            else if (path != r.root)
                continue;
            known.dirs.push_back({rel, stat.size, stat.mtime_ns, stat.ino, stat.mode,
                                  settled_before(stat.mtime_ns, looked->second)});
        }
    // (In path order, each directory's entries together: stats in a hash table's order took
    // half as long again, each path walked through directories no longer in the CPU's caches.
    // A state's directories come in that order: only several states' need sorting.)
    const auto by_path = [](const auto& a, const auto& b) { return a.path < b.path; };
    if (!std::is_sorted(known.dirs.begin(), known.dirs.end(), by_path)) std::sort(known.dirs.begin(), known.dirs.end(), by_path);
    known.files.reserve(r.old_lines.size() + 1);
    for (const auto& [path, line] : r.old_lines) known.files.push_back(path);
    // (The manifest itself in its place: the files come in path order when its lines do.)
    const std::string_view manifest = kManifestName;
    known.files.insert(std::lower_bound(known.files.begin(), known.files.end(), manifest), manifest);
    return known;
}

// look_live of one root: its live tree scanned.
void Publisher::scan_live_root(Root& r) {
    r.exists = fs_.entry(r.live, r.top);
    if (!r.exists || r.top.type != TreeEntry::Type::dir) return;
    const TraceSpan scanning("scan_live");
    const KnownTree known = known_tree(r);
    r.entries = known.dirs.empty() ? fs_.scan(r.live) : fs_.scan_known(r.live, known);
}

// look_live of one root, once scanned and options.known is filled: each live file with its
// manifest line, whether its stat is the known one, and its hash (read where it is not).
void Publisher::match_live_root(Root& r, unsigned threads) {
    const std::string& root = r.root;
    const size_t n = r.entries.size();
    // Each file's manifest line, and whether its stat is the one the last build left.
    // (The entries come in path order: so do the lines of a manifest sitegen wrote.)
    std::vector<const ManifestLine*> was(n, nullptr);
    std::vector<uint32_t> was_line(n, 0);  // (the place of `was` among old_lines: known_of_line's)
    const auto is_file = [&](const TreeEntry& e) { return e.type == TreeEntry::Type::file && e.path != kManifestName; };
    if (r.old_sorted) {
        size_t j = 0;
        for (size_t i = 0; i < n && j < r.old_lines.size(); ++i) {
            if (!is_file(r.entries[i])) continue;
            const std::string_view path = r.entries[i].path;
            while (j < r.old_lines.size() && r.old_lines[j].first < path) ++j;
            if (j < r.old_lines.size() && r.old_lines[j].first == path) {
                was[i] = &r.old_lines[j].second;
                was_line[i] = static_cast<uint32_t>(j);
            }
        }
    } else {
        const ManifestIndex& old = r.old_index();
        for (size_t i = 0; i < n; ++i)
            if (is_file(r.entries[i]))
                if (const auto line = old.find(r.entries[i].path); line != old.end()) was[i] = &line->second;
    }
    std::vector<char> known(n, 0);
    std::vector<uint32_t> line(n, KnownFile::kNoLine);  // (of the known ones)
    std::vector<std::string> known_paths(threads, join(root, ""));  // (one per thread: no string per file)
    const size_t prefix = known_paths.front().size();
    const bool by_line = r.old_sorted && r.known_of_line.size() == r.old_lines.size();
    share_out_slices(n, 2048, threads, [&](size_t i, unsigned slot) {
        const TreeEntry& e = r.entries[i];
        if (!was[i] || !options_.known) return;
        if (by_line) {
            const KnownFile* k = r.known_of_line[was_line[i]];
            known[i] = k && k->stat == stat_of(e);
            if (known[i]) line[i] = k->line;
            return;
        }
        const KnownFile* k = known_file(known_paths[slot], prefix, e.path);
        known[i] = k && k->stat == stat_of(e);
        if (known[i]) line[i] = k->line;
    });
    r.live_records.reserve(n);  // (never more: `live_of` points at them)
    r.live_of.assign(n, nullptr);
    r.live_by_line.assign(options_.known && options_.known_lines ? *options_.known_lines : 0, nullptr);
    std::vector<Root::Live*> unread;  // (their bytes are hashed below)
    for (size_t i = 0; i < n; ++i) {
        const TreeEntry& e = r.entries[i];
        if (e.type != TreeEntry::Type::file || e.path == kManifestName) continue;
        Root::Live live;
        live.entry = &e;
        live.known = known[i] != 0;
        if (live.known) {
            live.hash = was[i]->hash;
            live.hashed = true;
        }
        live.was = was[i];
        live.was_mode = was[i] ? was[i]->mode : 0;
        live.as_built = live.known && was[i] && live.was_mode == e.mode;
        Root::Live& placed = r.live_records.emplace_back(live);
        if (!placed.hashed) unread.push_back(&placed);
        r.live_of[i] = &placed;
        if (line[i] < r.live_by_line.size()) r.live_by_line[line[i]] = &placed;
    }
    r.read_hashes.assign(unread.size(), std::string());  // (sized first: each thread fills its own)
    share_out_slices(unread.size(), 64, threads, [&](size_t i, unsigned) {
        Root::Live& live = *unread[i];
        r.read_hashes[i] = hash_of(fs_, r.live + "/" + live.entry->path);
        live.hash = r.read_hashes[i];
        live.hashed = true;
    });
}

// A root of look_live() not taken yet, looked at on this thread (from the last: the look's
// thread takes them from the first). Only once look_live() has read the manifests and
// options.known is filled; a no-op otherwise.
void Publisher::help_look_live() {
    if (!roots_open_.load(std::memory_order_acquire)) return;
    const TraceSpan span("help_look_live");
    for (size_t i = state_.size(); i-- > 0;) look_root_if_free(i, 1, {});
}

// Root `i` of look_live(), scanned then matched on this thread, unless another thread took it
// (false); `before_match` runs between the two. Marked looked even when this throws.
bool Publisher::look_root_if_free(size_t i, unsigned threads, const std::function<void()>& before_match) {
    if (roots_taken_[i].exchange(true)) return false;
    const SetOnExit looked{roots_looked_[i]};
    scan_live_root(state_[i]);
    if (before_match) before_match();
    match_live_root(state_[i], threads);
    return true;
}

// Each root's manifest and live tree, the live files hashed where their stat is not the known
// one. (Only the members of Root the spares' half leaves alone.)
void Publisher::look_live(const std::function<void()>& dirs_ready, const std::function<void()>& known_ready) {
    const TraceSpan span("look_live");
    const unsigned long long looked_at = now_ns();
    // On four CPUs or more (stat_threads()), `dirs_ready` runs beside the reading of the
    // manifests, the scans share out their stats, and the lookups and the reading of files not
    // known are shared out in slices.
    const unsigned threads = fs_.concurrent_reads() ? stat_threads() : 1;
    const auto read_manifests = [&] {
        for (Root& r : state_) {
            const TraceSpan manifest("live_manifest");
            r.manifest_exists = fs_.entry(r.live + "/" + kManifestName, r.manifest_top);
            r.old_text = read_manifest(fs_, r.live);
            r.old_lines = manifest_lines(r.old_text);
            r.known_of_line.clear();
            r.old_sorted = std::adjacent_find(r.old_lines.begin(), r.old_lines.end(), [](const auto& a, const auto& b) {
                               return !(a.first < b.first);
                           }) == r.old_lines.end();
            r.old.reset();
        }
    };
    if (dirs_ready && threads > 1) {
        run_beside(true, dirs_ready, read_manifests);
    } else {
        read_manifests();
        if (dirs_ready) dirs_ready();
    }
    // Each root in turn: scanned (after the manifests and the last states: they tell what a
    // directory holds), then each file matched with its manifest line and known stat. A root
    // may be taken by another thread meanwhile (help_look_live): it is waited for at the end.
    roots_taken_ = std::make_unique<std::atomic<bool>[]>(state_.size());
    roots_looked_ = std::make_unique<std::atomic<bool>[]>(state_.size());
    roots_open_.store(true, std::memory_order_release);
    bool known_waited = false;  // (known_ready runs once, before the first match)
    const auto wait_known = [&] {
        if (!known_waited && known_ready) known_ready();
        known_waited = true;
    };
    for (size_t i = 0; i < state_.size(); ++i) look_root_if_free(i, threads, wait_known);
    for (size_t i = 0; i < state_.size(); ++i) roots_looked_[i].wait(false, std::memory_order_acquire);
    roots_open_.store(false, std::memory_order_relaxed);
    looked_live_at_ = looked_at;
    looked_live_ = true;
}

// The file options.known has at a root's path `rel`; `path` holds the root and a slash (its
// first `prefix` bytes), and is reused for each lookup (no string per file).
const KnownFile* Publisher::known_file(std::string& path, size_t prefix, std::string_view rel) const {
    path.resize(prefix);
    path += rel;
    const auto k = options_.known->find(path);
    return k == options_.known->end() ? nullptr : &k->second;
}

void Publisher::find_known_lines() {
    const TraceSpan span("find_known_lines");
    for (Root& r : state_) {
        r.known_of_line.clear();
        if (!options_.known || !r.old_sorted) continue;
        r.known_of_line.resize(r.old_lines.size(), nullptr);
        std::string path = join(r.root, "");
        const size_t prefix = path.size();
        for (size_t j = 0; j < r.old_lines.size(); ++j) r.known_of_line[j] = known_file(path, prefix, r.old_lines[j].first);
    }
}

// Each root's spare (none in a dry run).
void Publisher::look_spares(bool listings) {
    const TraceSpan span("look_spares");
    looked_spares_at_ = now_ns();
    for (Root& r : state_) {
        if (options_.dry_run) continue;
        // The spare is reused when it is a directory whose directories are all 0755 (a fresh
        // tree's); anything else at the staging path is replaced by an empty directory (begin).
        r.spare_exists = fs_.entry(r.staged, r.spare_top);
        r.spare_reusable = r.spare_exists && r.spare_top.type == TreeEntry::Type::dir && r.spare_top.mode == kDirMode;
        if (!r.spare_reusable) continue;
        // As the last publish left it, if it still is; else read (files: path and inode are enough).
        const auto* known = listings ? options_.spares : nullptr;
        const auto listed = known ? known->find(r.root) : decltype(known->end()){};
        std::vector<ListedFile> listed_files;  // (views into the listing, which the caller keeps)
        if (!known || listed == known->end() ||
            !spare_from_listing(fs_, r.staged, r.spare_top, listed->second, r.spare, listed_files)) {
            r.spare = fs_.scan(r.staged, false);
            listed_files.clear();
        }
        r.spare_files.reserve(r.spare.size() + listed_files.size());
        r.spare_dirs.reserve(r.spare.size() / 2);
        r.spare_in_order.clear();
        r.spare_in_order.reserve(listed_files.size());
        bool in_order = true;
        for (const ListedFile& f : listed_files) {
            Root::SpareFile& file = r.spare_files[f.path] = {f.ino, false};
            in_order = in_order && (r.spare_in_order.empty() || r.spare_in_order.back().first < f.path);
            r.spare_in_order.push_back({f.path, &file});
        }
        if (!in_order) r.spare_in_order.clear();
        for (const TreeEntry& e : r.spare) {
            if (e.type == TreeEntry::Type::dir && e.mode != kDirMode) r.spare_reusable = false;
            if (e.type == TreeEntry::Type::dir) r.spare_dirs.insert(e.path);
            else if (e.type == TreeEntry::Type::file) r.spare_files[e.path] = {e.ino, false};
            else r.spare_others.push_back(&e);  // symlinks, FIFOs: never wanted (begin removes them)
        }
    }
    looked_spares_ = true;
}

bool Publisher::looked_still_holds() {
    for (const Root& r : state_) {
        TreeEntry e;
        if (!same_look(r.exists, r.top, fs_.entry(r.live, e), e) ||
            !same_look(r.manifest_exists, r.manifest_top, fs_.entry(r.live + "/" + kManifestName, e), e) ||
            (!options_.dry_run && !same_look(r.spare_exists, r.spare_top, fs_.entry(r.staged, e), e)))
            return false;
    }
    return true;
}

bool Publisher::begin(Diagnostics& diags) {
    const TraceSpan span("publish_begin");
    const std::string& out = options_.out_dir;
    std::string error;
    if (!options_.dry_run) {
        if (!fs_.lock(join(out, kLockName), error)) {
            diags.error({}, "cannot lock the output tree: " + error);
            io_error_ = true;
            return false;
        }
        if (!recover_interrupted_publish(fs_, out, diags)) { io_error_ = true; return false; }
    }
    // A look taken before the lock holds unless something was published (or recovered) since.
    if (!looked_ || !looked_still_holds()) look();
    for (Root& r : state_) {
        if (options_.dry_run) continue;
        bool reuse = r.spare_reusable;
        for (const TreeEntry* e : r.spare_others) {
            r.touch(e->path);
            if (!fs_.remove_all(r.staged + "/" + e->path, error)) reuse = false;
        }
        if (!reuse) {
            r.spare_made = true;
            r.spares_matched = false;
            r.spare_files.clear();
            r.spare_in_order.clear();
            r.spare_dirs.clear();
            if (!fs_.remove_all(r.staged, error) || !fs_.make_dirs(r.staged, error)) {
                diags.error({}, "cannot prepare the new tree (the previous one is untouched): " + error);
                io_error_ = true;
                discard();
                return false;
            }
        }
    }
    begun_ = true;
    return true;
}

// Makes `rel` in the spare (files and directories in its way removed) another name of the
// live file or, when the live one is not as wanted, a new file with `contents`.
bool Publisher::stage(Root& r, const std::string& rel, const ManifestLine& want, const std::string* contents,
                      bool executable, std::string& error, bool linking, const void* found) {
    const Root::Live* live = static_cast<const Root::Live*>(found);
    if (!live) live = r.live_at(rel);
    const bool as_wanted = live && live->hash == want.hash && live->entry->mode == want.mode;
    const auto spare = r.spare_files.find(rel);
    if (as_wanted && spare != r.spare_files.end() && spare->second.ino == live->entry->ino) {
        if (!spare->second.kept) ++r.spare_kept;
        spare->second.kept = true;
        return true;
    }
    // Linking waits for finish(): only a root that is swapped in needs its spare complete.
    if (as_wanted && !linking) {
        r.to_link.emplace_back(rel, want);
        return true;
    }
    // Whatever holds this path or a parent of it in the spare goes first.
    for (auto slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', slash + 1))
        if (const auto f = r.spare_files.find(std::string_view(rel).substr(0, slash)); f != r.spare_files.end()) {
            r.touch(f->first);
            if (!fs_.remove_all(r.staged + "/" + std::string(f->first), error)) return false;
            r.spare_kept -= f->second.kept;
            r.forget_spare(f);
        }
    if (spare != r.spare_files.end() || r.spare_dirs.count(rel)) {
        r.touch(rel);
        if (!fs_.remove_all(r.staged + "/" + rel, error)) return false;
        if (spare != r.spare_files.end()) {
            r.spare_kept -= spare->second.kept;
            r.forget_spare(spare);
        }
        r.spare_dirs.erase(rel);
    }
    const std::string to = r.staged + "/" + rel;
    r.touch(rel);
    if (as_wanted) return fs_.link(r.live + "/" + rel, to, error);  // same inode and mtime as the live file
    if (!contents) {
        error = join(r.root, rel) + ": not on the live tree as the last build left it";
        return false;
    }
    TreeEntry e;
    if (!fs_.write_stat(to, *contents, executable, error, e)) return false;
    written_[join(r.root, rel)] = stat_of(e);
    return true;
}

bool Publisher::add(const OutputFile& f, Diagnostics& diags) { return add(f, sha256_hex(f.contents), diags); }

bool Publisher::add(const OutputFile& f, std::string hash, Diagnostics& diags) {
    return place(f.path, std::move(hash), f.executable, &f.contents, diags);
}

bool Publisher::add_kept(const KeptFile& k, Diagnostics& diags) { return add_kept(k.hash, k, diags); }

bool Publisher::add_kept(std::string hash, const KeptFile& k, Diagnostics& diags) {
    return place(k.path, std::move(hash), k.executable, nullptr, diags, k.found);
}

// What place_kept() adds up, per thread of add_kept_stacks() (counted in by count_kept()).
struct Publisher::KeptTally {
    size_t files = 0;
    std::vector<std::string> twice;  // added_twice_'s
    std::vector<size_t> spare_kept;  // by index into state_
    std::vector<std::vector<std::pair<std::string, ManifestLine>>> to_link;  // by index into state_
    explicit KeptTally(size_t roots) : spare_kept(roots, 0), to_link(roots) {}
};

// add() with the file's `contents`, add_kept() without (the live file is linked).
bool Publisher::place(std::string_view path, std::string hash, bool executable, const std::string* contents,
                      Diagnostics& diags, const void* found) {
    Root* r = root_of(path);
    if (!r) {
        diags.error({}, "internal: output '" + std::string(path) + "' is outside every site root");
        return false;
    }
    const std::string_view rel_view = path.substr(r->root.size() + 1);
    if (!contents && found) {  // (this publisher's own record, as as_last_built handed it out)
        const Root::Live& live = *static_cast<const Root::Live*>(found);
        // (as_last_built leaves the hash to the record: compared, and copied only if not kept)
        if (Root::keeps(live, rel_view, hash, executable)) {
            KeptTally tally(state_.size());
            const bool placed = place_kept(*r, path, found, tally);
            count_kept(tally);
            return placed;
        }
        if (hash.empty() && live.was) hash = std::string(live.was->hash);
    }
    Root::Live* live = r->live_at(rel_view);  // the live file at this path, if any
    const auto [slot, first] = r->fresh.try_emplace(std::string(rel_view));
    const std::string& rel = slot->first;
    if (!first || (live && live->kept)) added_twice_.emplace_back(path);
    if (live) live->in_fresh = true;
    Root::Wanted& want = slot->second;
    want.hash = std::move(hash);
    want.mode = executable ? 0755u : 0644u;
    want.kept = !contents;
    ++files_;
    // (A kept file not on the live tree as wanted is reported by finish().)
    if (options_.dry_run || failed_ || (!contents && !live)) return true;
    std::string error;
    if (!stage(*r, rel, {want.hash, want.mode}, contents, executable, error, false, live)) {
        diags.error({}, "cannot write the new tree (the previous one is untouched): " + error);
        io_error_ = failed_ = true;
        return false;
    }
    return true;
}

void Publisher::count_kept(KeptTally& tally) {
    files_ += tally.files;
    for (auto& path : tally.twice) added_twice_.push_back(std::move(path));
    for (size_t i = 0; i < state_.size(); ++i) {
        state_[i].spare_kept += tally.spare_kept[i];
        for (auto& link : tally.to_link[i]) state_[i].to_link.push_back(std::move(link));
    }
}

// A kept file as as_last_built found it: the new tree has the live file as it is, so only its
// live record is marked (finish() reads its path, hash and mode from the live tree and its
// manifest), and the spare's name of it is kept, or linked by finish(), as stage() does.
// Writes only its own live record and spare file, and `tally` (add_kept_stacks() runs it on
// several threads: two kept files at one path mark one record, and one spare file).
bool Publisher::place_kept(Root& r, std::string_view path, const void* found, KeptTally& tally) {
    Root::Live& live = *const_cast<Root::Live*>(static_cast<const Root::Live*>(found));
    ++tally.files;
    if (std::atomic_ref<bool>(live.kept).exchange(true) || live.in_fresh) tally.twice.emplace_back(path);
    if (options_.dry_run || failed_) return true;
    const std::string& rel = live.entry->path;
    Root::SpareFile* spare = live.spare;
    if (!r.spares_matched) {
        const auto it = r.spare_files.find(rel);
        spare = it == r.spare_files.end() ? nullptr : &it->second;
    }
    const size_t root = static_cast<size_t>(&r - state_.data());
    if (spare && spare->ino == live.entry->ino) {
        if (!std::atomic_ref<bool>(spare->kept).exchange(true)) ++tally.spare_kept[root];
    } else {
        tally.to_link[root].emplace_back(rel, *live.was);
    }
    return true;
}

bool Publisher::add_kept_stacks(const std::vector<std::vector<KeptFile>>& stacks, unsigned threads,
                                Diagnostics& diags) {
    threads = std::max(threads, 1u);
    // A file that place() would not take as it is (not as as_last_built gave it) goes through
    // add_kept() afterwards, on this thread, in path order.
    std::vector<std::vector<const KeptFile*>> others(threads);
    std::vector<KeptTally> tallies(threads, KeptTally(state_.size()));
    share_out_slices(stacks.size(), 64, threads, [&](size_t i, unsigned slot) {
        for (const KeptFile& k : stacks[i]) {
            Root* r = root_of(k.path);
            const auto* live = static_cast<const Root::Live*>(k.found);
            if (!r || !live || !Root::keeps(*live, k.path.substr(r->root.size() + 1), k.hash, k.executable)) {
                others[slot].push_back(&k);
                continue;
            }
            place_kept(*r, k.path, k.found, tallies[slot]);
        }
    });
    for (KeptTally& t : tallies) count_kept(t);
    std::vector<const KeptFile*> rest;
    for (const auto& o : others) rest.insert(rest.end(), o.begin(), o.end());
    std::sort(rest.begin(), rest.end(), [&](const KeptFile* a, const KeptFile* b) { return a->path < b->path; });
    bool ok = true;
    for (const KeptFile* k : rest) ok = add_kept(*k, diags) && ok;
    return ok;
}

void Publisher::discard() {
    std::string ignored;
    if (!options_.dry_run)
        for (const auto& r : state_) fs_.remove_all(r.staged, ignored);
}

// Anything sitegen would overwrite or remove that is not as sitegen wrote it is a hand edit:
// refused, or with --force a warning. Either way a fresh tree replaces it whole.
void Publisher::hand_edit(Diagnostics& diags, const Root& r, const std::string& rel, const std::string& why) const {
    const SourceRegion at{rel.empty() ? r.live : r.live + "/" + rel, 0, 0};
    if (options_.force)
        diags.warning(at, "overwriting: " + why);
    else
        diags.error(at, why, "keep your change in the site definition, or rerun with --force to overwrite it");
}

// finish()'s comparison of a root's live tree with the new one: reports hand edits, removed,
// changed and unchanged files, flags the new tree's files found on the live tree (present,
// occupied) and points `live_manifest` at the live manifest's entry. True when the trees
// differ in anything but the manifest and the added files. Writes only those flags of
// `r.fresh`'s values, never its paths, hashes or modes.
bool Publisher::compare_live(Root& r, PublishReport& report, Diagnostics& diags, const TreeEntry*& live_manifest) {
    auto& fresh = r.fresh;
    bool differs = false;
    r.fresh_dirs = parent_dir_views(fresh);
    std::string_view last_parent;  // (the entries come directory by directory: one insert each)
    for (size_t i = 0; i < r.entries.size(); ++i) {
        if (!Root::kept_as_is(r.live_of[i])) continue;
        const std::string_view path = r.entries[i].path, parent = path.substr(0, path.rfind('/') + 1);
        if (!parent.empty() && parent == last_parent) continue;  // (added with its parents already)
        last_parent = parent;
        add_parent_dirs(r.fresh_dirs, path);
    }
    const auto& fresh_dirs = r.fresh_dirs;
    std::optional<std::unordered_set<std::string_view>> old_dirs;  // made when a live directory is not a fresh one
    if (r.exists && r.top.type != TreeEntry::Type::dir) {
        hand_edit(diags, r, "", std::string("is ") + r.top.what + ", not a directory written by sitegen");
        differs = true;
    } else if (r.exists && r.top.mode != kDirMode) {
        differs = true;  // a fresh tree's directories are 0755
    }
    report.stats.reserve(report.stats.size() + fresh.size());
    for (size_t i = 0; i < r.entries.size(); ++i) {
        const TreeEntry& e = r.entries[i];
        if (e.type == TreeEntry::Type::dir) {
            if (!fresh_dirs.count(e.path)) {
                if (!old_dirs) old_dirs = parent_dir_views(r.old_index());
                if (!old_dirs->count(e.path)) hand_edit(diags, r, e.path, "directory was not created by sitegen");
                differs = true;
            } else if (e.mode != kDirMode) {
                differs = true;
            }
            continue;
        }
        if (Root::kept_as_is(r.live_of[i])) {
            ++report.unchanged;  // (as the last build left it, with the stat `known` gave it: nothing to compare)
            continue;
        }
        const auto want = fresh.find(e.path);
        if (want != fresh.end()) want->second.occupied = true;
        const bool own = e.path == kManifestName;
        if (e.type != TreeEntry::Type::file) {
            if (own || r.old_index().count(e.path))
                hand_edit(diags, r, e.path, std::string("file was replaced by ") + e.what + " since sitegen wrote it");
            else
                hand_edit(diags, r, e.path, std::string("file is ") + e.what + " that was not written by sitegen");
            if (!own) (want != fresh.end() ? report.changed : report.removed).push_back(join(r.root, e.path));
            differs = true;
            continue;
        }
        if (own) {
            live_manifest = &e;  // compared once its text is made
            continue;
        }
        const Root::Live& live_file = *r.live_of[i];
        const std::string_view hash = live_file.hash;
        const ManifestLine* was = live_file.was;
        if (!was)
            hand_edit(diags, r, e.path, "file was not written by sitegen");
        else if (was->hash != hash)
            hand_edit(diags, r, e.path, "file was edited by hand since sitegen wrote it");
        else if (was->mode != e.mode)
            hand_edit(diags, r, e.path, "file mode was changed by hand since sitegen wrote it (" + octal(e.mode) +
                                            ", sitegen wrote " + octal(was->mode) + ")");
        if (want == fresh.end()) {
            report.removed.push_back(join(r.root, e.path));
            differs = true;
        } else if (want->second.hash == hash && want->second.mode == e.mode) {
            want->second.present = true;
            ++report.unchanged;
            report.stats.emplace(join(r.root, e.path), KnownFile{stat_of(e)});
        } else {
            report.changed.push_back(join(r.root, e.path));
            differs = true;
        }
    }
    return differs;
}

// The manifest of a root's new tree: its `fresh` files and its kept ones (marked on the live
// records, which the scan listed in path order), merged in path order as manifest_of sorts.
Publisher::ManifestText Publisher::manifest_of_root(const Root& r) {
    const TraceSpan span("manifest_text");
    std::vector<ManifestRow> fresh;
    fresh.reserve(r.fresh.size());
    size_t bytes = 0;  // (the fresh rows': the kept files' lines are views into the live manifest)
    for (const auto& [rel, want] : r.fresh)
        if (rel != kManifestName) {
            fresh.push_back({rel, want.hash, want.mode});
            bytes += want.hash.size() + rel.size() + 6;
        }
    std::sort(fresh.begin(), fresh.end());
    // The fresh rows and the live files kept as they are (the entries, in path order) merged.
    ManifestWriter w(bytes);
    auto next = fresh.begin();
    for (size_t i = 0; i < r.entries.size(); ++i) {
        const Root::Live* live = r.live_of[i];
        if (!Root::kept_as_is(live)) continue;
        const std::string_view path = r.entries[i].path, hash = live->was->hash;
        for (; next != fresh.end() && next->path < path; ++next) w.add(*next);
        w.add({path, hash, live->was->mode, written_line(r.old_text, hash, live->was->mode, path)});
    }
    for (; next != fresh.end(); ++next) w.add(*next);
    ManifestText text;
    text.pieces = std::move(w).pieces(text.owned);
    for (const auto piece : text.pieces) text.size += piece.size();
    return text;
}

bool Publisher::ManifestText::operator==(std::string_view other) const {
    if (size != other.size()) return false;
    size_t at = 0;
    for (const auto piece : pieces) {
        if (piece != other.substr(at, piece.size())) return false;
        at += piece.size();
    }
    return true;
}

std::string Publisher::ManifestText::hash() const {
    Sha256 h;
    for (const auto piece : pieces) h.update(piece);
    return h.hex();
}

bool Publisher::finish(PublishReport& report, Diagnostics& diags) {
    const TraceSpan span("publish_finish");
    report.io_error = io_error_;
    if (!begun_ || failed_) {
        discard();
        return false;
    }
    std::string error;
    const std::string& out = options_.out_dir;
    std::vector<Root*> to_swap;
    struct NewManifest {
        ManifestText text;
    };
    std::map<std::string, NewManifest> manifests;  // by root
    for (Root& r : state_) {
        const std::string& root = r.root;
        auto& fresh = r.fresh;
        // The manifest is compared by its bytes below; the journal names it by its stat once
        // it is staged (manifest_identity).
        Root::Wanted& own_manifest = fresh[kManifestName];
        own_manifest.mode = 0644;
        const TreeEntry* live_manifest = nullptr;
        bool differs = false;
        // The manifest text is made beside the comparison (see compare_live).
        const bool beside = options_.threads && fresh.size() + r.entries.size() > 4096;
        NewManifest& manifest = manifests[root];
        run_beside(beside, [&] { manifest.text = manifest_of_root(r); },
                   [&] {
                       differs = compare_live(r, report, diags, live_manifest);
                       // A root that differs is swapped in: its directories' stats are found
                       // while the manifest is still being made (the touches to come are taken
                       // out after the swap: known_dir_stats).
                       if (beside && differs && !options_.dry_run && !diags.has_errors()) {
                           root_dir_stats(r, true, report);
                           r.dir_stats_found = true;
                       }
                   });
        if (live_manifest && manifest.text == r.old_text && live_manifest->mode == 0644) {
            own_manifest.present = true;
            report.manifest_stats[root] = stat_of(*live_manifest);
        } else if (live_manifest) {
            differs = true;
        }
        // Fresh files not on the live tree as wanted: added (unless something else is at their
        // path: changed, above); a kept one stays another name of the live file, so it must be
        // there as the caller saw it (it can only be missing when changed during this build).
        std::vector<std::string_view> added, gone;
        for (const auto& [rel, want] : fresh) {
            if (want.present || &want == &own_manifest) continue;
            differs = true;
            if (!want.occupied) added.push_back(rel);
            if (want.kept) gone.push_back(rel);
        }
        std::sort(added.begin(), added.end());  // in the tree's order
        for (const auto rel : added) report.added.push_back(join(root, std::string(rel)));
        std::sort(gone.begin(), gone.end());
        for (const auto rel : gone)
            diags.error({join(out, join(root, std::string(rel))), 0, 0}, "output changed while sitegen was building",
                        "run the build again");
        if (!own_manifest.present) differs = true;
        if (differs) to_swap.push_back(&r);
    }
    if (diags.has_errors()) {
        discard();
        return false;
    }
    for (const auto& [path, stat] : written_) report.stats[path] = {stat};
    if (options_.dry_run) return true;
    // A spare made empty by this publish for a root that stays as it is holds nothing for the
    // next one: it goes (a first build over an up-to-date tree leaves nothing beside it).
    for (Root& r : state_)
        if (r.spare_made && std::find(to_swap.begin(), to_swap.end(), &r) == to_swap.end() &&
            !fs_.remove_all(r.staged, error)) {
            diags.warning({r.staged, 0, 0}, "cannot remove the empty spare tree: " + error);
        }
    if (to_swap.empty()) {
        known_dir_stats(to_swap, report);
        return true;
    }

    // Finish staging: whatever the spare holds that the new tree does not, then the manifest.
    // Meanwhile (a second thread, when options_.threads allows) each live tree's listing is
    // made: what its spare holds once swapped out (~4 ms of the tail at 2,000 stacks).
    std::optional<TraceSpan> phase(std::in_place, "finish_staging");
    const auto make_listings = [&] {
        const TraceSpan listing("spare_listings");
        for (Root* r : to_swap) {
            r->listing.clear();
            r->listing_ok = r->exists && listing_of(r->top, r->entries, looked_live_at_, r->listing);
            if (!r->listing_ok) r->listing.clear();
        }
    };
    bool staged = true;
    const auto finish_staging = [&] {
        for (Root* r : to_swap) {
            bool ok = true;
            for (const auto& [rel, spec] : r->to_link) ok = ok && stage(*r, rel, spec, nullptr, false, error, true);
            // The spare's manifest is written anew (never in place). Any other spare file is a fresh
            // path's that stage() kept, or a stray: when the count says there is none, the files
            // need no lookups.
            if (const auto m = r->spare_files.find(kManifestName); m != r->spare_files.end()) {
                r->touch(kManifestName);
                ok = ok && fs_.remove_all(r->staged + "/" + kManifestName, error);
                r->spare_kept -= m->second.kept;
                r->forget_spare(m);
            }
            const auto in_new_tree = [r](std::string_view rel) {
                if (r->fresh.count(rel)) return true;
                const Root::Live* live = r->live_at(rel);
                return live && live->kept;
            };
            const auto remove = [&](std::string_view rel) {
                r->touch(rel);
                return fs_.remove_all(r->staged + "/" + std::string(rel), error);
            };
            if (r->spare_files.size() != r->spare_kept)
                for (const auto& [rel, ino] : r->spare_files)
                    if (!in_new_tree(rel)) ok = ok && remove(rel);
            for (const auto& dir : r->spare_dirs)
                if (!r->fresh_dirs.count(dir)) ok = ok && remove(dir);
            const std::string to = r->staged + "/" + kManifestName;
            r->touch(kManifestName);
            ok = ok && fs_.write_pieces(to, manifests[r->root].text.pieces, error);
            report.manifest_stats.erase(r->root);  // (the live one's, if compare_live noted it: the journal names this one)
            TreeEntry e;
            if (ok && fs_.entry(to, e)) report.manifest_stats[r->root] = stat_of(e);
            if (!ok) {
                staged = false;
                return;
            }
        }
    };
    run_beside(options_.threads, make_listings, finish_staging);
    if (!staged) {
        discard();
        diags.error({}, "cannot write the new tree (the previous one is untouched): " + error);
        report.io_error = true;
        return false;
    }
    phase.emplace("sync_and_swap");
    // Staged bytes must be on disk before the journal promises them.
    for (Root* r : to_swap)
        if (!fs_.sync(r->staged, error)) {
            discard();
            diags.error({}, "cannot sync the new tree (the previous one is untouched): " + error);
            report.io_error = true;
            return false;
        }
    // The journal makes the swaps one step: a crash after this line is rolled forward.
    std::string journal;
    for (Root* r : to_swap) {
        const auto staged = report.manifest_stats.find(r->root);
        const ManifestText& text = manifests[r->root].text;
        journal += manifest_identity(staged == report.manifest_stats.end() ? nullptr : &staged->second,
                                     [&] { return text.hash(); }) +
                   " " + r->root + "\n";
    }
    if (!fs_.write(join(out, kJournalName), journal, false, error)) {
        discard();
        diags.error({}, "cannot write the publish journal (the previous tree is untouched): " + error);
        report.io_error = true;
        return false;
    }
    // Every staged root is swapped in, whatever the live one holds; the replaced trees stay
    // at the staging paths (the next publish stages into them); then the journal goes.
    for (Root* r : to_swap)
        if (!swap_in(fs_, r->staged, r->live, error)) {
            diags.error({join(out, kJournalName), 0, 0},
                        "cannot swap in the new tree (the next build finishes the swap): " + error);
            report.io_error = true;
            return false;
        }
    if (!fs_.remove_all(join(out, kJournalName), error)) {
        diags.error({join(out, kJournalName), 0, 0}, "cannot remove journal: " + error);
        report.io_error = true;
        return false;
    }
    fs_.unlock();
    known_dir_stats(to_swap, report);
    // What each spare now holds: the tree it replaced, as the look found it.
    const unsigned long long swapped_at = now_ns();
    for (Root* r : to_swap) {
        TreeEntry top;
        // (A spare directory the swap changed just now could change again within that tick.)
        if (!r->listing_ok || !fs_.entry(r->staged, top) || top.type != TreeEntry::Type::dir ||
            !settled_before(top.mtime_ns, swapped_at))
            continue;
        SpareListing& spare = report.spares[r->root];
        spare.top = stat_of(top);
        spare.lines = std::move(r->listing);
    }
    return true;
}

// After a publish: the stat of each directory of each root as the look saw it, where nothing
// changed it since: a root that stayed is the live tree looked at; a swapped-in one is the
// spare looked at, less the directories touched while staging (and none of a spare made anew).
// (A root swapped in whose stats were found beside the manifest's making, before the last of
// its staging: the directories touched since are taken out.)
void Publisher::known_dir_stats(const std::vector<Root*>& swapped, PublishReport& report) const {
    for (const Root& r : state_) {
        const bool staged = std::find(swapped.begin(), swapped.end(), &r) != swapped.end();
        if (staged && r.dir_stats_found) {
            for (const auto& dir : r.touched) report.dir_stats.erase(dir.empty() ? r.root : r.root + "/" + dir);
            continue;
        }
        root_dir_stats(r, staged, report);
    }
}

// known_dir_stats of one root (swapped in or not), the directories touched so far left out.
void Publisher::root_dir_stats(const Root& r, bool staged, PublishReport& report) const {
    if (staged && r.spare_made) return;
    const std::vector<TreeEntry>& seen = staged ? r.spare : r.entries;
    const TreeEntry& top = staged ? r.spare_top : r.top;
    if (!(staged ? r.spare_exists : r.exists) || top.type != TreeEntry::Type::dir) return;
    report.looked[r.root] = staged ? looked_spares_at_ : looked_live_at_;
    auto at = report.dir_stats.end();  // (the place after the last one kept)
    const auto keep = [&](std::string_view dir, const TreeEntry& e) {
        if (staged && r.touched.count(dir)) return;
        if (!dir.empty() && !r.fresh_dirs.count(dir)) return;  // (not a directory of the new tree)
        // (The entries come in path order: each goes right after the one before.)
        at = report.dir_stats.insert_or_assign(at, dir.empty() ? r.root : r.root + "/" + std::string(dir), stat_of(e));
        ++at;
    };
    keep({}, top);
    for (const TreeEntry& e : seen)
        if (e.type == TreeEntry::Type::dir) keep(e.path, e);
}

bool publish(FileSystem& fs, const std::vector<std::string>& roots, const OutputList& files,
             const PublishOptions& options, PublishReport& report, Diagnostics& diags) {
    Publisher publisher(fs, roots, options);
    if (!publisher.begin(diags)) {
        report.io_error = publisher.io_error();
        return false;
    }
    // In path order, as a fresh build renders them (the report lists follow the tree's order anyway).
    for (const auto& f : files)
        if (!publisher.add(f, diags)) break;
    for (const auto& k : options.kept)
        if (!publisher.add_kept(k, diags)) break;
    return publisher.finish(report, diags);
}

}  // namespace sitegen
