// read_log: a sandbox records what scripts read of a read-only tree (over every item index),
// and the digest of those reads changes exactly when a value they read changes.
#include <catch2/catch.hpp>

#include "lua/lua_sandbox.h"
#include "lua/read_log.h"
#include "site/model.h"

using namespace sitegen;

namespace {

// {name = NAME, env = {...}} for each stack, an unread "description", and a key with a dot.
LuaValue tree(const std::vector<std::string>& names, const std::string& description = "d") {
    LuaValue root = LuaValue::make_table();
    LuaValue stacks = LuaValue::make_table();
    for (const auto& n : names) {
        LuaValue s = LuaValue::make_table();
        s.add("name", LuaValue::make_string(n)).add("description", LuaValue::make_string(description));
        LuaValue env = LuaValue::make_table();
        env.add("A", LuaValue::make_string("1"));
        s.add("env", std::move(env));
        stacks.push(std::move(s));
    }
    root.add("stacks", std::move(stacks));
    LuaValue odd = LuaValue::make_table();
    odd.add("a.b", LuaValue::make_int(1));
    root.add("odd", std::move(odd));
    return root;
}

// The reads of `script` over `t` (as the global "site").
ReadLog reads_of(const std::shared_ptr<const LuaValue>& t, const std::string& script) {
    ReadLog log;
    log.root = t.get();
    LuaSandbox sb;
    sb.track_reads(&log);
    REQUIRE(sb.set_readonly_global("site", t).ok);
    const LuaResult r = sb.run(script, "=test");
    INFO(r.describe());
    REQUIRE(r.ok);
    return log;
}

}  // namespace

TEST_CASE("a sandbox records generalised reads of the read-only site", "[read_log]") {
    const auto t = std::make_shared<const LuaValue>(tree({"a", "b"}));
    const ReadLog log = reads_of(t, R"(
        for _, s in ipairs(site.stacks) do local _ = s.name end
        local _ = #site.stacks
        for _ in pairs(site.stacks[1].env) do end
        local _ = site.odd["a.b"], site.missing)");
    CHECK_FALSE(log.broken);
    CHECK(log.reads == std::set<std::string>{"F.stacks", "I.stacks", "F.stacks[].name", "F.stacks[].env",
                                             "A.stacks[].env", "F.odd", "F.odd.a\\2Eb", "F.missing"});
}

TEST_CASE("the digest of reads follows exactly the values read", "[read_log]") {
    const Site site;
    const std::set<std::string> reads{"F.stacks", "I.stacks", "F.stacks[].name"};
    const std::string base = reads_digest(tree({"a", "b"}), site, reads);
    CHECK(reads_digest(tree({"a", "b"}), site, reads) == base);
    CHECK(reads_digest(tree({"a", "b"}, "another description"), site, reads) == base);  // not read
    CHECK(reads_digest(tree({"a", "c"}), site, reads) != base);       // a name read
    CHECK(reads_digest(tree({"b", "a"}), site, reads) != base);       // the order of the items
    CHECK(reads_digest(tree({"a", "b", "c"}), site, reads) != base);  // one more item
    CHECK(reads_digest(tree({"a", "b"}), site, {"F.stacks", "I.stacks"}) != base);  // other reads
    // A key with a dot is one key, not a path through two tables.
    CHECK(reads_digest(tree({"a"}), site, {"F.odd.a\\2Eb"}) != reads_digest(tree({"a"}), site, {"F.odd.a.b"}));
}

TEST_CASE("declared() reads are recorded and follow the site's regions", "[read_log]") {
    Site site;
    const std::set<std::string> reads{"D" + escape_key("hardware.nics")};
    const std::string before = reads_digest(tree({}), site, reads);
    site.regions.set("hardware.nics", {"site.toml", 3, 1});
    CHECK(reads_digest(tree({}), site, reads) != before);
    site.regions.set("hardware.other", {"site.toml", 4, 1});
    CHECK(reads_digest(tree({}), site, {"D" + escape_key("hardware.nics")}) ==
          reads_digest(tree({}), site, reads));
}

TEST_CASE("a line that is not a read digests as itself", "[read_log]") {
    const Site site;
    CHECK(reads_digest(tree({"a"}), site, {"Zjunk"}) != reads_digest(tree({"a"}), site, {"Yjunk"}));
    CHECK(reads_digest(tree({"a"}), site, {"F.stacks\\4"}) != reads_digest(tree({"a"}), site, {}));
}
