// Quoting writers for Lua, bash and Python, and the text validity checks they rely on.
#include "quote.h"

#include <cstdint>
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

bool is_bare_bash_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '@' || c == '%' || c == '+' || c == '=' || c == ':' || c == ',' ||
           c == '.' || c == '/' || c == '-';
}

}  // namespace

std::string lua_string(std::string_view s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '"': out += "\\\""; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20 || c >= 0x7f) append_decimal_escape(out, c);
                else out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

std::string bash_word(std::string_view s) {
    if (s.find('\0') != std::string_view::npos)
        throw std::invalid_argument("a bash word cannot hold a NUL byte");
    bool bare = !s.empty();
    for (char c : s) bare = bare && is_bare_bash_char(c);
    if (bare) return std::string(s);
    std::string out = "'";
    for (char c : s) {
        if (c == '\'') out += "'\\''";
        else out += c;
    }
    return out + "'";
}

std::string bash_double_quoted(std::string_view s) {
    std::string out;
    for (char c : s) {
        if (c == '\\' || c == '"' || c == '$' || c == '`') out += '\\';
        out += c;
    }
    return out;
}

std::string python_string(std::string_view s, bool easybuild_template) {
    std::string out = "'";
    for (unsigned char c : s) {
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
    return out + "'";
}

bool is_valid_utf8_without_nul(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c == 0) return false;
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (len == 0 || i + len > s.size()) return false;
        uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
        for (size_t k = 1; k < len; ++k) {
            unsigned char cc = static_cast<unsigned char>(s[i + k]);
            if ((cc >> 6) != 2) return false;
            cp = (cp << 6) | (cc & 0x3f);
        }
        // Reject overlong forms, surrogates and values past U+10FFFF.
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
            return false;
        i += len;
    }
    return true;
}

bool is_valid_var_name(std::string_view s) {
    if (s.empty()) return false;
    auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
    if (!alpha(s[0])) return false;
    for (char c : s)
        if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
    return true;
}

}  // namespace sitegen
