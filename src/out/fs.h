// The file-system interface: publish and load go through it, so tests can run in memory
// and inject faults (disk full, unwritable directory, crash between files).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sitegen {

// The most sitegen reads of one input file: site files, their extends targets, rule files.
constexpr size_t kMaxInputFileBytes = size_t{8} << 20;  // = kMaxSiteFileBytes (site/load.h)
// The most publish reads of one file of an output tree (a 10,000-stack manifest is ~15 MB).
constexpr size_t kMaxOutputFileBytes = size_t{1} << 30;

// Reads the regular file at `path` (symlinks followed) into `out`, refusing everything else
// without waiting or reading: FIFOs (opened non-blocking, so a FIFO cannot hang), devices
// (/dev/zero, /dev/urandom), sockets, directories, each with a clear message. At most
// `max_bytes` are read, also from a file that grows while being read. False with `error` set
// ("<path>: not a regular file (a FIFO)", "<path>: file is N bytes; ...") on failure.
bool read_regular_file(const std::string& path, std::string& out, std::string& error, size_t max_bytes);

// A file's bytes as FileSystem::read_cache gives them: a string, or a read-only private mapping
// of the file (no copy into fresh memory, which costs a page fault per 4 KiB: a rebuild of
// 2,000 stacks reads 11 MB of its own caches). The bytes live as long as it does; a copy owns
// a copy of them.
class FileText {
public:
    FileText() = default;
    explicit FileText(std::string text) : owned_(std::move(text)) {}
    FileText(FileText&& other) noexcept { *this = std::move(other); }
    FileText& operator=(FileText&& other) noexcept;
    FileText(const FileText& other) : owned_(other.view()) {}
    FileText& operator=(const FileText& other) { return *this = FileText(std::string(other.view())); }
    ~FileText() { unmap(); }
    // A mapping of `size` bytes at `at` (from mmap), unmapped with this.
    static FileText mapped(const void* at, size_t size);

    std::string_view view() const { return map_ ? std::string_view(map_, map_size_) : std::string_view(owned_); }
    operator std::string_view() const { return view(); }  // NOLINT: read as text where a view is
    const char* data() const { return view().data(); }
    size_t size() const { return view().size(); }
    bool empty() const { return size() == 0; }
    bool is_mapped() const { return map_ != nullptr; }

private:
    void unmap();
    std::string owned_;
    const char* map_ = nullptr;
    size_t map_size_ = 0;
};

// Whether the disk's read_cache maps files on the file system of `path`: a local one (tmpfs,
// ext2-4, XFS, Btrfs), which keeps a mapped file's pages however the file is replaced. Not a
// network or FUSE file system (a home directory on NFS, say), where a mapped file that another
// client removes may fault when a page is read again: there caches are read.
bool maps_caches_on(const std::string& path);

// One entry of a tree as it is on disk (symlinks not followed).
struct TreeEntry {
    enum class Type { file, dir, symlink, other };
    std::string path;  // relative to the scanned directory
    Type type = Type::file;
    unsigned mode = 0;  // permission bits (07777)
    const char* what = "";  // for messages: "a FIFO", "a socket", "a character device", ...
    // What an incremental build compares to tell an untouched file from an edited one
    // without reading it (out/manifest.h FileStat).
    unsigned long long size = 0, mtime_ns = 0, ino = 0;
};

// What a scan may take as known instead of reading directories (FileSystem::scan_known): a
// tree as a publish left it, paths relative to the scanned directory. Each directory ("" is
// the scanned one) with the stat it had then (TreeEntry's size, mtime, inode and mode) and
// whether that stat may vouch for its entries (`settled`: it last changed well before the look
// that saw it, so any later change changes its mtime); every file of the tree.
struct KnownTree {
    struct Dir {
        std::string_view path;
        unsigned long long size = 0, mtime_ns = 0, ino = 0;
        unsigned mode = 0;
        bool settled = false;
    };
    std::vector<Dir> dirs;
    std::vector<std::string_view> files;
};

class FileSystem {
public:
    virtual ~FileSystem() = default;
    // Each returns false (and sets `error`) on failure; none throws.
    // Reads a regular file of at most `max_bytes` (see read_regular_file on disk).
    virtual bool read(const std::string& path, std::string& out, std::string& error,
                      size_t max_bytes = kMaxInputFileBytes) = 0;
    virtual bool write(const std::string& path, const std::string& data, bool executable,
                       std::string& error) = 0;  // creates parent dirs
    // read() of one of sitegen's own caches (build states, stack memos): files it replaces by
    // a rename and never writes in place. On disk one of 64 KiB or more on a local file system
    // (maps_caches_on) is mapped, not copied (a file truncated in place while mapped would
    // fault: only such caches come this way). The default reads it into a string.
    virtual bool read_cache(const std::string& path, FileText& out, std::string& error,
                            size_t max_bytes = kMaxOutputFileBytes);
    // write(), then the new file's entry (as entry() gives it) in `written`. On disk it comes
    // from the open file, not from a second lookup of the path. The default calls entry().
    virtual bool write_stat(const std::string& path, const std::string& data, bool executable, std::string& error,
                            TreeEntry& written);
    // write() of `pieces` one after the other, as one file (not executable), without joining
    // them first on disk (a build state is megabytes, most of them views of the last one's).
    // The default joins them.
    virtual bool write_pieces(const std::string& path, const std::vector<std::string_view>& pieces, std::string& error);
    // Makes everything written under `path` durable (one syncfs, not one fsync per file).
    virtual bool sync(const std::string& path, std::string& error) = 0;
    virtual bool exists(const std::string& path) = 0;
    virtual bool is_dir(const std::string& path) = 0;
    // Creates `path` and missing parents; directories it creates get mode 0755 (whatever the
    // umask), so an output tree's modes do not depend on who built it.
    virtual bool make_dirs(const std::string& path, std::string& error) = 0;
    // Regular files under `dir`, relative, sorted.
    virtual std::vector<std::string> list_files(const std::string& dir) = 0;
    // Everything under `dir` (files, directories, symlinks, FIFOs, ...), relative, sorted,
    // without following symlinks; `dir` itself is not listed. Empty if `dir` is not a directory
    // (or is a symlink). With `stat_files` false, what publish needs of its spare, which it
    // only looks up by path: a regular file's entry may hold only its path, type and inode
    // (size, mtime and mode 0), and the entries may come in any order.
    virtual std::vector<TreeEntry> scan(const std::string& dir, bool stat_files = true) = 0;
    // scan(dir) of a tree that `known` describes: the same entries, sorted. A settled directory
    // that still has its known stat holds what it held then (an entry made or removed changes
    // its mtime): the known files and directories in it are statted by path instead of reading
    // it; every other directory is read. The default scans.
    virtual std::vector<TreeEntry> scan_known(const std::string& dir, const KnownTree& known);
    // The type and mode of `path` itself (not following a final symlink); false if absent.
    virtual bool entry(const std::string& path, TreeEntry& out) = 0;
    // Whether each directory of `entries` (paths relative to `dir`; their other entries are
    // passed over) is still a directory with the size, mtime, inode and mode it holds, as
    // entry() of each would tell; false at the first that is not. On disk each is statted from
    // `dir`'s descriptor (a publish's spare has 6,000: no walk from / and no path made for each),
    // in slices on up to `threads` threads (with one, a thread in help_posted() may take slices:
    // below four CPUs the build's other thread, once it has found the kept stacks). The default
    // asks entry().
    virtual bool same_dirs(const std::string& dir, const std::vector<TreeEntry>& entries, unsigned threads);
    // Immediate subdirectories of `dir`, sorted.
    virtual std::vector<std::string> list_dirs(const std::string& dir) = 0;
    virtual bool rename(const std::string& from, const std::string& to, std::string& error) = 0;
    // Removes `path` and everything under it, symlinks as links; directories a user made
    // unwritable or unreadable (chmod 0500) are made writable first.
    virtual bool remove_all(const std::string& path, std::string& error) = 0;
    virtual bool is_executable(const std::string& path) = 0;
    // Atomically swaps two existing paths (renameat2 RENAME_EXCHANGE on disk).
    virtual bool exchange(const std::string& a, const std::string& b, std::string& error) = 0;
    // Takes an exclusive advisory lock on `path` (created if needed), waiting for other
    // holders; released by unlock or when the process ends.
    virtual bool lock(const std::string& path, std::string& error) = 0;
    virtual void unlock() = 0;
    // Makes `to` (parents created) another name of the regular file `from`: same bytes, mode
    // and mtime, nothing copied on disk. Publish stages unchanged outputs this way. The
    // default copies (bytes and executable bit).
    virtual bool link(const std::string& from, const std::string& to, std::string& error);
    // Whether the read-only calls (read, exists, is_dir, entry, scan, list_files, list_dirs)
    // may run on one thread while another publishes through this file system, and two threads
    // may write files (different ones) at once.
    virtual bool concurrent_reads() const { return false; }
};

// The real disk.
std::unique_ptr<FileSystem> make_disk_fs();

struct SimulatedCrash {};

// An in-memory tree for tests. Paths are normalised strings; directories are implicit
// prefixes plus explicit entries from make_dirs.
class MemoryFs : public FileSystem {
public:
    bool read(const std::string& path, std::string& out, std::string& error,
              size_t max_bytes = kMaxInputFileBytes) override;
    bool write(const std::string& path, const std::string& data, bool executable,
               std::string& error) override;
    bool exists(const std::string& path) override;
    bool is_dir(const std::string& path) override;
    bool make_dirs(const std::string& path, std::string& error) override;
    std::vector<std::string> list_files(const std::string& dir) override;
    std::vector<TreeEntry> scan(const std::string& dir, bool stat_files = true) override;
    bool entry(const std::string& path, TreeEntry& out) override;
    std::vector<std::string> list_dirs(const std::string& dir) override;
    bool rename(const std::string& from, const std::string& to, std::string& error) override;
    bool remove_all(const std::string& path, std::string& error) override;
    bool is_executable(const std::string& path) override;
    bool exchange(const std::string& a, const std::string& b, std::string& error) override;
    bool sync(const std::string&, std::string&) override { return true; }
    bool lock(const std::string&, std::string&) override { return true; }
    void unlock() override {}
    // The same entry (bytes, mode, stamp) under a second name; counts as a write for faults.
    bool link(const std::string& from, const std::string& to, std::string& error) override;

    // Fault injection: the Nth write from now fails (1 = the next one); 0 = never.
    int fail_write_after = 0;
    // Fault injection: every rename/exchange fails.
    bool fail_rename = false;
    // Fault injection: the Nth rename/exchange from now "kills the process" (throws
    // SimulatedCrash) before doing anything; 0 = never.
    int crash_at_rename = 0;

    // A file: regular (mode 0755 if executable else 0644, or `mode` when set), or a symlink
    // (data = target) or a FIFO, which read() refuses as the disk does.
    enum class Kind { regular, symlink, fifo };
    struct Entry {
        std::string data;
        bool executable = false;
        unsigned mode = 0;  // 0: from `executable`
        Kind kind = Kind::regular;
        unsigned long long stamp = 0;  // set by each write: the entry's mtime and inode number
    };
    std::map<std::string, Entry> files;
    std::map<std::string, bool> dirs;  // mode 0755

private:
    unsigned long long stamps_ = 0;
};

}  // namespace sitegen
