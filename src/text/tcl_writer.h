// Tcl quoting for modulefiles (Environment Modules, Lmod's Tcl reader, EasyBuild's
// modtclfooter): every site value becomes one double-quoted Tcl word that substitutes
// nothing, so no value can run a command, read a variable or end the word.
#pragma once

#include <string>
#include <string_view>

namespace sitegen {

// Text for inside a double-quoted Tcl word ("..."): \ " $ [ ] { } are backslash-escaped
// (braces too, so the word stays balanced inside a braced body such as an `if` branch),
// newline, tab and carriage return become \n \t \r, every other control byte \ooo (three
// octal digits, so a following digit is never taken in). Bytes >= 0x80 are kept: UTF-8
// text stays readable. `s` must not contain NUL (no environment can hold it); throws
// std::invalid_argument.
std::string tcl_quoted_content(std::string_view s);

// A double-quoted Tcl word whose value is exactly `s`: "\"" + tcl_quoted_content(s) + "\"".
std::string tcl_string(std::string_view s);

// One comment line "# text": control bytes, backslashes (a trailing one would continue the
// comment onto the next line) and braces (counted even in comments inside braced bodies)
// become '?'.
std::string tcl_comment(std::string_view text);

}  // namespace sitegen
