// Helpers shared by unit tests that drive real tools: scratch directories, files, commands.
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "out/fs.h"
#include "site/check.h"
#include "site/load.h"

namespace sitegen::test {

// Sets an environment variable (SITEGEN_THREADS, ...) until scope exit, then puts back what was
// there, or its absence.
struct ScopedEnv {
    std::string name;
    bool had = false;
    std::string before;
    ScopedEnv(std::string var, const std::string& value) : name(std::move(var)) {
        if (const char* old = std::getenv(name.c_str())) had = true, before = old;
        set(value);
    }
    void set(const std::string& value) const { ::setenv(name.c_str(), value.c_str(), 1); }
    ~ScopedEnv() {
        if (had) ::setenv(name.c_str(), before.c_str(), 1);
        else ::unsetenv(name.c_str());
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;
};

// A fresh directory under the temp dir, removed with everything in it at scope exit.
struct TempDir {
    std::filesystem::path path;
    explicit TempDir(const std::string& tag) {
        std::string pattern = (std::filesystem::temp_directory_path() / ("sitegen-" + tag + "-XXXXXX")).string();
        if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
        path = pattern;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::string str() const { return path.string(); }
    std::string file(const std::string& name) const { return (path / name).string(); }
    // Writes `text` to name (creating parent directories) and returns its path.
    std::string write(const std::string& name, const std::string& text) const {
        const std::filesystem::path p = path / name;
        std::filesystem::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << text;
        return p.string();
    }
};

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

inline void write_file(const std::string& path, const std::string& content) {
    std::ofstream(path, std::ios::binary) << content;
}

// Exit status of a shell command (-1 if it did not exit normally).
inline int run(const std::string& command) {
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A missing tool must fail the test: a skipped real-tool check proves nothing.
inline void require_tool(const std::string& tool) {
    INFO("required tool not installed: " << tool);
    REQUIRE(run("command -v " + tool + " >/dev/null 2>&1") == 0);
}

// The repository's seed sites (sites/*/site.toml), by name.
inline std::vector<std::string> seed_site_names() {
    auto disk = make_disk_fs();
    return list_sites(*disk, SITEGEN_SOURCE_DIR "/sites");
}

// One seed site, loaded from the repository; a load error fails the test.
inline Site load_seed_site(const std::string& name) {
    auto disk = make_disk_fs();
    Site site;
    Diagnostics diags;
    INFO("loading seed site " << name);
    REQUIRE(load_site(*disk, SITEGEN_SOURCE_DIR "/sites", name, site, diags));
    return site;
}

// Site "t" from TOML text (sites/t/site.toml) and any other files by path, loaded and
// checked in memory; a load or check error fails the test.
inline Site load_checked_site(const std::string& text, const std::map<std::string, std::string>& extra = {}) {
    MemoryFs fs;
    fs.files["sites/t/site.toml"] = {text, false};
    for (const auto& [path, body] : extra) fs.files[path] = {body, false};
    Site site;
    Diagnostics diags;
    const bool loaded = load_site(fs, "sites", "t", site, diags);
    if (loaded) check_site(site, "t", diags);
    INFO(diags.error_count() << " errors");
    REQUIRE(loaded);
    REQUIRE(diags.error_count() == 0);
    return site;
}

}  // namespace sitegen::test
