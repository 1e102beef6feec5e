// publish: the only code that changes the output tree. Each site root (modules-out/<site>,
// easyconfigs-out/<site>) is staged in a hidden sibling, then swapped in atomically; a
// journal lets the next run finish an interrupted swap so the roots never mix old and new.
#pragma once

#include <string>
#include <vector>

#include "site/diagnostics.h"
#include "render/emit.h"
#include "out/fs.h"

namespace sitegen {

constexpr const char* kManifestName = ".sitegen-manifest";

struct PublishOptions {
    std::string out_dir = ".";
    bool dry_run = false;
    bool force = false;  // overwrite hand-edited outputs instead of refusing
};

struct PublishReport {
    std::vector<std::string> added, changed, removed;  // paths relative to out_dir
    size_t unchanged = 0;
    bool io_error = false;  // failure writing the tree (exit 3) rather than a refusal
};

// The manifest text for a root: one "<sha256> <mode> <path>" line per file, sorted.
std::string manifest_text(const std::vector<const OutputFile*>& files_in_root, const std::string& root);

// Publishes `files` (paths relative to out_dir, each under one of `roots`). Returns false
// with findings in `diags` when it refused or failed; the previous tree is then untouched.
bool publish(FileSystem& fs, const std::vector<std::string>& roots, const OutputList& files,
             const PublishOptions& options, PublishReport& report, Diagnostics& diags);

// Finishes (rolls forward) a publish interrupted after staging; called by publish first.
bool recover_interrupted_publish(FileSystem& fs, const std::string& out_dir, Diagnostics& diags);

}  // namespace sitegen
