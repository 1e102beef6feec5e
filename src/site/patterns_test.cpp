// patterns.h against the std::regex each matcher replaces: hand-picked cases, then every
// string of a small alphabet up to a length and many longer pseudo-random ones.
#include "site/patterns.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <regex>
#include <string>
#include <vector>

using namespace sitegen;

namespace {

struct Pattern {
    const char* name;
    std::regex re;
    bool search;  // regex_search (else regex_match)
    bool (*matcher)(std::string_view);
};

std::vector<Pattern>& patterns() {
    static std::vector<Pattern> all = {
        {"module word", std::regex(R"(^[A-Za-z0-9][A-Za-z0-9_.+-]*$)"), false, is_module_word},
        {"version suffix", std::regex(R"(^([-_.][A-Za-z0-9_.+-]*)?$)"), false, is_version_suffix},
        {"image file", std::regex(R"(^[/.~]|\.(sif|sqsh|squashfs|simg)$)"), true, looks_like_image_file},
        {"sha256", std::regex("[0-9a-f]{64}"), false, is_sha256_hex},
        {"https", std::regex(R"(^https://[A-Za-z0-9.-]+(:[0-9]+)?(/[!-~]*)?$)"), false, is_https_url},
        {"source", std::regex(R"(^(git\+)?https://[A-Za-z0-9.-]+(:[0-9]+)?/[!-~]*$)"), false, is_pip_source_url},
        {"option", std::regex(R"(^-[!-~]*$)"), false, is_option_word},
        {"stray dollar", std::regex(R"(\$(?!\{[A-Za-z_][A-Za-z0-9_]*\}))"), true, has_stray_dollar},
        {"driver version", std::regex(R"(^[0-9]{1,9}(\.[0-9]{1,9}){0,5}$)"), false, is_driver_version},
    };
    return all;
}

const std::regex kShellVariable(R"(\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*))");

void agree(const std::string& s) {
    for (const Pattern& p : patterns()) {
        const bool expected = p.search ? std::regex_search(s, p.re) : std::regex_match(s, p.re);
        INFO(p.name << " on '" << s << "'");
        CHECK(p.matcher(s) == expected);
    }
    std::smatch m;
    const bool found = std::regex_search(s, m, kShellVariable);
    const auto mine = first_shell_variable(s);
    INFO("shell variable on '" << s << "'");
    REQUIRE(mine.has_value() == found);
    if (found) CHECK(std::string(*mine) == m.str(0));
}

}  // namespace

TEST_CASE("patterns: hand-picked values agree with their regex", "[patterns]") {
    for (const char* s :
         {"", "PyTorch", "pytorch-2.1", "2.1.0", "-x", "_a", ".a", "a b", "a/b", "ä", "a\xff", "a\nb", "rocm-6.0.3+x",
          "-rocm-6.0.3-python-3.12", "cpu", "image.sif", "/abs/image", "./rel", "~/x", "x.sqsh", "x.squashfs", "x.simg",
          "x.sif.bak", "docker.io/library/python:3.12", "prgenv-gnu/24.11:v1", "sif",
          "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
          "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
          "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde",
          "https://download.pytorch.org/whl/cu121", "https://pypi.org", "https://h:8080", "https://h:", "https://h:/x",
          "https://h:80x", "https://", "http://h/x", "https://h/a b", "https://h/\x7f", "git+https://github.com/a/b.git@x",
          "git+https://h", "git+http://h/x", "https://h:1/", "--no-deps", "-", "--x=a b", "x", "-\xc3\xa4",
          "$HOME", "${HOME}", "$", "a$", "${", "${}", "${1}", "${A", "${A}x$B", "$1", "$_a", "x${A-B}", "$$A", "${A}${",
          "/scratch/$USER/hf", "5", "535.104.05", "6.7.0", "1.2.3.4.5.6", "1.2.3.4.5.6.7", "1234567890", "123456789",
          "1..2", ".1", "1.", "01.002"})
        agree(s);
}

TEST_CASE("patterns: every short string of their alphabet, and long random ones, agree", "[patterns]") {
    const std::string alphabet = "a_Z9.-+:/${}~ \x80";
    std::vector<std::string> level = {""};
    for (int length = 1; length <= 4; ++length) {
        std::vector<std::string> next;
        for (const auto& prefix : level)
            for (char c : alphabet) next.push_back(prefix + c);
        for (const auto& s : next) agree(s);
        level = std::move(next);
    }
    const std::vector<std::string> pieces = {"https://", "git+", "h.x", ":80", "/p", "$", "{", "}", "A", "1", ".",
                                             "-", "_", ".sif", "~", " ", "ab", "f0", "\x7f"};
    uint32_t state = 12345;  // a fixed LCG: the same cases every run
    for (int i = 0; i < 20000; ++i) {
        std::string s;
        for (int k = 0, n = static_cast<int>((state >> 8) % 8); k < n; ++k) {
            state = state * 1664525u + 1013904223u;
            s += pieces[(state >> 16) % pieces.size()];
        }
        state = state * 1664525u + 1013904223u;
        agree(s);
    }
}
