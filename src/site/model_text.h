// The model as unambiguous text, walked from the field table: what the build keys hash, and
// what the stack memo keeps of a loaded stack and reads back.
#pragma once

#include <charconv>
#include <string>
#include <string_view>

#include "site/model.h"

namespace sitegen {

// Length-prefixed text ("<size>:<bytes>"), so no two different values give the same text: the
// model text, the build keys and the stack memo are made of it.
inline void append_prefixed(std::string& out, std::string_view s) {
    out += std::to_string(s.size());
    out += ':';
    out += s;
}

// Reads length-prefixed text and numbers ended by a given character, never past the end of
// `in`; `ok` turns false for good at the first thing that is not as expected.
struct PrefixedReader {
    std::string_view in;
    bool ok = true;

    bool literal(char c) {
        if (!ok || in.empty() || in.front() != c) return ok = false;
        in.remove_prefix(1);
        return true;
    }
    // Digits (an optional '-' for signed N) and then `end`.
    template <typename N>
    N number(char end) {
        N n{};
        if (!ok) return n;
        const auto [ptr, ec] = std::from_chars(in.data(), in.data() + in.size(), n);
        if (ec != std::errc() || ptr == in.data()) {
            ok = false;
            return n;
        }
        in.remove_prefix(static_cast<size_t>(ptr - in.data()));
        literal(end);
        return n;
    }
    // What append_prefixed wrote ("" and !ok when it is not there).
    std::string_view prefixed() {
        const size_t n = number<size_t>(':');
        if (!ok || n > in.size()) {
            ok = false;
            return {};
        }
        const std::string_view s = in.substr(0, n);
        in.remove_prefix(n);
        return s;
    }
};

// Every row of the field table, in row order, each value length-prefixed (enum values by
// name): everything but the stacks, one stack, the site's [python].
std::string site_wide_text(const Site& site);
std::string stack_text(const Stack& stack);
std::string python_text(const Python& python);

// stack_text read back: every row of `out` set from `text`; false (and `out` unspecified) when
// the text is not exactly one stack's text of this field table.
bool read_stack_text(std::string_view text, Stack& out);

}  // namespace sitegen
