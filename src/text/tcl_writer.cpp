// Tcl quoting (see tcl_writer.h).
#include "text/tcl_writer.h"

#include <stdexcept>

namespace sitegen {

std::string tcl_quoted_content(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 8);
    for (unsigned char c : s) {
        if (c == '\0') throw std::invalid_argument("a Tcl value cannot hold a NUL byte");
        if (c == '\\' || c == '"' || c == '$' || c == '[' || c == ']' || c == '{' || c == '}') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c < 0x20 || c == 0x7f) {
            out += '\\';
            out += static_cast<char>('0' + (c >> 6));
            out += static_cast<char>('0' + ((c >> 3) & 7));
            out += static_cast<char>('0' + (c & 7));
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

std::string tcl_string(std::string_view s) { return "\"" + tcl_quoted_content(s) + "\""; }

std::string tcl_comment(std::string_view text) {
    std::string out = "# ";
    for (unsigned char c : text)
        out += (c < 0x20 || c == 0x7f || c == '\\' || c == '{' || c == '}') ? '?' : static_cast<char>(c);
    return out;
}

}  // namespace sitegen
