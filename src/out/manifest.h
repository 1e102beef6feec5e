// The output tree's records: the manifest (hash and mode of every file, part of the tree) and
// the build state beside it (per stack: the digest of its inputs and its files' size, mtime
// and inode), which lets a rebuild skip stacks whose inputs and files are unchanged.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "out/fs.h"
#include "out/input_log.h"
#include "site/diagnostics.h"
#include "site/model.h"
#include "site/model_text.h"  // site_wide_text, stack_text: inputs of the build keys
#include "text/pieces.h"

namespace sitegen {

// One manifest line: a file's SHA-256 and mode, by path relative to the root.
struct FileSpec {
    std::string hash;
    unsigned mode = 0644;
};
// A tree's files by path, hashed (tens of thousands of long, shared-prefix paths are costly
// to compare in order; the manifest text is sorted when written).
struct PathHash {  // looks up a std::string key by std::string_view too
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TreeIndex = std::unordered_map<std::string, FileSpec, PathHash, std::equal_to<>>;
TreeIndex parse_manifest(const std::string& text);

// The same lines as views into `text`, which must outlive the index (a rebuild's look reads a
// live manifest of tens of thousands of lines: no string per path and hash).
struct ManifestLine {
    std::string_view hash;
    unsigned mode = 0644;
};
// In the text's order (sorted, as sitegen writes them), and by path.
using ManifestLines = std::vector<std::pair<std::string_view, ManifestLine>>;
ManifestLines manifest_lines(std::string_view text);
using ManifestIndex = std::unordered_map<std::string_view, ManifestLine>;

// What a file looked like when sitegen last published it. Equal stat = not touched since
// (an edit changes the mtime, an editor's write-and-rename the inode), so its hash in the
// manifest still holds and it need not be read.
struct FileStat {
    unsigned long long size = 0, mtime_ns = 0, ino = 0;
    unsigned mode = 0;  // permission bits: a chmod does not change the mtime
    bool operator==(const FileStat&) const = default;
};
inline FileStat stat_of(const TreeEntry& e) { return {e.size, e.mtime_ns, e.ino, e.mode}; }

// A file as a build recorded it: its stat, and where its "file" line is among the file lines
// of the state it was read from (kNoLine: not read from a state). A look that finds the file
// notes it by that place (Publisher::as_last_built), so that finding a kept stack's files
// takes no lookup by path.
struct KnownFile {
    static constexpr uint32_t kNoLine = UINT32_MAX;
    FileStat stat;
    uint32_t line = kNoLine;
    bool operator==(const KnownFile&) const = default;
};
using KnownFiles = std::unordered_map<std::string, KnownFile, PathHash, std::equal_to<>>;

// What a spare held once a publish swapped its tree in: the tree it replaced, as that
// publish's look found it, one line per entry ("d <size> <mtime> <ino> <mode> <path>" for a
// directory, "f <ino> <path>" for a file, paths relative to the spare), and the stat of the
// spare directory itself. The next look takes it instead of listing the spare while the
// spare directory and each of its directories still have these stats (out/publish.h).
struct SpareListing {
    FileStat top;
    std::string lines;
    // Read from a state kept with its text: the lines are a view into that text (`lines` is
    // empty); it must outlive the listing.
    std::string_view read;
    std::string_view text() const { return read.empty() ? std::string_view(lines) : read; }
};

// A scanned tree's entry as a SpareListing line, appended to `out`; false (nothing appended)
// for an entry a listing cannot hold (neither directory nor regular file, or a path with a
// newline).
bool append_listing_line(std::string& out, const TreeEntry& entry);
// The entries of SpareListing lines, in order: the directories (each with its stat) into
// `dirs`, the files into `files`, each as a view of its path in `lines` and its inode (a look
// reads ~25,000 of them per rebuild of 2,000 stacks: no string each); false when `lines` are
// not such lines.
struct ListedFile {
    std::string_view path;
    unsigned long long ino = 0;
};
bool parse_listing(std::string_view lines, std::vector<TreeEntry>& dirs, std::vector<ListedFile>& files);

// The build state of one site: a cache kept outside the output tree (whose bytes stay those of
// a fresh build), at <state dir>/<digest of the out dir's path>/<site> (state_path). Valid only while each root's manifest
// has the stat the state recorded (checked by the reader; a stale state is ignored).
struct BuildState {
    struct StackRecord {
        std::string key;                 // digest of the stack's inputs (see stack_key)
        bool rebuilt = false;            // rendered by the build that wrote this state
        // Its outputs, relative to the out dir: views into the state's `text` or `paths`, or into
        // the state it was made from (a kept stack's: no string per file of 26,000 per rebuild).
        std::vector<std::string_view> files;
        // Read: where its file lines are in `text`. To write: its file lines as they are, when
        // they are those of the last state (a kept stack: the same files with the same stats),
        // copied instead of made again from `files` (whose stats need not be in `files` then).
        size_t lines_at = 0, lines_size = 0;
        // Read: the place of its first file line (KnownFile::line), when its file lines are
        // one run (kNoLine otherwise: a state edited by hand).
        uint32_t first_line = KnownFile::kNoLine;
        std::string_view same_lines;
        // To write: its "stack" line and file lines as they are, when the last state's are
        // exactly those (kept then and now, with this key): written from there, not copied.
        std::string_view same_record;
    };
    BuildState() = default;
    BuildState(BuildState&&) = default;
    BuildState& operator=(BuildState&&) = default;
    // (Not copied: the stacks' files are views into its own `text` and `paths`.)
    BuildState(const BuildState&) = delete;
    BuildState& operator=(const BuildState&) = delete;
    // The inputs, so that a build whose inputs all answer as they did need not load the site:
    std::string inputs;                        // digest: sitegen, request, rule files, answers ("" = none)
    std::vector<InputQuery> queries;           // what loading the site asked the file system
    std::vector<std::string> rule_dirs;        // directories whose *.lua files are inputs
    std::vector<Diagnostic> findings;          // what check reported (warnings, notes), to repeat
    // Every directory of the roots, the roots included, in path order (as written: a look
    // stats a root's directories in path order, and the text lists them so).
    std::map<std::string, FileStat, std::less<>> dirs;
    std::map<std::string, FileStat> manifests;     // root -> its manifest's stat
    std::map<std::string, unsigned long long> looked;  // root -> when the look that saw its `dirs` began (ns)
    std::map<std::string, StackRecord> stacks;     // by module full name (name/version)
    std::map<std::string, SpareListing> spares;    // root -> its spare, when the publish knew it
    KnownFiles files;  // every output, relative to the out dir
    uint32_t files_read = 0;  // read: how many file lines it has (the places of KnownFile::line)
    FileText text;  // the text it was read from, when parse_state was given it to keep
    std::deque<std::string> paths;  // the stacks' file paths that are not views into `text` (own())
    std::string_view own(std::string path) { return paths.emplace_back(std::move(path)); }
    size_t stacks_at = std::string::npos;  // where its stacks' lines begin, while unread (parse_state_stacks)
    // The file lines of stack `id` as read (a view into `text`), when they are `files` lines;
    // empty otherwise (not read with its text, no such stack, or a state edited by hand).
    std::string_view file_lines(const std::string& id, size_t files) const;
    // Its "stack" line and file lines as read, when they are what a state that keeps it with
    // `key` writes (file_lines(id, files) after "stack <key> kept <id>"); empty otherwise.
    // (`lines`, when given: file_lines(id, files), found on the way.)
    std::string_view kept_record(const std::string& id, const std::string& key, size_t files,
                                 std::string_view* lines = nullptr) const;
};

// A state's text in pieces, to be written one after the other: views into its own strings and
// into the BuildState it was made from (its kept stacks' records, its spares' listings), which
// must outlive it. A one-stack rebuild of 2,000 stacks writes ~8 MB of state, most of it the
// last state's own lines: written from there, not copied into one string first. (No pieces:
// the state cannot be written as text.)
using StateText = TextPieces;
// The state as text, or "" when it cannot be written as text (a path or name with a newline,
// a stack file without its stat): the caller removes the old state instead. (`threads`: a big
// state's second half of stacks is written on a second thread.)
std::string state_text(const BuildState& state, bool threads = false);
// The same text, in pieces (empty: "").
StateText state_text_pieces(const BuildState& state, bool threads = false);
// A state's parts, in the order written: its inputs (inputs, rule dirs, queries, findings:
// enough to tell whether a build is up to date before reading 100,000 lines), its head (the
// roots' manifests, looks, spares and directories: what a look at the live tree needs), its
// stacks (each with its files' lines: most of the text).
enum class StateParts { inputs, head, stacks, all };
// False (and `state` empty) when the text is not a state this sitegen wrote. `parts`: inputs
// (those alone), head (the inputs and the head) or all.
bool parse_state(std::string_view text, BuildState& state, StateParts parts = StateParts::all);
// The same, keeping `text` in the state (for the stacks' line spans).
bool parse_state(FileText&& text, BuildState& state, StateParts parts = StateParts::all);
inline bool parse_state(std::string&& text, BuildState& state, StateParts parts = StateParts::all) {
    return parse_state(FileText(std::move(text)), state, parts);
}
// The stacks of a state read with its text up to its head, read into `stacks` and `files`
// alone (another thread may read the rest meanwhile); false, with those two empty, when they
// are not a state's stacks. (True, reading nothing, for a state read whole.)
bool parse_state_stacks(BuildState& state);
// `dir` is the out dir's state directory: $SITEGEN_STATE_DIR, else $XDG_CACHE_HOME/sitegen,
// else ~/.cache/sitegen, then a digest of the out dir's absolute path.
std::string state_path(const std::string& dir, const std::string& site_name);

}  // namespace sitegen
