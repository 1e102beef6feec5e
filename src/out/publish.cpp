// Atomic, deterministic publishing with a hash manifest and hand-edit detection.
#include "out/publish.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "out/sha256.h"

namespace sitegen {

namespace {

constexpr const char* kJournalName = ".sitegen-journal";
constexpr const char* kLockName = ".sitegen.lock";

std::string join(const std::string& dir, const std::string& rel) {
    if (dir.empty() || dir == ".") return rel;
    return dir + "/" + rel;
}

// modules-out/lumi -> modules-out/.lumi.sitegen-new
std::string staging_of(const std::string& root) {
    auto slash = root.rfind('/');
    std::string parent = slash == std::string::npos ? "" : root.substr(0, slash + 1);
    std::string leaf = slash == std::string::npos ? root : root.substr(slash + 1);
    return parent + "." + leaf + ".sitegen-new";
}

struct ManifestEntry { std::string hash; bool executable = false; };

std::map<std::string, ManifestEntry> parse_manifest(const std::string& text) {
    std::map<std::string, ManifestEntry> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        auto a = line.find(' ');
        auto b = a == std::string::npos ? a : line.find(' ', a + 1);
        if (b == std::string::npos) continue;
        out[line.substr(b + 1)] = {line.substr(0, a), line.substr(a + 1, b - a - 1) == "755"};
    }
    return out;
}

std::string read_or_empty(FileSystem& fs, const std::string& path) {
    std::string text, error;
    if (!fs.read(path, text, error)) return {};
    return text;
}

}  // namespace

std::string manifest_text(const std::vector<const OutputFile*>& files_in_root, const std::string& root) {
    std::vector<std::string> lines;
    for (const OutputFile* f : files_in_root)
        lines.push_back(sha256_hex(f->contents) + (f->executable ? " 755 " : " 644 ") +
                        f->path.substr(root.size() + 1));
    std::sort(lines.begin(), lines.end(), [](const std::string& a, const std::string& b) {
        return a.substr(69) < b.substr(69);
    });
    std::string out = "# sitegen manifest v1: sha256, mode, path relative to this directory\n";
    for (const auto& l : lines) out += l + "\n";
    return out;
}

bool recover_interrupted_publish(FileSystem& fs, const std::string& out_dir, Diagnostics& diags) {
    const std::string journal = join(out_dir, kJournalName);
    std::string text, error;
    if (!fs.read(journal, text, error)) return true;  // nothing pending
    std::istringstream in(text);
    std::string hash, root;
    while (in >> hash >> root) {
        const std::string live = join(out_dir, root), staged = join(out_dir, staging_of(root));
        const bool live_is_new = sha256_hex(read_or_empty(fs, live + "/" + kManifestName)) == hash;
        if (!live_is_new && fs.is_dir(staged) &&
            sha256_hex(read_or_empty(fs, staged + "/" + kManifestName)) == hash) {
            bool ok = fs.is_dir(live) ? fs.exchange(staged, live, error) : fs.rename(staged, live, error);
            if (!ok) {
                diags.error({journal, 0, 0}, "cannot finish interrupted publish: " + error);
                return false;
            }
        }
        if (fs.is_dir(staged) && !fs.remove_all(staged, error)) {
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

    std::vector<std::string> to_swap;
    std::map<std::string, std::string> manifests;
    for (auto& [root, root_files] : by_root) {
        const std::string live = join(out, root);
        const auto old_manifest = parse_manifest(read_or_empty(fs, live + "/" + kManifestName));
        std::set<std::string> fresh;
        bool differs = false;
        for (const OutputFile* file : root_files) {
            const OutputFile& f = *file;
            const std::string rel = f.path.substr(root.size() + 1);
            fresh.insert(rel);
            std::string current;
            bool exists = fs.read(join(out, f.path), current, error);
            if (!exists) { report.added.push_back(f.path); differs = true; continue; }
            if (current == f.contents && fs.is_executable(join(out, f.path)) == f.executable) {
                ++report.unchanged;
            } else {
                report.changed.push_back(f.path);
                differs = true;
            }
        }
        // Anything on disk that sitegen did not write as it is now is a hand edit.
        for (const auto& rel : fs.list_files(live)) {
            if (rel == kManifestName) continue;
            auto m = old_manifest.find(rel);
            std::string current;
            fs.read(live + "/" + rel, current, error);
            std::string why;
            if (m == old_manifest.end()) why = "was not written by sitegen";
            else if (m->second.hash != sha256_hex(current)) why = "was edited by hand since sitegen wrote it";
            if (!why.empty()) {
                if (options.force)
                    diags.warning({live + "/" + rel, 0, 0}, "overwriting: file " + why);
                else
                    diags.error({live + "/" + rel, 0, 0}, "file " + why,
                                "keep your change in the site definition, or rerun with --force to overwrite it");
            }
            if (!fresh.count(rel)) { report.removed.push_back(join(root, rel)); differs = true; }
        }
        manifests[root] = manifest_text(root_files, root);
        if (read_or_empty(fs, live + "/" + kManifestName) != manifests[root]) differs = true;
        if (differs) to_swap.push_back(root);
    }
    if (diags.has_errors()) return false;
    if (options.dry_run || to_swap.empty()) return true;

    // Stage every changed root completely before touching any live tree.
    for (const auto& root : to_swap) {
        const std::string staged = join(out, staging_of(root));
        bool ok = !fs.exists(staged) || fs.remove_all(staged, error);
        ok = ok && fs.make_dirs(staged, error);
        for (const OutputFile* file : by_root[root]) {
            const OutputFile& f = *file;
            if (!ok) break;
            ok = fs.write(staged + f.path.substr(root.size()), f.contents, f.executable, error);
        }
        ok = ok && fs.write(staged + "/" + kManifestName, manifests[root], false, error);
        if (!ok) {
            std::string ignored;
            for (const auto& r : to_swap) fs.remove_all(join(out, staging_of(r)), ignored);
            diags.error({}, "cannot write the new tree (the previous one is untouched): " + error);
            report.io_error = true;
            return false;
        }
    }
    // Staged bytes must be on disk before the journal promises them.
    for (const auto& root : to_swap)
        if (!fs.sync(join(out, staging_of(root)), error)) {
            std::string ignored;
            for (const auto& r : to_swap) fs.remove_all(join(out, staging_of(r)), ignored);
            diags.error({}, "cannot sync the new tree (the previous one is untouched): " + error);
            report.io_error = true;
            return false;
        }
    // The journal makes the swaps one step: a crash after this line is rolled forward.
    std::string journal;
    for (const auto& root : to_swap) journal += sha256_hex(manifests[root]) + " " + root + "\n";
    if (!fs.write(join(out, kJournalName), journal, false, error)) {
        std::string ignored;
        for (const auto& r : to_swap) fs.remove_all(join(out, staging_of(r)), ignored);
        diags.error({}, "cannot write the publish journal (the previous tree is untouched): " + error);
        report.io_error = true;
        return false;
    }
    if (!recover_interrupted_publish(fs, out, diags)) { report.io_error = true; return false; }
    fs.unlock();
    return true;
}

}  // namespace sitegen
