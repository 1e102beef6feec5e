// Writers that quote a value for its target language: Lua strings, bash words, Python
// literals. Every generated file goes through these, so no site value can execute or
// break out of its string.
#pragma once

#include <string>
#include <string_view>

namespace sitegen {

// A double-quoted Lua 5.4 string literal whose value is exactly `s`. Output is printable
// ASCII only: \\ \" \n \r \t are escaped, every other control byte and every byte >= 0x7f
// is written as \ddd, so `]]`, `]=]` and newlines are harmless.
std::string lua_string(std::string_view s);

// One bash word whose value is exactly `s`: bare when it only holds safe characters
// ([A-Za-z0-9_@%+=:,./-], non-empty), otherwise single-quoted with ' written as '\''.
// `s` must not contain NUL (bash cannot hold it); throws std::invalid_argument.
std::string bash_word(std::string_view s);

// Text for inside plain bash double quotes ("..."): escapes \ " $ and `. Not safe inside
// "${VAR-...}", where bash also parses ' and } (use bash_word there). Throws on NUL.
std::string bash_double_quoted(std::string_view s);

// One bash word whose value is `s` with each `${NAME}` (braces, a valid variable name)
// expanded at run time and every other character literal: bash_word(s) when `s` holds no
// such reference, else "..." with the literal text as bash_double_quoted writes it. A `$`
// that starts no reference stays literal. Throws on NUL.
std::string bash_word_expanding_braced_vars(std::string_view s);

// A Python string literal whose value is exactly `s` ('...' with \\, \', \n, \r, \t and
// \xNN for other control bytes; readable UTF-8 text is kept, C1 controls, U+2028/9,
// zero-width and bidi controls become \uNNNN). `s` must be valid UTF-8 (NUL is fine);
// throws std::invalid_argument otherwise. With easybuild_template, every '%' is doubled
// because EasyBuild %-formats string values (%(installdir)s).
std::string python_string(std::string_view s, bool easybuild_template = false);
// python_string(s, easybuild_template) appended to `out` (unchanged when it throws).
void append_python_string(std::string& out, std::string_view s, bool easybuild_template = false);
// append_python_string, but each '\n' of `s` is written as `line_break`, the caller's text
// that ends the literal and starts the next (e.g. "',\n    '"), so that each line of `s`
// becomes a literal of its own. Unchanged `out` when it throws.
void append_python_lines(std::string& out, std::string_view s, bool easybuild_template, std::string_view line_break);

// A bash heredoc delimiter ("SITEGEN_EOF", lengthened with '_' while it is one) that is no
// whole line of `content`, so that `cat > F <<'DELIM'` writes exactly `content`.
std::string heredoc_delimiter(std::string_view content);

// True if `s` is valid UTF-8 and holds no NUL byte.
bool is_valid_utf8_without_nul(std::string_view s);

// True if `s` is a valid environment variable name: ^[A-Za-z_][A-Za-z0-9_]*$
bool is_valid_var_name(std::string_view s);

}  // namespace sitegen
