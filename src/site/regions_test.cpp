#include "site/regions.h"

#include <catch2/catch.hpp>

using namespace sitegen;

namespace {

bool same(const SourceRegion& a, const SourceRegion& b) {
    return a.file == b.file && a.line == b.line && a.column == b.column;
}

}  // namespace

TEST_CASE("regions answer by path, a stack's key kept with its stack", "[regions]") {
    Regions r;
    r.set("hardware.nics", {"site.toml", 3, 1});
    r.set("stacks.12.python.venv", {"site.toml", 40, 5});
    r.set("stacks.12", {"site.toml", 38, 1});
    r.set("stacks.2.env.X", {"other.toml", 7, 2});
    r.set("stacks", {"site.toml", 38, 3});
    CHECK(r.size() == 5);
    CHECK(same(*r.find("stacks.12.python.venv"), {"site.toml", 40, 5}));
    CHECK(same(r.at("stacks.2.env.X"), {"other.toml", 7, 2}));
    CHECK(same(r.at("stacks"), {"site.toml", 38, 3}));
    CHECK(r.count("stacks.12") == 1);
    CHECK_FALSE(r.find("stacks.1"));
    CHECK_FALSE(r.find("stacks.12.python"));
    CHECK_FALSE(r.find("stacks.120.python.venv"));
    CHECK_THROWS_AS(r.at("hardware"), std::out_of_range);
    // Replaced in place; an index not written as a number prints it is a key of its own.
    r.set("stacks.12.python.venv", {"site.toml", 41, 6});
    r.set("stacks.012.python.venv", {"site.toml", 1, 1});
    CHECK(same(r.at("stacks.12.python.venv"), {"site.toml", 41, 6}));
    CHECK(same(r.at("stacks.012.python.venv"), {"site.toml", 1, 1}));
    CHECK(r.size() == 6);
    // touch: what a map's operator[] gave, recorded as nowhere when absent.
    CHECK(same(r.touch("hardware.nics"), {"site.toml", 3, 1}));
    CHECK(same(r.touch("extends.0"), {}));
    CHECK(r.count("extends.0") == 1);
    // Every key in path order, as one map of full paths has them.
    std::vector<std::string> paths;
    for (const auto& [path, region] : r.all()) paths.push_back(path);
    CHECK(paths == std::vector<std::string>{"extends.0", "hardware.nics", "stacks", "stacks.012.python.venv", "stacks.12",
                                            "stacks.12.python.venv", "stacks.2.env.X"});
}

TEST_CASE("a stack's keys taken in one step are in path order, the last of two with one path kept", "[regions]") {
    Regions r;
    r.set("stacks.1.name", {"a.toml", 9, 9});
    const std::vector<Regions::Below> keys = {{"", 10, 1}, {".name", 11, 1}, {".env.B", 13, 3}, {".env.A", 12, 3}, {".name", 14, 1}};
    r.set_stack(1, "site.toml", keys);
    std::vector<std::string> seen;
    r.each_below_stack(1, [&](std::string_view below, const std::string& file, int line, int column) {
        seen.push_back(std::string(below) + "@" + file + ":" + std::to_string(line) + ":" + std::to_string(column));
    });
    CHECK(seen == std::vector<std::string>{"@site.toml:10:1", ".env.A@site.toml:12:3", ".env.B@site.toml:13:3",
                                           ".name@site.toml:14:1"});
    CHECK(same(r.at("stacks.1"), {"site.toml", 10, 1}));
    r.each_below_stack(7, [&](std::string_view, const std::string&, int, int) { FAIL("stack 7 has no keys"); });
}
