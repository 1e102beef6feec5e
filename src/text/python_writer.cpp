// Python-source writer for EasyBuild easyconfigs: one item per line, lines within
// EasyBuild's --check-contrib style (pycodestyle, 120 characters).
#include "text/python_writer.h"

#include <algorithm>
#include <cctype>

#include "text/quote.h"

namespace sitegen {

namespace {

// True if "(name)s" starts at s[i]: the only thing EasyBuild treats as a template.
bool template_at(const std::string& s, size_t i) {
    if (i >= s.size() || s[i] != '(') return false;
    size_t j = i + 1;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
    return j > i + 1 && j + 1 < s.size() && s[j] == ')' && s[j + 1] == 's';
}

// pycodestyle's line limit as EasyBuild's --check-contrib sets it (E501).
constexpr size_t kMaxLine = 120;

// Characters (code points) of UTF-8 text, as pycodestyle counts a line.
size_t columns(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xc0) != 0x80;
    return n;
}

size_t utf8_length(unsigned char lead) {
    return lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
}

// The terms of an expression as this writer's callers build them: string literals and
// names joined by " + " ("'a' + local_x + 'b'"); anything else is one term.
std::vector<std::string> plus_terms(const std::string& expr) {
    std::vector<std::string> terms;
    bool quoted = false;
    size_t start = 0;
    for (size_t i = 0; i < expr.size(); ++i) {
        if (quoted && expr[i] == '\\') { ++i; continue; }
        if (expr[i] == '\'') quoted = !quoted;
        else if (!quoted && expr.compare(i, 3, " + ") == 0) {
            terms.push_back(expr.substr(start, i - start));
            start = i + 3;
            i += 2;
        }
    }
    terms.push_back(expr.substr(start));
    return terms;
}

bool is_plain_literal(const std::string& term) {
    return term.size() >= 2 && term.front() == '\'' && term.back() == '\'' && plus_terms(term).size() == 1;
}

// A '...' literal (python_string's escapes: \\ \' \n \r \t \xNN \uNNNN, UTF-8 kept) as
// adjacent literals of at most `width` characters each, same value: cut between escapes and
// characters, after a space where one is in the second half of the piece.
std::vector<std::string> split_literal(const std::string& literal, size_t width) {
    const std::string body = literal.substr(1, literal.size() - 2);
    std::vector<std::string> atoms;
    for (size_t i = 0; i < body.size();) {
        size_t len = body[i] == '\\' && i + 1 < body.size()
                         ? (body[i + 1] == 'x' ? 4 : body[i + 1] == 'u' ? 6 : 2)
                         : utf8_length(static_cast<unsigned char>(body[i]));
        len = std::min(len, body.size() - i);
        atoms.push_back(body.substr(i, len));
        i += len;
    }
    const size_t room = width > 12 ? width - 2 : 10;
    std::vector<std::string> pieces;
    std::vector<std::string> cur;  // atoms of the piece being filled
    size_t cur_cols = 0;
    for (const auto& atom : atoms) {
        if (!cur.empty() && cur_cols + columns(atom) > room) {
            size_t cut = cur.size();
            for (size_t k = cur.size(); k > cur.size() / 2; --k)
                if (cur[k - 1] == " ") { cut = k; break; }
            std::string piece;
            for (size_t k = 0; k < cut; ++k) piece += cur[k];
            pieces.push_back("'" + piece + "'");
            cur.erase(cur.begin(), cur.begin() + static_cast<std::ptrdiff_t>(cut));
            cur_cols = 0;
            for (const auto& a : cur) cur_cols += columns(a);
        }
        cur.push_back(atom);
        cur_cols += columns(atom);
    }
    std::string piece;
    for (const auto& a : cur) piece += a;
    pieces.push_back("'" + piece + "'");
    return pieces;
}

// `lead` + `expr` + `trail` as lines of at most kMaxLine characters where the expression
// allows it (E501): one line when it fits; else the terms of expr one after another (" +"
// ending a line) and long literals split into adjacent literals, inside parentheses when
// lead holds more than indentation (an assignment or a dict key). Same value either way.
std::string layout(const std::string& lead, const std::string& expr, const std::string& trail) {
    if (expr.find('\n') != std::string::npos || columns(lead + expr + trail) <= kMaxLine)
        return lead + expr + trail + "\n";
    const size_t indent = lead.find_first_not_of(' ') == std::string::npos ? lead.size() : lead.find_first_not_of(' ');
    const bool paren = lead.size() > indent;
    const std::string pad(indent + (paren ? 4 : 0), ' ');
    const std::vector<std::string> terms = plus_terms(expr);
    std::vector<std::string> lines;
    bool can_join = false;  // the last line ends with " +": a whole term may follow on it
    for (size_t i = 0; i < terms.size(); ++i) {
        const std::string sep = i + 1 < terms.size() ? " +" : paren ? "" : trail;
        const std::string& term = terms[i];
        if (columns(pad + term + sep) > kMaxLine && is_plain_literal(term)) {
            const auto pieces = split_literal(term, kMaxLine - pad.size() - sep.size());
            for (size_t k = 0; k < pieces.size(); ++k) lines.push_back(pieces[k] + (k + 1 < pieces.size() ? "" : sep));
            can_join = false;
            continue;
        }
        if (can_join && columns(pad + lines.back() + " " + term + sep) <= kMaxLine) {
            lines.back() += " " + term + sep;
        } else {
            lines.push_back(term + sep);
        }
        can_join = true;
    }
    std::string out = paren ? lead + "(\n" : "";
    for (const auto& l : lines) out += pad + l + "\n";
    if (paren) out += std::string(indent, ' ') + ")" + trail + "\n";
    return out;
}

std::vector<std::string> split_lines(const std::string& s) {
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t nl; (nl = s.find('\n', start)) != std::string::npos; start = nl + 1) lines.push_back(s.substr(start, nl - start));
    lines.push_back(s.substr(start));
    return lines;
}

}  // namespace

std::string easybuild_escape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size();) {
        if (s[i] != '%') { out += s[i++]; continue; }
        size_t j = i;
        while (j < s.size() && s[j] == '%') ++j;
        // EasyBuild doubles the run itself unless a template follows; then it keeps it
        // and %-formatting halves it, so the run must be doubled here.
        out.append(template_at(s, j) ? 2 * (j - i) : j - i, '%');
        i = j;
    }
    return out;
}

std::string easybuild_string(const std::string& s) { return python_string(easybuild_escape(s)); }

std::string easybuild_template(const std::string& templated, const std::string& literal) {
    return python_string(templated + easybuild_escape(literal));
}

std::string python_list(const std::vector<std::string>& python_exprs, int indent) {
    if (python_exprs.empty()) return "[]";
    const std::string pad(static_cast<size_t>(indent), ' ');
    std::string out = "[\n";
    for (const auto& e : python_exprs) out += layout(pad + "    ", e, ",");
    return out + pad + "]";
}

std::string easybuild_lines(const std::string& s, int indent) {
    std::vector<std::string> items;
    for (const auto& line : split_lines(s)) items.push_back(easybuild_string(line));
    if (items.size() == 1) return items[0];
    return "'\\n'.join(" + python_list(items, indent) + ")";
}

void PythonWriter::comment(const std::string& text) {
    // Long comments wrap at spaces (E501).
    std::string rest = text;
    while (columns("# " + rest) > kMaxLine) {
        const size_t sp = rest.rfind(' ', kMaxLine - 2);
        if (sp == std::string::npos || sp == 0) break;
        out_ += "# " + rest.substr(0, sp) + "\n";
        rest = rest.substr(sp + 1);
    }
    out_ += "# " + rest + "\n";
}

void PythonWriter::blank() { out_ += "\n"; }

void PythonWriter::assign(const std::string& name, const std::string& python_expr) {
    out_ += layout(name + " = ", python_expr, "");
}

void PythonWriter::assign_list(const std::string& name, const std::vector<std::string>& python_exprs) {
    assign(name, python_list(python_exprs));
}

void PythonWriter::assign_dict(const std::string& name, const std::vector<std::pair<std::string, std::string>>& items) {
    if (items.empty()) { assign(name, "{}"); return; }
    size_t width = 0;
    for (const auto& [key, value] : items) width = std::max(width, key.size());
    out_ += name + " = {\n";
    for (const auto& [key, value] : items) out_ += layout("    " + key + ": " + std::string(width - key.size(), ' '), value, ",");
    out_ += "}\n";
}

}  // namespace sitegen
