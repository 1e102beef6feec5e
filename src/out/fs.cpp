// Disk and in-memory implementations of the FileSystem interface.
#include "out/fs.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <filesystem>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "out/threads.h"
#include "out/trace.h"

namespace fsys = std::filesystem;

namespace sitegen {

namespace {

const char* what_of(mode_t mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISLNK(mode)) return "a symbolic link";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    return "not a file";
}

TreeEntry::Type type_of(mode_t mode) {
    if (S_ISREG(mode)) return TreeEntry::Type::file;
    if (S_ISDIR(mode)) return TreeEntry::Type::dir;
    if (S_ISLNK(mode)) return TreeEntry::Type::symlink;
    return TreeEntry::Type::other;
}

std::string too_large(const std::string& path, const std::string& size, size_t max_bytes) {
    const std::string limit = std::to_string(max_bytes);
    return path + ": file is " + size + " bytes; " +
           (max_bytes == kMaxInputFileBytes ? "site files are limited to " + limit + " bytes"
                                            : "the limit is " + limit + " bytes");
}

std::string errno_text(const std::string& path) { return path + ": " + std::strerror(errno); }

unsigned long long mtime_ns_of(const struct stat& st) {
    return static_cast<unsigned long long>(st.st_mtim.tv_sec) * 1000000000ULL +
           static_cast<unsigned long long>(st.st_mtim.tv_nsec);
}

// Whether `st` is a directory with the size, mtime, inode and mode `recorded` holds (a
// KnownTree::Dir, a TreeEntry).
template <class Recorded>
bool dir_as_recorded(const struct stat& st, const Recorded& recorded) {
    return S_ISDIR(st.st_mode) && static_cast<unsigned long long>(st.st_size) == recorded.size &&
           mtime_ns_of(st) == recorded.mtime_ns && static_cast<unsigned long long>(st.st_ino) == recorded.ino &&
           static_cast<unsigned>(st.st_mode & 07777) == recorded.mode;
}

TreeEntry entry_of(std::string path, const struct stat& st) {
    return {std::move(path), type_of(st.st_mode), static_cast<unsigned>(st.st_mode & 07777), what_of(st.st_mode),
            static_cast<unsigned long long>(st.st_size), mtime_ns_of(st), static_cast<unsigned long long>(st.st_ino)};
}

// The entries of the directory `fd` (whose path relative to the scan is `rel`) into `out`,
// not following symlinks; the indices of its subdirectories into `subdirs`. With `stat_files`
// false, a regular file's entry holds only its path, type and inode (from readdir: no stat,
// where the file system tells the type).
void read_dir(int fd, const std::string& rel, std::vector<TreeEntry>& out, bool stat_files,
              std::vector<size_t>& subdirs) {
    // getdents64 on the descriptor itself: opendir's stat and fcntl of every directory of a
    // tree of thousands are two system calls each that tell nothing new (O_DIRECTORY did).
    alignas(alignof(dirent64)) char buffer[32 * 1024];
    std::string path = rel.empty() ? std::string() : rel + "/";
    const size_t prefix = path.size();
    for (ssize_t n; (n = ::getdents64(fd, buffer, sizeof buffer)) > 0;)
        for (ssize_t at = 0; at < n;) {
            const auto* e = reinterpret_cast<const dirent64*>(buffer + at);
            at += e->d_reclen;
            const char* name = e->d_name;
            if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
            path.resize(prefix);
            path += name;
            if (!stat_files && e->d_type == DT_REG) {
                TreeEntry f;
                f.path = path;
                f.type = TreeEntry::Type::file;
                f.ino = static_cast<unsigned long long>(e->d_ino);
                out.push_back(std::move(f));
                continue;
            }
            struct stat st;
            if (::fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
            if (S_ISDIR(st.st_mode)) subdirs.push_back(out.size());
            out.push_back(entry_of(path, st));
        }
}

int open_dir_at(int fd, const char* path) {
    return ::openat(fd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

// The directory at `rel` (several components) under `root`, through no symbolic link in any
// component (O_NOFOLLOW guards the last one only): a directory swapped for a link since it was
// listed is not entered, as open_dir_at from its parent would not enter it.
int open_dir_beneath(int root, const std::string& rel) {
    open_how how{};
    how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH;
    const long fd = ::syscall(SYS_openat2, root, rel.c_str(), &how, sizeof how);
    if (fd >= 0 || (errno != ENOSYS && errno != EPERM)) return static_cast<int>(fd);
    // No openat2 (a kernel before 5.6, or a seccomp filter that refuses it): one component at a time.
    int dir = ::dup(root);
    for (size_t at = 0; dir >= 0 && at < rel.size();) {
        const size_t slash = std::min(rel.find('/', at), rel.size());
        const int next = open_dir_at(dir, rel.substr(at, slash - at).c_str());
        ::close(dir);
        dir = next;
        at = slash + 1;
    }
    return dir;
}

// Everything under the directory `fd` (whose path relative to the scan is `rel`), depth first;
// takes ownership of `fd`. Subdirectories are opened relative to their parent (no path walk
// from the root per directory). Unreadable directories are listed (with their mode) but not
// entered.
void scan_into(int fd, const std::string rel, std::vector<TreeEntry>& out, bool stat_files) {
    // (`rel` by value: the caller's is a path in `out`, which grows here)
    std::vector<size_t> subdirs;  // indices into `out`
    read_dir(fd, rel, out, stat_files, subdirs);
    const size_t prefix = rel.empty() ? 0 : rel.size() + 1;
    for (const size_t i : subdirs) {
        const int sub = open_dir_at(fd, out[i].path.c_str() + prefix);
        if (sub >= 0) scan_into(sub, out[i].path, out, stat_files);
    }
    ::close(fd);
}

// scan_into on `threads` threads: the directories level by level on this thread until one
// level holds enough of them to share (an output tree is narrow at the top: software/NAME/
// then a directory per version), then their subtrees on the workers, each into its own list.
// Takes ownership of `root`. The entries come in no particular order.
void scan_tree(int root, std::vector<TreeEntry>& out, bool stat_files, unsigned threads) {
    constexpr size_t kLevels = 4;
    std::vector<std::string> level{std::string()};
    for (size_t depth = 0; depth < kLevels && !level.empty() && level.size() < 4 * threads; ++depth) {
        std::vector<std::string> next;
        for (const std::string& rel : level) {
            const int fd = rel.empty() ? ::dup(root) : open_dir_beneath(root, rel);
            if (fd < 0) continue;
            std::vector<size_t> subdirs;
            read_dir(fd, rel, out, stat_files, subdirs);
            ::close(fd);
            for (const size_t i : subdirs) next.push_back(out[i].path);
        }
        level = std::move(next);
    }
    std::vector<std::vector<TreeEntry>> found(threads);  // per thread
    share_out(level.size(), threads, [&](size_t i, unsigned slot) {
        const int fd = open_dir_beneath(root, level[i]);
        if (fd >= 0) scan_into(fd, level[i], found[slot], stat_files);
    });
    ::close(root);
    for (auto& f : found) out.insert(out.end(), std::make_move_iterator(f.begin()), std::make_move_iterator(f.end()));
}

std::string_view parent_of(std::string_view path) {
    const auto slash = path.rfind('/');
    return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

// scan_known on the disk, into `out` (empty; in path order): false, with nothing added, when `known` does
// not describe a tree (a path twice, or one whose parent it does not list) or vouches for no
// directory; then the caller scans. The known directories and the known files of trusted ones
// are statted in slices on up to `threads` threads (with one, a thread in help_posted() may
// take slices of the files' stats), by their path from `root` (a directory
// swapped for a link meanwhile would be followed there: a race with a hand edit during the look,
// as between any scan's read of a directory and its stats).
bool scan_known_into(int root, const KnownTree& known, std::vector<TreeEntry>& out, unsigned threads) {
    std::unordered_map<std::string_view, size_t> dir_at;  // known directory -> index
    dir_at.reserve(known.dirs.size());
    bool any_settled = false;
    for (size_t i = 0; i < known.dirs.size(); ++i) {
        if (!dir_at.emplace(known.dirs[i].path, i).second) return false;
        any_settled = any_settled || known.dirs[i].settled;
    }
    if (!any_settled) return false;
    const auto listed = [&](std::string_view dir) { return dir.empty() || dir_at.count(dir) > 0; };
    for (const auto& d : known.dirs)
        if (!d.path.empty() && !listed(parent_of(d.path))) return false;
    std::string_view last_dir;  // (files come grouped by directory: one lookup per directory)
    for (const auto f : known.files) {
        if (f.empty()) return false;
        const std::string_view dir = parent_of(f);
        if (dir == last_dir) continue;
        if (!listed(dir)) return false;
        last_dir = dir;
    }
    const TraceSpan span("scan_known");  // (only when the known tree is taken)
    // Each known directory as it is now, and whether its stat still vouches for its entries.
    const size_t n = known.dirs.size();
    std::vector<struct stat> now(n);
    std::vector<char> exists(n, 0), trusted(n, 0);
    share_out_slices(n, 512, threads, [&](size_t i, unsigned) {
        const KnownTree::Dir& d = known.dirs[i];
        struct stat& st = now[i];
        exists[i] = (d.path.empty() ? ::fstat(root, &st) : ::fstatat(root, std::string(d.path).c_str(), &st, AT_SYMLINK_NOFOLLOW)) == 0;
        trusted[i] = exists[i] && d.settled && dir_as_recorded(st, d);
    });
    // A directory is a directory of the tree only through directories: one reached through a
    // link put in place of a parent (its stat taken through it) is neither vouched for nor read.
    std::vector<signed char> real(n, -1);  // (-1: not known yet)
    const auto is_real = [&](auto& self, size_t i) -> bool {
        if (real[i] < 0) {
            const std::string_view path = known.dirs[i].path, parent = path.empty() ? path : parent_of(path);
            real[i] = exists[i] && S_ISDIR(now[i].st_mode) && (parent.empty() || self(self, dir_at.at(parent)));
        }
        return real[i] == 1;
    };
    for (size_t i = 0; i < n; ++i)
        if (!is_real(is_real, i)) trusted[i] = 0;
    const auto root_at = dir_at.find(std::string_view());
    const bool root_trusted = root_at != dir_at.end() && trusted[root_at->second];
    const auto trusted_dir = [&](std::string_view dir) {
        if (dir.empty()) return root_trusted;
        const auto it = dir_at.find(dir);
        return it != dir_at.end() && trusted[it->second];
    };
    // Every directory not vouched for is read first (its entries as they are, a directory not
    // known in full), into a list of its own: the known files' stats, most of the work, then
    // come last, where another thread done with its own part may join them (share_out_helped).
    std::vector<TreeEntry> read_entries;
    const auto read = [&](int fd, const std::string& rel) {
        std::vector<size_t> subdirs;
        read_dir(fd, rel, read_entries, true, subdirs);
        const size_t prefix = rel.empty() ? 0 : rel.size() + 1;
        for (const size_t k : subdirs) {
            const std::string path = read_entries[k].path;  // (read_entries grows below)
            if (dir_at.count(path)) continue;  // (known: read or vouched for on its own)
            const int sub = open_dir_at(fd, path.c_str() + prefix);
            if (sub >= 0) scan_into(sub, path, read_entries, true);
        }
        ::close(fd);
    };
    if (!root_trusted) read(::dup(root), std::string());
    for (size_t i = 0; i < n; ++i)
        if (real[i] == 1 && !trusted[i] && !known.dirs[i].path.empty()) {
            const std::string rel(known.dirs[i].path);
            const int fd = open_dir_beneath(root, rel);
            if (fd >= 0) read(fd, rel);
        }
    // A trusted directory's entries are the known ones: the directories from their stats above,
    // the files statted now, in slices, each file into its own slot of `out` (so that they stay
    // in the known files' order; a slice's files share few directories: the last one's answer
    // is kept), the slots of the files not there then closed up, and what was read after them.
    // `out` is reserved for all of them: no entry is moved to a larger array (on a rebuild of
    // 2,000 stacks, 26,000 entries, whose fresh pages cost more than the stats' bookkeeping).
    out.reserve(out.size() + n + known.files.size() + read_entries.size());  // (room left unused is never touched)
    for (size_t i = 0; i < n; ++i)
        if (exists[i] && !known.dirs[i].path.empty() && trusted_dir(parent_of(known.dirs[i].path)))
            out.push_back(entry_of(std::string(known.dirs[i].path), now[i]));
    const size_t files_at = out.size();
    out.resize(files_at + known.files.size());
    std::vector<char> found(known.files.size(), 0);
    constexpr size_t kSlice = 1024;
    const auto stat_slice = [&](size_t s) {
        std::string_view last_dir;
        bool last_trusted = false, any = false;
        for (size_t i = s * kSlice; i < std::min(known.files.size(), (s + 1) * kSlice); ++i) {
            const std::string_view f = known.files[i], dir = parent_of(f);
            if (!any || dir != last_dir) last_trusted = trusted_dir(dir), last_dir = dir, any = true;
            if (!last_trusted) continue;
            std::string path(f);
            struct stat st;
            if (::fstatat(root, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
            out[files_at + i] = entry_of(std::move(path), st);
            found[i] = 1;
        }
    };
    const size_t slices = (known.files.size() + kSlice - 1) / kSlice;
    share_out_or_helped(slices, threads, stat_slice);
    size_t kept = files_at;
    for (size_t i = 0; i < found.size(); ++i)
        if (found[i] && kept++ != files_at + i) out[kept - 1] = std::move(out[files_at + i]);
    out.resize(kept);
    const size_t read_at = out.size();
    out.insert(out.end(), std::make_move_iterator(read_entries.begin()), std::make_move_iterator(read_entries.end()));
    // In path order: the three runs (directories, files, what was read) merged, each sorted
    // first where it is not (the known ones come sorted when the record is, as a manifest's lines
    // are: sorting 30,000 entries again cost a rebuild ~4 ms).
    const auto by_path = [](const TreeEntry& a, const TreeEntry& b) { return a.path < b.path; };
    const auto first = out.begin(), files = first + static_cast<std::ptrdiff_t>(files_at),
               reads = first + static_cast<std::ptrdiff_t>(read_at);
    for (const auto& [from, to] : {std::pair{first, files}, std::pair{files, reads}, std::pair{reads, out.end()}})
        if (!std::is_sorted(from, to, by_path)) std::sort(from, to, by_path);
    std::inplace_merge(first, files, reads, by_path);
    std::inplace_merge(first, reads, out.end(), by_path);
    return true;
}

// rm -rf that never follows a symlink and first makes directories a user locked (chmod 0500,
// 0000) enterable and writable, so a hand-made change cannot keep an old tree alive.
bool remove_tree(const std::string& path, std::string& error) {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) return true;
        error = errno_text(path);
        return false;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (::unlink(path.c_str()) != 0 && errno != ENOENT) { error = errno_text(path); return false; }
        return true;
    }
    if ((st.st_mode & 0700) != 0700) ::chmod(path.c_str(), (st.st_mode & 07777) | 0700);
    DIR* d = ::opendir(path.c_str());
    if (!d) { error = errno_text(path); return false; }
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d))
        if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
    ::closedir(d);
    for (const auto& n : names)
        if (!remove_tree(path + "/" + n, error)) return false;
    if (::rmdir(path.c_str()) != 0 && errno != ENOENT) { error = errno_text(path); return false; }
    return true;
}

// The regular file at `path` opened for reading (its stat in `st`), or -1 with `error` set.
int open_regular(const std::string& path, struct stat& st, std::string& error, size_t max_bytes) {
    // Refuse by type before opening: opening some devices has effects of its own.
    if (::stat(path.c_str(), &st) != 0) { error = errno_text(path); return -1; }
    const auto refuse = [&](mode_t mode) {
        error = path + ": not a regular file (" + what_of(mode) + "); sitegen reads only regular files";
        return -1;
    };
    if (!S_ISREG(st.st_mode)) return refuse(st.st_mode);
    // Non-blocking: if it was swapped for a FIFO meanwhile, open must not wait for a writer.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) { error = errno_text(path); return -1; }
    const auto fail = [&](int result) { ::close(fd); return result; };
    if (::fstat(fd, &st) != 0) { error = errno_text(path); return fail(-1); }
    if (!S_ISREG(st.st_mode)) return fail(refuse(st.st_mode));
    if (st.st_size < 0 || static_cast<unsigned long long>(st.st_size) > max_bytes) {
        error = too_large(path, std::to_string(st.st_size), max_bytes);
        return fail(-1);
    }
    return fd;
}

// Whether a file system of type `type` (statfs's f_type) keeps a mapped file's pages however
// the file is replaced: a local one. On a network or FUSE file system a mapped file that
// another client removes may fault when a page is read again.
bool local_file_system(long type) {
    static constexpr std::array<unsigned long, 5> kLocal = {TMPFS_MAGIC, RAMFS_MAGIC, EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC,
                                                            BTRFS_SUPER_MAGIC};
    return std::find(kLocal.begin(), kLocal.end(), static_cast<unsigned long>(type)) != kLocal.end();
}

// The rest of an open regular file (about `size` bytes) into `out`, at most `max_bytes`.
bool read_open_file(int fd, size_t size, const std::string& path, std::string& out, std::string& error, size_t max_bytes) {
    out.clear();
    out.reserve(size);
    char buf[65536];
    for (;;) {
        // One byte more than allowed tells a file that grew past the limit from one at it.
        const size_t want = std::min(sizeof buf, max_bytes + 1 - out.size());
        const ssize_t n = ::read(fd, buf, want);
        if (n < 0) {
            if (errno == EINTR) continue;
            error = errno_text(path);
            return false;
        }
        if (n == 0) return true;
        out.append(buf, static_cast<size_t>(n));
        if (out.size() > max_bytes) {
            error = too_large(path, "more than " + std::to_string(max_bytes), max_bytes);
            out.clear();
            return false;
        }
    }
}

class DiskFs : public FileSystem {
public:
    bool read(const std::string& path, std::string& out, std::string& error, size_t max_bytes) override {
        return read_regular_file(path, out, error, max_bytes);
    }

    bool read_cache(const std::string& path, FileText& out, std::string& error, size_t max_bytes) override {
        struct stat st;
        const int fd = open_regular(path, st, error, max_bytes);
        if (fd < 0) return false;
        const size_t size = static_cast<size_t>(st.st_size);
        struct statfs on;
        const bool local = ::fstatfs(fd, &on) == 0 && local_file_system(on.f_type);
        // Not populated at once: a read fault maps the page cache's pages around it too (16 at a
        // time), and the parts of a cache read later are mapped then, not before its head is read
        // (an 8 MB state: 0.55 ms touched page by page, 0.84 ms populated in one call, on tmpfs).
        void* at = size >= kMapFrom && local ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
        bool ok = true;
        if (at != MAP_FAILED) {
            out = FileText::mapped(at, size);
        } else {
            std::string text;
            ok = read_open_file(fd, size, path, text, error, max_bytes);
            out = FileText(std::move(text));
        }
        ::close(fd);
        return ok;
    }
    // (Below this a mapping saves less than the calls it takes.)
    static constexpr size_t kMapFrom = size_t{64} << 10;

    bool write(const std::string& path, const std::string& data, bool executable,
               std::string& error) override {
        const std::string_view piece(data);
        return write_file(path, &piece, 1, executable, error, nullptr);
    }

    bool write_pieces(const std::string& path, const std::vector<std::string_view>& pieces,
                      std::string& error) override {
        return write_file(path, pieces.data(), pieces.size(), false, error, nullptr);
    }

    bool write_stat(const std::string& path, const std::string& data, bool executable, std::string& error,
                    TreeEntry& written) override {
        const std::string_view piece(data);
        return write_file(path, &piece, 1, executable, error, &written);
    }

    bool sync(const std::string& path, std::string& error) override {
        int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || ::syncfs(fd) != 0) {
            error = path + ": " + std::strerror(errno);
            if (fd >= 0) ::close(fd);
            return false;
        }
        ::close(fd);
        return true;
    }

    bool exists(const std::string& path) override {
        std::error_code ec;
        return fsys::exists(fsys::symlink_status(path, ec));
    }

    bool is_dir(const std::string& path) override {
        std::error_code ec;
        return fsys::is_directory(path, ec);
    }

    bool make_dirs(const std::string& path, std::string& error) override {
        std::string p = path;
        while (p.size() > 1 && p.back() == '/') p.pop_back();
        std::vector<std::string> missing;  // innermost first
        for (std::string q = p; !q.empty();) {
            struct stat st;
            if (::stat(q.c_str(), &st) == 0) {
                if (!S_ISDIR(st.st_mode)) { error = q + ": not a directory"; return false; }
                break;
            }
            if (errno != ENOENT) { error = errno_text(q); return false; }
            missing.push_back(q);
            const auto slash = q.rfind('/');
            if (slash == std::string::npos) break;
            q.resize(slash == 0 ? 1 : slash);
            if (q == "/") break;
        }
        for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
            if (::mkdir(it->c_str(), 0755) != 0) {
                if (errno == EEXIST && is_dir(*it)) continue;  // made meanwhile by someone else
                error = errno_text(*it);
                return false;
            }
            if (::chmod(it->c_str(), 0755) != 0) { error = errno_text(*it); return false; }  // the umask may drop bits
        }
        return true;
    }

    std::vector<std::string> list_files(const std::string& dir) override {
        std::vector<std::string> out;
        std::error_code ec;
        if (!fsys::is_directory(dir, ec)) return out;
        for (auto it = fsys::recursive_directory_iterator(dir, ec);
             !ec && it != fsys::recursive_directory_iterator(); it.increment(ec)) {
            if (it->is_regular_file(ec) || it->is_symlink(ec))
                out.push_back(fsys::relative(it->path(), dir, ec).generic_string());
        }
        std::sort(out.begin(), out.end());
        return out;
    }

    std::vector<TreeEntry> scan(const std::string& dir, bool stat_files) override {
        std::vector<TreeEntry> out;
        const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return out;
        const unsigned threads = stat_threads();
        if (threads > 1) scan_tree(fd, out, stat_files, threads);
        else scan_into(fd, "", out, stat_files);
        if (stat_files)  // (a spare's 30,000 entries sorted took 7 ms of a one-stack rebuild)
            std::sort(out.begin(), out.end(), [](const TreeEntry& a, const TreeEntry& b) { return a.path < b.path; });
        return out;
    }

    std::vector<TreeEntry> scan_known(const std::string& dir, const KnownTree& known) override {
        std::vector<TreeEntry> out;
        const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return out;
        const bool taken = scan_known_into(fd, known, out, stat_threads());
        ::close(fd);
        if (!taken) return scan(dir, true);
        return out;  // (moved: `taken ? out : scan()` copied its 30,000 entries)
    }

    bool same_dirs(const std::string& dir, const std::vector<TreeEntry>& entries, unsigned threads) override {
        const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return false;
        std::atomic<bool> same{true};
        const auto check = [&](size_t i) {
            const TreeEntry& e = entries[i];
            if (e.type != TreeEntry::Type::dir || !same.load(std::memory_order_relaxed)) return;
            struct stat st;
            if (e.path.empty() || e.path[0] == '/' ||  // (as entry(dir + "/" + path): below `dir`)
                ::fstatat(fd, e.path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !dir_as_recorded(st, e))
                same.store(false, std::memory_order_relaxed);
        };
        constexpr size_t kSlice = 512;
        share_out_or_helped((entries.size() + kSlice - 1) / kSlice, threads, [&](size_t s) {
            for (size_t i = s * kSlice; i < std::min(entries.size(), (s + 1) * kSlice); ++i) check(i);
        });
        ::close(fd);
        return same.load();
    }

    bool entry(const std::string& path, TreeEntry& out) override {
        struct stat st;
        if (::lstat(path.c_str(), &st) != 0) return false;
        out = entry_of(path, st);
        return true;
    }

    bool link(const std::string& from, const std::string& to, std::string& error) override {
        const std::lock_guard<std::mutex> dirs(dirs_mutex_);
        if (!parent_made(to, error)) return false;
        if (::link(from.c_str(), to.c_str()) != 0) {
            error = from + " -> " + to + ": " + std::strerror(errno);
            return false;
        }
        return true;
    }

    std::vector<std::string> list_dirs(const std::string& dir) override {
        std::vector<std::string> out;
        std::error_code ec;
        if (!fsys::is_directory(dir, ec)) return out;
        for (auto it = fsys::directory_iterator(dir, ec);
             !ec && it != fsys::directory_iterator(); it.increment(ec))
            if (it->is_directory(ec)) out.push_back(it->path().filename().string());
        std::sort(out.begin(), out.end());
        return out;
    }

    bool rename(const std::string& from, const std::string& to, std::string& error) override {
        forget_dirs();
        if (::rename(from.c_str(), to.c_str()) != 0) {
            error = from + " -> " + to + ": " + std::strerror(errno);
            return false;
        }
        return true;
    }

    bool remove_all(const std::string& path, std::string& error) override {
        forget_dirs();  // may have removed some of them
        return remove_tree(path, error);
    }

    bool is_executable(const std::string& path) override {
        struct stat st;
        return ::stat(path.c_str(), &st) == 0 && (st.st_mode & S_IXUSR);
    }

    bool exchange(const std::string& a, const std::string& b, std::string& error) override {
        forget_dirs();
        if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) != 0) {
            error = a + " <-> " + b + ": " + std::strerror(errno);
            return false;
        }
        return true;
    }

    bool lock(const std::string& path, std::string& error) override {
        unlock();
        fsys::path p(path);
        if (p.has_parent_path() && !make_dirs(p.parent_path().string(), error)) return false;
        lock_fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (lock_fd_ < 0) { error = path + ": " + std::strerror(errno); return false; }
        while (::flock(lock_fd_, LOCK_EX) != 0) {
            if (errno == EINTR) continue;
            error = path + ": " + std::strerror(errno);
            unlock();
            return false;
        }
        return true;
    }

    void unlock() override {
        if (lock_fd_ >= 0) ::close(lock_fd_);
        lock_fd_ = -1;
    }

    ~DiskFs() override {
        unlock();
        forget_dirs();
    }

    // The read-only calls touch no member (made_dirs_ and dir_fds_ are only the writers', behind
    // dirs_mutex_), and the kernel orders the rest.
    bool concurrent_reads() const override { return true; }

private:
    // Writes `data` to `path` (mode 0755 or 0644 whatever the umask); its entry in `written`
    // when not null. The file is created relative to its directory's descriptor (the
    // kernel walks one name, not the whole path), and its mode is set only when the umask
    // or an existing file made it differ.
    // `count` pieces, one after the other, as the file at `path`.
    static constexpr size_t kMaxIovecs = 1024;  // (IOV_MAX on Linux)

    bool write_file(const std::string& path, const std::string_view* pieces, size_t count, bool executable,
                    std::string& error, TreeEntry* written) {
        const std::lock_guard<std::mutex> dirs(dirs_mutex_);  // (its directory's descriptor stays open)
        const unsigned mode = executable ? 0755 : 0644;
        const auto slash = path.rfind('/');
        int dir = AT_FDCWD;
        if (slash != std::string::npos && slash != 0 && (dir = parent_fd(path.substr(0, slash), error)) < 0) return false;
        const char* name = dir == AT_FDCWD ? path.c_str() : path.c_str() + slash + 1;
        const int fd = ::openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (fd < 0) { error = errno_text(path); return false; }
        const auto fail = [&] {
            error = errno_text(path);
            ::close(fd);
            return false;
        };
        // In batches of up to kMaxIovecs pieces per writev (a manifest or state of many short
        // pieces is not a write per piece), resumed where a short write stopped.
        std::vector<iovec> iov;
        iov.reserve(std::min(count, kMaxIovecs));
        for (size_t i = 0, offset = 0; i < count;) {  // (the next piece, and how much of it is written)
            iov.clear();
            for (size_t k = i, from = offset; k < count && iov.size() < kMaxIovecs; ++k, from = 0)
                if (pieces[k].size() > from)
                    iov.push_back({const_cast<char*>(pieces[k].data() + from), pieces[k].size() - from});
            if (iov.empty()) break;  // (only empty pieces left)
            const ssize_t n = ::writev(fd, iov.data(), static_cast<int>(iov.size()));
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return fail();
            if (n == 0) {
                errno = EIO;
                return fail();
            }
            for (size_t left = static_cast<size_t>(n); i < count && (left > 0 || pieces[i].size() == offset);) {
                const size_t rest = pieces[i].size() - offset;
                if (left < rest) {
                    offset += left;
                    break;
                }
                left -= rest;
                ++i;
                offset = 0;
            }
        }
        struct stat st;
        if (::fstat(fd, &st) != 0) return fail();
        if ((st.st_mode & 07777) != mode) {
            if (::fchmod(fd, mode) != 0) return fail();
            st.st_mode = (st.st_mode & ~07777u) | mode;
        }
        if (::close(fd) != 0) { error = errno_text(path); return false; }
        if (written) *written = entry_of(path, st);
        return true;
    }

    // The directory `dir` (made if missing) as an open O_PATH descriptor, from the few most
    // recently used: a stack's files are written to a handful of directories in turn.
    int parent_fd(const std::string& dir, std::string& error) {
        for (const auto& d : dir_fds_)
            if (d.fd >= 0 && d.path == dir) return d.fd;
        if (!dir_made(dir, error)) return -1;
        const int fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) { error = errno_text(dir); return -1; }
        DirFd& slot = dir_fds_[next_dir_fd_];
        next_dir_fd_ = (next_dir_fd_ + 1) % dir_fds_.size();
        if (slot.fd >= 0) ::close(slot.fd);
        slot = {dir, fd};
        return fd;
    }

    // After a rename or removal a directory's name may no longer be that directory.
    void forget_dirs() {
        const std::lock_guard<std::mutex> dirs(dirs_mutex_);
        made_dirs_.clear();
        for (auto& d : dir_fds_) {
            if (d.fd >= 0) ::close(d.fd);
            d = {};
        }
    }

    // A tree has few directories and many files: each file's directory is made (or found)
    // once. (The parent is the text before the last '/', as for the paths publish builds.)
    bool parent_made(const std::string& path, std::string& error) {
        const auto slash = path.rfind('/');
        return slash == std::string::npos || slash == 0 || dir_made(path.substr(0, slash), error);
    }

    bool dir_made(std::string dir, std::string& error) {
        if (made_dirs_.count(dir)) return true;
        if (!make_dirs(dir, error)) return false;
        made_dirs_.insert(std::move(dir));
        return true;
    }

    int lock_fd_ = -1;
    // The writers' caches, behind a mutex: writes may come from two threads at once (a build's
    // state and its memos), and a rename on one closes the descriptors the other may be using.
    std::mutex dirs_mutex_;
    std::unordered_set<std::string> made_dirs_;  // directories write() and link() made (or found) already
    struct DirFd {
        std::string path;
        int fd = -1;
    };
    std::array<DirFd, 8> dir_fds_;  // parent_fd's descriptors
    size_t next_dir_fd_ = 0;        // the slot the next one takes
};

std::string norm(const std::string& p) {
    std::string out = fsys::path(p).lexically_normal().generic_string();
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    return out;
}

bool under(const std::string& path, const std::string& dir) {
    return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
           path[dir.size()] == '/';
}

}  // namespace

bool read_regular_file(const std::string& path, std::string& out, std::string& error, size_t max_bytes) {
    struct stat st;
    const int fd = open_regular(path, st, error, max_bytes);
    if (fd < 0) return false;
    const bool ok = read_open_file(fd, static_cast<size_t>(st.st_size), path, out, error, max_bytes);
    ::close(fd);
    return ok;
}

FileText& FileText::operator=(FileText&& other) noexcept {
    if (this != &other) {
        unmap();
        owned_ = std::move(other.owned_);
        map_ = std::exchange(other.map_, nullptr);
        map_size_ = std::exchange(other.map_size_, 0);
    }
    return *this;
}

FileText FileText::mapped(const void* at, size_t size) {
    FileText text;
    text.map_ = static_cast<const char*>(at);
    text.map_size_ = size;
    return text;
}

void FileText::unmap() {
    if (map_) ::munmap(const_cast<char*>(map_), map_size_);
    map_ = nullptr;
    map_size_ = 0;
}

bool maps_caches_on(const std::string& path) {
    struct statfs on;
    return ::statfs(path.c_str(), &on) == 0 && local_file_system(on.f_type);
}

bool FileSystem::read_cache(const std::string& path, FileText& out, std::string& error, size_t max_bytes) {
    std::string text;
    if (!read(path, text, error, max_bytes)) return false;
    out = FileText(std::move(text));
    return true;
}

std::unique_ptr<FileSystem> make_disk_fs() { return std::make_unique<DiskFs>(); }

bool FileSystem::link(const std::string& from, const std::string& to, std::string& error) {
    std::string data;
    return read(from, data, error, kMaxOutputFileBytes) && write(to, data, is_executable(from), error);
}

bool MemoryFs::read(const std::string& path, std::string& out, std::string& error, size_t max_bytes) {
    auto it = files.find(norm(path));
    if (it == files.end()) {
        error = path + (is_dir(path) ? ": not a regular file (a directory); sitegen reads only regular files"
                                     : ": No such file or directory");
        return false;
    }
    if (it->second.kind == Kind::fifo) {
        error = path + ": not a regular file (a FIFO); sitegen reads only regular files";
        return false;
    }
    if (it->second.kind == Kind::symlink) return read(it->second.data, out, error, max_bytes);
    if (it->second.data.size() > max_bytes) {
        error = too_large(path, std::to_string(it->second.data.size()), max_bytes);
        return false;
    }
    out = it->second.data;
    return true;
}

std::vector<TreeEntry> FileSystem::scan_known(const std::string& dir, const KnownTree&) { return scan(dir); }

bool FileSystem::same_dirs(const std::string& dir, const std::vector<TreeEntry>& entries, unsigned) {
    for (const TreeEntry& e : entries) {
        TreeEntry now;
        if (e.type == TreeEntry::Type::dir &&
            (!entry(dir + "/" + e.path, now) || now.type != TreeEntry::Type::dir || now.size != e.size ||
             now.mtime_ns != e.mtime_ns || now.ino != e.ino || now.mode != e.mode))
            return false;
    }
    return true;
}

bool FileSystem::write_stat(const std::string& path, const std::string& data, bool executable, std::string& error,
                            TreeEntry& written) {
    return write(path, data, executable, error) && entry(path, written);
}

bool FileSystem::write_pieces(const std::string& path, const std::vector<std::string_view>& pieces, std::string& error) {
    std::string joined;
    for (const auto piece : pieces) joined += piece;
    return write(path, joined, false, error);
}

bool MemoryFs::write(const std::string& path, const std::string& data, bool executable,
                     std::string& error) {
    if (fail_write_after > 0 && --fail_write_after == 0) {
        error = path + ": No space left on device";
        return false;
    }
    std::string p = norm(path);
    files[p] = {data, executable, 0, Kind::regular, ++stamps_};
    auto parent = fsys::path(p).parent_path().generic_string();
    if (!parent.empty()) dirs[parent] = true;
    return true;
}

bool MemoryFs::link(const std::string& from, const std::string& to, std::string& error) {
    if (fail_write_after > 0 && --fail_write_after == 0) {
        error = to + ": No space left on device";
        return false;
    }
    auto it = files.find(norm(from));
    if (it == files.end() || it->second.kind != Kind::regular) {
        error = from + ": No such file or directory";
        return false;
    }
    const std::string t = norm(to);
    files[t] = it->second;
    auto parent = fsys::path(t).parent_path().generic_string();
    if (!parent.empty()) dirs[parent] = true;
    return true;
}

bool MemoryFs::exists(const std::string& path) {
    return files.count(norm(path)) || is_dir(path);
}

bool MemoryFs::is_dir(const std::string& path) {
    std::string p = norm(path);
    if (dirs.count(p)) return true;
    for (const auto& [k, v] : files) if (under(k, p)) return true;
    for (const auto& [k, v] : dirs) if (under(k, p)) return true;
    return false;
}

bool MemoryFs::make_dirs(const std::string& path, std::string&) {
    dirs[norm(path)] = true;
    return true;
}

std::vector<std::string> MemoryFs::list_files(const std::string& dir) {
    std::string d = norm(dir);
    std::vector<std::string> out;
    for (const auto& [k, v] : files)
        if (under(k, d)) out.push_back(k.substr(d.size() + 1));
    return out;  // std::map keeps them sorted
}

std::vector<TreeEntry> MemoryFs::scan(const std::string& dir, bool) {
    std::vector<TreeEntry> out;
    const std::string d = norm(dir);
    if (files.count(d) || !is_dir(d)) return out;
    std::set<std::string> seen_dirs;
    auto add_dirs = [&](const std::string& rel) {  // every parent of rel
        for (auto slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', slash + 1))
            if (seen_dirs.insert(rel.substr(0, slash)).second) out.push_back({rel.substr(0, slash), TreeEntry::Type::dir, 0755, "a directory"});
    };
    for (const auto& [k, v] : files) {
        if (!under(k, d)) continue;
        const std::string rel = k.substr(d.size() + 1);
        add_dirs(rel);
        switch (v.kind) {
            case Kind::regular:
                out.push_back({rel, TreeEntry::Type::file, v.mode ? v.mode : (v.executable ? 0755u : 0644u), "a regular file",
                               v.data.size(), v.stamp, v.stamp});
                break;
            case Kind::symlink: out.push_back({rel, TreeEntry::Type::symlink, 0777, "a symbolic link"}); break;
            case Kind::fifo: out.push_back({rel, TreeEntry::Type::other, 0644, "a FIFO"}); break;
        }
    }
    for (const auto& [k, v] : dirs) {
        if (!under(k, d)) continue;
        const std::string rel = k.substr(d.size() + 1);
        add_dirs(rel + "/");
    }
    std::sort(out.begin(), out.end(), [](const TreeEntry& a, const TreeEntry& b) { return a.path < b.path; });
    return out;
}

bool MemoryFs::entry(const std::string& path, TreeEntry& out) {
    const std::string p = norm(path);
    auto it = files.find(p);
    if (it == files.end()) {
        if (!is_dir(p)) return false;
        out = {p, TreeEntry::Type::dir, 0755, "a directory"};
        return true;
    }
    switch (it->second.kind) {
        case Kind::regular:
            out = {p, TreeEntry::Type::file, it->second.mode ? it->second.mode : (it->second.executable ? 0755u : 0644u),
                   "a regular file", it->second.data.size(), it->second.stamp, it->second.stamp};
            break;
        case Kind::symlink: out = {p, TreeEntry::Type::symlink, 0777, "a symbolic link"}; break;
        case Kind::fifo: out = {p, TreeEntry::Type::other, 0644, "a FIFO"}; break;
    }
    return true;
}

std::vector<std::string> MemoryFs::list_dirs(const std::string& dir) {
    std::string d = norm(dir);
    std::vector<std::string> out;
    auto consider = [&](const std::string& k) {
        if (!under(k, d)) return;
        std::string rest = k.substr(d.size() + 1);
        auto slash = rest.find('/');
        std::string first = rest.substr(0, slash);
        if (slash != std::string::npos || dirs.count(k))
            if (std::find(out.begin(), out.end(), first) == out.end()) out.push_back(first);
    };
    for (const auto& [k, v] : files) consider(k);
    for (const auto& [k, v] : dirs) consider(k);
    std::sort(out.begin(), out.end());
    return out;
}

bool MemoryFs::exchange(const std::string& a, const std::string& b, std::string& error) {
    if (crash_at_rename > 0 && --crash_at_rename == 0) throw SimulatedCrash{};
    if (fail_rename) { error = a + " <-> " + b + ": Input/output error"; return false; }
    const std::string tmp = norm(a) + ".exchange-tmp";
    int saved = crash_at_rename;
    crash_at_rename = 0;
    bool ok = rename(a, tmp, error) && rename(b, a, error) && rename(tmp, b, error);
    crash_at_rename = saved;
    return ok;
}

bool MemoryFs::rename(const std::string& from, const std::string& to, std::string& error) {
    if (crash_at_rename > 0 && --crash_at_rename == 0) throw SimulatedCrash{};
    if (fail_rename) { error = from + " -> " + to + ": Input/output error"; return false; }
    std::string f = norm(from), t = norm(to);
    if (files.count(f)) {
        files[t] = files[f];
        files.erase(f);
        return true;
    }
    if (!is_dir(f)) { error = from + ": No such file or directory"; return false; }
    std::string ignored;
    remove_all(t, ignored);
    std::map<std::string, Entry> moved_files;
    for (auto it = files.begin(); it != files.end();) {
        if (under(it->first, f)) {
            moved_files[t + it->first.substr(f.size())] = it->second;
            it = files.erase(it);
        } else {
            ++it;
        }
    }
    std::map<std::string, bool> moved_dirs;
    for (auto it = dirs.begin(); it != dirs.end();) {
        if (it->first == f || under(it->first, f)) {
            moved_dirs[t + it->first.substr(f.size())] = true;
            it = dirs.erase(it);
        } else {
            ++it;
        }
    }
    files.insert(moved_files.begin(), moved_files.end());
    dirs.insert(moved_dirs.begin(), moved_dirs.end());
    dirs[t] = true;
    return true;
}

bool MemoryFs::remove_all(const std::string& path, std::string&) {
    std::string p = norm(path);
    files.erase(p);
    dirs.erase(p);
    for (auto it = files.begin(); it != files.end();) it = under(it->first, p) ? files.erase(it) : std::next(it);
    for (auto it = dirs.begin(); it != dirs.end();) it = under(it->first, p) ? dirs.erase(it) : std::next(it);
    return true;
}

bool MemoryFs::is_executable(const std::string& path) {
    auto it = files.find(norm(path));
    return it != files.end() && it->second.executable;
}

}  // namespace sitegen
