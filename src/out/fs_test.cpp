// File system: only regular files are read (devices, FIFOs, sockets, directories and links to
// them are refused at once, without hanging or reading), the size limit holds while reading,
// trees are scanned without following links, and removal gets through locked directories.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>

#include "out/fs.h"
#include "out/threads.h"
#include "test_support.h"

using namespace sitegen;
using sitegen::test::ScopedEnv;
using sitegen::test::TempDir;

namespace {

struct Read {
    bool ok;
    std::string text, error;
    double seconds;
};

Read read_with(FileSystem& fs, const std::string& path, size_t max = kMaxInputFileBytes) {
    Read r;
    const auto start = std::chrono::steady_clock::now();
    r.ok = fs.read(path, r.text, r.error, max);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

// A bound Unix socket at `path` (kept open for the test's duration).
struct Socket {
    int fd = -1;
    explicit Socket(const std::string& path) {
        fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        REQUIRE(path.size() < sizeof addr.sun_path);
        std::strcpy(addr.sun_path, path.c_str());
        REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    }
    ~Socket() { ::close(fd); }
};

}  // namespace

TEST_CASE("reading refuses every kind of special file at once, with what it is", "[fs]") {
    TempDir dir("fs-test");
    REQUIRE(::mkfifo(dir.file("fifo").c_str(), 0644) == 0);
    Socket socket(dir.file("socket"));
    std::filesystem::create_directory(dir.file("dir"));
    const std::pair<std::string, std::string> cases[] = {
        {"/dev/zero", "(a character device)"},
        {"/dev/urandom", "(a character device)"},
        {"/dev/null", "(a character device)"},
        {dir.file("fifo"), "(a FIFO)"},
        {dir.file("socket"), "(a socket)"},
        {dir.file("dir"), "(a directory)"},
    };
    auto disk = make_disk_fs();
    int n = 0;
    for (const auto& [target, what] : cases) {
        // The file itself, and a symlink to it (site files and rule files may be links).
        const std::string link = dir.file("link" + std::to_string(n++));
        std::filesystem::create_symlink(target, link);
        for (const auto& path : {target, link}) {
            const Read r = read_with(*disk, path);
            INFO(path << ": " << r.error << " in " << r.seconds << " s");
            CHECK_FALSE(r.ok);
            CHECK(r.error == path + ": not a regular file " + what + "; sitegen reads only regular files");
            CHECK(r.text.empty());
            CHECK(r.seconds < 1.0);
            std::string text, error;
            CHECK_FALSE(read_regular_file(path, text, error, 100));
            CHECK(error == r.error);
        }
    }
    const Read dangling = read_with(*disk, dir.file("missing"));
    CHECK(dangling.error == dir.file("missing") + ": No such file or directory");
    std::filesystem::create_symlink(dir.file("missing"), dir.file("dangling"));
    CHECK(read_with(*disk, dir.file("dangling")).error == dir.file("dangling") + ": No such file or directory");
}

TEST_CASE("the size limit holds while reading: at the limit is read, one byte more is not", "[fs]") {
    TempDir dir("fs-test");
    auto disk = make_disk_fs();
    sitegen::test::write_file(dir.file("exact"), std::string(1000, 'x'));
    sitegen::test::write_file(dir.file("over"), std::string(1001, 'x'));
    CHECK(read_with(*disk, dir.file("exact"), 1000).text.size() == 1000);
    const Read over = read_with(*disk, dir.file("over"), 1000);
    CHECK_FALSE(over.ok);
    CHECK(over.error == dir.file("over") + ": file is 1001 bytes; the limit is 1000 bytes");
    // The default limit is the site-file limit, with the site-file wording.
    sitegen::test::write_file(dir.file("big.toml"), std::string(kMaxInputFileBytes + 1, '#'));
    const Read big = read_with(*disk, dir.file("big.toml"));
    CHECK(big.error == dir.file("big.toml") + ": file is 8388609 bytes; site files are limited to 8388608 bytes");
    CHECK(big.text.empty());
    // A file that grows while it is read (a log, /proc) is cut off one byte past the limit.
    std::string proc, error;
    CHECK(read_regular_file("/proc/self/status", proc, error, 1 << 20));  // size 0 in stat, content read
    CHECK_THAT(proc, Catch::Matchers::Contains("Name:"));
    CHECK_FALSE(read_regular_file("/proc/self/status", proc, error, 16));
    CHECK(error == "/proc/self/status: file is more than 16 bytes; the limit is 16 bytes");
}

TEST_CASE("a cache is read as read() reads it: mapped from 64 KiB, kept through its replacement, refused alike", "[fs]") {
    TempDir dir("fs-cache");
    auto disk = make_disk_fs();
    std::string big(200000, 'x');
    for (size_t i = 0; i < big.size(); i += 100) big[i] = '\n';
    sitegen::test::write_file(dir.file("big"), big);
    sitegen::test::write_file(dir.file("small"), "a small cache\n");
    sitegen::test::write_file(dir.file("empty"), "");
    FileText text;
    std::string error;
    REQUIRE(disk->read_cache(dir.file("big"), text, error));
    CHECK(text.is_mapped() == maps_caches_on(dir.str()));
    CHECK(text.view() == big);
    // A cache is replaced by a rename: the mapping keeps the bytes it was read with.
    sitegen::test::write_file(dir.file("big.new"), std::string(300000, 'y'));
    std::filesystem::rename(dir.file("big.new"), dir.file("big"));
    CHECK(text.view() == big);
    // Moved and copied, the bytes go along (a copy owns its own).
    FileText moved = std::move(text);
    CHECK(moved.view() == big);
    const FileText copy = moved;
    CHECK_FALSE(copy.is_mapped());
    CHECK(copy.view() == big);
    moved = FileText(std::string("replaced"));  // (the mapping is let go)
    CHECK(moved.view() == "replaced");
    CHECK(copy.view() == big);
    REQUIRE(disk->read_cache(dir.file("small"), text, error));
    CHECK_FALSE(text.is_mapped());
    CHECK(text.view() == "a small cache\n");
    REQUIRE(disk->read_cache(dir.file("empty"), text, error));
    CHECK(text.empty());
    // What read() refuses, with its words: not a regular file, too large, missing.
    REQUIRE(::mkfifo(dir.file("fifo").c_str(), 0644) == 0);
    for (const auto& [path, limit] : std::vector<std::pair<std::string, size_t>>{
             {dir.file("fifo"), kMaxOutputFileBytes}, {dir.file("big"), 1000}, {dir.file("missing"), kMaxOutputFileBytes}}) {
        const Read r = read_with(*disk, path, limit);
        REQUIRE_FALSE(r.ok);
        CHECK_FALSE(disk->read_cache(path, text, error, limit));
        CHECK(error == r.error);
    }
    // Elsewhere (in memory) it is read().
    MemoryFs fs;
    fs.files["state"] = {big, false};
    REQUIRE(fs.read_cache("state", text, error));
    CHECK_FALSE(text.is_mapped());
    CHECK(text.view() == big);
}

TEST_CASE("caches are mapped on local file systems only", "[fs]") {
    // (tmpfs is local; /proc is neither local nor a place for caches: a file there is read.)
    CHECK(maps_caches_on("/dev/shm"));
    CHECK_FALSE(maps_caches_on("/proc/self"));
    CHECK_FALSE(maps_caches_on("/nonexistent-sitegen-path"));
    TempDir dir("fs-cache-local");
    std::string big(100000, 'z');
    sitegen::test::write_file(dir.file("big"), big);
    auto disk = make_disk_fs();
    FileText text;
    std::string error;
    REQUIRE(disk->read_cache(dir.file("big"), text, error));
    CHECK(text.view() == big);
    INFO("the temporary directory's file system maps caches: " << maps_caches_on(dir.str()));
    CHECK(text.is_mapped() == maps_caches_on(dir.str()));
}

TEST_CASE("the in-memory file system refuses FIFOs and large files as the disk does", "[fs]") {
    MemoryFs fs;
    fs.files["a/fifo"] = {"", false, 0, MemoryFs::Kind::fifo};
    fs.files["a/big"] = {std::string(20, 'x'), false};
    fs.files["a/link"] = {"a/big", false, 0, MemoryFs::Kind::symlink};
    CHECK(read_with(fs, "a/fifo").error == "a/fifo: not a regular file (a FIFO); sitegen reads only regular files");
    CHECK(read_with(fs, "a").error == "a: not a regular file (a directory); sitegen reads only regular files");
    CHECK(read_with(fs, "a/big", 10).error == "a/big: file is 20 bytes; the limit is 10 bytes");
    CHECK(read_with(fs, "a/link").text == std::string(20, 'x'));
}

TEST_CASE("two threads may write through the disk at once, one renaming as the other writes", "[fs]") {
    // (A build writes its state and its memos on two threads: each write goes through its
    // directory's cached descriptor, which a rename forgets.)
    TempDir dir("fs-writers");
    auto disk = make_disk_fs();
    REQUIRE(disk->concurrent_reads());
    constexpr int kRounds = 3000;
    int renamed = 0, written = 0;
    std::string rename_error, write_error;
    std::thread renaming([&] {
        for (int i = 0; i < kRounds; ++i) {
            std::string error;
            if (disk->write(dir.file("a/memo.new"), "memo " + std::to_string(i), false, error) &&
                disk->rename(dir.file("a/memo.new"), dir.file("a/memo"), error))
                ++renamed;
            else if (rename_error.empty())
                rename_error = error;
        }
    });
    for (int i = 0; i < kRounds; ++i) {
        std::string error;
        if (disk->write(dir.file("b/c/state." + std::to_string(i % 7)), std::string(100, 'x'), false, error)) ++written;
        else if (write_error.empty()) write_error = error;
    }
    renaming.join();
    INFO(rename_error << " / " << write_error);
    CHECK(renamed == kRounds);
    CHECK(written == kRounds);
}

TEST_CASE("scan lists a tree as it is: links and FIFOs as such, modes, nothing followed", "[fs]") {
    TempDir dir("fs-test");
    TempDir outside("fs-outside");
    outside.write("secret/file", "x");
    dir.write("t/a/file", "x");
    ::chmod(dir.file("t/a/file").c_str(), 0600);
    std::filesystem::create_symlink(outside.file("secret"), dir.file("t/link"));
    REQUIRE(::mkfifo(dir.file("t/fifo").c_str(), 0644) == 0);
    auto disk = make_disk_fs();
    std::vector<std::string> seen;
    for (const auto& e : disk->scan(dir.file("t")))
        seen.push_back(e.path + " " + std::to_string(static_cast<int>(e.type)) + " " + e.what);
    CHECK(seen == std::vector<std::string>{"a 1 a directory", "a/file 0 a regular file", "fifo 3 a FIFO",
                                           "link 2 a symbolic link"});
    TreeEntry e;
    REQUIRE(disk->entry(dir.file("t/a/file"), e));
    CHECK(e.mode == 0600);
    CHECK(disk->scan(dir.file("t/link")).empty());  // a link to a directory is not a directory
}

TEST_CASE("a scan without file stats lists the same tree, each file with its inode, in any order", "[fs]") {
    TempDir dir("fs-names");
    dir.write("t/a/b/file", "x");
    dir.write("t/a/other", "yy");
    dir.write("t/top", "z");
    std::filesystem::create_symlink("top", dir.file("t/a/link"));
    REQUIRE(::mkfifo(dir.file("t/a/fifo").c_str(), 0644) == 0);
    ::chmod(dir.file("t/a/b").c_str(), 0700);
    auto disk = make_disk_fs();
    const auto full = disk->scan(dir.file("t"));
    auto names = disk->scan(dir.file("t"), false);  // (in any order)
    std::sort(names.begin(), names.end(), [](const TreeEntry& a, const TreeEntry& b) { return a.path < b.path; });
    REQUIRE(full.size() == 7);
    REQUIRE(names.size() == full.size());
    for (size_t i = 0; i < full.size(); ++i) {
        CHECK(names[i].path == full[i].path);
        CHECK(names[i].type == full[i].type);
        CHECK(names[i].ino == full[i].ino);
        if (full[i].type != TreeEntry::Type::file) CHECK(names[i].mode == full[i].mode);  // directories: stat'ed
    }
    CHECK(full[1].path == "a/b");
    CHECK(names[1].mode == 0700);
}

TEST_CASE("a scan lists the tree in the order of its full paths, a directory's contents after names that sort before '/'", "[fs]") {
    TempDir dir("fs-order");
    // '-', '.', ' ' and '!' sort before '/', '0' and 'A' after it: "a" < "a-b" < "a/c" < "a0".
    for (const char* f : {"t/a/c", "t/a/b/x", "t/a-b", "t/a.c", "t/a b", "t/a!", "t/a0", "t/aA/z", "t/b", "t/a-/q"})
        dir.write(f, "x");
    auto disk = make_disk_fs();
    const auto entries = disk->scan(dir.file("t"));
    std::vector<std::string> paths, sorted;
    for (const auto& e : entries) paths.push_back(e.path);
    sorted = paths;
    std::sort(sorted.begin(), sorted.end());
    CHECK(paths == sorted);
    CHECK(paths.size() == 14);  // 10 files and the directories a, a/b, aA, a-
    // Without file stats (a spare's scan) the same entries, in any order.
    std::vector<std::string> names;
    for (const auto& e : disk->scan(dir.file("t"), false)) names.push_back(e.path);
    std::sort(names.begin(), names.end());
    CHECK(names == sorted);
}

namespace {

// A tree's entries as lines (path, type, mode, size, mtime, inode), to compare two scans.
std::vector<std::string> entry_lines(const std::vector<TreeEntry>& entries) {
    std::vector<std::string> lines;
    for (const auto& e : entries)
        lines.push_back(e.path + " " + std::to_string(static_cast<int>(e.type)) + " " + std::to_string(e.mode) + " " +
                        std::to_string(e.size) + " " + std::to_string(e.mtime_ns) + " " + std::to_string(e.ino));
    return lines;
}

}  // namespace

TEST_CASE("a scan on several threads lists what one thread lists", "[fs]") {
    TempDir dir("fs-threads");
    // An output tree's shape: narrow at the top, a directory per version, and a deep chain.
    for (int v = 0; v < 60; ++v) {
        const std::string version = "t/software/pytorch/" + std::to_string(v);
        dir.write(version + "/runscripts/job.slurm", "x");
        dir.write(version + "/runscripts/acceptance.py", std::string(static_cast<size_t>(v), 'y'));
        dir.write("t/modulefiles/pytorch/" + std::to_string(v) + ".lua", "z");
    }
    dir.write("t/a/b/c/d/e/f/g/file", "deep");
    dir.write("t/top", "top");
    std::filesystem::create_symlink("top", dir.file("t/software/link"));
    REQUIRE(::mkfifo(dir.file("t/a/b/fifo").c_str(), 0644) == 0);
    const ScopedEnv threads_env("SITEGEN_THREADS", "1");
    const auto scan_on = [&](const char* threads, bool stat_files) {
        threads_env.set(threads);
        std::vector<std::string> lines = entry_lines(make_disk_fs()->scan(dir.file("t"), stat_files));
        if (!stat_files) std::sort(lines.begin(), lines.end());
        return lines;
    };
    const auto one = scan_on("1", true), names = scan_on("1", false);
    CHECK(one.size() == 60 * 5 + 15);  // per version 3 files and 2 directories; 15 more entries
    for (const char* threads : {"2", "3", "8"}) {
        INFO(threads << " threads");
        CHECK(scan_on(threads, true) == one);
        CHECK(scan_on(threads, false) == names);
    }
}


namespace {

// The tree at `dir` as a publish would record it: its directories (the top one too) settled an
// hour ago (mtime set back, so that a change now changes it) with their stats, and its files.
struct RecordedTree {
    std::vector<TreeEntry> entries;
    TreeEntry top;
    KnownTree known;
    explicit RecordedTree(const std::string& dir) {
        auto disk = make_disk_fs();
        const timespec hour_ago[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
        for (const auto& e : disk->scan(dir))
            if (e.type == TreeEntry::Type::dir) ::utimensat(AT_FDCWD, (dir + "/" + e.path).c_str(), hour_ago, 0);
        ::utimensat(AT_FDCWD, dir.c_str(), hour_ago, 0);
        entries = disk->scan(dir);
        REQUIRE(disk->entry(dir, top));
        known.dirs.push_back({"", top.size, top.mtime_ns, top.ino, top.mode, true});
        for (const auto& e : entries)
            if (e.type == TreeEntry::Type::dir) known.dirs.push_back({e.path, e.size, e.mtime_ns, e.ino, e.mode, true});
            else known.files.push_back(e.path);
    }
};

}  // namespace

TEST_CASE("a known scan on one thread, joined by another that helps, lists what a scan lists", "[fs]") {
    // (As below four CPUs: the build's thread, done with its own part, takes slices of the
    // known files' stats, help_posted; some files changed since, one directory is read.)
    TempDir dir("fs-known-helped");
    const std::string t = dir.file("t");
    for (int v = 0; v < 3000; ++v) dir.write("t/software/p/" + std::to_string(v % 300) + "/f" + std::to_string(v), "x");
    const RecordedTree recorded(t);
    dir.write("t/software/p/7/f7", "changed");
    dir.write("t/software/p/8/new", "added");
    const ScopedEnv threads_env("SITEGEN_THREADS", "1");
    std::atomic<bool> done{false};
    std::atomic<size_t> helped{0};
    std::thread helper([&] { helped.store(help_posted_until(done)); });
    auto disk = make_disk_fs();
    std::vector<std::string> known_lines;
    for (int round = 0; round < 20; ++round) known_lines = entry_lines(disk->scan_known(t, recorded.known));  // (the helper joins some)
    done.store(true);
    wake_helpers();
    helper.join();
    CHECK(helped.load() > 0);  // (the helper took slices in some round)
    CHECK(known_lines == entry_lines(disk->scan(t)));
    CHECK(known_lines.size() == 3000 + 1 + 300 + 2);  // files, the one added, a directory per version, software/ and p/
}

TEST_CASE("a known scan lists what a scan lists, whatever changed since the tree was recorded", "[fs]") {
    TempDir dir("fs-known");
    const std::string t = dir.file("t");
    for (const char* f : {"t/modulefiles/p/1.lua", "t/modulefiles/p/2.lua", "t/software/p/1/runscripts/job",
                          "t/software/p/1/runscripts/get-master", "t/software/p/2/runscripts/job", "t/.manifest"})
        dir.write(f, "x");
    auto disk = make_disk_fs();
    const auto same_as_scan = [&](const RecordedTree& recorded) {
        CHECK(entry_lines(disk->scan_known(t, recorded.known)) == entry_lines(disk->scan(t)));
    };
    SECTION("nothing") {
        const RecordedTree recorded(t);
        same_as_scan(recorded);
        CHECK(disk->scan_known(t, recorded.known).size() == 14);
    }
    SECTION("a file added to a directory (its mtime changes: it is read)") {
        const RecordedTree recorded(t);
        dir.write("t/software/p/1/runscripts/notes.txt", "mine");
        same_as_scan(recorded);
    }
    SECTION("a file edited in place, one removed, one replaced by a link") {
        const RecordedTree recorded(t);
        dir.write("t/modulefiles/p/1.lua", "edited");
        std::filesystem::remove(dir.file("t/software/p/2/runscripts/job"));
        std::filesystem::remove(dir.file("t/modulefiles/p/2.lua"));
        std::filesystem::create_symlink("/etc/passwd", dir.file("t/modulefiles/p/2.lua"));
        same_as_scan(recorded);
    }
    SECTION("a new directory with files, a directory replaced by a link, a mode changed") {
        const RecordedTree recorded(t);
        dir.write("t/software/p/1/extra/deeper/file", "mine");
        std::filesystem::remove_all(dir.file("t/software/p/2/runscripts"));
        std::filesystem::create_symlink("/etc", dir.file("t/software/p/2/runscripts"));
        ::chmod(dir.file("t/modulefiles/p").c_str(), 0700);
        same_as_scan(recorded);
    }
    SECTION("a directory moved away and a link to it put in its place (its subdirectories keep their stats)") {
        const RecordedTree recorded(t);
        std::filesystem::rename(dir.file("t/software/p/1"), dir.file("t/moved"));
        std::filesystem::create_symlink("../../moved", dir.file("t/software/p/1"));
        same_as_scan(recorded);
    }
    SECTION("the whole tree replaced by a copy (other inodes)") {
        const RecordedTree recorded(t);
        std::filesystem::rename(t, dir.file("old"));
        std::filesystem::copy(dir.file("old"), t, std::filesystem::copy_options::recursive);
        same_as_scan(recorded);
    }
    SECTION("on several threads") {
        const RecordedTree recorded(t);
        dir.write("t/software/p/1/runscripts/notes.txt", "mine");
        const ScopedEnv threads("SITEGEN_THREADS", "4");
        same_as_scan(recorded);
    }
}

TEST_CASE("a known scan does not read a settled directory that still has its stat, and reads an unsettled one", "[fs]") {
    TempDir dir("fs-vouched");
    const std::string t = dir.file("t");
    dir.write("t/a/listed", "x");
    dir.write("t/a/unlisted", "x");
    dir.write("t/b/listed", "x");
    dir.write("t/b/unlisted", "x");
    RecordedTree recorded(t);
    // The record leaves out a file in each of a and b: a stays settled (its stat vouches for
    // the recorded entries: the file it does not list is not seen), b does not (it is read).
    auto& files = recorded.known.files;
    files.erase(std::remove_if(files.begin(), files.end(), [](std::string_view f) { return f.substr(2) == "unlisted"; }),
                files.end());
    for (auto& d : recorded.known.dirs)
        if (d.path == "b") d.settled = false;
    std::vector<std::string> paths;
    for (const auto& e : make_disk_fs()->scan_known(t, recorded.known)) paths.push_back(e.path);
    CHECK(paths == std::vector<std::string>{"a", "a/listed", "b", "b/listed", "b/unlisted"});
    // A record that does not describe a tree (a file whose directory it does not list), or
    // vouches for no directory, is not taken: the tree is scanned.
    files.push_back("c/file");
    CHECK(make_disk_fs()->scan_known(t, recorded.known).size() == 6);
    files.pop_back();
    for (auto& d : recorded.known.dirs) d.settled = false;
    CHECK(make_disk_fs()->scan_known(t, recorded.known).size() == 6);
}

TEST_CASE("the directories of a recorded tree are the same while nothing is added, removed or put in their place", "[fs]") {
    TempDir dir("fs-same-dirs");
    const std::string t = dir.file("t");
    for (const char* f : {"t/modulefiles/p/1.lua", "t/software/p/1/runscripts/job", "t/software/p/2/bin/x"})
        dir.write(f, "x");
    const RecordedTree recorded(t);
    MemoryFs memory;  // (the default, through entry(): the same answers for the same tree)
    for (const char* f : {"t/modulefiles/p/1.lua", "t/software/p/1/runscripts/job", "t/software/p/2/bin/x"}) {
        std::string error;
        REQUIRE(memory.write(f, "x", false, error));
    }
    const std::vector<TreeEntry> in_memory = memory.scan("t");
    CHECK(memory.same_dirs("t", in_memory, 1));
    auto disk = make_disk_fs();
    for (const unsigned threads : {1u, 3u}) CHECK(disk->same_dirs(t, recorded.entries, threads));
    CHECK(disk->same_dirs(t, {}, 1));
    const auto changed = [&](auto&& change) {
        std::vector<TreeEntry> entries = recorded.entries;
        change(entries);
        return !disk->same_dirs(t, entries, 1) && !disk->same_dirs(t, entries, 3);
    };
    // Another stat, a path outside the tree, a directory gone.
    CHECK(changed([](auto& e) { for (auto& x : e) if (x.path == "software/p/1") x.mtime_ns += 1; }));
    CHECK(changed([](auto& e) { for (auto& x : e) if (x.path == "software/p/1") x.path = "/" + x.path; }));
    CHECK(changed([](auto& e) { e.push_back({"software/p/3", TreeEntry::Type::dir, 0755}); }));
    // Files are passed over (their stats are the look's, not this one's).
    CHECK(!changed([](auto& e) { for (auto& x : e) if (x.type == TreeEntry::Type::file) x.mtime_ns += 1; }));
    // A file added to a directory changes its mtime; a directory put in place of another, its inode.
    dir.write("t/software/p/1/runscripts/new", "x");
    CHECK(!disk->same_dirs(t, recorded.entries, 1));
    const RecordedTree again(t);
    std::filesystem::rename(dir.file("t/software/p/2/bin"), dir.file("t/bin-was"));
    std::filesystem::create_directory(dir.file("t/software/p/2/bin"));
    std::vector<TreeEntry> but_bin;
    for (const auto& e : again.entries)
        if (e.path != "software/p/2") but_bin.push_back(e);
    CHECK(!disk->same_dirs(t, but_bin, 1));
    // A symlink to a directory in place of one is not a directory.
    std::filesystem::remove(dir.file("t/software/p/2/bin"));
    std::filesystem::create_directory_symlink(dir.file("t/bin-was"), dir.file("t/software/p/2/bin"));
    std::vector<TreeEntry> only_bin;
    for (const auto& e : again.entries)
        if (e.path == "software/p/2/bin") only_bin.push_back(e);
    REQUIRE(only_bin.size() == 1);
    const TreeEntry target = [&] { TreeEntry e; REQUIRE(disk->entry(dir.file("t/bin-was"), e)); return e; }();
    only_bin[0].size = target.size, only_bin[0].mtime_ns = target.mtime_ns, only_bin[0].ino = target.ino;
    CHECK(!disk->same_dirs(t, only_bin, 1));
}

TEST_CASE("the directories of a recorded tree, checked on one thread joined by another that helps", "[fs]") {
    // (As below four CPUs: the build's thread, done finding the kept stacks, takes slices of
    // the spare's directory stats, help_posted; the answer is the one thread's.)
    TempDir dir("fs-same-dirs-helped");
    const std::string t = dir.file("t");
    for (int v = 0; v < 3000; ++v) dir.write("t/software/p/" + std::to_string(v) + "/bin/f", "x");
    const RecordedTree recorded(t);
    std::atomic<bool> done{false};
    std::atomic<size_t> helped{0};
    std::thread helper([&] { helped.store(help_posted_until(done)); });
    auto disk = make_disk_fs();
    bool same = true;
    for (int round = 0; round < 20; ++round) same = same && disk->same_dirs(t, recorded.entries, 1);  // (the helper joins some)
    std::vector<TreeEntry> one_changed = recorded.entries;
    for (auto& e : one_changed)
        if (e.path == "software/p/2999/bin") e.mtime_ns += 1;  // (in the last slice)
    bool changed_seen = true;
    for (int round = 0; round < 20; ++round) changed_seen = changed_seen && !disk->same_dirs(t, one_changed, 1);
    done.store(true);
    wake_helpers();
    helper.join();
    CHECK(helped.load() > 0);  // (the helper took slices in some round)
    CHECK(same);
    CHECK(changed_seen);
}

TEST_CASE("directories are made 0755 whatever the umask, and removal gets through locked ones", "[fs]") {
    TempDir dir("fs-test");
    TempDir outside("fs-outside");
    const std::string kept = outside.write("keep/me", "precious");
    auto disk = make_disk_fs();
    const mode_t old = ::umask(077);
    std::string error;
    const bool made = disk->make_dirs(dir.file("x/y/z"), error);
    const bool wrote = disk->write(dir.file("x/w/f"), "data", false, error);
    ::umask(old);
    REQUIRE(made);
    REQUIRE(wrote);
    for (const char* d : {"x", "x/y", "x/y/z", "x/w"}) {
        TreeEntry e;
        REQUIRE(disk->entry(dir.file(d), e));
        CHECK(e.mode == 0755);
    }
    // A tree a user locked (0500 and 0000 directories) with a link out of it.
    dir.write("x/y/z/deep", "d");
    std::filesystem::create_symlink(outside.file("keep"), dir.file("x/y/out"));
    ::chmod(dir.file("x/y/z").c_str(), 0000);
    ::chmod(dir.file("x/y").c_str(), 0500);
    REQUIRE(disk->remove_all(dir.file("x"), error));
    CHECK_FALSE(std::filesystem::exists(dir.file("x")));
    CHECK(sitegen::test::read_file(kept) == "precious");  // the link was removed, not followed
    CHECK(disk->remove_all(dir.file("never-there"), error));
}

TEST_CASE("a written file has its fixed mode and the entry entry() gives, through a renamed or removed directory too", "[fs]") {
    TempDir dir("fs-test");
    auto disk = make_disk_fs();
    std::string error;
    const auto entry_of = [&](const std::string& path) {
        TreeEntry e;
        REQUIRE(disk->entry(path, e));
        return e;
    };
    const auto same = [](const TreeEntry& a, const TreeEntry& b) {
        return a.path == b.path && a.type == b.type && a.mode == b.mode && a.size == b.size && a.mtime_ns == b.mtime_ns &&
               a.ino == b.ino;
    };
    const mode_t old = ::umask(077);
    TreeEntry written;
    const bool wrote = disk->write_stat(dir.file("a/b/script"), "#!/bin/sh\n", true, error, written);
    ::umask(old);
    REQUIRE(wrote);
    CHECK(written.mode == 0755);
    CHECK(written.size == 10);
    CHECK(same(written, entry_of(dir.file("a/b/script"))));
    // An existing file of another mode is rewritten with the wanted one.
    ::chmod(dir.file("a/b/script").c_str(), 0600);
    REQUIRE(disk->write_stat(dir.file("a/b/script"), "x", false, error, written));
    CHECK(written.mode == 0644);
    CHECK(same(written, entry_of(dir.file("a/b/script"))));
    // The directory renamed away and made again: the next write goes to the new one.
    REQUIRE(disk->rename(dir.file("a/b"), dir.file("a/old"), error));
    REQUIRE(disk->write(dir.file("a/b/next"), "n", false, error));
    CHECK(sitegen::test::read_file(dir.file("a/b/next")) == "n");
    CHECK_FALSE(std::filesystem::exists(dir.file("a/old/next")));
    // Removed: made again.
    REQUIRE(disk->remove_all(dir.file("a/b"), error));
    REQUIRE(disk->write(dir.file("a/b/again"), "g", false, error));
    CHECK(sitegen::test::read_file(dir.file("a/b/again")) == "g");
    // More directories than it keeps open, in turn, twice.
    for (int round = 0; round < 2; ++round)
        for (int d = 0; d < 20; ++d)
            REQUIRE(disk->write(dir.file("many/" + std::to_string(d) + "/f"), std::to_string(round), false, error));
    CHECK(sitegen::test::read_file(dir.file("many/19/f")) == "1");
    CHECK(sitegen::test::read_file(dir.file("many/0/f")) == "1");
    // A file where a directory is wanted: an error naming the path.
    dir.write("plain", "p");
    CHECK_FALSE(disk->write(dir.file("plain/f"), "x", false, error));
    CHECK(error.find("plain") != std::string::npos);
}

TEST_CASE("write_pieces writes many pieces, empty and large ones among them, as their concatenation", "[fs]") {
    // (More pieces than one writev takes: a manifest or state of many short runs.)
    TempDir dir("fs-pieces");
    std::vector<std::string> owned;
    for (int i = 0; i < 3000; ++i) owned.push_back(i % 7 == 0 ? std::string() : "line " + std::to_string(i) + "\n");
    owned.push_back(std::string(3 << 20, 'x'));  // (3 MB: a write may take it in parts)
    owned.push_back("end\n");
    owned.push_back("");
    std::vector<std::string_view> pieces(owned.begin(), owned.end());
    std::string joined;
    for (const auto& p : owned) joined += p;
    auto disk = make_disk_fs();
    std::string error;
    REQUIRE(disk->write_pieces(dir.file("out"), pieces, error));
    CHECK(sitegen::test::read_file(dir.file("out")) == joined);
    REQUIRE(disk->write_pieces(dir.file("empty"), {}, error));
    CHECK(sitegen::test::read_file(dir.file("empty")).empty());
}
