// lines: the newlines in a text, counted with memchr (build states and big site files have
// tens of thousands of lines, and a byte-by-byte count was a visible part of a rebuild).
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

namespace sitegen {

inline size_t count_newlines(std::string_view text) {
    size_t n = 0;
    const char* at = text.data();
    const char* const end = at + text.size();
    while (at < end) {
        const void* hit = std::memchr(at, '\n', static_cast<size_t>(end - at));
        if (!hit) break;
        ++n;
        at = static_cast<const char*>(hit) + 1;
    }
    return n;
}

}  // namespace sitegen
