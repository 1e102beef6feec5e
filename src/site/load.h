// load: sites/<name>/site.toml (plus its `extends` fragments) -> Site, or diagnostics.
#pragma once

#include <string>
#include <vector>

#include "site/diagnostics.h"
#include "out/fs.h"
#include "site/model.h"
#include "site/stack_memo.h"

namespace sitegen {

constexpr int kMaxExtendsDepth = 16;
constexpr size_t kMaxSiteFileBytes = 8 * 1024 * 1024;  // 10,000 stacks fit; a 10 MB file does not
// Tables opened by dotted keys and table headers along one path (see find_over_deep_key);
// site files need three or four.
constexpr int kMaxDottedKeyDepth = 128;

// Names of the sites under sites_dir (subdirectories holding site.toml), sorted.
std::vector<std::string> list_sites(FileSystem& fs, const std::string& sites_dir);

// Path of a site's main file: <sites_dir>/<name>/site.toml.
std::string site_file(const std::string& sites_dir, const std::string& name);

// Loads one site. Returns false when any error was reported; `out` is then incomplete.
// Schema checks that need the whole site (required keys, cross-field rules) run in check.
// Only files under sites_dir are read: `extends` entries leading elsewhere (by '..', an
// absolute path or, on disk, a symbolic link) are errors at the entry, and nothing of the
// target is read; so is a site file that is a link out of sites_dir.
// With `memo` (the stacks a build loaded, site/stack_memo.h), each `[[stacks]]` entry whose
// text is unchanged is read back from it instead of parsed: the same site, regions and
// findings; memo->pieces then says what the next memo holds.
bool load_site(FileSystem& fs, const std::string& sites_dir, const std::string& name, Site& out,
               Diagnostics& diags, StackMemo* memo = nullptr);

// Loads from in-memory text (tests, fuzzing): `path` (<sites_dir>/<name>/site.toml) is the
// name used in diagnostics and the base for relative `extends`, which are read through `fs`
// from under <sites_dir>.
bool load_site_text(FileSystem& fs, const std::string& path, const std::string& text, Site& out,
                    Diagnostics& diags, StackMemo* memo = nullptr);

}  // namespace sitegen
