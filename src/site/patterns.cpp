// The checks' text patterns, written out by hand (see patterns.h for each one's regex).
#include "site/patterns.h"

namespace sitegen {

namespace {

bool alnum(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool digit(char c) { return c >= '0' && c <= '9'; }
bool name_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool name_char(char c) { return name_start(c) || digit(c); }
bool word_char(char c) { return alnum(c) || c == '_' || c == '.' || c == '+' || c == '-'; }
bool visible(char c) { return c >= '!' && c <= '~'; }  // [!-~]: printable ASCII but space
bool host_char(char c) { return alnum(c) || c == '.' || c == '-'; }

bool all_of(std::string_view s, bool (*pred)(char)) {
    for (char c : s)
        if (!pred(c)) return false;
    return true;
}

// The length of a NAME (name_start then name_chars) at the start of s, or 0.
size_t name_length(std::string_view s) {
    if (s.empty() || !name_start(s[0])) return 0;
    size_t n = 1;
    while (n < s.size() && name_char(s[n])) ++n;
    return n;
}

// After "https://": [A-Za-z0-9.-]+(:[0-9]+)? then what `rest` accepts of the remainder.
bool host_port_then(std::string_view s, bool path_required) {
    size_t i = 0;
    while (i < s.size() && host_char(s[i])) ++i;
    if (i == 0) return false;
    if (i < s.size() && s[i] == ':') {
        size_t j = i + 1;
        while (j < s.size() && digit(s[j])) ++j;
        if (j == i + 1) return false;  // ':' is neither a host character nor a path's start
        i = j;
    }
    if (i == s.size()) return !path_required;
    return s[i] == '/' && all_of(s.substr(i + 1), visible);
}

}  // namespace

bool is_module_word(std::string_view s) { return !s.empty() && alnum(s[0]) && all_of(s.substr(1), word_char); }

bool is_version_suffix(std::string_view s) {
    return s.empty() || ((s[0] == '-' || s[0] == '_' || s[0] == '.') && all_of(s.substr(1), word_char));
}

bool looks_like_image_file(std::string_view s) {
    if (!s.empty() && (s[0] == '/' || s[0] == '.' || s[0] == '~')) return true;
    for (std::string_view ext : {".sif", ".sqsh", ".squashfs", ".simg"})
        if (s.ends_with(ext)) return true;
    return false;
}

bool is_sha256_hex(std::string_view s) {
    return s.size() == 64 && all_of(s, [](char c) { return digit(c) || (c >= 'a' && c <= 'f'); });
}

bool is_https_url(std::string_view s) {
    return s.starts_with("https://") && host_port_then(s.substr(8), false);
}

bool is_pip_source_url(std::string_view s) {
    if (s.starts_with("git+")) s.remove_prefix(4);
    return s.starts_with("https://") && host_port_then(s.substr(8), true);
}

bool is_option_word(std::string_view s) { return !s.empty() && s[0] == '-' && all_of(s.substr(1), visible); }

bool has_stray_dollar(std::string_view s) {
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '$') continue;
        const std::string_view rest = s.substr(i + 1);
        const size_t n = rest.starts_with("{") ? name_length(rest.substr(1)) : 0;
        if (n == 0 || n + 1 >= rest.size() || rest[n + 1] != '}') return true;
    }
    return false;
}

std::optional<std::string_view> first_shell_variable(std::string_view s) {
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '$') continue;
        const std::string_view rest = s.substr(i + 1);
        // The first alternative, ${NAME}, when it matches; else a bare NAME.
        if (rest.starts_with("{")) {
            const size_t n = name_length(rest.substr(1));
            if (n > 0 && n + 1 < rest.size() && rest[n + 1] == '}') return s.substr(i, n + 3);
        }
        if (const size_t n = name_length(rest); n > 0) return s.substr(i, n + 1);
    }
    return std::nullopt;
}

bool is_driver_version(std::string_view s) {
    int parts = 0;
    size_t i = 0;
    while (true) {
        size_t j = i;
        while (j < s.size() && digit(s[j])) ++j;
        if (j == i || j - i > 9) return false;
        if (++parts > 6) return false;
        if (j == s.size()) return true;
        if (s[j] != '.') return false;
        i = j + 1;
    }
}

}  // namespace sitegen
