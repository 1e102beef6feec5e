// Compiler-style diagnostics: collecting, ordering and rendering with a caret.
#include "site/diagnostics.h"

#include <algorithm>
#include <sstream>

namespace sitegen {

void Diagnostics::error(const SourceRegion& where, std::string message, std::string hint) {
    add({Severity::error, where, std::move(message), std::move(hint)});
}

void Diagnostics::warning(const SourceRegion& where, std::string message, std::string hint) {
    add({Severity::warning, where, std::move(message), std::move(hint)});
}

void Diagnostics::add(Diagnostic d) {
    if (d.severity == Severity::error) ++error_count_;
    if (d.severity == Severity::warning) ++warning_count_;
    if (items_.size() < cap_) items_.push_back(std::move(d));
}

std::vector<Diagnostic> Diagnostics::sorted() const {
    std::vector<Diagnostic> out = items_;
    std::stable_sort(out.begin(), out.end(), [](const Diagnostic& a, const Diagnostic& b) {
        if (a.where.file != b.where.file) return a.where.file < b.where.file;
        if (a.where.line != b.where.line) return a.where.line < b.where.line;
        return a.where.column < b.where.column;
    });
    return out;
}

static const char* severity_name(Severity s) {
    switch (s) {
        case Severity::error: return "error";
        case Severity::warning: return "warning";
        case Severity::note: return "note";
    }
    return "error";
}

static std::string line_of(const std::string& text, int line) {
    int current = 1;
    size_t start = 0;
    while (current < line) {
        size_t nl = text.find('\n', start);
        if (nl == std::string::npos) return {};
        start = nl + 1;
        ++current;
    }
    size_t end = text.find('\n', start);
    std::string out = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!out.empty() && out.back() == '\r') out.pop_back();
    return out;
}

std::string render(const Diagnostic& d, const SourceReader& read) {
    std::ostringstream os;
    const auto& w = d.where;
    if (!w.file.empty()) {
        os << w.file;
        if (w.line > 0) os << ':' << w.line;
        if (w.line > 0 && w.column > 0) os << ':' << w.column;
        os << ": ";
    }
    os << severity_name(d.severity) << ": " << d.message << '\n';
    std::string text;
    if (w.line > 0 && !w.file.empty() && read && read(w.file, text)) {
        std::string src = line_of(text, w.line);
        int column = w.column;
        // Very long lines (generated files, fuzz inputs) show a window around the column.
        constexpr int kWindow = 80;
        if (static_cast<int>(src.size()) > 2 * kWindow) {
            const int start = std::max(0, column - 1 - kWindow);
            std::string cut = src.substr(static_cast<size_t>(start), 2 * kWindow);
            column -= start;
            if (start > 0) { cut = "..." + cut; column += 3; }
            if (static_cast<size_t>(start) + 2 * kWindow < src.size()) cut += "...";
            src = cut;
        }
        // Keep the excerpt printable: tabs stay tabs so the caret lines up.
        os << "  " << src << '\n' << "  ";
        for (int i = 1; i < column && i <= static_cast<int>(src.size()); ++i)
            os << (src[i - 1] == '\t' ? '\t' : ' ');
        os << "^\n";
    }
    if (!d.hint.empty()) os << "  note: " << d.hint << '\n';
    return os.str();
}

std::string render_all(const Diagnostics& diags, const SourceReader& read) {
    std::string out;
    for (const auto& d : diags.sorted()) out += render(d, read);
    const size_t shown = diags.all().size();
    const size_t total = diags.error_count() + diags.warning_count();
    if (total > shown)
        out += "note: " + std::to_string(total - shown) + " more findings not shown\n";
    if (diags.error_count() || diags.warning_count()) {
        out += std::to_string(diags.error_count()) +
               (diags.error_count() == 1 ? " error" : " errors");
        out += ", " + std::to_string(diags.warning_count()) +
               (diags.warning_count() == 1 ? " warning" : " warnings") + "\n";
    }
    return out;
}

}  // namespace sitegen
