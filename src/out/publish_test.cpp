// Publish: atomic swap, manifest, hand-edit detection, removal of stale files, crash safety.
#include <catch2/catch.hpp>

#include "out/publish.h"

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
    CHECK_FALSE(fs.exists("out/modules-out/.s.sitegen-new"));
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
        CHECK_FALSE(fs.exists("out/modules-out/.s.sitegen-new"));
        CHECK_FALSE(fs.exists("out/easyconfigs-out/.s.sitegen-new"));
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
