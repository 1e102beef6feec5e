// load: sites/<name>/site.toml (plus its `extends` fragments) -> Site, or diagnostics.
#pragma once

#include <string>
#include <vector>

#include "site/diagnostics.h"
#include "out/fs.h"
#include "site/model.h"

namespace sitegen {

constexpr int kMaxExtendsDepth = 16;
constexpr size_t kMaxSiteFileBytes = 8 * 1024 * 1024;  // 10,000 stacks fit; a 10 MB file does not

// Names of the sites under sites_dir (subdirectories holding site.toml), sorted.
std::vector<std::string> list_sites(FileSystem& fs, const std::string& sites_dir);

// Path of a site's main file: <sites_dir>/<name>/site.toml.
std::string site_file(const std::string& sites_dir, const std::string& name);

// Loads one site. Returns false when any error was reported; `out` is then incomplete.
// Schema checks that need the whole site (required keys, cross-field rules) run in check.
bool load_site(FileSystem& fs, const std::string& sites_dir, const std::string& name, Site& out,
               Diagnostics& diags);

// Loads from in-memory text (tests, fuzzing): `path` is the name used in diagnostics and the
// base for relative `extends`, which are read through `fs`.
bool load_site_text(FileSystem& fs, const std::string& path, const std::string& text, Site& out,
                    Diagnostics& diags);

}  // namespace sitegen
