// Hostlist expansion: the cases the seeds get wrong, checked in C++ and through bash.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "hostlist.h"
#include "quote.h"

using namespace sitegen;

namespace {

std::vector<std::string> expand(const std::string& expr) {
    std::string error;
    auto hosts = expand_hostlist(expr, error);
    INFO(error);
    REQUIRE(hosts);
    return *hosts;
}

// Runs the generated bash function on `expr` and returns what it printed.
std::string bash_first_host(const std::string& expr) {
    const std::string script = "/tmp/sitegen-hostlist-test.sh";
    std::ofstream(script) << "set -euo pipefail\n" << bash_first_host_function()
                          << "sitegen_first_host " << bash_word(expr) << "\n";
    FILE* p = popen(("bash " + script + " 2>/dev/null").c_str(), "r");
    REQUIRE(p);
    std::string out;
    char buf[256];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

}  // namespace

TEST_CASE("hostlists expand in Slurm's order with padding kept", "[hostlist]") {
    CHECK(expand("nid005028") == std::vector<std::string>{"nid005028"});
    CHECK(expand("nid[005028]") == std::vector<std::string>{"nid005028"});
    CHECK(expand("nid[001-003,007]") == std::vector<std::string>{"nid001", "nid002", "nid003", "nid007"});
    CHECK(expand("node[1-2]-ib") == std::vector<std::string>{"node1-ib", "node2-ib"});
    CHECK(expand("rack[1-2]n[01-02]") ==
          std::vector<std::string>{"rack1n01", "rack1n02", "rack2n01", "rack2n02"});
    CHECK(expand("a[09-11],b") == std::vector<std::string>{"a09", "a10", "a11", "b"});
    CHECK(expand("x[8-10]") == std::vector<std::string>{"x8", "x9", "x10"});
    CHECK(expand("login1,nid[002-003]") == std::vector<std::string>{"login1", "nid002", "nid003"});
    CHECK(expand("rack[1-2]n[01-04]").size() == 8);
}

TEST_CASE("malformed hostlists are errors, not guesses", "[hostlist]") {
    for (const char* bad : {"nid[001", "nid001]", "nid[3-1]", "nid[a-b]", "nid[]", "", "a,,b", "n[1-99999999]"}) {
        std::string error;
        INFO(bad);
        CHECK_FALSE(expand_hostlist(bad, error));
        CHECK_FALSE(error.empty());
    }
    std::string error;
    CHECK_FALSE(expand_hostlist("a[1-1000]b[1-1000]", error, 10000));
}

TEST_CASE("the bash first-host function agrees with the C++ expansion", "[hostlist]") {
    for (const char* expr : {"nid005028", "nid[005028]", "nid[001-003,007]", "node[1-2]-ib",
                             "rack[1-2]n[01-04]", "a[09-11],b", "login1,nid[002-003]", "nid[007,001-003]"}) {
        INFO(expr);
        CHECK(bash_first_host(expr) == expand(expr).front());
    }
    CHECK(bash_first_host("nid[001") == "");  // malformed: message on stderr, status 2
}
