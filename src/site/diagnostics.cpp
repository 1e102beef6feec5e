// Compiler-style diagnostics: collecting, ordering and rendering with a caret.
#include "site/diagnostics.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace sitegen {

namespace {

// Cuts `s` to at most `max` bytes without splitting a UTF-8 sequence, saying how long it was.
void clip(std::string& s) {
    if (s.size() <= kMaxMessageBytes) return;
    const size_t total = s.size();
    size_t cut = kMaxMessageBytes - 64;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s.resize(cut);
    s += "... (cut: " + std::to_string(total) + " bytes in all)";
}

size_t severity_index(Severity s) {
    switch (s) {
        case Severity::error: return 0;
        case Severity::warning: return 1;
        case Severity::note: return 2;
    }
    return 0;
}

const char* severity_name(Severity s) {
    switch (s) {
        case Severity::error: return "error";
        case Severity::warning: return "warning";
        case Severity::note: return "note";
    }
    return "error";
}

// Length of the UTF-8 sequence starting at s[i] and its code point; 0 if it is not valid
// (overlong forms, surrogates and values above U+10FFFF are invalid).
size_t utf8_sequence(std::string_view s, size_t i, char32_t& cp) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    size_t n = 0;
    if (c < 0x80) { cp = c; return 1; }
    if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07; }
    else return 0;
    if (i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k) {
        if ((b(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b(i + k) & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

// Code points a terminal treats as controls or that reorder or break the line.
bool invisible_control(char32_t cp) {
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
           (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
}

std::string line_of(const std::string& text, int line) {
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

std::string plural(size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

}  // namespace

std::string printable(std::string_view text, bool keep_tabs) {
    std::string out;
    out.reserve(text.size());
    char buf[16];
    for (size_t i = 0; i < text.size();) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c == '\t' && keep_tabs) { out += '\t'; ++i; continue; }
        if (c < 0x20 || c == 0x7F) {
            switch (c) {
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                default: std::snprintf(buf, sizeof buf, "\\x%02x", c); out += buf;
            }
            ++i;
            continue;
        }
        char32_t cp = 0;
        const size_t n = utf8_sequence(text, i, cp);
        if (n == 0) {
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
            ++i;
        } else if (invisible_control(cp)) {
            std::snprintf(buf, sizeof buf, "\\u{%04x}", static_cast<unsigned>(cp));
            out += buf;
            i += n;
        } else {
            out.append(text.data() + i, n);
            i += n;
        }
    }
    return out;
}

void Diagnostics::error(const SourceRegion& where, std::string message, std::string hint) {
    add({Severity::error, where, std::move(message), std::move(hint)});
}

void Diagnostics::warning(const SourceRegion& where, std::string message, std::string hint) {
    add({Severity::warning, where, std::move(message), std::move(hint)});
}

void Diagnostics::add(Diagnostic d) {
    if (d.severity == Severity::error) ++error_count_;
    if (d.severity == Severity::warning) ++warning_count_;
    if (d.severity == Severity::note) ++note_count_;
    size_t& kept = kept_[severity_index(d.severity)];
    if (kept >= cap_) return;  // enough of this severity to fill every shown slot
    ++kept;
    clip(d.message);
    clip(d.hint);
    items_.push_back(std::move(d));
}

void Diagnostics::append(const Diagnostics& later) {
    for (const auto& d : later.items_) add(d);
    // (Beyond `cap` of a severity there, beyond `cap` here: counted, not kept.)
    error_count_ += later.error_count_ - later.kept_[severity_index(Severity::error)];
    warning_count_ += later.warning_count_ - later.kept_[severity_index(Severity::warning)];
    note_count_ += later.note_count_ - later.kept_[severity_index(Severity::note)];
}

std::vector<Diagnostic> Diagnostics::sorted() const {
    std::vector<Diagnostic> out;
    for (Severity s : {Severity::error, Severity::warning, Severity::note})
        for (const auto& d : items_)
            if (d.severity == s && out.size() < cap_) out.push_back(d);
    std::stable_sort(out.begin(), out.end(), [](const Diagnostic& a, const Diagnostic& b) {
        if (a.where.file != b.where.file) return a.where.file < b.where.file;
        if (a.where.line != b.where.line) return a.where.line < b.where.line;
        return a.where.column < b.where.column;
    });
    return out;
}

std::string render(const Diagnostic& d, const SourceReader& read) {
    std::ostringstream os;
    const auto& w = d.where;
    if (!w.file.empty()) {
        os << printable(w.file);
        if (w.line > 0) os << ':' << w.line;
        if (w.line > 0 && w.column > 0) os << ':' << w.column;
        os << ": ";
    }
    os << severity_name(d.severity) << ": " << printable(d.message) << '\n';
    std::string text;
    if (w.line > 0 && !w.file.empty() && read && read(w.file, text)) {
        std::string src = line_of(text, w.line);
        int column = w.column;
        // Very long lines (generated files, fuzz inputs) show a window around the column.
        constexpr int kWindow = 80;
        std::string before, after;
        if (static_cast<int>(src.size()) > 2 * kWindow) {
            const int start = std::max(0, column - 1 - kWindow);
            if (start > 0) before = "...";
            if (static_cast<size_t>(start) + 2 * kWindow < src.size()) after = "...";
            src = src.substr(static_cast<size_t>(start), 2 * kWindow);
            column -= start;
        }
        // The excerpt is made printable too; the caret goes under the same character, one
        // column per character (tabs stay tabs so the caret lines up).
        const size_t upto = column > 1 ? std::min(src.size(), static_cast<size_t>(column - 1)) : 0;
        const std::string head = printable(std::string_view(src).substr(0, upto), true);
        os << "  " << before << head << printable(std::string_view(src).substr(upto), true) << after << '\n'
           << "  " << std::string(before.size(), ' ');
        for (char c : head)
            if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) os << (c == '\t' ? '\t' : ' ');
        os << "^\n";
    }
    if (!d.hint.empty()) os << "  note: " << printable(d.hint) << '\n';
    return os.str();
}

std::string render_all(const Diagnostics& diags, const SourceReader& read) {
    std::string out;
    size_t shown[3] = {0, 0, 0};
    for (const auto& d : diags.sorted()) {
        out += render(d, read);
        ++shown[severity_index(d.severity)];
    }
    const size_t hidden[3] = {diags.error_count() - shown[0], diags.warning_count() - shown[1],
                              diags.note_count() - shown[2]};
    if (hidden[0] + hidden[1] + hidden[2] > 0) {
        std::string parts;
        const char* names[3][2] = {{"error", "errors"}, {"warning", "warnings"}, {"note", "notes"}};
        for (int i = 0; i < 3; ++i)
            if (hidden[i]) parts += (parts.empty() ? "" : ", ") + plural(hidden[i], names[i][0], names[i][1]);
        out += "note: " + std::to_string(hidden[0] + hidden[1] + hidden[2]) + " more findings not shown (" + parts + ")\n";
    }
    if (diags.error_count() || diags.warning_count()) {
        out += plural(diags.error_count(), "error", "errors") + ", " +
               plural(diags.warning_count(), "warning", "warnings") + "\n";
    }
    return out;
}

}  // namespace sitegen
