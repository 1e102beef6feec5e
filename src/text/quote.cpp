// Quoting writers for Lua, bash and Python, and the text validity checks they rely on.
#include "text/quote.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace sitegen {

namespace {

void append_decimal_escape(std::string& out, unsigned char c) {
    out += '\\';
    out += static_cast<char>('0' + c / 100);
    out += static_cast<char>('0' + (c / 10) % 10);
    out += static_cast<char>('0' + c % 10);
}

void append_hex_escape(std::string& out, unsigned char c) {
    static const char* hex = "0123456789abcdef";
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
}

size_t utf8_length(unsigned char lead) {
    return lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : (lead >> 3) == 30 ? 4 : 0;
}

// The code point of one complete, already validated UTF-8 sequence.
uint32_t decode_utf8(std::string_view seq) {
    const unsigned char lead = static_cast<unsigned char>(seq[0]);
    uint32_t cp = seq.size() == 1 ? lead : seq.size() == 2 ? (lead & 0x1f) : seq.size() == 3 ? (lead & 0x0f) : (lead & 0x07);
    for (size_t k = 1; k < seq.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(seq[k]) & 0x3f);
    return cp;
}

// The length of the valid UTF-8 sequence starting s[i] (not overlong, no surrogate, at most
// U+10FFFF), or 0 when it is invalid there; `cp` gets its code point.
size_t valid_sequence_at(std::string_view s, size_t i, uint32_t& cp) {
    const size_t len = utf8_length(static_cast<unsigned char>(s[i]));
    if (len == 0 || i + len > s.size()) return 0;
    for (size_t k = 1; k < len; ++k)
        if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return 0;
    cp = decode_utf8(s.substr(i, len));
    // Reject overlong forms, surrogates and values past U+10FFFF.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        return 0;
    return len;
}

bool is_valid_utf8(std::string_view s, bool allow_nul) {
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {  // ASCII, most of every text: no decoding
            if (c == 0 && !allow_nul) return false;
            ++i;
            continue;
        }
        uint32_t cp = 0;
        const size_t len = valid_sequence_at(s, i, cp);
        if (len == 0) return false;
        i += len;
    }
    return true;
}

// Characters kept out of generated Python raw: C1 controls, Unicode line/paragraph
// separators, zero-width and bidi controls (they hide or reorder text a reviewer reads).
bool is_invisible_or_line_breaking(uint32_t cp) {
    return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x200b && cp <= 0x200f) || cp == 0x2028 ||
           cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2069) ||
           cp == 0xfeff;
}

void append_unicode_escape(std::string& out, uint32_t cp) {
    static const char* hex = "0123456789abcdef";
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += hex[(cp >> shift) & 15];
}

void append_python_ascii(std::string& out, unsigned char c, bool easybuild_template) {
    switch (c) {
        case '\\': out += "\\\\"; break;
        case '\'': out += "\\'"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '%': out += easybuild_template ? "%%" : "%"; break;
        default:
            if (c < 0x20 || c == 0x7f) append_hex_escape(out, c);
            else out += static_cast<char>(c);
    }
}

// The bytes a Python '...' literal holds as they are: printable ASCII, not \\ or ', and for
// EasyBuild's templating not '%' either (it is doubled). Indexed [easybuild_template][byte].
constexpr std::array<std::array<bool, 256>, 2> kPythonRaw = [] {
    std::array<std::array<bool, 256>, 2> raw{};
    for (int c = 0x20; c < 0x7f; ++c) {
        raw[0][static_cast<size_t>(c)] = c != '\\' && c != '\'';
        raw[1][static_cast<size_t>(c)] = raw[0][static_cast<size_t>(c)] && c != '%';
    }
    return raw;
}();

// Bytes a Lua "..." literal holds as they are: printable ASCII, not \\ or ".
constexpr std::array<bool, 256> kLuaRaw = [] {
    std::array<bool, 256> raw{};
    for (int c = 0x20; c < 0x7f; ++c) raw[static_cast<size_t>(c)] = c != '\\' && c != '"';
    return raw;
}();

// Bytes bash_double_quoted writes as they are (all but \\ " $ `).
constexpr std::array<bool, 256> kDoubleQuotedRaw = [] {
    std::array<bool, 256> raw{};
    raw.fill(true);
    for (char c : {'\\', '"', '$', '`'}) raw[static_cast<unsigned char>(c)] = false;
    return raw;
}();

// The length of the run of bytes from s[i] that kPythonRaw[easybuild_template] holds as they
// are, tested eight at a time (text is mostly such runs): a word is skipped whole when none
// of its bytes is < 0x20, > 0x7e, \\, ' (or %). The word tests are the "any byte" forms of
// haszero/hasless/hasmore from https://graphics.stanford.edu/~seander/bithacks.html, exact
// as yes/no answers; the byte that ends the run is found by the caller's table.
size_t python_raw_words(std::string_view s, size_t i, bool easybuild_template) {
    constexpr uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    const auto has_zero = [](uint64_t x) { return (x - ones) & ~x & high; };
    const size_t start = i;
    for (uint64_t w; i + 8 <= s.size(); i += 8) {
        std::memcpy(&w, s.data() + i, 8);
        const uint64_t special = ((w - ones * 0x20) & ~w & high) |   // a byte < 0x20
                                 (((w + ones * 0x01) | w) & high) |  // a byte > 0x7e
                                 has_zero(w ^ (ones * '\\')) | has_zero(w ^ (ones * '\'')) |
                                 (easybuild_template ? has_zero(w ^ (ones * '%')) : 0);
        if (special) break;
    }
    return i - start;
}

bool is_bare_bash_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '@' || c == '%' || c == '+' || c == '=' || c == ':' || c == ',' ||
           c == '.' || c == '/' || c == '-';
}

}  // namespace

std::string lua_string(std::string_view s) {
    // Runs of bytes that need no escape are copied whole.
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    size_t run = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (kLuaRaw[c]) continue;
        out.append(s.data() + run, i - run);
        run = i + 1;
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '"': out += "\\\""; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default: append_decimal_escape(out, c);  // other controls, and bytes >= 0x7f
        }
    }
    out.append(s.data() + run, s.size() - run);
    out += '"';
    return out;
}

std::string bash_word(std::string_view s) {
    if (s.find('\0') != std::string_view::npos)
        throw std::invalid_argument("a bash word cannot hold a NUL byte");
    bool bare = !s.empty();
    for (char c : s) bare = bare && is_bare_bash_char(c);
    if (bare) return std::string(s);
    std::string out;
    out.reserve(s.size() + 2);
    out += '\'';
    for (size_t i = 0;;) {  // the text between single quotes copied whole
        const size_t quote = s.find('\'', i);
        if (quote == std::string_view::npos) { out.append(s.substr(i)); break; }
        out.append(s.substr(i, quote - i)).append("'\\''");
        i = quote + 1;
    }
    out += '\'';
    return out;
}

std::string bash_double_quoted(std::string_view s) {
    if (s.find('\0') != std::string_view::npos)
        throw std::invalid_argument("bash text cannot hold a NUL byte");
    std::string out;
    out.reserve(s.size());
    size_t run = 0;  // runs without \\ " $ ` copied whole
    for (size_t i = 0; i < s.size(); ++i) {
        if (kDoubleQuotedRaw[static_cast<unsigned char>(s[i])]) continue;
        out.append(s.data() + run, i - run) += '\\';
        run = i;
    }
    out.append(s.data() + run, s.size() - run);
    return out;
}

std::string bash_word_expanding_braced_vars(std::string_view s) {
    std::string out;
    bool expands = false;
    size_t literal = 0;  // start of the literal text not yet written
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '$' || i + 1 >= s.size() || s[i + 1] != '{') continue;
        const size_t close = s.find('}', i + 2);
        if (close == std::string_view::npos || !is_valid_var_name(s.substr(i + 2, close - i - 2))) continue;
        out += bash_double_quoted(s.substr(literal, i - literal)) + std::string(s.substr(i, close + 1 - i));
        expands = true;
        literal = close + 1;
        i = close;
    }
    if (!expands) return bash_word(s);
    return "\"" + out + bash_double_quoted(s.substr(literal)) + "\"";
}

void append_python_string(std::string& out, std::string_view s, bool easybuild_template) {
    // One pass that validates and copies runs of bytes written as they are, so a value
    // costs a table lookup per byte; on invalid UTF-8, `out` is put back as it was.
    const size_t start = out.size();
    out.reserve(start + s.size() + 2);
    out += '\'';
    const std::array<bool, 256>& raw = kPythonRaw[easybuild_template ? 1 : 0];
    size_t run = 0;  // start of the bytes not yet copied
    for (size_t i = 0; i < s.size();) {
        i += python_raw_words(s, i, easybuild_template);
        if (i == s.size()) break;
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (raw[c]) {
            ++i;
            continue;
        }
        out.append(s.data() + run, i - run);
        if (c < 0x80) {
            append_python_ascii(out, c, easybuild_template);
            ++i;
        } else {
            uint32_t cp = 0;
            const size_t len = valid_sequence_at(s, i, cp);
            if (len == 0) {
                out.resize(start);
                throw std::invalid_argument("a Python string literal needs valid UTF-8 text");
            }
            // Readable text (accents, CJK) stays as UTF-8 so easyconfigs read naturally.
            if (is_invisible_or_line_breaking(cp)) append_unicode_escape(out, cp);
            else out.append(s.data() + i, len);
            i += len;
        }
        run = i;
    }
    out.append(s.data() + run, s.size() - run);
    out += '\'';
}

std::string python_string(std::string_view s, bool easybuild_template) {
    std::string out;
    append_python_string(out, s, easybuild_template);
    return out;
}

bool is_valid_utf8_without_nul(std::string_view s) { return is_valid_utf8(s, false); }

bool is_valid_var_name(std::string_view s) {
    if (s.empty()) return false;
    auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
    if (!alpha(s[0])) return false;
    for (char c : s)
        if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
    return true;
}

}  // namespace sitegen
