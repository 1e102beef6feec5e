// Hostlist expansion in C++, and the bash first-host function run by real bash and shellcheck.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>

#include "node/hostlist.h"
#include "text/quote.h"
#include "test_support.h"

using namespace sitegen;

namespace {

using namespace sitegen::test;

using Hosts = std::vector<std::string>;

Hosts expand(const std::string& expr) {
    std::string error;
    auto hosts = expand_hostlist(expr, error);
    INFO(expr << ": " << error);
    REQUIRE(hosts);
    return *hosts;
}

struct BashResult {
    int status;
    std::string out;
    std::string err;
};

// Runs the generated function under `set -euo pipefail` as `host=$(sitegen_first_host "$1")`,
// the way get-master uses it; the list is read as data, never spliced into code.
BashResult bash_first_host(const TempDir& dir, const std::string& expr) {
    std::ofstream(dir.file("list")) << expr;  // a file: long lists exceed the 128 KiB argument limit
    std::ofstream(dir.file("first-host.sh")) << "set -euo pipefail\n"
                                             << bash_first_host_function()
                                             << "list=$(<list)\nhost=$(sitegen_first_host \"$list\")\n"
                                                "printf '%s' \"$host\"\n";
    // timeout: a hang guard (a stuck run fails with 124), not a speed assertion.
    const int status = run("cd " + bash_word(dir.str()) + " && timeout 60 bash first-host.sh >out 2>err");
    return {status, read_file(dir.file("out")), read_file(dir.file("err"))};
}

const std::vector<std::string> valid_lists = {
    "nid005028", "nid[005028]", "nid[001-003,007]", "nid[001-003,007],login1", "login1,nid[002-003]",
    "node[1-2]-ib", "rack[1-2]n[01-04]", "rack[2,1]n[04-05]-ib0,x", "a[01-10]", "a[09-11],b", "x[9-11]",
    "x[8-10]", "n[1,3-4]y[5]", "nid[007,001-003]", "[1-2]", "[07]x", "a[08-100]", "a[1-03]", "a[0-0]",
    "a-b.c_d[1]", "uan01,nid[1-2]", "$(touch MARKER)[1]", "`touch MARKER`", "n[000000000000000001]",
};

// Malformed in their brackets or their first item: both implementations must refuse them.
const std::vector<std::string> malformed_lists = {
    "", ",a", "nid[001", "nid001]", "nid[3-1]", "nid[a-b]", "nid[]", "n[[1]]", "n[1]]", "n][1[",
    "n[1-]", "n[-1]", "n[1,]", "n[,1]", "n[1-2-3]", "n[ 1]", "n[1] ,a]", "a,b]", "a,b[",
    "n[1234567890123456789]", "n[2-1]x[1]", "n[1]x[2-1]", "n[1]x[y]",
};

}  // namespace

TEST_CASE("hostlists expand in Slurm's order with padding kept", "[hostlist]") {
    CHECK(expand("nid005028") == Hosts{"nid005028"});
    CHECK(expand("nid[005028]") == Hosts{"nid005028"});
    CHECK(expand("nid[001-003,007],login1") == Hosts{"nid001", "nid002", "nid003", "nid007", "login1"});
    CHECK(expand("nid[007,001-002]") == Hosts{"nid007", "nid001", "nid002"});
    CHECK(expand("node[1-2]-ib") == Hosts{"node1-ib", "node2-ib"});
    CHECK(expand("rack[1-2]n[01-04]") == Hosts{"rack1n01", "rack1n02", "rack1n03", "rack1n04",
                                               "rack2n01", "rack2n02", "rack2n03", "rack2n04"});
    CHECK(expand("a[01-10]") == Hosts{"a01", "a02", "a03", "a04", "a05", "a06", "a07", "a08", "a09", "a10"});
    CHECK(expand("x[9-11]") == Hosts{"x9", "x10", "x11"});
    CHECK(expand("a[098-100]") == Hosts{"a098", "a099", "a100"});
    CHECK(expand("a[08-100]").back() == "a100");
    CHECK(expand("a[08-100]")[1] == "a09");
    CHECK(expand("a[1-03]") == Hosts{"a1", "a2", "a3"});  // width comes from the low bound
    CHECK(expand("n[1,3-4]y[5]") == Hosts{"n1y5", "n3y5", "n4y5"});
    CHECK(expand("[1-2]") == Hosts{"1", "2"});
    CHECK(expand("login1,nid[002-003]") == Hosts{"login1", "nid002", "nid003"});
    CHECK(expand("rack[1-2]n[1-2]-ib,x") == Hosts{"rack1n1-ib", "rack1n2-ib", "rack2n1-ib", "rack2n2-ib", "x"});
}

TEST_CASE("malformed hostlists are errors, not guesses", "[hostlist]") {
    for (const auto& bad : malformed_lists) {
        std::string error;
        INFO(bad);
        CHECK_FALSE(expand_hostlist(bad, error));
        CHECK_FALSE(error.empty());
    }
    for (const char* bad : {"a,,b", "a,", "a,b[2-1]", "a,b[x]", "n[1-99999999]"}) {
        std::string error;
        INFO(bad);
        CHECK_FALSE(expand_hostlist(bad, error));
        CHECK_FALSE(error.empty());
    }
}

TEST_CASE("max_hosts bounds every way a list can grow", "[hostlist]") {
    std::string error;
    CHECK(expand_hostlist("n[1-10]", error, 10));
    CHECK_FALSE(expand_hostlist("n[1-11]", error, 10));
    CHECK_FALSE(expand_hostlist("n[1-5,6-11]", error, 10));
    CHECK_FALSE(expand_hostlist("a[1-4]b[1-3]", error, 10));
    CHECK(expand_hostlist("a[1-5],b[1-5]", error, 10));
    CHECK_FALSE(expand_hostlist("a[1-5],b[1-5],c", error, 10));
    CHECK_FALSE(expand_hostlist("a[1-1000]b[1-1000]", error, 10000));
    // A range far past the limit is refused before anything is allocated.
    CHECK_FALSE(expand_hostlist("n[0-999999999999999999]", error));
    CHECK(error.find("more than") != std::string::npos);
}

TEST_CASE("the bash first-host function agrees with the C++ expansion", "[hostlist]") {
    require_tool("bash");
    TempDir dir("hostlist");
    for (const auto& expr : valid_lists) {
        INFO(expr);
        const auto result = bash_first_host(dir, expr);
        CHECK(result.status == 0);
        CHECK(result.err.empty());
        CHECK(result.out == expand(expr).front());
    }
    CHECK_FALSE(std::filesystem::exists(dir.file("MARKER")));
    for (const auto& expr : malformed_lists) {
        INFO(expr);
        const auto result = bash_first_host(dir, expr);
        CHECK(result.status == 2);
        CHECK(result.out.empty());
        CHECK(result.err.find("sitegen_first_host: malformed hostlist") != std::string::npos);
    }
}

// Lists as large as an environment variable can be (128 KiB). Bash pattern expansion is not
// linear inside, so the function does a bounded number of passes over the list: one
// bracket-balance pass, then steps over the first item only, capped by the 255-byte host
// limit. (Speed itself is measured in bench/rank_startup.sh, not here.)
TEST_CASE("the bash first-host function handles lists at the environment size limit", "[hostlist]") {
    require_tool("bash");
    TempDir dir("hostlist");
    std::string one_group = "nid[";
    std::string many_items;
    for (int i = 0; i < 18000; ++i) {
        one_group += (i ? "," : "") + std::to_string(100000 + 2 * i);
        many_items += (i ? ",x" : "x") + std::to_string(i) + "[1-2]";
    }
    one_group += "]";
    for (const auto& expr : {one_group, many_items}) {
        const auto result = bash_first_host(dir, expr);
        CHECK(result.status == 0);
        CHECK(result.out == expand(expr).front());
    }
}

TEST_CASE("a first host longer than 255 bytes is malformed, however the list spells it", "[hostlist]") {
    require_tool("bash");
    TempDir dir("hostlist");
    std::string glued, listed, literal(120000, 'n');
    for (int i = 0; i < 30000; ++i) glued += "n[1]";         // n1n1n1...: one 60 KB host
    for (int i = 0; i < 24000; ++i) listed += (i ? ",n[1]" : "n[1]");  // 24,000 items of n1
    for (const auto& expr : {glued, literal, std::string(256, 'a'), std::string(200, 'a') + "[1]" + std::string(60, 'b')}) {
        INFO(expr.substr(0, 40) << "... (" << expr.size() << " bytes)");
        const auto result = bash_first_host(dir, expr);
        CHECK(result.status != 0);
        CHECK(result.status != 124);  // not the hang guard
        CHECK(result.err.find("sitegen_first_host: malformed hostlist") != std::string::npos);
    }
    const auto ok = bash_first_host(dir, listed);
    CHECK(ok.status == 0);
    CHECK(ok.out == "n1");
    const auto longest = bash_first_host(dir, std::string(255, 'a') + ",b");
    CHECK(longest.status == 0);
    CHECK(longest.out == std::string(255, 'a'));
}

TEST_CASE("the bash first-host function passes shellcheck", "[hostlist]") {
    require_tool("shellcheck");
    TempDir dir("hostlist");
    std::ofstream(dir.file("get-master")) << "#!/bin/bash\nset -euo pipefail\n"
                                          << bash_first_host_function()
                                          << "sitegen_first_host \"${SLURM_STEP_NODELIST:?}\"\n";
    const int status = run("shellcheck -s bash " + dir.file("get-master") + " >" + dir.file("report") + " 2>&1");
    INFO(read_file(dir.file("report")));
    CHECK(status == 0);
    CHECK(read_file(dir.file("report")).empty());
}
