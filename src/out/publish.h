// publish: the only code that changes the output tree. Each site root (modules-out/<site>,
// easyconfigs-out/<site>) is staged in a hidden sibling, then swapped in atomically; a
// journal lets the next run finish an interrupted swap so the roots never mix old and new.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "site/diagnostics.h"
#include "render/emit.h"
#include "out/fs.h"
#include "out/manifest.h"

namespace sitegen {

constexpr const char* kManifestName = ".sitegen-manifest";

// An output the caller did not render because it is on disk as the last build left it (its
// stack's inputs are unchanged and its stat is as recorded): published as it is (linked
// into a staged tree), with the hash and mode of the old manifest.
struct KeptFile {
    // Relative to out_dir: a view into what the caller keeps until the publish ends (a state's
    // record of the stack; no string per kept file).
    std::string_view path;
    std::string hash;  // ("" from as_last_built: the manifest's, which `found` holds)
    bool executable = false;
    const void* found = nullptr;  // the publisher's record of the live file, when as_last_built found it
};

struct PublishOptions {
    std::string out_dir = ".";
    bool dry_run = false;
    bool force = false;  // overwrite hand-edited outputs instead of refusing
    bool threads = false;  // finish() may make a big root's manifest on a second thread
    std::vector<KeptFile> kept;  // published beside `files`
    // Files as the last publish left them (path relative to out_dir -> stat); a live file
    // with this stat is taken to still have its manifest hash and is not read. Only valid
    // while the roots' manifests are the ones that publish wrote (the caller checks).
    const KnownFiles* known = nullptr;
    // How many file lines the states `known` was read from have (KnownFile::line is below).
    const uint32_t* known_lines = nullptr;
    // The spares as the last publish left them, by root: a look takes a spare's listing from
    // here instead of reading its directories while the spare and each of its directories
    // have the recorded stat (an entry made or removed in a directory changes its mtime).
    // (The look keeps views into the listings: they outlive the publisher.)
    const std::map<std::string, SpareListing>* spares = nullptr;
    // The directories of the live roots as the last publish left them (path relative to out_dir
    // -> stat; a map per site) and when its look saw each root's (root -> ns since the epoch,
    // PublishReport::looked). A directory that had last changed kListingSettleNs or more before
    // that look and still has the recorded stat holds what the manifest lists in it: the look
    // stats those entries instead of reading the directory (FileSystem::scan_known). Valid
    // while `known` is.
    std::vector<const std::map<std::string, FileStat, std::less<>>*> known_dirs;
    const std::map<std::string, unsigned long long>* looked = nullptr;
};

struct PublishReport {
    std::vector<std::string> added, changed, removed;  // paths relative to out_dir
    size_t unchanged = 0;
    bool io_error = false;  // failure writing the tree (exit 3) rather than a refusal
    // After a successful publish (not a dry run): every output file's stat (by path relative
    // to out_dir) but the kept ones' (add_kept with as_last_built's record: they have the stat
    // `known` gave them), and each root's manifest's stat, as the tree now is.
    KnownFiles stats;
    std::map<std::string, FileStat> manifest_stats;
    // The stat of the roots' directories (by path relative to out_dir) that the publisher knows
    // without asking the file system again (none changed since its look); the others are not listed.
    // (In path order, as a state lists its directories: the two are walked side by side.)
    std::map<std::string, FileStat, std::less<>> dir_stats;
    // When the look that saw each root's directories in `dir_stats` began (root -> ns since the
    // epoch): the live root's look for a root that stayed, the spare's for one swapped in (none
    // for a spare made anew: its directories are this publish's).
    std::map<std::string, unsigned long long> looked;
    // Each swapped-in root's spare (the tree it replaced, as the look found it), for the next
    // look (PublishOptions::spares), when the look could vouch for it: only directories and
    // regular files, directories 0755, none changed within kListingSettleNs of the look.
    std::map<std::string, SpareListing> spares;
};

// How long before a look a directory must have last changed for its listing to be recorded:
// longer than a file system clock tick, so that a change after the look (within the tick of
// the recorded mtime) still changes the mtime.
constexpr unsigned long long kListingSettleNs = 20'000'000;

// The manifest text for a root: one "<sha256> <mode> <path>" line per file, sorted.
std::string manifest_text(const std::vector<const OutputFile*>& files_in_root, const std::string& root);

// A publish, one file at a time, so a build need not hold its whole output: begin() locks
// the tree, finishes an interrupted publish and scans each root and its spare (or checks the
// scans of an earlier look() still hold); add() hashes
// a rendered file and stages it in the root's spare (another name of the live file when that
// is already as wanted, else written anew), so its contents can be dropped; add_kept()
// stages a file the caller did not render; finish() compares the new tree with the live one
// (hand edits refused, or overwritten with force), completes the spares and swaps the changed
// roots in. Nothing live changes before finish(); a failure removes the spares.
class Publisher {
public:
    Publisher(FileSystem& fs, std::vector<std::string> roots, PublishOptions options);
    ~Publisher();
    Publisher(const Publisher&) = delete;
    Publisher& operator=(const Publisher&) = delete;
    // The read-only part of begin(), which may run earlier (before the lock, on another
    // thread, while nothing else uses this publisher): reads each root's manifest, scans the
    // live root and its spare, hashes the live files whose stat is not the known one. begin()
    // uses that look if each root, manifest and spare is still the same inode with the same
    // mtime once it holds the lock (every publish swaps whole roots), else looks again.
    void look();
    // look() in halves that may run on two threads at once (each root's live tree, then each
    // spare), between look_start() and look_end(): the same look. When one half was not taken
    // (a build that stopped early), look_end() leaves no look for begin() to use.
    void look_start();
    // (`dirs_ready`, when given, runs on four CPUs or more beside the reading of the live
    // manifests, else after it; either way before options.known_dirs and options.looked are
    // read, and before options.known when `known_ready` is not given (else that runs before
    // options.known is read, after the scans). Each may fill what it stands for, or wait until
    // another thread has.)
    void look_live(const std::function<void()>& dirs_ready = {}, const std::function<void()>& known_ready = {});
    // For each line of each live manifest look_live() read, the file options.known has at its
    // path (else the look looks each scanned file up there itself): made on another thread once
    // the manifests are read and options.known is filled, before `known_ready` returns (a
    // look's lookups, ~7 ms at 2,000 stacks, taken off the look's thread where it is the
    // longer one). Reads the manifests' lines, writes only what the look reads after `known_ready`.
    void find_known_lines();
    // While look_live() runs on another thread, once it has read the manifests: looks at the
    // live roots it has not begun yet, on this thread (the look's thread waits for them), so
    // that a thread done early shares the look (at 2,000 stacks the small easyconfigs root's
    // scan, ~5 ms, while the look's thread scans the modules). options.known must be filled.
    void help_look_live();
    // (`listings`: whether options.spares may be read now; without, each spare is read.)
    void look_spares(bool listings = true);
    void look_end();
    // After look_end(): notes for each live file the spare's file at its path, so that staging
    // a kept file need not look it up (look() does it too). It writes only what as_last_built
    // does not read: the two may run at once.
    void match_spares();
    bool begin(Diagnostics& diags);
    bool add(const OutputFile& file, Diagnostics& diags);
    // The same, with the file's sha256_hex already computed (e.g. by the thread that rendered it).
    bool add(const OutputFile& file, std::string hash, Diagnostics& diags);
    bool add_kept(const KeptFile& file, Diagnostics& diags);
    // The same, with `file`'s hash moved in (its other fields are still read).
    bool add_kept(std::string hash, const KeptFile& file, Diagnostics& diags);
    // add_kept() of every file of `stacks` (each as as_last_built gave it, hash empty), shared
    // out over up to `threads` threads by stack: a one-stack rebuild of 2,000 stacks hands
    // over 26,000 this way. Before any add() of this publish (so that the rendered files that
    // come after find the kept ones, as add() after add_kept() does).
    bool add_kept_stacks(const std::vector<std::vector<KeptFile>>& stacks, unsigned threads, Diagnostics& diags);
    // After begin(): whether the live file at `path` (relative to out_dir) is as the last
    // build left it (its stat is the one `known` recorded, its mode the manifest's); if so
    // `out` is what add_kept needs (path, mode, and the record of the file, whose manifest hash
    // add_kept takes: `out.hash` is left empty).
    bool as_last_built(std::string_view path, KeptFile& out) const;
    // The same, with the file found by the place of its line in the states `known` was read
    // from (KnownFile::line), not by its path: a one-stack rebuild of 2,000 stacks asks for
    // 26,000 files.
    bool as_last_built(std::string_view path, uint32_t line, KeptFile& out) const;
    // True when published (or, in a dry run, compared); `report` as publish() fills it.
    bool finish(PublishReport& report, Diagnostics& diags);
    // Removes what was staged (a build that failed after begin()).
    void discard();

    bool io_error() const { return io_error_; }
    // Every path added (or kept) again after its first add, in the order it came (the last
    // one added is what would be staged): two outputs at one path, which the caller refuses.
    const std::vector<std::string>& added_twice() const { return added_twice_; }
    // How many looks were taken (begin() takes another when the earlier one no longer holds).
    unsigned looks() const { return looks_; }
    size_t files() const { return files_; }

private:
    struct Root;
    Root* root_of(std::string_view path);
    const Root* root_of(std::string_view path) const;
    bool place(std::string_view path, std::string hash, bool executable, const std::string* contents,
               Diagnostics& diags, const void* found = nullptr);
    bool stage(Root& root, const std::string& rel, const ManifestLine& want, const std::string* contents, bool executable,
               std::string& error, bool linking = false, const void* found = nullptr);
    struct KeptTally;
    bool place_kept(Root& root, std::string_view path, const void* found, KeptTally& tally);
    void count_kept(KeptTally& tally);
    // A root's new manifest text: pieces in order (views into the live manifest's text for
    // the kept files' runs of lines, and into `owned`).
    struct ManifestText {
        std::string owned;
        std::vector<std::string_view> pieces;
        size_t size = 0;
        bool operator==(std::string_view other) const;  // the same bytes
        std::string hash() const;                         // SHA-256 of the bytes, hex
    };
    static ManifestText manifest_of_root(const Root& root);
    void known_dir_stats(const std::vector<Root*>& swapped, PublishReport& report) const;
    void root_dir_stats(const Root& r, bool staged, PublishReport& report) const;
    KnownTree known_tree(const Root& r) const;
    bool looked_still_holds();
    void scan_live_root(Root& r);
    void match_live_root(Root& r, unsigned threads);
    bool look_root_if_free(size_t i, unsigned threads, const std::function<void()>& before_match);
    const KnownFile* known_file(std::string& path, size_t prefix, std::string_view rel) const;
    void hand_edit(Diagnostics& diags, const Root& r, const std::string& rel, const std::string& why) const;
    bool compare_live(Root& r, PublishReport& report, Diagnostics& diags, const TreeEntry*& live_manifest);
    FileSystem& fs_;
    std::vector<std::string> roots_;
    PublishOptions options_;
    std::vector<Root> state_;
    std::unordered_map<std::string, FileStat> written_;  // stats of the files written into spares
    std::vector<std::string> added_twice_;
    size_t files_ = 0;
    unsigned looks_ = 0;
    bool looked_ = false, begun_ = false, failed_ = false, io_error_ = false;
    bool looked_live_ = false, looked_spares_ = false;  // the halves taken since look_start()
    unsigned long long looked_live_at_ = 0;  // when look_live() began (ns since the epoch)
    unsigned long long looked_spares_at_ = 0;  // when look_spares() began
    // look_live()'s roots, each taken by one thread (look_live from the first, help_look_live
    // from the last) and marked looked once done; open while look_live() takes them.
    std::atomic<bool> roots_open_{false};
    std::unique_ptr<std::atomic<bool>[]> roots_taken_, roots_looked_;
};

// Publishes `files` (paths relative to out_dir, each under one of `roots`). Returns false
// with findings in `diags` when it refused or failed; the previous tree is then untouched.
bool publish(FileSystem& fs, const std::vector<std::string>& roots, const OutputList& files,
             const PublishOptions& options, PublishReport& report, Diagnostics& diags);

// Finishes (rolls forward) a publish interrupted after staging; called by publish first.
bool recover_interrupted_publish(FileSystem& fs, const std::string& out_dir, Diagnostics& diags);

}  // namespace sitegen
