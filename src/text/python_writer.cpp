// Python-source writer for EasyBuild easyconfigs: aligned assignments, one item per line.
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
    for (const auto& e : python_exprs) out += pad + "    " + e + ",\n";
    return out + pad + "]";
}

std::string easybuild_lines(const std::string& s, int indent) {
    std::vector<std::string> items;
    for (const auto& line : split_lines(s)) items.push_back(easybuild_string(line));
    if (items.size() == 1) return items[0];
    return "'\\n'.join(" + python_list(items, indent) + ")";
}

void PythonWriter::comment(const std::string& text) { out_ += "# " + text + "\n"; }

void PythonWriter::blank() { out_ += "\n"; }

void PythonWriter::assign(const std::string& name, const std::string& python_expr) {
    out_ += name + " = " + python_expr + "\n";
}

void PythonWriter::assign_aligned(const std::vector<std::pair<std::string, std::string>>& name_exprs) {
    size_t width = 0;
    for (const auto& [name, expr] : name_exprs) width = std::max(width, name.size());
    for (const auto& [name, expr] : name_exprs) out_ += name + std::string(width - name.size(), ' ') + " = " + expr + "\n";
}

void PythonWriter::assign_list(const std::string& name, const std::vector<std::string>& python_exprs) {
    assign(name, python_list(python_exprs));
}

void PythonWriter::assign_dict(const std::string& name, const std::vector<std::pair<std::string, std::string>>& items) {
    if (items.empty()) { assign(name, "{}"); return; }
    size_t width = 0;
    for (const auto& [key, value] : items) width = std::max(width, key.size());
    out_ += name + " = {\n";
    for (const auto& [key, value] : items) out_ += "    " + key + ": " + std::string(width - key.size(), ' ') + value + ",\n";
    out_ += "}\n";
}

}  // namespace sitegen
