// Quoting writers for Lua, bash and Python, and the text validity checks they rely on.
#include "text/quote.h"

#include <algorithm>
#include <array>
#include <bit>
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

// Sixteen bytes at a time, with GCC's and Clang's vector extensions (SSE2 on x86-64, NEON
// on ARM): each comparison gives a byte of all ones where it holds, all zeros elsewhere.
using Bytes16 = unsigned char __attribute__((vector_size(16)));

// How many of the sixteen bytes at `p` kPythonRaw[kTemplate] holds, before the first that
// needs escaping (< 0x20, > 0x7e, \\, ', and % for EasyBuild's templating); 16 when none
// does, the common case.
template <bool kTemplate>
size_t python_raw_prefix(const char* p) {
    Bytes16 v;
    std::memcpy(&v, p, sizeof v);
    auto special = (v - 0x20 > 0x5e) | (v == '\\') | (v == '\'');  // < 0x20 wraps round: not 0x20..0x7e
    if constexpr (kTemplate) special |= v == '%';
    uint64_t half[2];
    std::memcpy(half, &special, sizeof half);
    // The first flagged byte in text order: the lowest of a half on a little-endian machine.
    const auto first = [](uint64_t h) {
        return static_cast<size_t>(std::endian::native == std::endian::little ? std::countr_zero(h) : std::countl_zero(h)) / 8;
    };
    return half[0] ? first(half[0]) : half[1] ? 8 + first(half[1]) : 16;
}

// Output gathered in a fixed buffer and appended to a string a block at a time: the Python
// writer puts its bytes sixteen, two or one at a time, each of which std::string would check
// for room and terminate.
class BlockAppender {
public:
    static constexpr size_t kMaxPut = 16;  // the most bytes written at one room()

    explicit BlockAppender(std::string& out) : out_(out) {}
    // Where to write up to kMaxPut bytes; then advance() by the bytes kept.
    char* room() {
        if (used_ > sizeof(buf_) - kMaxPut) flush();
        return buf_ + used_;
    }
    void advance(size_t n) { used_ += n; }
    void put(char c) {
        *room() = c;
        ++used_;
    }
    void put(std::string_view s) {
        if (s.size() > kMaxPut) {
            flush();
            out_.append(s);
            return;
        }
        std::memcpy(room(), s.data(), s.size());
        used_ += s.size();
    }
    void flush() {
        out_.append(buf_, used_);
        used_ = 0;
    }

private:
    char buf_[2048];
    size_t used_ = 0;
    std::string& out_;
};

void put_hex_escape(BlockAppender& out, unsigned char c) {
    static const char* hex = "0123456789abcdef";
    char* o = out.room();
    o[0] = '\\';
    o[1] = 'x';
    o[2] = hex[c >> 4];
    o[3] = hex[c & 15];
    out.advance(4);
}

void put_unicode_escape(BlockAppender& out, uint32_t cp) {
    static const char* hex = "0123456789abcdef";
    char* o = out.room();
    o[0] = '\\';
    o[1] = 'u';
    for (int k = 0; k < 4; ++k) o[2 + k] = hex[(cp >> (12 - 4 * k)) & 15];
    out.advance(6);
}

// An ASCII byte as a Python literal writes it.
void put_python_ascii(BlockAppender& out, unsigned char c, bool easybuild_template) {
    switch (c) {
        case '\\': out.put("\\\\"); break;
        case '\'': out.put("\\'"); break;
        case '\n': out.put("\\n"); break;
        case '\r': out.put("\\r"); break;
        case '\t': out.put("\\t"); break;
        case '%': out.put(easybuild_template ? "%%" : "%"); break;
        default:
            if (c < 0x20 || c == 0x7f) put_hex_escape(out, c);
            else out.put(static_cast<char>(c));
    }
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

namespace {

// append_python_string, each '\n' written as `*line_break` when one is given.
template <bool kTemplate>
void append_python(std::string& out, std::string_view s, const std::string_view* line_break) {
    // One pass that validates and copies the bytes written as they are sixteen at a time
    // where it can, else by table; on invalid UTF-8, `out` is put back as it was.
    const size_t start = out.size();
    out.reserve(start + s.size() + 2);
    BlockAppender o(out);
    o.put('\'');
    const bool easybuild_template = kTemplate;
    for (size_t i = 0; i < s.size();) {
        if (i + 16 <= s.size()) {
            const size_t n = python_raw_prefix<kTemplate>(s.data() + i);
            std::memcpy(o.room(), s.data() + i, 16);  // all sixteen written, the raw ones kept
            o.advance(n);
            i += n;
            if (n == 16) continue;
        }
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (kPythonRaw[kTemplate ? 1 : 0][c]) {  // in the last bytes, which make no whole block
            o.put(static_cast<char>(c));
            ++i;
            continue;
        }
        if (c == '\n' && line_break) {
            o.put(*line_break);
            ++i;
        } else if (c < 0x80) {
            put_python_ascii(o, c, easybuild_template);
            ++i;
        } else {
            uint32_t cp = 0;
            const size_t len = valid_sequence_at(s, i, cp);
            if (len == 0) {
                out.resize(start);
                throw std::invalid_argument("a Python string literal needs valid UTF-8 text");
            }
            // Readable text (accents, CJK) stays as UTF-8 so easyconfigs read naturally.
            if (is_invisible_or_line_breaking(cp)) put_unicode_escape(o, cp);
            else o.put(s.substr(i, len));
            i += len;
        }
    }
    o.put('\'');
    o.flush();
}

}  // namespace

void append_python_string(std::string& out, std::string_view s, bool easybuild_template) {
    if (easybuild_template) append_python<true>(out, s, nullptr);
    else append_python<false>(out, s, nullptr);
}

void append_python_lines(std::string& out, std::string_view s, bool easybuild_template, std::string_view line_break) {
    if (easybuild_template) append_python<true>(out, s, &line_break);
    else append_python<false>(out, s, &line_break);
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

namespace {
// True if `line` (not empty) is a whole line of `text`: searched for as a string (rare in a
// script), not compared line by line. glibc's memmem scans ~3x faster than
// std::boyer_moore_horspool_searcher here (7 against 2 GB/s on a generated acceptance.py).
bool has_line(std::string_view text, std::string_view line) {
    for (size_t from = 0; from < text.size();) {
        const void* found = ::memmem(text.data() + from, text.size() - from, line.data(), line.size());
        if (!found) return false;
        const size_t at = static_cast<size_t>(static_cast<const char*>(found) - text.data()), end = at + line.size();
        if ((at == 0 || text[at - 1] == '\n') && (end == text.size() || text[end] == '\n')) return true;
        from = at + 1;
    }
    return false;
}
}  // namespace

// Fixed, not derived from the content's SHA-256 as before: that hashed every installed script
// a second time in a full build.
std::string heredoc_delimiter(std::string_view content) {
    std::string delim = "SITEGEN_EOF";
    while (has_line(content, delim)) delim += "_";
    return delim;
}

}  // namespace sitegen
