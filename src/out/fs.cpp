// Disk and in-memory implementations of the FileSystem interface.
#include "out/fs.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <set>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fsys = std::filesystem;

namespace sitegen {

namespace {

class DiskFs : public FileSystem {
public:
    bool read(const std::string& path, std::string& out, std::string& error) override {
        int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) { error = path + ": " + std::strerror(errno); return false; }
        out.clear();
        char buf[65536];
        for (;;) {
            ssize_t n = ::read(fd, buf, sizeof buf);
            if (n < 0) {
                if (errno == EINTR) continue;
                error = path + ": " + std::strerror(errno);
                ::close(fd);
                return false;
            }
            if (n == 0) break;
            out.append(buf, static_cast<size_t>(n));
        }
        ::close(fd);
        return true;
    }

    bool write(const std::string& path, const std::string& data, bool executable,
               std::string& error) override {
        fsys::path p(path);
        // A tree has few directories and many files: create each directory once.
        if (p.has_parent_path()) {
            std::string parent = p.parent_path().string();
            if (!made_dirs_.count(parent)) {
                if (!make_dirs(parent, error)) return false;
                made_dirs_.insert(parent);
            }
        }
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                        executable ? 0755 : 0644);
        if (fd < 0) { error = path + ": " + std::strerror(errno); return false; }
        size_t done = 0;
        while (done < data.size()) {
            ssize_t n = ::write(fd, data.data() + done, data.size() - done);
            if (n < 0) {
                if (errno == EINTR) continue;
                error = path + ": " + std::strerror(errno);
                ::close(fd);
                return false;
            }
            done += static_cast<size_t>(n);
        }
        // The umask may have dropped bits; outputs have fixed modes.
        if (::fchmod(fd, executable ? 0755 : 0644) != 0) {
            error = path + ": " + std::strerror(errno);
            ::close(fd);
            return false;
        }
        if (::close(fd) != 0) { error = path + ": " + std::strerror(errno); return false; }
        return true;
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
        std::error_code ec;
        fsys::create_directories(path, ec);
        if (ec) { error = path + ": " + ec.message(); return false; }
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
        made_dirs_.clear();
        if (::rename(from.c_str(), to.c_str()) != 0) {
            error = from + " -> " + to + ": " + std::strerror(errno);
            return false;
        }
        return true;
    }

    bool remove_all(const std::string& path, std::string& error) override {
        std::error_code ec;
        made_dirs_.clear();  // may have removed some of them
        fsys::remove_all(path, ec);
        if (ec) { error = path + ": " + ec.message(); return false; }
        return true;
    }

    bool is_executable(const std::string& path) override {
        struct stat st;
        return ::stat(path.c_str(), &st) == 0 && (st.st_mode & S_IXUSR);
    }

    bool exchange(const std::string& a, const std::string& b, std::string& error) override {
        made_dirs_.clear();
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

    ~DiskFs() override { unlock(); }

private:
    int lock_fd_ = -1;
    std::set<std::string> made_dirs_;  // directories write() created (or found) already
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

std::unique_ptr<FileSystem> make_disk_fs() { return std::make_unique<DiskFs>(); }

bool MemoryFs::read(const std::string& path, std::string& out, std::string& error) {
    auto it = files.find(norm(path));
    if (it == files.end()) { error = path + ": No such file or directory"; return false; }
    out = it->second.data;
    return true;
}

bool MemoryFs::write(const std::string& path, const std::string& data, bool executable,
                     std::string& error) {
    if (fail_write_after > 0 && --fail_write_after == 0) {
        error = path + ": No space left on device";
        return false;
    }
    std::string p = norm(path);
    files[p] = {data, executable};
    auto parent = fsys::path(p).parent_path().generic_string();
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
