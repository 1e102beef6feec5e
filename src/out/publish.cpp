// Atomic, deterministic publishing with a hash manifest and hand-edit detection.
#include "out/publish.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "out/manifest.h"
#include "out/sha256.h"

namespace sitegen {

namespace {

constexpr const char* kJournalName = ".sitegen-journal";
constexpr const char* kLockName = ".sitegen.lock";
constexpr unsigned kDirMode = 0755;  // every directory of a published tree (DiskFs::make_dirs)

std::string join(const std::string& dir, const std::string& rel) {
    if (dir.empty() || dir == ".") return rel;
    return dir + "/" + rel;
}

// modules-out/lumi -> modules-out/.lumi.sitegen-spare: where the next tree is staged, and
// where the tree it replaced stays afterwards, so the next publish rewrites only what changed.
std::string staging_of(const std::string& root) {
    auto slash = root.rfind('/');
    std::string parent = slash == std::string::npos ? "" : root.substr(0, slash + 1);
    std::string leaf = slash == std::string::npos ? root : root.substr(slash + 1);
    return parent + "." + leaf + ".sitegen-spare";
}

std::string octal(unsigned mode) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04o", mode);
    return buf;
}

// A tree as a fresh build leaves it: each file's hash and mode, by path relative to the root
// (the manifest included); directories are the files' parents, each with mode 0755.
// (FileSpec, TreeSpec and parse_manifest: out/manifest.h)

std::set<std::string> parent_dirs(const TreeSpec& spec) {
    std::set<std::string> out;
    for (const auto& [rel, f] : spec)
        for (auto slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', slash + 1))
            out.insert(rel.substr(0, slash));
    return out;
}

// The manifest of a live root, if it is a regular file ("" otherwise).
std::string read_manifest(FileSystem& fs, const std::string& root) {
    std::string text, error;
    TreeEntry e;
    if (!fs.entry(root + "/" + kManifestName, e) || e.type != TreeEntry::Type::file) return {};
    if (!fs.read(root + "/" + kManifestName, text, error, kMaxOutputFileBytes)) return {};
    return text;
}

// The SHA-256 of a live file, or "" when it cannot be read (then it matches nothing).
std::string hash_of(FileSystem& fs, const std::string& path) {
    std::string text, error;
    if (!fs.read(path, text, error, kMaxOutputFileBytes)) return {};
    return sha256_hex(text);
}

// True when `live` is exactly the tree `spec` describes: a directory (0755) holding exactly
// these regular files with these hashes and modes, their parent directories (0755) and
// nothing else (no other file, directory, symlink, FIFO or socket).
bool tree_matches(FileSystem& fs, const std::string& live, const TreeSpec& spec) {
    TreeEntry root;
    if (!fs.entry(live, root) || root.type != TreeEntry::Type::dir || root.mode != kDirMode) return false;
    const std::set<std::string> dirs = parent_dirs(spec);
    size_t files = 0;
    for (const TreeEntry& e : fs.scan(live)) {
        if (e.type == TreeEntry::Type::dir) {
            if (!dirs.count(e.path) || e.mode != kDirMode) return false;
            continue;
        }
        auto it = spec.find(e.path);
        if (e.type != TreeEntry::Type::file || it == spec.end() || e.mode != it->second.mode) return false;
        if (hash_of(fs, live + "/" + e.path) != it->second.hash) return false;
        ++files;
    }
    return files == spec.size();
}

// Swaps a staged root in: an exchange when something is at `live` (whatever it is), else a
// rename. Afterwards the old tree (if any) is at `staged`.
bool swap_in(FileSystem& fs, const std::string& staged, const std::string& live, std::string& error) {
    TreeEntry existing;
    return fs.entry(live, existing) ? fs.exchange(staged, live, error) : fs.rename(staged, live, error);
}

// The manifest of the files of `spec` (which must not list the manifest itself).
std::string manifest_of(const TreeSpec& spec) {
    std::string out = "# sitegen manifest v1: sha256, mode, path relative to this directory\n";
    for (const auto& [rel, f] : spec) out += f.hash + (f.mode == 0755u ? " 755 " : " 644 ") + rel + "\n";
    return out;
}

// Makes `staged` hold exactly the new tree of `root`: each wanted file that is on the live
// tree as wanted (`live_inodes`; kept files always are) becomes or stays another name of the
// live file, every other one is written anew, the manifest last; whatever else the staging
// path holds is removed. When it holds the tree the previous publish replaced (the spare),
// only what changed since then is written, so one changed stack costs a scan, not a copy of
// every file. A staged file is never written in place: it may be another name of a live one.
bool stage_root(FileSystem& fs, const std::string& live, const std::string& staged, const std::string& root,
                const std::vector<const OutputFile*>& files, const std::map<std::string, unsigned long long>& live_inodes,
                const std::string& manifest, PublishReport& report, std::string& error) {
    std::map<std::string, const OutputFile*> wanted;  // rel -> rendered file (null: kept, linked)
    for (const OutputFile* f : files) wanted[f->path.substr(root.size() + 1)] = f;
    for (const auto& [rel, ino] : live_inodes)
        if (rel != kManifestName) wanted.emplace(rel, nullptr);
    TreeSpec shape;  // for the wanted directories
    for (const auto& [rel, f] : wanted) shape[rel];
    const std::set<std::string> dirs = parent_dirs(shape);

    std::set<std::string> done;  // rel paths the spare already holds as wanted
    TreeEntry top;
    bool reuse = fs.entry(staged, top) && top.type == TreeEntry::Type::dir && top.mode == kDirMode;
    if (reuse) {
        const std::vector<TreeEntry> entries = fs.scan(staged);
        for (const TreeEntry& e : entries)
            if (e.type == TreeEntry::Type::dir && dirs.count(e.path) && e.mode != kDirMode) reuse = false;
        std::string removed;  // the last directory removed whole (scan lists parents first)
        for (const TreeEntry& e : reuse ? entries : std::vector<TreeEntry>{}) {
            if (!removed.empty() && e.path.size() > removed.size() && e.path.compare(0, removed.size(), removed) == 0 &&
                e.path[removed.size()] == '/')
                continue;
            if (e.type == TreeEntry::Type::dir) {
                if (dirs.count(e.path)) continue;
                removed = e.path;
            } else if (e.type == TreeEntry::Type::file && e.path != kManifestName) {
                const auto ino = live_inodes.find(e.path);
                if (ino != live_inodes.end() && ino->second == e.ino && wanted.count(e.path)) {
                    done.insert(e.path);
                    continue;
                }
            }
            if (!fs.remove_all(staged + "/" + e.path, error)) return false;
        }
    }
    if (!reuse && !(fs.remove_all(staged, error) && fs.make_dirs(staged, error))) return false;
    for (const auto& [rel, f] : wanted) {
        if (done.count(rel)) continue;
        const std::string to = staged + "/" + rel;
        if (live_inodes.count(rel)) {
            // Same bytes and mode as wanted: another name, same inode and mtime (so the stat
            // recorded by the scan stays true).
            if (!fs.link(live + "/" + rel, to, error)) return false;
            continue;
        }
        if (!fs.write(to, f->contents, f->executable, error)) return false;
        TreeEntry e;
        if (fs.entry(to, e)) report.stats[f->path] = stat_of(e);
    }
    const std::string to = staged + "/" + kManifestName;
    TreeEntry e;
    if (!fs.write(to, manifest, false, error)) return false;
    if (fs.entry(to, e)) report.manifest_stats[root] = stat_of(e);
    return true;
}

}  // namespace

std::string manifest_text(const std::vector<const OutputFile*>& files_in_root, const std::string& root) {
    TreeSpec spec;
    for (const OutputFile* f : files_in_root)
        spec[f->path.substr(root.size() + 1)] = {sha256_hex(f->contents), f->executable ? 0755u : 0644u};
    return manifest_of(spec);
}

bool recover_interrupted_publish(FileSystem& fs, const std::string& out_dir, Diagnostics& diags) {
    const std::string journal = join(out_dir, kJournalName);
    std::string text, error;
    if (!fs.read(journal, text, error, kMaxOutputFileBytes)) return true;  // nothing pending
    std::istringstream in(text);
    std::string hash, root;
    while (in >> hash >> root) {
        const std::string live = join(out_dir, root), staged = join(out_dir, staging_of(root));
        // Done when the live root is exactly the promised tree, byte for byte and mode for
        // mode: a manifest that merely matches is not enough (--force rewrites a tree whose
        // manifest is unchanged but whose files were edited).
        const std::string live_manifest = read_manifest(fs, live);
        bool done = sha256_hex(live_manifest) == hash;
        if (done) {
            TreeSpec spec = parse_manifest(live_manifest);
            spec[kManifestName] = {hash, 0644};
            done = tree_matches(fs, live, spec);
        }
        if (!done && fs.is_dir(staged) && sha256_hex(read_manifest(fs, staged)) == hash &&
            !swap_in(fs, staged, live, error)) {
            diags.error({journal, 0, 0}, "cannot finish interrupted publish: " + error);
            return false;
        }
        TreeEntry left;
        if (fs.entry(staged, left) && !fs.remove_all(staged, error)) {
            diags.error({journal, 0, 0}, "cannot remove " + staged + ": " + error);
            return false;
        }
    }
    if (!fs.remove_all(journal, error)) {
        diags.error({journal, 0, 0}, "cannot remove journal: " + error);
        return false;
    }
    return true;
}

bool publish(FileSystem& fs, const std::vector<std::string>& roots, const OutputList& files,
             const PublishOptions& options, PublishReport& report, Diagnostics& diags) {
    const std::string& out = options.out_dir;
    std::string error;
    if (!options.dry_run) {
        if (!fs.lock(join(out, kLockName), error)) {
            diags.error({}, "cannot lock the output tree: " + error);
            report.io_error = true;
            return false;
        }
        if (!recover_interrupted_publish(fs, out, diags)) { report.io_error = true; return false; }
    }

    // Group the new files by root and compare with what each root holds now.
    // Pointers, not copies: a large site's outputs are hundreds of megabytes.
    std::map<std::string, std::vector<const OutputFile*>> by_root;
    for (const auto& r : roots) by_root[r];
    for (const auto& f : files) {
        auto it = std::find_if(roots.begin(), roots.end(), [&](const std::string& r) {
            return f.path.size() > r.size() && f.path.compare(0, r.size(), r) == 0 && f.path[r.size()] == '/';
        });
        if (it == roots.end()) {
            diags.error({}, "internal: output '" + f.path + "' is outside every site root");
            return false;
        }
        by_root[*it].push_back(&f);
    }
    std::map<std::string, std::vector<const KeptFile*>> kept_by_root;
    for (const auto& k : options.kept) {
        auto it = std::find_if(roots.begin(), roots.end(), [&](const std::string& r) {
            return k.path.size() > r.size() && k.path.compare(0, r.size(), r) == 0 && k.path[r.size()] == '/';
        });
        if (it == roots.end()) {
            diags.error({}, "internal: output '" + k.path + "' is outside every site root");
            return false;
        }
        kept_by_root[*it].push_back(&k);
    }

    std::vector<std::string> to_swap;
    std::map<std::string, std::string> manifests;
    // Per root: the files that are on the live tree exactly as wanted, by their inode there
    // (the spare gets another name of them instead of a copy).
    std::map<std::string, std::map<std::string, unsigned long long>> live_inodes;
    for (auto& [root, root_files] : by_root) {
        const std::string live = join(out, root);
        // What a fresh build leaves in this root, and what sitegen last wrote there.
        TreeSpec fresh;
        for (const OutputFile* f : root_files)
            fresh[f->path.substr(root.size() + 1)] = {sha256_hex(f->contents), f->executable ? 0755u : 0644u};
        for (const KeptFile* k : kept_by_root[root])
            fresh[k->path.substr(root.size() + 1)] = {k->hash, k->executable ? 0755u : 0644u};
        manifests[root] = manifest_of(fresh);
        // The manifest is compared by its bytes below (hashing ~15 MB per 10,000 stacks is
        // the largest part of an up-to-date build); its hash is needed only for the journal.
        fresh[kManifestName] = {"", 0644};
        const std::string old_text = read_manifest(fs, live);
        const TreeSpec old = parse_manifest(old_text);
        const std::set<std::string> fresh_dirs = parent_dirs(fresh), old_dirs = parent_dirs(old);
        bool differs = false;
        // Anything sitegen would overwrite or remove that is not as sitegen wrote it is a hand
        // edit: refused, or with --force a warning. Either way a fresh tree replaces it whole.
        const auto hand_edit = [&](const std::string& rel, const std::string& why) {
            const SourceRegion at{rel.empty() ? live : live + "/" + rel, 0, 0};
            if (options.force)
                diags.warning(at, "overwriting: " + why);
            else
                diags.error(at, why, "keep your change in the site definition, or rerun with --force to overwrite it");
        };
        std::set<std::string> present;  // fresh files that are on disk exactly as a fresh build writes them
        std::set<std::string> occupied;  // paths with something other than a directory on them
        TreeEntry top;
        const bool exists = fs.entry(live, top);
        if (exists && top.type != TreeEntry::Type::dir) {
            hand_edit("", std::string("is ") + top.what + ", not a directory written by sitegen");
            differs = true;
        } else if (exists && top.mode != kDirMode) {
            differs = true;  // a fresh tree's directories are 0755
        }
        for (const TreeEntry& e : exists ? fs.scan(live) : std::vector<TreeEntry>{}) {
            const std::string shown = join(root, e.path);
            const auto was = old.find(e.path);
            const auto want = fresh.find(e.path);
            const bool own = e.path == kManifestName;
            if (e.type == TreeEntry::Type::dir) {
                if (!fresh_dirs.count(e.path)) {
                    if (!old_dirs.count(e.path)) hand_edit(e.path, "directory was not created by sitegen");
                    differs = true;
                } else if (e.mode != kDirMode) {
                    differs = true;
                }
                continue;
            }
            occupied.insert(e.path);
            if (e.type != TreeEntry::Type::file) {
                if (own || was != old.end())
                    hand_edit(e.path, std::string("file was replaced by ") + e.what + " since sitegen wrote it");
                else
                    hand_edit(e.path, std::string("file is ") + e.what + " that was not written by sitegen");
                if (!own) (want != fresh.end() ? report.changed : report.removed).push_back(shown);
                differs = true;
                continue;
            }
            if (own) {
                if (old_text == manifests[root] && e.mode == 0644) {
                    present.insert(e.path);
                    live_inodes[root][e.path] = e.ino;
                    report.manifest_stats[root] = stat_of(e);
                } else {
                    differs = true;
                }
                continue;
            }
            // Untouched since the last publish (same stat): its manifest hash holds, unread.
            std::string hash;
            if (!own && options.known && was != old.end()) {
                const auto k = options.known->find(shown);
                if (k != options.known->end() && k->second == stat_of(e)) hash = was->second.hash;
            }
            if (hash.empty()) hash = hash_of(fs, live + "/" + e.path);
            if (!own) {
                if (was == old.end())
                    hand_edit(e.path, "file was not written by sitegen");
                else if (was->second.hash != hash)
                    hand_edit(e.path, "file was edited by hand since sitegen wrote it");
                else if (was->second.mode != e.mode)
                    hand_edit(e.path, "file mode was changed by hand since sitegen wrote it (" + octal(e.mode) +
                                          ", sitegen wrote " + octal(was->second.mode) + ")");
            }
            if (want == fresh.end()) {
                report.removed.push_back(shown);
                differs = true;
            } else if (want->second.hash == hash && want->second.mode == e.mode) {
                present.insert(e.path);
                live_inodes[root][e.path] = e.ino;
                if (!own) {
                    ++report.unchanged;
                    report.stats[shown] = stat_of(e);
                }
            } else {
                if (!own) report.changed.push_back(shown);
                differs = true;
            }
        }
        for (const OutputFile* f : root_files) {
            const std::string rel = f->path.substr(root.size() + 1);
            if (present.count(rel)) continue;
            differs = true;
            if (!occupied.count(rel)) report.added.push_back(f->path);
        }
        // A kept file is linked from the live tree into a staged one: it must be there as
        // the caller saw it (it can only be missing when changed during this build).
        for (const KeptFile* k : kept_by_root[root])
            if (!present.count(k->path.substr(root.size() + 1)))
                diags.error({join(out, k->path), 0, 0}, "output changed while sitegen was building", "run the build again");
        if (!present.count(kManifestName)) differs = true;
        if (differs) to_swap.push_back(root);
    }
    if (diags.has_errors()) return false;
    if (options.dry_run || to_swap.empty()) return true;

    const auto discard_staging = [&] {
        std::string ignored;
        for (const auto& r : to_swap) fs.remove_all(join(out, staging_of(r)), ignored);
    };
    // Stage every changed root completely before touching any live tree.
    for (const auto& root : to_swap) {
        const bool ok = stage_root(fs, join(out, root), join(out, staging_of(root)), root, by_root[root],
                                   live_inodes[root], manifests[root], report, error);
        if (!ok) {
            discard_staging();
            diags.error({}, "cannot write the new tree (the previous one is untouched): " + error);
            report.io_error = true;
            return false;
        }
    }
    // Staged bytes must be on disk before the journal promises them.
    for (const auto& root : to_swap)
        if (!fs.sync(join(out, staging_of(root)), error)) {
            discard_staging();
            diags.error({}, "cannot sync the new tree (the previous one is untouched): " + error);
            report.io_error = true;
            return false;
        }
    // The journal makes the swaps one step: a crash after this line is rolled forward.
    std::string journal;
    for (const auto& root : to_swap) journal += sha256_hex(manifests[root]) + " " + root + "\n";
    if (!fs.write(join(out, kJournalName), journal, false, error)) {
        discard_staging();
        diags.error({}, "cannot write the publish journal (the previous tree is untouched): " + error);
        report.io_error = true;
        return false;
    }
    // Every staged root is swapped in, whatever the live one holds; the old trees, now at the
    // staging paths, are removed; then the journal.
    for (const auto& root : to_swap)
        if (!swap_in(fs, join(out, staging_of(root)), join(out, root), error)) {
            diags.error({join(out, kJournalName), 0, 0},
                        "cannot swap in the new tree (the next build finishes the swap): " + error);
            report.io_error = true;
            return false;
        }
    // The replaced trees stay at the staging paths: the next publish stages into them.
    if (!fs.remove_all(join(out, kJournalName), error)) {
        diags.error({join(out, kJournalName), 0, 0}, "cannot remove journal: " + error);
        report.io_error = true;
        return false;
    }
    fs.unlock();
    return true;
}

}  // namespace sitegen
