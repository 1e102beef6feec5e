// The file-system interface: publish and load go through it, so tests can run in memory
// and inject faults (disk full, unwritable directory, crash between files).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sitegen {

class FileSystem {
public:
    virtual ~FileSystem() = default;
    // Each returns false (and sets `error`) on failure; none throws.
    virtual bool read(const std::string& path, std::string& out, std::string& error) = 0;
    virtual bool write(const std::string& path, const std::string& data, bool executable,
                       std::string& error) = 0;  // creates parent dirs
    // Makes everything written under `path` durable (one syncfs, not one fsync per file).
    virtual bool sync(const std::string& path, std::string& error) = 0;
    virtual bool exists(const std::string& path) = 0;
    virtual bool is_dir(const std::string& path) = 0;
    virtual bool make_dirs(const std::string& path, std::string& error) = 0;
    // Regular files under `dir`, relative, sorted.
    virtual std::vector<std::string> list_files(const std::string& dir) = 0;
    // Immediate subdirectories of `dir`, sorted.
    virtual std::vector<std::string> list_dirs(const std::string& dir) = 0;
    virtual bool rename(const std::string& from, const std::string& to, std::string& error) = 0;
    virtual bool remove_all(const std::string& path, std::string& error) = 0;
    virtual bool is_executable(const std::string& path) = 0;
    // Atomically swaps two existing paths (renameat2 RENAME_EXCHANGE on disk).
    virtual bool exchange(const std::string& a, const std::string& b, std::string& error) = 0;
    // Takes an exclusive advisory lock on `path` (created if needed), waiting for other
    // holders; released by unlock or when the process ends.
    virtual bool lock(const std::string& path, std::string& error) = 0;
    virtual void unlock() = 0;
};

// The real disk.
std::unique_ptr<FileSystem> make_disk_fs();

struct SimulatedCrash {};

// An in-memory tree for tests. Paths are normalised strings; directories are implicit
// prefixes plus explicit entries from make_dirs.
class MemoryFs : public FileSystem {
public:
    bool read(const std::string& path, std::string& out, std::string& error) override;
    bool write(const std::string& path, const std::string& data, bool executable,
               std::string& error) override;
    bool exists(const std::string& path) override;
    bool is_dir(const std::string& path) override;
    bool make_dirs(const std::string& path, std::string& error) override;
    std::vector<std::string> list_files(const std::string& dir) override;
    std::vector<std::string> list_dirs(const std::string& dir) override;
    bool rename(const std::string& from, const std::string& to, std::string& error) override;
    bool remove_all(const std::string& path, std::string& error) override;
    bool is_executable(const std::string& path) override;
    bool exchange(const std::string& a, const std::string& b, std::string& error) override;
    bool sync(const std::string&, std::string&) override { return true; }
    bool lock(const std::string&, std::string&) override { return true; }
    void unlock() override {}

    // Fault injection: the Nth write from now fails (1 = the next one); 0 = never.
    int fail_write_after = 0;
    // Fault injection: every rename/exchange fails.
    bool fail_rename = false;
    // Fault injection: the Nth rename/exchange from now "kills the process" (throws
    // SimulatedCrash) before doing anything; 0 = never.
    int crash_at_rename = 0;

    struct Entry { std::string data; bool executable = false; };
    std::map<std::string, Entry> files;
    std::map<std::string, bool> dirs;
};

}  // namespace sitegen
