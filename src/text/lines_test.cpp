// lines: count_newlines counts what std::count counts, at any length and alignment.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "text/lines.h"

using namespace sitegen;

TEST_CASE("count_newlines counts every newline and nothing else", "[lines]") {
    CHECK(count_newlines("") == 0);
    CHECK(count_newlines("no newline") == 0);
    CHECK(count_newlines("\n") == 1);
    CHECK(count_newlines("a\r\nb\n\nc") == 3);
    std::string text;
    for (int i = 0; i < 500; ++i) text += std::string(static_cast<size_t>(i % 37), 'x') + (i % 5 ? "\n" : "\r");
    for (size_t from = 0; from < 70; ++from)
        for (size_t length : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, text.size() - from}) {
            const std::string_view part = std::string_view(text).substr(from, length);
            CHECK(count_newlines(part) == static_cast<size_t>(std::count(part.begin(), part.end(), '\n')));
        }
}
