// Loading site TOML: values, source regions, extends layering, and error reporting.
#include <catch2/catch.hpp>

#include <filesystem>

#include "site/check.h"
#include "site/load.h"
#include "site/toml_reader.h"
#include "test_support.h"

using namespace sitegen;

namespace {

const char* kMinimal = R"([site]
name = "t"
description = "d"
scheduler = "pbs"
launcher = "mpiexec"
install_prefix = "/opt/t"

[hardware]
gpu_vendor = "intel"
devices_per_node = 2
cores_per_node = 16
device_cores = ["0-7", "8-15"]

[collectives]
library = "oneccl"

[collectives.env]
CCL_LOG_LEVEL = "WARN"

[python]
layout = "system"
version = "3.11"

[[stacks]]
name = "frameworks"
version = "2024.2"
description = "x"
homepage = "https://example.org/"
)";

bool load(MemoryFs& fs, const std::string& text, Site& site, Diagnostics& diags) {
    fs.files["sites/t/site.toml"] = {text, false};
    return load_site(fs, "sites", "t", site, diags);
}

std::string rendered(const Diagnostics& diags, FileSystem& fs) {
    SourceReader read = [&](const std::string& path, std::string& out) {
        std::string error;
        return fs.read(path, out, error);
    };
    return render_all(diags, read);
}

std::string dotted(const std::string& part, int count) {
    std::string out;
    for (int i = 0; i < count; ++i) out += (i ? "." : "") + part;
    return out;
}

}  // namespace

TEST_CASE("a minimal site loads with every value and region", "[load]") {
    MemoryFs fs;
    Site site;
    Diagnostics diags;
    REQUIRE(load(fs, kMinimal, site, diags));
    check_site(site, "t", diags);
    CHECK_FALSE(diags.has_errors());
    CHECK(site.site.scheduler == Scheduler::pbs);
    CHECK(site.hardware.gpu_vendor == GpuVendor::intel);
    CHECK(site.hardware.device_cores == std::vector<std::vector<int>>{{0, 1, 2, 3, 4, 5, 6, 7},
                                                                      {8, 9, 10, 11, 12, 13, 14, 15}});
    CHECK(site.collectives.env == EnvList{{"CCL_LOG_LEVEL", "WARN"}});
    REQUIRE(site.stacks.size() == 1);
    CHECK(site.stacks[0].module_full_name() == "frameworks/2024.2");
    auto r = site.where("collectives.env.CCL_LOG_LEVEL");
    CHECK(r.file == "sites/t/site.toml");
    CHECK(r.line == 18);
    CHECK(r.column == 1);
    CHECK(site.where("stacks.0.version").line == 26);
    // An unknown path falls back to its nearest recorded parent.
    CHECK(site.where("hardware.no_such_key").line == 8);
}

TEST_CASE("extends layers fragments under the site, key by key", "[load]") {
    MemoryFs fs;
    fs.files["sites/shared/node.toml"] = {"[hardware]\ncores_per_node = 99\nnics = [\"hsn0\"]\n"
                                          "[collectives.env]\nA = \"fragment\"\nB = \"fragment\"\n", false};
    std::string text = std::string("extends = [\"../shared/node.toml\"]\n") + kMinimal;
    text += "\n";
    Site site;
    Diagnostics diags;
    REQUIRE(load(fs, text, site, diags));
    CHECK(site.hardware.cores_per_node == 16);           // the site overrides
    CHECK(site.hardware.nics == std::vector<std::string>{"hsn0"});  // the fragment provides
    CHECK(site.where("hardware.nics").file == "sites/shared/node.toml");
    CHECK(site.collectives.env.size() == 3);
    CHECK(site.files == std::vector<std::string>{"sites/t/site.toml", "sites/shared/node.toml"});
}

TEST_CASE("every error in a file is reported in one run", "[load]") {
    MemoryFs fs;
    std::string text = kMinimal;
    text.replace(text.find("scheduler = \"pbs\""), 17, "scheduler = \"pbz\"");
    text.replace(text.find("cores_per_node = 16"), 19, "cores_per_nod = 16");
    text += "colour = \"blue\"\n";
    Site site;
    Diagnostics diags;
    CHECK_FALSE(load(fs, text, site, diags));
    auto all = diags.sorted();
    REQUIRE(all.size() == 3);
    CHECK(all[0].message == "'site.scheduler' must be one of 'slurm', 'pbs', 'flux', found 'pbz'");
    CHECK(all[0].hint == "did you mean 'pbs'?");
    CHECK(all[1].message == "unknown key 'cores_per_nod' in [hardware]");
    CHECK(all[1].hint == "did you mean 'cores_per_node'?");
    CHECK(all[2].message == "unknown key 'colour' in [[stacks]]");
}

TEST_CASE("an extends chain deeper than the limit is refused, not followed forever", "[load]") {
    MemoryFs fs;
    for (int i = 0; i < 40; ++i)
        fs.files["sites/shared/f" + std::to_string(i) + ".toml"] = {
            "extends = [\"f" + std::to_string(i + 1) + ".toml\"]\n", false};
    fs.files["sites/shared/f40.toml"] = {"", false};
    Site site;
    Diagnostics diags;
    CHECK_FALSE(load(fs, std::string("extends = [\"../shared/f0.toml\"]\n") + kMinimal, site, diags));
    REQUIRE(diags.error_count() == 1);
    CHECK(diags.all()[0].message == "'extends' chain deeper than 16 files");
}

TEST_CASE("rendered diagnostics carry file:line:col, the source line and a caret", "[diagnostics]") {
    MemoryFs fs;
    std::string text = kMinimal;
    text.replace(text.find("cores_per_node = 16"), 19, "cores_per_node = \"16\"");
    Site site;
    Diagnostics diags;
    CHECK_FALSE(load(fs, text, site, diags));
    SourceReader read = [&](const std::string& path, std::string& out) {
        std::string error;
        return fs.read(path, out, error);
    };
    CHECK(render_all(diags, read) ==
          "sites/t/site.toml:11:18: error: 'hardware.cores_per_node' must be an integer, found a string\n"
          "  cores_per_node = \"16\"\n"
          "                   ^\n"
          "1 error, 0 warnings\n");
}

TEST_CASE("extends may not leave the sites directory, and nothing outside is read or echoed", "[load]") {
    MemoryFs fs;
    fs.files["etc/passwd"] = {"root:x:0:0:SECRET:/root:/bin/bash\n", false};
    fs.files["/etc/passwd"] = {"root:x:0:0:SECRET:/root:/bin/bash\n", false};
    fs.files["outside.toml"] = {"[hardware]\nnics = [\"SECRET\"]\n", false};
    fs.files["sites/shared/ok.toml"] = {"[hardware]\nnics = [\"hsn0\"]\n", false};
    const std::string text = std::string(R"(extends = ["../../etc/passwd", "/etc/passwd", "../../outside.toml", )"
                                         R"("../t/../../sites/shared/ok.toml"])") + "\n" + kMinimal;
    Site site;
    Diagnostics diags;
    CHECK_FALSE(load(fs, text, site, diags));
    const auto all = diags.sorted();
    REQUIRE(all.size() == 3);
    CHECK(all[0].message == "'../../etc/passwd' is outside the sites directory 'sites': only files under it can be extended");
    CHECK(all[0].where.line == 1);
    CHECK(all[0].where.column == 12);
    CHECK(all[1].message == "'/etc/passwd' is outside the sites directory 'sites': only files under it can be extended");
    CHECK(all[2].where.column == 47);
    CHECK(rendered(diags, fs).find("SECRET") == std::string::npos);
    CHECK(site.files == std::vector<std::string>{"sites/t/site.toml", "sites/shared/ok.toml"});
    CHECK(site.hardware.nics == std::vector<std::string>{"hsn0"});
}

TEST_CASE("on disk, extends may not leave the sites directory through a symbolic link", "[load]") {
    namespace stdfs = std::filesystem;
    test::TempDir dir("extends-links");
    dir.write("outside.toml", "[hardware]\nnics = [\"SECRET\"]\n");
    dir.write("real-sites/shared/node.toml", "[hardware]\nnics = [\"hsn0\"]\n");
    stdfs::create_symlink("../../outside.toml", dir.file("real-sites/shared/escape.toml"));
    stdfs::create_symlink("../..", dir.file("real-sites/shared/up"));
    stdfs::create_symlink("node.toml", dir.file("real-sites/shared/inside.toml"));
    stdfs::create_directory_symlink("real-sites", dir.file("sites"));  // --sites-dir may itself be a link
    auto disk = make_disk_fs();

    SECTION("a link that stays inside is followed") {
        dir.write("real-sites/t/site.toml", std::string("extends = [\"../shared/inside.toml\"]\n") + kMinimal);
        Site site;
        Diagnostics diags;
        CHECK(load_site(*disk, dir.file("sites"), "t", site, diags));
        CHECK(site.hardware.nics == std::vector<std::string>{"hsn0"});
    }
    SECTION("links to a file or a directory outside are refused at the entry") {
        dir.write("real-sites/t/site.toml",
                  std::string(R"(extends = ["../shared/escape.toml", "../shared/up/outside.toml"])") + "\n" + kMinimal);
        Site site;
        Diagnostics diags;
        CHECK_FALSE(load_site(*disk, dir.file("sites"), "t", site, diags));
        const auto all = diags.sorted();
        REQUIRE(all.size() == 2);
        const std::string tail = "' through a symbolic link: only files under it can be extended";
        CHECK(all[0].message == "'../shared/escape.toml' leads outside the sites directory '" + dir.file("sites") + tail);
        CHECK(all[1].message == "'../shared/up/outside.toml' leads outside the sites directory '" + dir.file("sites") + tail);
        CHECK(all[1].where.column == 37);
        CHECK(rendered(diags, *disk).find("SECRET") == std::string::npos);
    }
    SECTION("a site file that is a link out of the sites directory is not read") {
        stdfs::create_directories(dir.file("real-sites/u"));
        stdfs::create_symlink("../../outside.toml", dir.file("real-sites/u/site.toml"));
        Site site;
        Diagnostics diags;
        CHECK_FALSE(load_site(*disk, dir.file("sites"), "u", site, diags));
        REQUIRE(diags.error_count() == 1);
        CHECK(diags.all()[0].message.find("leads outside the sites directory") != std::string::npos);
        CHECK(site.hardware.nics.empty());
    }
}

TEST_CASE("dotted keys and headers are limited in depth before toml++ parses them", "[load]") {
    const int limit = kMaxDottedKeyDepth;
    SECTION("exactly the limit is fine, one more is refused at that part") {
        CHECK_FALSE(find_over_deep_key("[" + dotted("a", limit) + "]\n", limit));
        const auto header = find_over_deep_key("# c\n[" + dotted("a", limit + 1) + "]\n", limit);
        REQUIRE(header);
        CHECK(header->line == 2);
        CHECK(header->column == 2 + 2 * limit);
        CHECK_FALSE(find_over_deep_key(dotted("a", limit + 1) + " = 1\n", limit));  // the last part holds the value
        CHECK(find_over_deep_key(dotted("a", limit + 2) + " = 1\n", limit));
        CHECK(find_over_deep_key("[[" + dotted("a", limit + 1) + "]]\n", limit));
    }
    SECTION("a table header and the keys under it add up, through inline tables and arrays") {
        const std::string header = "[" + dotted("h", 100) + "]\n";
        CHECK_FALSE(find_over_deep_key(header + dotted("k", 29) + " = 1\n", limit));
        CHECK(find_over_deep_key(header + dotted("k", 30) + " = 1\n", limit));
        CHECK(find_over_deep_key(header + "x = [1, { a = 2 }, { " + dotted("k", 30) + " = 1 }]\n", limit));
        const auto inline_sum =
            find_over_deep_key("x = { " + dotted("k", 65) + " = { " + dotted("k", 66) + " = 1 } }\n", limit);
        REQUIRE(inline_sum);
        CHECK(inline_sum->column == 7 + 2 * 65 + 4 + 2 * 64);  // 64 tables, then the inner key's 65th part
        CHECK_FALSE(find_over_deep_key("x = { " + dotted("k", 65) + " = { " + dotted("k", 65) + " = 1 } }\n", limit));
        // Plain nesting is toml++'s to limit (256), so its own message still names it.
        std::string nested = "x = ";
        for (int i = 0; i < 300; ++i) nested += "{ a = ";
        CHECK_FALSE(find_over_deep_key(nested, limit));
    }
    SECTION("dots in strings, comments, numbers, dates and quoted keys are not key parts") {
        const std::string deep = dotted("a", 2 * limit);
        const std::string text = "\xEF\xBB\xBF# " + deep + "\n" +
                                 "s = \"[" + deep + "]\"\n" +
                                 "l = '" + deep + "'\n" +
                                 "m = \"\"\"\n[" + deep + "]\n\\\"\"\"\" \"\"\"\n" +
                                 "n = '''\n[" + deep + "]\n''''\n" +
                                 "\"" + deep + "\" = 1.5e3\n" +
                                 "d = 1979-05-27 07:32:00.999Z\n" +
                                 "v = [ # " + deep + "\n  1.5, \"" + deep + "\",\n]\n" +
                                 "t = { \"" + deep + "\" = 1, u = 2.5 }\n";
        CHECK_FALSE(find_over_deep_key(text, limit));
        CHECK(find_over_deep_key(text + "[" + deep + "]\n", limit));  // the scanner kept its place
    }
    SECTION("a byte order mark and non-ASCII text keep columns in code points") {
        const auto at = find_over_deep_key(
            "\xEF\xBB\xBFx = \"\xC3\xA9\"\n\xC3\xA9 = { " + dotted("a", limit + 2) + " = 1 }\n", limit);
        REQUIRE(at);
        CHECK(at->line == 2);
        CHECK(at->column == 7 + 2 * limit);
    }
}

TEST_CASE("a table header 50,000 keys deep is an error at its line, not a crash", "[load]") {
    MemoryFs fs;
    Site site;
    Diagnostics diags;
    CHECK_FALSE(load(fs, std::string(kMinimal) + "[" + dotted("a", 50000) + "]\n", site, diags));
    REQUIRE(diags.error_count() == 1);
    CHECK(diags.all()[0].message == "dotted keys and table headers nest tables more than 128 deep");
    CHECK(diags.all()[0].where.line == 29);
    CHECK(diags.all()[0].where.column == 258);
}
