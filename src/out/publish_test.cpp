// Publish: atomic swap, manifest, hand-edit detection, removal of stale files, crash safety.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <thread>
#include <tuple>

#include "out/publish.h"
#include "out/sha256.h"
#include "test_support.h"

using namespace sitegen;

namespace {

OutputList tree(const std::string& version) {
    return {
        {"modules-out/s/modulefiles/a/1.lua", "setenv(\"V\", \"" + version + "\")\n", false},
        {"modules-out/s/software/a/1/bin/run", "#!/bin/bash\necho " + version + "\n", true},
        {"easyconfigs-out/s/a/a-1.eb", "name = 'a'  # " + version + "\n", false},
    };
}

const std::vector<std::string> kRoots = {"modules-out/s", "easyconfigs-out/s"};

bool run(MemoryFs& fs, const OutputList& files, Diagnostics& diags, bool force = false,
         PublishReport* report_out = nullptr) {
    PublishReport report;
    bool ok = publish(fs, kRoots, files, {"out", false, force}, report, diags);
    if (report_out) *report_out = report;
    return ok;
}

std::map<std::string, MemoryFs::Entry> snapshot(const MemoryFs& fs) { return fs.files; }

// A publish report's stats as a state read gives them: each with the place of a line (`lines`:
// how many).
KnownFiles known_as_read(const KnownFiles& stats, uint32_t& lines) {
    KnownFiles known = stats;
    lines = 0;
    for (auto& [path, file] : known) file.line = lines++;
    return known;
}

}  // namespace

TEST_CASE("publish writes every file, its mode and a sorted manifest", "[publish]") {
    MemoryFs fs;
    Diagnostics diags;
    REQUIRE(run(fs, tree("one"), diags));
    CHECK(fs.files.at("out/modules-out/s/modulefiles/a/1.lua").data == "setenv(\"V\", \"one\")\n");
    CHECK(fs.files.at("out/modules-out/s/software/a/1/bin/run").executable);
    const std::string manifest = fs.files.at("out/modules-out/s/.sitegen-manifest").data;
    CHECK(manifest.find(" 644 modulefiles/a/1.lua\n") != std::string::npos);
    CHECK(manifest.find(" 755 software/a/1/bin/run\n") != std::string::npos);
    CHECK(manifest.find("modulefiles") < manifest.find("software"));
    CHECK_FALSE(fs.exists("out/.sitegen-journal"));
    CHECK_FALSE(fs.exists("out/modules-out/.s.sitegen-spare"));
}

TEST_CASE("publishing the same outputs twice changes nothing", "[publish]") {
    MemoryFs fs;
    Diagnostics diags;
    REQUIRE(run(fs, tree("one"), diags));
    auto before = snapshot(fs);
    PublishReport report;
    REQUIRE(run(fs, tree("one"), diags, false, &report));
    CHECK(report.added.empty());
    CHECK(report.changed.empty());
    CHECK(report.unchanged == 3);
    CHECK(snapshot(fs).size() == before.size());
}

TEST_CASE("a publish that changes nothing leaves no empty spare beside a root it did not replace", "[publish]") {
    // A fresh checkout's committed tree built again: nothing swaps, so nothing is left beside it.
    MemoryFs fs;
    Diagnostics diags;
    REQUIRE(run(fs, tree("one"), diags));
    std::string error;
    REQUIRE(fs.remove_all("out/modules-out/.s.sitegen-spare", error));
    REQUIRE(fs.remove_all("out/easyconfigs-out/.s.sitegen-spare", error));
    REQUIRE_FALSE(fs.is_dir("out/modules-out/.s.sitegen-spare"));
    PublishReport report;
    REQUIRE(run(fs, tree("one"), diags, false, &report));
    CHECK(report.unchanged == 3);
    CHECK_FALSE(fs.is_dir("out/modules-out/.s.sitegen-spare"));
    CHECK_FALSE(fs.is_dir("out/easyconfigs-out/.s.sitegen-spare"));
}

TEST_CASE("files no longer emitted are removed from the tree", "[publish]") {
    MemoryFs fs;
    Diagnostics diags;
    REQUIRE(run(fs, tree("one"), diags));
    OutputList smaller = tree("one");
    smaller.pop_back();
    PublishReport report;
    REQUIRE(run(fs, smaller, diags, false, &report));
    CHECK(report.removed == std::vector<std::string>{"easyconfigs-out/s/a/a-1.eb"});
    CHECK_FALSE(fs.exists("out/easyconfigs-out/s/a/a-1.eb"));
}

TEST_CASE("a hand-edited output is reported, not clobbered, unless forced", "[publish]") {
    MemoryFs fs;
    Diagnostics diags;
    REQUIRE(run(fs, tree("one"), diags));
    fs.files["out/modules-out/s/modulefiles/a/1.lua"].data = "-- my local fix\n";
    fs.files["out/modules-out/s/modulefiles/a/extra.lua"] = {"-- added by hand\n", false};
    Diagnostics refused;
    CHECK_FALSE(run(fs, tree("two"), refused));
    REQUIRE(refused.error_count() == 2);
    CHECK(refused.sorted()[0].message == "file was edited by hand since sitegen wrote it");
    CHECK(refused.sorted()[1].message == "file was not written by sitegen");
    CHECK(fs.files.at("out/modules-out/s/modulefiles/a/1.lua").data == "-- my local fix\n");
    Diagnostics forced;
    CHECK(run(fs, tree("two"), forced, true));
    CHECK(forced.warning_count() == 2);
    CHECK(fs.files.at("out/modules-out/s/modulefiles/a/1.lua").data == "setenv(\"V\", \"two\")\n");
    CHECK_FALSE(fs.exists("out/modules-out/s/modulefiles/a/extra.lua"));
}

TEST_CASE("a write failure while staging leaves the previous tree byte-identical", "[publish]") {
    MemoryFs fs;
    Diagnostics diags;
    REQUIRE(run(fs, tree("one"), diags));
    auto before = snapshot(fs);
    for (int n = 1; n <= 5; ++n) {
        fs.fail_write_after = n;
        Diagnostics failed;
        PublishReport report;
        CHECK_FALSE(publish(fs, kRoots, tree("two"), {"out", false, false}, report, failed));
        CHECK(report.io_error);
        CHECK(snapshot(fs).size() == before.size());
        for (const auto& [path, entry] : before) CHECK(fs.files.at(path).data == entry.data);
    }
}

TEST_CASE("a crash at any rename leaves either the old or the new tree, never a mix", "[publish]") {
    for (int crash_at = 1; crash_at <= 12; ++crash_at) {
        MemoryFs fs;
        Diagnostics diags;
        REQUIRE(run(fs, tree("one"), diags));
        fs.crash_at_rename = crash_at;
        bool crashed = false;
        try {
            run(fs, tree("two"), diags);
        } catch (const SimulatedCrash&) {
            crashed = true;
        }
        fs.crash_at_rename = 0;
        INFO("crash at rename " << crash_at << (crashed ? " (crashed)" : " (completed)"));
        // The next run (any sitegen command that publishes) first finishes or discards the
        // interrupted one; both roots must then agree.
        Diagnostics recovery;
        REQUIRE(recover_interrupted_publish(fs, "out", recovery));
        const std::string lua = fs.files.at("out/modules-out/s/modulefiles/a/1.lua").data;
        const std::string eb = fs.files.at("out/easyconfigs-out/s/a/a-1.eb").data;
        const bool old_tree = lua.find("one") != std::string::npos;
        CHECK(old_tree == (eb.find("one") != std::string::npos));
        CHECK_FALSE(fs.exists("out/.sitegen-journal"));
        // Whatever a crash left at the spare paths (half a staged tree, the old tree), the
        // next publish stages over it and leaves exactly the tree a fresh publish writes.
        Diagnostics next;
        REQUIRE(run(fs, tree("three"), next));
        MemoryFs fresh;
        REQUIRE(run(fresh, tree("three"), next));
        for (const char* root : {"out/modules-out/s", "out/easyconfigs-out/s"}) {
            std::vector<std::string> a, b;
            for (const auto& e : fs.scan(root)) a.push_back(e.path + "=" + (e.type == TreeEntry::Type::file ? fs.files.at(std::string(root) + "/" + e.path).data : "dir"));
            for (const auto& e : fresh.scan(root)) b.push_back(e.path + "=" + (e.type == TreeEntry::Type::file ? fresh.files.at(std::string(root) + "/" + e.path).data : "dir"));
            CHECK(a == b);
        }
    }
}

TEST_CASE("dry run reports changes and writes nothing", "[publish]") {
    MemoryFs fs;
    Diagnostics diags;
    PublishReport report;
    REQUIRE(publish(fs, kRoots, tree("one"), {"out", true, false}, report, diags));
    CHECK(report.added.size() == 3);
    CHECK(fs.files.empty());
}

namespace {

// Everything a tree holds under `prefix`, as path -> (bytes, mode, kind): what "the same tree"
// means for --force.
std::map<std::string, std::tuple<std::string, unsigned, int>> tree_of(const MemoryFs& fs, const std::string& prefix) {
    std::map<std::string, std::tuple<std::string, unsigned, int>> out;
    for (const auto& [path, e] : fs.files)
        if (path.rfind(prefix, 0) == 0)
            out[path.substr(prefix.size())] = {e.data, e.mode ? e.mode : (e.executable ? 0755u : 0644u), static_cast<int>(e.kind)};
    return out;
}

// Every kind of hand change to a published tree, one at a time and all at once.
const std::vector<std::pair<std::string, std::function<void(MemoryFs&)>>> kHandChanges = {
    {"edited file", [](MemoryFs& fs) { fs.files["out/modules-out/s/modulefiles/a/1.lua"].data += "-- mine\n"; }},
    {"stray file", [](MemoryFs& fs) { fs.files["out/modules-out/s/notes.txt"] = {"mine", false}; }},
    {"stray file in a stray dir", [](MemoryFs& fs) { fs.files["out/easyconfigs-out/s/z/zz/x.eb"] = {"x", false}; }},
    {"stray empty dir", [](MemoryFs& fs) { fs.dirs["out/modules-out/s/modulefiles/b"] = true; }},
    {"script replaced by a symlink", [](MemoryFs& fs) {
         fs.files["elsewhere/run"] = fs.files["out/modules-out/s/software/a/1/bin/run"];
         fs.files["out/modules-out/s/software/a/1/bin/run"] = {"elsewhere/run", false, 0, MemoryFs::Kind::symlink};
     }},
    {"stray FIFO", [](MemoryFs& fs) { fs.files["out/modules-out/s/fifo"] = {"", false, 0, MemoryFs::Kind::fifo}; }},
    {"mode changed", [](MemoryFs& fs) { fs.files["out/modules-out/s/software/a/1/bin/run"].mode = 0700; }},
    {"executable bit added", [](MemoryFs& fs) { fs.files["out/easyconfigs-out/s/a/a-1.eb"].executable = true; }},
    {"manifest edited", [](MemoryFs& fs) { fs.files["out/modules-out/s/.sitegen-manifest"].data += "# mine\n"; }},
    {"generated file deleted", [](MemoryFs& fs) { fs.files.erase("out/easyconfigs-out/s/a/a-1.eb"); }},
};

}  // namespace

TEST_CASE("a forced publish leaves exactly the tree a fresh build writes, even when the outputs did not change", "[publish]") {
    MemoryFs fresh;
    Diagnostics diags;
    REQUIRE(run(fresh, tree("one"), diags));
    const auto want_modules = tree_of(fresh, "out/modules-out/s/");
    const auto want_easyconfigs = tree_of(fresh, "out/easyconfigs-out/s/");
    for (size_t k = 0; k <= kHandChanges.size(); ++k) {
        const bool all = k == kHandChanges.size();
        INFO((all ? std::string("all hand changes at once") : kHandChanges[k].first));
        MemoryFs fs;
        REQUIRE(run(fs, tree("one"), diags));
        for (size_t j = 0; j < kHandChanges.size(); ++j)
            if (all || j == k) kHandChanges[j].second(fs);
        const auto changed = fs.files;
        // Without --force: refused (or, for a deleted file, restored) -- never silently kept.
        Diagnostics refused;
        PublishReport plain;
        const bool ok = run(fs, tree("one"), refused, false, &plain);
        if (!ok) {
            CHECK(refused.has_errors());
            CHECK(fs.files.size() == changed.size());  // untouched
        }
        Diagnostics forced;
        PublishReport report;
        REQUIRE(run(fs, tree("one"), forced, true, &report));
        CHECK_FALSE(forced.has_errors());
        CHECK(tree_of(fs, "out/modules-out/s/") == want_modules);
        CHECK(tree_of(fs, "out/easyconfigs-out/s/") == want_easyconfigs);
        CHECK(fs.scan("out/modules-out/s").size() == fresh.scan("out/modules-out/s").size());  // no stray dirs
        CHECK_FALSE(fs.exists("out/.sitegen-journal"));
        // And the next plain build agrees: nothing to do.
        Diagnostics again;
        PublishReport next;
        REQUIRE(run(fs, tree("one"), again, false, &next));
        CHECK(next.unchanged == 3);
        CHECK(next.changed.empty());
        CHECK(next.removed.empty());
        CHECK(next.added.empty());
    }
}

TEST_CASE("each kind of hand change is named without --force", "[publish]") {
    const std::vector<std::pair<size_t, std::string>> expected = {
        {0, "out/modules-out/s/modulefiles/a/1.lua: file was edited by hand since sitegen wrote it"},
        {1, "out/modules-out/s/notes.txt: file was not written by sitegen"},
        {2, "out/easyconfigs-out/s/z: directory was not created by sitegen"},
        {3, "out/modules-out/s/modulefiles/b: directory was not created by sitegen"},
        {4, "out/modules-out/s/software/a/1/bin/run: file was replaced by a symbolic link since sitegen wrote it"},
        {5, "out/modules-out/s/fifo: file is a FIFO that was not written by sitegen"},
        {6, "out/modules-out/s/software/a/1/bin/run: file mode was changed by hand since sitegen wrote it (0700, sitegen wrote 0755)"},
        {7, "out/easyconfigs-out/s/a/a-1.eb: file mode was changed by hand since sitegen wrote it (0755, sitegen wrote 0644)"},
    };
    for (const auto& [k, message] : expected) {
        INFO(kHandChanges[k].first);
        MemoryFs fs;
        Diagnostics diags;
        REQUIRE(run(fs, tree("one"), diags));
        kHandChanges[k].second(fs);
        Diagnostics refused;
        CHECK_FALSE(run(fs, tree("one"), refused));
        std::vector<std::string> got;
        for (const auto& d : refused.sorted()) got.push_back(d.where.file + ": " + d.message);
        CHECK(std::find(got.begin(), got.end(), message) != got.end());
    }
}

TEST_CASE("a crash at any rename of a forced rebuild is finished by the next run, exactly", "[publish]") {
    MemoryFs fresh;
    Diagnostics diags;
    REQUIRE(run(fresh, tree("one"), diags));
    for (int crash_at = 1; crash_at <= 8; ++crash_at) {
        INFO("crash at rename " << crash_at);
        MemoryFs fs;
        REQUIRE(run(fs, tree("one"), diags));
        for (const auto& change : kHandChanges) change.second(fs);
        const auto old_modules = tree_of(fs, "out/modules-out/s/"), old_easyconfigs = tree_of(fs, "out/easyconfigs-out/s/");
        fs.crash_at_rename = crash_at;
        try {
            run(fs, tree("one"), diags, true);
        } catch (const SimulatedCrash&) {
        }
        fs.crash_at_rename = 0;
        Diagnostics recovery;
        REQUIRE(recover_interrupted_publish(fs, "out", recovery));
        // Both roots are the hand-changed ones (the journal was not written yet) or both are
        // exactly the fresh ones: never a mix, never a tree that is merely "manifest-equal".
        const auto modules = tree_of(fs, "out/modules-out/s/"), easyconfigs = tree_of(fs, "out/easyconfigs-out/s/");
        const bool is_old = modules == old_modules && easyconfigs == old_easyconfigs;
        const bool is_new = modules == tree_of(fresh, "out/modules-out/s/") && easyconfigs == tree_of(fresh, "out/easyconfigs-out/s/");
        CHECK(is_old != is_new);
        CHECK_FALSE(fs.exists("out/.sitegen-journal"));
        // A forced run then converges.
        Diagnostics forced;
        REQUIRE(run(fs, tree("one"), forced, true));
        CHECK(tree_of(fs, "out/modules-out/s/") == tree_of(fresh, "out/modules-out/s/"));
        CHECK(tree_of(fs, "out/easyconfigs-out/s/") == tree_of(fresh, "out/easyconfigs-out/s/"));
    }
}

namespace {

// A file system that tells no inode numbers (as some network or FUSE ones do not).
struct NoInodeFs : MemoryFs {
    bool entry(const std::string& path, TreeEntry& out) override {
        if (!MemoryFs::entry(path, out)) return false;
        out.ino = 0;
        return true;
    }
};

}  // namespace

TEST_CASE("the journal names each new manifest by its staged file's stat, and a journal naming it by its SHA-256 is finished too",
          "[publish]") {
    MemoryFs fresh;
    Diagnostics diags;
    REQUIRE(run(fresh, tree("two"), diags));
    const auto promised = [&](const std::string& root) { return fresh.files.at("out/" + root + "/.sitegen-manifest").data; };
    // (by_sha: the journal rewritten as a sitegen before this one wrote it; no_inode: written
    // so by this one, where the file system gives no inode)
    for (const auto& [by_sha, no_inode] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}}) {
        int journals = 0;
        for (int crash_at = 1; crash_at <= 4; ++crash_at) {
            INFO("by SHA-256: " << by_sha << ", no inode: " << no_inode << ", crash at rename " << crash_at);
            NoInodeFs no_inode_fs;
            MemoryFs plain_fs;
            MemoryFs& fs = no_inode ? no_inode_fs : plain_fs;
            REQUIRE(run(fs, tree("one"), diags));
            fs.crash_at_rename = crash_at;
            try {
                run(fs, tree("two"), diags);
            } catch (const SimulatedCrash&) {
            }
            fs.crash_at_rename = 0;
            if (!fs.exists("out/.sitegen-journal")) continue;
            ++journals;
            std::string journal = fs.files.at("out/.sitegen-journal").data;
            for (const auto& root : kRoots) {
                const size_t at = journal.find(" " + root + "\n");
                REQUIRE(at != std::string::npos);
                const size_t begin = journal.rfind('\n', at) == std::string::npos ? 0 : journal.rfind('\n', at) + 1;
                if (no_inode) {
                    CHECK(journal.substr(begin, at - begin) == sha256_hex(promised(root)));  // (the pieces' hash)
                } else {
                    CHECK(journal.substr(begin, 5) == "file:");  // (MemoryFs gives each written file an inode)
                }
                if (by_sha) journal.replace(begin, at - begin, sha256_hex(promised(root)));
            }
            fs.files.at("out/.sitegen-journal").data = journal;
            Diagnostics recovery;
            REQUIRE(recover_interrupted_publish(fs, "out", recovery));
            CHECK_FALSE(fs.exists("out/.sitegen-journal"));
            // Rolled forward: both roots are exactly the new trees.
            for (const auto& root : kRoots) CHECK(tree_of(fs, "out/" + root + "/") == tree_of(fresh, "out/" + root + "/"));
        }
        CHECK(journals > 0);  // (some crash fell between the journal and the last swap)
    }
}

TEST_CASE("a publish that changes hundreds of live files finds each, by search and then by an index", "[publish]") {
    // (Root::live_at: the first kSearchedLookups lookups search the scan, the rest ask an index
    // made once; 600 files changed and 600 kept cross that line both in place() and stage().)
    const auto many = [](const std::string& changed, const std::string& kept) {
        OutputList files;
        for (int i = 0; i < 600; ++i) {
            const std::string n = std::to_string(1000 + i);
            files.push_back({"modules-out/s/modulefiles/a/" + n + ".lua", "setenv(\"V\", \"" + changed + "\")\n", false});
            files.push_back({"easyconfigs-out/s/a/a-" + n + ".eb", "name = 'a'  # " + kept + "\n", false});
        }
        return files;
    };
    MemoryFs fresh, fs;
    Diagnostics diags;
    REQUIRE(run(fresh, many("two", "kept"), diags));
    REQUIRE(run(fs, many("one", "kept"), diags));
    REQUIRE(run(fs, many("three", "kept"), diags));  // (now a spare exists: the next publish stages into it)
    PublishReport report;
    REQUIRE(run(fs, many("two", "kept"), diags, false, &report));
    CHECK_FALSE(diags.has_errors());
    CHECK(report.changed.size() == 600);
    CHECK(report.unchanged == 600);
    CHECK(tree_of(fs, "out/modules-out/s/") == tree_of(fresh, "out/modules-out/s/"));
    CHECK(tree_of(fs, "out/easyconfigs-out/s/") == tree_of(fresh, "out/easyconfigs-out/s/"));
}

TEST_CASE("the replaced tree stays as the spare, and the next publish rewrites only what changed in it", "[publish]") {
    MemoryFs fs;
    Diagnostics diags;
    REQUIRE(run(fs, tree("one"), diags));
    OutputList two = tree("one");
    two[0].contents = "setenv(\"V\", \"two\")\n";
    REQUIRE(run(fs, two, diags));
    // The first tree is the spare now; its unchanged files are other names of the live ones.
    const std::string spare = "out/modules-out/.s.sitegen-spare/";
    const std::string live = "out/modules-out/s/";
    REQUIRE(fs.files.count(spare + "modulefiles/a/1.lua"));
    CHECK(fs.files.at(spare + "modulefiles/a/1.lua").data == "setenv(\"V\", \"one\")\n");
    CHECK(fs.files.at(spare + "software/a/1/bin/run").stamp == fs.files.at(live + "software/a/1/bin/run").stamp);

    // Someone edits the spare and leaves a stray file there: neither reaches the next tree.
    fs.files.at(spare + "modulefiles/a/1.lua").data = "tampered";
    std::string error;
    REQUIRE(fs.write(spare + "stray.txt", "x", false, error));
    REQUIRE(fs.make_dirs(spare + "stray-dir/deeper", error));
    OutputList three = two;
    three[2].contents = "name = 'a'  # three\n";
    const auto unchanged_stamp = fs.files.at(live + "software/a/1/bin/run").stamp;
    REQUIRE(run(fs, three, diags));
    CHECK(fs.files.at(live + "modulefiles/a/1.lua").data == "setenv(\"V\", \"two\")\n");
    CHECK(fs.files.at(live + "software/a/1/bin/run").stamp == unchanged_stamp);  // linked, not rewritten
    CHECK(fs.files.at("out/easyconfigs-out/s/a/a-1.eb").data == "name = 'a'  # three\n");
    CHECK_FALSE(fs.exists(live + "stray.txt"));
    CHECK_FALSE(fs.exists(live + "stray-dir"));
    CHECK(diags.error_count() == 0);
    // And the live tree is exactly what a fresh publish of the same outputs writes.
    MemoryFs fresh;
    REQUIRE(run(fresh, three, diags));
    for (const std::string& root : {std::string("out/modules-out/s"), std::string("out/easyconfigs-out/s")}) {
        std::vector<std::pair<std::string, std::string>> a, b;
        for (const auto& e : fs.scan(root)) a.push_back({e.path, e.type == TreeEntry::Type::file ? fs.files.at(root + "/" + e.path).data : ""});
        for (const auto& e : fresh.scan(root)) b.push_back({e.path, e.type == TreeEntry::Type::file ? fresh.files.at(root + "/" + e.path).data : ""});
        CHECK(a == b);
    }
}

TEST_CASE("a file the spare still holds from a removed output goes, while the files found in place stay", "[publish]") {
    MemoryFs fs;
    Diagnostics diags;
    OutputList with_extra = tree("one");
    with_extra.push_back({"modules-out/s/software/a/1/bin/extra", "old\n", false});
    REQUIRE(run(fs, with_extra, diags));
    REQUIRE(run(fs, tree("one"), diags));  // the extra output is gone; the spare (the first tree) still has it
    const std::string spare = "out/modules-out/.s.sitegen-spare/", live = "out/modules-out/s/";
    REQUIRE(fs.exists(spare + "software/a/1/bin/extra"));
    OutputList next = tree("one");
    next[2].contents = "name = 'a'  # two\n";  // the modules root is staged with its files as they are
    REQUIRE(run(fs, next, diags));
    OutputList last = tree("one");
    last[0].contents = "setenv(\"V\", \"two\")\n";  // now into the spare that holds the extra file
    REQUIRE(run(fs, last, diags));
    CHECK_FALSE(fs.exists(live + "software/a/1/bin/extra"));
    CHECK(fs.exists(live + "software/a/1/bin/run"));
    CHECK(fs.files.at(live + "modulefiles/a/1.lua").data == "setenv(\"V\", \"two\")\n");
    CHECK(diags.error_count() == 0);
}

TEST_CASE("the publisher stages each added file at once, so the caller can drop it, and nothing live changes before finish", "[publish]") {
    MemoryFs fs;
    Diagnostics diags;
    REQUIRE(run(fs, tree("one"), diags));
    const auto live_before = fs.files.at("out/modules-out/s/modulefiles/a/1.lua");
    Publisher publisher(fs, kRoots, {"out", false, false});
    REQUIRE(publisher.begin(diags));
    {
        OutputList two = tree("two");
        for (const auto& f : two) REQUIRE(publisher.add(f, diags));
    }  // the outputs are gone here
    CHECK(fs.files.at("out/modules-out/.s.sitegen-spare/modulefiles/a/1.lua").data == "setenv(\"V\", \"two\")\n");
    CHECK(fs.files.at("out/modules-out/s/modulefiles/a/1.lua").data == live_before.data);
    PublishReport report;
    REQUIRE(publisher.finish(report, diags));
    CHECK(fs.files.at("out/modules-out/s/modulefiles/a/1.lua").data == "setenv(\"V\", \"two\")\n");
    CHECK(report.changed.size() == 3);
    // A publisher that is discarded (the build failed after staging) leaves the live tree and no spare.
    Publisher failed(fs, kRoots, {"out", false, false});
    REQUIRE(failed.begin(diags));
    for (const auto& f : tree("three")) REQUIRE(failed.add(f, diags));
    failed.discard();
    CHECK(fs.files.at("out/modules-out/s/modulefiles/a/1.lua").data == "setenv(\"V\", \"two\")\n");
    CHECK_FALSE(fs.exists("out/modules-out/.s.sitegen-spare"));
    CHECK(diags.error_count() == 0);
}

TEST_CASE("a path added or kept again is listed each time after its first add, in the order it came", "[publish]") {
    MemoryFs fs;
    Diagnostics diags;
    REQUIRE(run(fs, tree("one"), diags));
    Publisher publisher(fs, kRoots, {"out", false, false});
    REQUIRE(publisher.begin(diags));
    const OutputList two = tree("two");
    for (const auto& f : two) REQUIRE(publisher.add(f, diags));
    CHECK(publisher.added_twice().empty());
    REQUIRE(publisher.add(two[2], diags));
    REQUIRE(publisher.add(two[0], diags));
    publisher.add_kept({two[2].path, "0", false}, diags);  // (not on the live tree as kept: refused, but listed)
    CHECK(publisher.added_twice() == std::vector<std::string>{two[2].path, two[0].path, two[2].path});
    publisher.discard();
}

namespace {

// publish() on the real disk, with the look taken at a chosen moment: before `meanwhile` runs
// (as run_build looks while the site is checked), then begin, add and finish.
bool publish_after_look(FileSystem& fs, const std::string& out, const OutputList& files,
                        const std::function<void()>& meanwhile, PublishReport& report, Diagnostics& diags) {
    Publisher publisher(fs, kRoots, {out, false, false});
    publisher.look();
    meanwhile();
    if (!publisher.begin(diags)) return false;
    for (const auto& f : files)
        if (!publisher.add(f, diags)) return false;
    return publisher.finish(report, diags);
}

// A whole publish of tree(version) into `out` on the disk, by a build of its own.
void publish_on_disk(const std::string& out, const std::string& version) {
    auto fs = make_disk_fs();
    Diagnostics diags;
    PublishReport report;
    REQUIRE(publish(*fs, kRoots, tree(version), {out, false, false}, report, diags));
}

}  // namespace

TEST_CASE("a look taken before the lock is used when nothing was published since", "[publish]") {
    test::TempDir dir("look");
    const std::string out = dir.str();
    publish_on_disk(out, "one");
    auto fs = make_disk_fs();
    Diagnostics diags;
    PublishReport report;
    REQUIRE(publish_after_look(*fs, out, tree("two"), [] {}, report, diags));
    CHECK_FALSE(diags.has_errors());
    CHECK(report.changed.size() == 3);
    CHECK(test::read_file(out + "/modules-out/s/modulefiles/a/1.lua") == "setenv(\"V\", \"two\")\n");
}

TEST_CASE("a live root another thread takes from the look is looked at as the look's thread would", "[publish]") {
    // The look's thread stops after its first root's scan (in `known_ready`); meanwhile this
    // thread takes the root it has not begun (help_look_live), as a build's thread done early
    // does. Both roots' files are then kept as the last publish left them, whether the known
    // files were found by path or at their manifest lines' places (find_known_lines, made here
    // meanwhile, as a build's thread does once the states are parsed).
    const bool by_line = GENERATE(false, true);
    CAPTURE(by_line);
    test::TempDir dir("help-look");
    const std::string out = dir.str();
    auto fs = make_disk_fs();
    Diagnostics diags;
    PublishReport first;
    REQUIRE(publish(*fs, kRoots, tree("one"), {out, false, false}, first, diags));
    PublishOptions options{out, false, false};
    uint32_t lines = 0;
    KnownFiles known = known_as_read(first.stats, lines);
    options.known = &known;
    options.known_lines = &lines;
    Publisher publisher(*fs, kRoots, options);
    publisher.look_start();
    std::atomic<bool> in_known_ready{false}, helped{false};
    std::thread look([&] {
        publisher.look_live({}, [&] {
            in_known_ready.store(true);
            in_known_ready.notify_all();
            helped.wait(false);
        });
    });
    in_known_ready.wait(false);
    if (by_line) publisher.find_known_lines();
    publisher.help_look_live();
    // The easyconfigs root is looked at on this thread; the modules root's files are not yet.
    KeptFile k;
    CHECK(publisher.as_last_built("easyconfigs-out/s/a/a-1.eb", k));
    CHECK_FALSE(publisher.as_last_built("modules-out/s/modulefiles/a/1.lua", k));
    helped.store(true);
    helped.notify_all();
    look.join();
    publisher.look_spares();
    publisher.look_end();
    publisher.match_spares();
    REQUIRE(publisher.begin(diags));
    for (const auto& f : tree("one")) {
        KeptFile kept;
        REQUIRE(publisher.as_last_built(f.path, kept));
        REQUIRE(publisher.add_kept(kept, diags));
    }
    PublishReport report;
    REQUIRE(publisher.finish(report, diags));
    CHECK_FALSE(diags.has_errors());
    CHECK(report.unchanged == 3);
    CHECK(report.changed.empty());
    CHECK(test::read_file(out + "/easyconfigs-out/s/a/a-1.eb") == "name = 'a'  # one\n");
}

TEST_CASE("a look taken before another build published is not trusted", "[publish]") {
    // The other build swapped "two" in between. The look saw "one" live, as this build wants
    // it: trusted, it would link the live files (now "two") into the new tree under the
    // manifest's "one" hashes. begin() sees the roots are other directories and looks again.
    test::TempDir dir("stale-look");
    const std::string out = dir.str();
    publish_on_disk(out, "one");
    auto fs = make_disk_fs();
    Diagnostics diags;
    PublishReport report;
    REQUIRE(publish_after_look(*fs, out, tree("one"), [&] { publish_on_disk(out, "two"); }, report, diags));
    CHECK_FALSE(diags.has_errors());
    CHECK(report.changed.size() == 3);
    CHECK(test::read_file(out + "/modules-out/s/modulefiles/a/1.lua") == "setenv(\"V\", \"one\")\n");
    CHECK(test::read_file(out + "/modules-out/s/software/a/1/bin/run") == "#!/bin/bash\necho one\n");
    CHECK(test::read_file(out + "/easyconfigs-out/s/a/a-1.eb") == "name = 'a'  # one\n");
}

namespace {

// One publish over the last one's tree, as run_build does it: the files whose stat is the one
// `known` records are kept (as_last_built, then add_kept), the others added with contents.
// `extra` runs between the adds and finish (e.g. a second add of a path). With `bulk`, the
// kept files are handed over first, together (add_kept_stacks, as render_site does), one
// stack per file, on three threads.
bool publish_keeping(MemoryFs& fs, const OutputList& files, const PublishReport& last, bool dry_run,
                     PublishReport& report, Diagnostics& diags, size_t& kept,
                     const std::function<void(Publisher&)>& extra = {}, bool bulk = false) {
    PublishOptions options{"out", dry_run, false};
    uint32_t lines = 0;
    KnownFiles known = known_as_read(last.stats, lines);
    options.known = &known;
    options.known_lines = &lines;
    Publisher publisher(fs, kRoots, options);
    if (!publisher.begin(diags)) return false;
    kept = 0;
    // The last build's hash of a file: its root's live manifest line (as_last_built leaves the
    // hash to the record it hands out).
    const auto last_hash = [&](const std::string& path) {
        for (const std::string& root : kRoots)
            if (path.compare(0, root.size() + 1, root + "/") == 0) {
                std::string text, error;
                if (!fs.read("out/" + root + "/" + kManifestName, text, error)) return std::string();
                const TreeIndex index = parse_manifest(text);
                const auto it = index.find(path.substr(root.size() + 1));
                return it == index.end() ? std::string() : it->second.hash;
            }
        return std::string();
    };
    std::vector<std::vector<KeptFile>> stacks;
    std::vector<const OutputFile*> rendered;
    for (const auto& f : files) {
        KeptFile k;
        const bool as_built = publisher.as_last_built(f.path, k);
        // The same file found by the place of its line (none for a path not known).
        KeptFile by_line;
        const auto line = known.find(f.path);
        CHECK(as_built == (line != known.end() && publisher.as_last_built(f.path, line->second.line, by_line)));
        CHECK((by_line.path == k.path && by_line.found == k.found && by_line.executable == k.executable));
        if (as_built && k.hash.empty() && last_hash(f.path) == sha256_hex(f.contents)) {
            ++kept;
            if (bulk) stacks.push_back({k});
            else publisher.add_kept(k, diags);
        } else if (bulk) {
            rendered.push_back(&f);
        } else {
            publisher.add(f, diags);
        }
    }
    if (bulk) {
        publisher.add_kept_stacks(stacks, 3, diags);
        for (const OutputFile* f : rendered) publisher.add(*f, diags);
    }
    if (extra) extra(publisher);
    return publisher.finish(report, diags);
}

}  // namespace

TEST_CASE("files kept as the last build left them publish the tree, manifest and report a fresh build gives", "[publish]") {
    const bool bulk = GENERATE(false, true);  // (add_kept one by one, or add_kept_stacks)
    CAPTURE(bulk);
    MemoryFs fs;
    Diagnostics diags;
    PublishReport first, second;
    REQUIRE(run(fs, tree("one"), diags, false, &first));
    OutputList two = tree("one");
    two[0].contents = "setenv(\"V\", \"two\")\n";  // the other two files are kept
    size_t kept = 0;
    // A dry run first: it reports, and writes nothing.
    const auto before = snapshot(fs);
    const auto before_tree = tree_of(fs, "");
    PublishReport dry;
    REQUIRE(publish_keeping(fs, two, first, true, dry, diags, kept, {}, bulk));
    CHECK(kept == 2);
    CHECK(dry.changed == std::vector<std::string>{two[0].path});
    CHECK(dry.unchanged == 2);
    CHECK(tree_of(fs, "") == before_tree);
    CHECK(fs.files.at("out/" + two[1].path).stamp == before.at("out/" + two[1].path).stamp);
    REQUIRE(publish_keeping(fs, two, first, false, second, diags, kept, {}, bulk));
    CHECK(kept == 2);
    CHECK(second.changed == std::vector<std::string>{two[0].path});
    CHECK(second.added.empty());
    CHECK(second.removed.empty());
    CHECK(second.unchanged == 2);
    CHECK(second.stats.size() == 1);  // (the kept files have the stat `known` gave them)
    CHECK(second.stats.count(two[0].path));
    CHECK(diags.error_count() == 0);
    // The live roots are byte for byte those of a fresh publish, manifests included; the kept
    // files are the same entries as before (linked, not rewritten).
    MemoryFs fresh;
    REQUIRE(run(fresh, two, diags));
    for (const std::string& root : {std::string("out/modules-out/s"), std::string("out/easyconfigs-out/s")}) {
        std::vector<std::tuple<std::string, std::string, unsigned>> a, b;
        for (const auto& e : fs.scan(root))
            a.emplace_back(e.path, e.type == TreeEntry::Type::file ? fs.files.at(root + "/" + e.path).data : "", e.mode);
        for (const auto& e : fresh.scan(root))
            b.emplace_back(e.path, e.type == TreeEntry::Type::file ? fresh.files.at(root + "/" + e.path).data : "", e.mode);
        CHECK(a == b);
    }
    CHECK(fs.files.at("out/" + two[1].path).stamp == before.at("out/" + two[1].path).stamp);
    // And the next build keeps all three: the stats it knows are the first's, with the
    // second's for what that one wrote (as the build state records them).
    PublishReport known = first, third;
    for (const auto& [path, stat] : second.stats) known.stats[path] = stat;
    REQUIRE(publish_keeping(fs, two, known, false, third, diags, kept, {}, bulk));
    CHECK(kept == 3);
    CHECK(third.unchanged == 3);
    CHECK(diags.error_count() == 0);
}

TEST_CASE("a kept path kept again, or added again with contents, is listed each time after its first", "[publish]") {
    MemoryFs fs;
    Diagnostics diags;
    PublishReport first, second;
    REQUIRE(run(fs, tree("one"), diags, false, &first));
    const OutputList one = tree("one");
    size_t kept = 0;
    std::vector<std::string> twice;
    publish_keeping(fs, one, first, true, second, diags, kept, [&](Publisher& p) {
        KeptFile k;
        REQUIRE(p.as_last_built(one[1].path, k));
        p.add_kept(k, diags);      // kept again
        p.add(one[1], diags);      // and added with its bytes
        p.add(one[2], diags);      // a kept path added with its bytes
        twice = p.added_twice();
    });
    CHECK(kept == 3);
    CHECK(twice == std::vector<std::string>{one[1].path, one[1].path, one[2].path});
}

TEST_CASE("kept stacks handed over together count each file once, and a path kept twice once after its first", "[publish]") {
    MemoryFs fs;
    Diagnostics diags;
    PublishReport first, second;
    REQUIRE(run(fs, tree("one"), diags, false, &first));
    const OutputList one = tree("one");
    size_t kept = 0, files = 0;
    std::vector<std::string> twice;
    // (Each file kept as a stack of its own, together; then a second stack claims one's path.)
    REQUIRE(publish_keeping(fs, one, first, false, second, diags, kept, [&](Publisher& p) {
        KeptFile k;
        REQUIRE(p.as_last_built(one[1].path, k));
        REQUIRE(p.add_kept_stacks({{k}}, 2, diags));
        files = p.files();
        twice = p.added_twice();
    }, true));
    CHECK(kept == one.size());
    CHECK(files == one.size() + 1);
    CHECK(twice == std::vector<std::string>{one[1].path});
    // Nothing changed: the live roots stay, with the spare gone (as a publish that keeps all).
    CHECK(second.unchanged == one.size());
    CHECK(second.added.empty());
    CHECK(second.changed.empty());
    CHECK(diags.error_count() == 0);
}

TEST_CASE("the directory stats a publish reports are those on disk after it, and leave out what it changed", "[publish]") {
    test::TempDir dir("dir-stats");
    const std::string out = dir.str();
    auto fs = make_disk_fs();
    Diagnostics diags;
    const auto all_as_on_disk = [&](const PublishReport& report) {
        for (const auto& [path, stat] : report.dir_stats) {
            TreeEntry e;
            REQUIRE(fs->entry(out + "/" + path, e));
            CHECK(e.type == TreeEntry::Type::dir);
            CHECK(stat_of(e) == stat);
        }
    };
    PublishReport first, second, third, same;
    REQUIRE(publish(*fs, kRoots, tree("one"), {out, false, false}, first, diags));
    OutputList two = tree("one");
    two[0].contents = "setenv(\"V\", \"two\")\n";
    REQUIRE(publish(*fs, kRoots, two, {out, false, false}, second, diags));  // (tree "one" is the spare now)
    all_as_on_disk(second);
    // Into that spare: one file changed, one added in a new directory.
    OutputList three = two;
    three[0].contents = "setenv(\"V\", \"three\")\n";
    three.push_back({"modules-out/s/software/a/2/bin/new", "new\n", false});
    REQUIRE(publish(*fs, kRoots, three, {out, false, false}, third, diags));
    all_as_on_disk(third);
    CHECK(third.dir_stats.count("modules-out/s/software/a/1/bin"));  // untouched while staging
    CHECK_FALSE(third.dir_stats.count("modules-out/s/modulefiles/a"));  // a file replaced in it
    CHECK_FALSE(third.dir_stats.count("modules-out/s/software/a/2"));   // made by this publish
    CHECK_FALSE(third.dir_stats.count("modules-out/s"));                // its manifest rewritten
    CHECK(third.dir_stats.count("easyconfigs-out/s/a"));                // a root that stayed
    // Nothing to publish: every directory is the live one looked at.
    REQUIRE(publish(*fs, kRoots, three, {out, false, false}, same, diags));
    all_as_on_disk(same);
    CHECK(same.dir_stats.count("modules-out/s"));
    CHECK(same.dir_stats.count("modules-out/s/software/a/2/bin"));
    CHECK(diags.error_count() == 0);
}

TEST_CASE("a big root's directory stats, found beside its manifest, leave out what the last of its staging changed", "[publish]") {
    // (Over 4,096 entries with threads: finish() finds a swapped root's stats while its manifest
    // is made, then stages what the spare lacks or holds in excess.)
    test::TempDir dir("dir-stats-big");
    const std::string out = dir.str();
    auto fs = make_disk_fs();
    Diagnostics diags;
    PublishOptions options{out, false, false};
    options.threads = true;
    const auto big = [](const std::string& version) {
        OutputList files;
        for (int i = 0; i < 4200; ++i)
            files.push_back({"modules-out/s/software/a/" + std::to_string(i % 60) + "/f" + std::to_string(i), "x\n", false});
        files.push_back({"modules-out/s/modulefiles/a/1.lua", "setenv(\"V\", \"" + version + "\")\n", false});
        files.push_back({"easyconfigs-out/s/a/a-1.eb", "name = 'a'\n", false});
        std::sort(files.begin(), files.end(), [](const OutputFile& a, const OutputFile& b) { return a.path < b.path; });
        return files;
    };
    // A: with a file only it has; B: without it, one file changed (A is the spare after B);
    // C: B with the module changed, staged into A: the file only A has is removed from a
    // directory that stays, B's changed file is linked in, the manifest rewritten.
    OutputList a = big("a");
    a.push_back({"modules-out/s/software/a/7/only-a", "a\n", false});
    std::sort(a.begin(), a.end(), [](const OutputFile& x, const OutputFile& y) { return x.path < y.path; });
    OutputList b = big("a");
    for (auto& f : b)
        if (f.path == "modules-out/s/software/a/3/f3") f.contents = "changed\n";
    OutputList c = b;
    for (auto& f : c)
        if (f.path == "modules-out/s/modulefiles/a/1.lua") f.contents = "setenv(\"V\", \"c\")\n";
    PublishReport first, second, third;
    REQUIRE(publish(*fs, kRoots, a, options, first, diags));
    REQUIRE(publish(*fs, kRoots, b, options, second, diags));
    REQUIRE(publish(*fs, kRoots, c, options, third, diags));
    REQUIRE(diags.error_count() == 0);
    size_t checked = 0;
    for (const auto& [path, stat] : third.dir_stats) {
        TreeEntry e;
        REQUIRE(fs->entry(out + "/" + path, e));
        INFO(path);
        CHECK(e.type == TreeEntry::Type::dir);
        CHECK(stat_of(e) == stat);
        ++checked;
    }
    CHECK(checked >= 58);  // (the 60 directories of software/a but the two touched; touches take in their parents)
    CHECK(third.dir_stats.count("modules-out/s/software/a/1"));         // untouched
    CHECK_FALSE(third.dir_stats.count("modules-out/s/software/a/7"));   // a file removed from it while finishing
    CHECK_FALSE(third.dir_stats.count("modules-out/s/modulefiles/a"));  // a file replaced in it
    CHECK_FALSE(third.dir_stats.count("modules-out/s"));                // its manifest rewritten
    CHECK(third.dir_stats.count("easyconfigs-out/s/a"));                // a root that stayed
}
