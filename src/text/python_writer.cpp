// Python-source writer for EasyBuild easyconfigs: one item per line, lines within
// EasyBuild's --check-contrib style (pycodestyle, 120 characters).
#include "text/python_writer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <string_view>

#include "text/quote.h"

namespace sitegen {

namespace {

// True if "(name)s" starts at s[i]: the only thing EasyBuild treats as a template.
bool template_at(std::string_view s, size_t i) {
    if (i >= s.size() || s[i] != '(') return false;
    size_t j = i + 1;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
    return j > i + 1 && j + 1 < s.size() && s[j] == ')' && s[j + 1] == 's';
}

// pycodestyle's line limit as EasyBuild's --check-contrib sets it (E501).
constexpr size_t kMaxLine = 120;

// Characters (code points) of UTF-8 text, as pycodestyle counts a line.
size_t columns(std::string_view s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xc0) != 0x80;
    return n;
}

size_t utf8_length(unsigned char lead) {
    return lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
}

// The terms of an expression as this writer's callers build them: string literals and
// names joined by " + " ("'a' + local_x + 'b'"); anything else is one term.
std::vector<std::string_view> plus_terms(std::string_view expr) {
    std::vector<std::string_view> terms;
    bool quoted = false;
    size_t start = 0;
    for (size_t i = 0; i < expr.size(); ++i) {
        if (quoted && expr[i] == '\\') { ++i; continue; }
        if (expr[i] == '\'') quoted = !quoted;
        else if (!quoted && expr[i] == ' ' && expr.compare(i, 3, " + ") == 0) {
            terms.push_back(expr.substr(start, i - start));
            start = i + 3;
            i += 2;
        }
    }
    terms.push_back(expr.substr(start));
    return terms;
}

// The bytes split_literal takes as one atom of one column that is no cut point: ASCII but
// a backslash (an escape starts) or a space.
constexpr std::array<bool, 256> kPlainAtom = [] {
    std::array<bool, 256> plain{};
    for (int c = 0; c < 0x80; ++c) plain[static_cast<size_t>(c)] = c != '\\' && c != ' ';
    return plain;
}();

// A '...' literal (python_string's escapes: \\ \' \n \r \t \xNN \uNNNN, UTF-8 kept) as
// adjacent literals of at most `width` characters each, same value: cut between escapes and
// characters, after a space where one is in the second half of the piece. Calls
// on_piece(body) for each piece in order (views into `literal`, without quotes).
// One pass: only the last space of the piece being filled can be its cut (a space in the
// first half is no cut, so neither is any before it), so that space is all it remembers.
template <class OnPiece>
void split_literal(std::string_view literal, size_t width, OnPiece on_piece) {
    const std::string_view body = literal.substr(1, literal.size() - 2);
    const size_t room = width > 12 ? width - 2 : 10;
    size_t begin = 0, atoms = 0, cols = 0;  // the piece being filled: body[begin, i)
    size_t space_end = std::string_view::npos, space_atoms = 0, space_cols = 0;  // its last space, through it
    for (size_t i = 0; i < body.size();) {
        // Plain ASCII characters while the piece has room (most of a body): one atom and one
        // column each, no cut before them, no space to remember.
        if (cols < room && kPlainAtom[static_cast<unsigned char>(body[i])]) {
            const size_t stop = std::min(body.size(), i + (room - cols));
            size_t j = i + 1;
            while (j < stop && kPlainAtom[static_cast<unsigned char>(body[j])]) ++j;
            atoms += j - i;
            cols += j - i;
            i = j;
            continue;
        }
        size_t len = body[i] == '\\' && i + 1 < body.size()
                         ? (body[i + 1] == 'x' ? 4 : body[i + 1] == 'u' ? 6 : 2)
                         : utf8_length(static_cast<unsigned char>(body[i]));
        len = std::min(len, body.size() - i);
        const size_t atom_cols = len == 1 ? 1 : columns(body.substr(i, len));
        if (atoms > 0 && cols + atom_cols > room) {
            if (space_end != std::string_view::npos && space_atoms > atoms / 2) {
                on_piece(body.substr(begin, space_end - begin));
                begin = space_end;
                atoms -= space_atoms;
                cols -= space_cols;
            } else {
                on_piece(body.substr(begin, i - begin));
                begin = i;
                atoms = cols = 0;
            }
            space_end = std::string_view::npos;
        }
        ++atoms;
        cols += atom_cols;
        if (len == 1 && body[i] == ' ') {
            space_end = i + 1;
            space_atoms = atoms;
            space_cols = cols;
        }
        i += len;
    }
    on_piece(body.substr(begin));
}

// `literal` (a '...' literal too long for a line at `pad` spaces) as adjacent literals, one
// per line at `pad` spaces, `sep` after the last; every line ended.
void append_split_literal(std::string& out, size_t pad, std::string_view literal, std::string_view sep) {
    bool first = true;
    split_literal(literal, kMaxLine - pad - sep.size(), [&](std::string_view piece) {
        if (!first) out.append("'\n");  // the previous piece's line ends
        out.append(pad, ' ') += '\'';
        out.append(piece);
        first = false;
    });
    out += '\'';
    out.append(sep) += '\n';
}

// Appends `lead` + `expr` + `trail` as lines of at most kMaxLine characters where the
// expression allows it (E501): one line when it fits; else the terms of expr one after
// another (" +" ending a line) and long literals split into adjacent literals, inside
// parentheses when lead holds more than indentation (an assignment or a dict key). Same
// value either way.
void layout(std::string& out, std::string_view lead, std::string_view expr, std::string_view trail) {
    // Bytes bound columns from above: most lines need no counting.
    const size_t bytes = lead.size() + expr.size() + trail.size();
    if (bytes <= kMaxLine || expr.find('\n') != std::string_view::npos ||
        columns(lead) + columns(expr) + columns(trail) <= kMaxLine) {
        out.reserve(out.size() + bytes + 1);
        out.append(lead).append(expr).append(trail) += '\n';
        return;
    }
    const size_t indent = lead.find_first_not_of(' ') == std::string_view::npos ? lead.size() : lead.find_first_not_of(' ');
    const bool paren = lead.size() > indent;
    const size_t pad = indent + (paren ? 4 : 0);
    const std::vector<std::string_view> terms = plus_terms(expr);
    if (paren) out.append(lead).append("(\n");
    // The lines, written as they are made; the last one's newline waits, since a whole
    // term may still join it (it ends with " +").
    bool open = false, can_join = false;
    size_t open_cols = 0;  // columns of the open line, without its indentation
    const auto new_line = [&](std::string_view a, std::string_view b) {
        if (open) out += '\n';
        out.append(pad, ' ').append(a).append(b);
        open_cols = columns(a) + columns(b);
        open = true;
    };
    for (size_t i = 0; i < terms.size(); ++i) {
        const std::string_view sep = i + 1 < terms.size() ? " +" : paren ? "" : trail;
        const std::string_view term = terms[i];
        const size_t term_cols = columns(term) + columns(sep);
        // A plain literal: '...' (a term holds no " + " outside quotes, plus_terms made sure).
        if (pad + term_cols > kMaxLine && term.size() >= 2 && term.front() == '\'' && term.back() == '\'') {
            if (open) out += '\n';
            append_split_literal(out, pad, term, sep);
            open = can_join = false;  // its lines are ended: no term joins a split literal's last piece
            continue;
        }
        if (can_join && pad + open_cols + 1 + term_cols <= kMaxLine) {
            out.append(" ").append(term).append(sep);
            open_cols += 1 + term_cols;
        } else {
            new_line(term, sep);
        }
        can_join = true;
    }
    if (open) out += '\n';
    if (paren) out.append(indent, ' ').append(")").append(trail) += '\n';
}

// python_list into `out`.
void append_python_list(std::string& out, const std::vector<std::string>& python_exprs, int indent) {
    if (python_exprs.empty()) { out += "[]"; return; }
    const std::string lead(static_cast<size_t>(indent) + 4, ' ');
    out += "[\n";
    for (const auto& e : python_exprs) layout(out, lead, e, ",");
    out.append(static_cast<size_t>(indent), ' ') += ']';
}

}  // namespace

void append_easybuild_escaped(std::string& out, std::string_view s) {
    // Copies the text between '%' runs whole: most values hold no '%' at all.
    for (size_t i = 0; i < s.size();) {
        const size_t pct = s.find('%', i);
        if (pct == std::string_view::npos) { out.append(s.substr(i)); break; }
        out.append(s.substr(i, pct - i));
        size_t j = pct;
        while (j < s.size() && s[j] == '%') ++j;
        // EasyBuild doubles the run itself unless a template follows; then it keeps it
        // and %-formatting halves it, so the run must be doubled here.
        out.append(template_at(s, j) ? 2 * (j - pct) : j - pct, '%');
        i = j;
    }
}

std::string easybuild_escape(const std::string& s) {
    std::string out;
    out.reserve(s.size());
    append_easybuild_escaped(out, s);
    return out;
}

std::string easybuild_string(const std::string& s) {
    if (s.find('%') == std::string::npos) return python_string(s);
    return python_string(easybuild_escape(s));
}

std::string easybuild_template(const std::string& templated, const std::string& literal) {
    std::string value = templated;
    append_easybuild_escaped(value, literal);
    return python_string(value);
}

std::string python_list(const std::vector<std::string>& python_exprs, int indent) {
    std::string out;
    append_python_list(out, python_exprs, indent);
    return out;
}

namespace {

// The items of `text`'s lines appended to `out`: each <lead>'<line>',\n, or split as layout
// splits a literal too long for its line. Every line is quoted in one pass over the text,
// then the items too long for a line are split; `out` is unchanged when the text is not
// valid UTF-8. A line's item depends on that line alone (escapes, '%' runs and UTF-8
// sequences hold no newline), which is what LinesMemo relies on.
void append_items(std::string& out, std::string_view text, const std::string& lead) {
    // '%' runs are escaped over the whole text at once: neither a run nor a template holds a
    // newline, so that is escaping each line.
    std::string escaped;
    if (text.find('%') != std::string_view::npos) {
        escaped.reserve(text.size() + 64);
        append_easybuild_escaped(escaped, text);
        text = escaped;
    }
    // Each item is <lead>'<line>',\n (a newline of the text closes one, opens the next).
    std::string items = lead;
    items.reserve(text.size() + text.size() / 4 + 64);
    append_python_lines(items, text, false, "',\n" + lead + "'");
    items += ",\n";
    out.reserve(out.size() + items.size() + 64);
    // Runs of items that fit are copied whole. Only the items' newlines are raw in `items`.
    size_t copied = 0;
    for (size_t start = 0, nl; start < items.size(); start = nl + 1) {
        nl = items.find('\n', start);
        const std::string_view line = std::string_view(items).substr(start, nl - start);
        // What layout does with one literal after indentation: one line if it fits in
        // columns (bytes bound them from above), else split.
        if (line.size() <= kMaxLine || columns(line) <= kMaxLine) continue;
        out.append(items, copied, start - copied);
        append_split_literal(out, lead.size(), line.substr(lead.size(), line.size() - lead.size() - 1), ",");
        copied = nl + 1;
    }
    out.append(items, copied);
}

// What easybuild_lines writes around the items: '\n'.join([ <items> ]) at an indentation.
constexpr std::string_view kJoinOpen = "'\\n'.join([\n";
void close_join(std::string& out, int indent) { out.append(static_cast<size_t>(indent), ' ') += "])"; }

// easybuild_lines(s, indent) appended to `out`, for `s` with a newline.
void append_easybuild_lines(std::string& out, std::string_view text, int indent) {
    out += kJoinOpen;
    append_items(out, text, std::string(static_cast<size_t>(indent) + 4, ' '));
    close_join(out, indent);
}

// How many bytes a and b (of one size) share from their start: memcmp a block at a time.
size_t common_prefix(std::string_view a, std::string_view b) {
    constexpr size_t kBlock = 256;
    size_t i = 0;
    while (i + kBlock <= a.size() && std::memcmp(a.data() + i, b.data() + i, kBlock) == 0) i += kBlock;
    while (i < a.size() && a[i] == b[i]) ++i;
    return i;
}

// `next` made for `text`: its lines and their items, copied from `old` where a line is the
// same as the previous text's line at the same place (runs of such lines are found with one
// comparison of the rest of both texts and copied as a block); the other lines are quoted.
void memo_items(std::string_view text, const std::string& lead, const LinesMemo& old, LinesMemo& next) {
    const std::string_view old_text = old.text;
    const std::vector<size_t>& old_lines = old.lines;
    const std::vector<size_t>& old_items_at = old.items_at;
    std::string& items = next.items;
    const size_t old_n = old_lines.empty() ? 0 : old_lines.size() - 1;
    size_t k = 0;    // the next line's number, in both texts
    size_t pos = 0;  // where it starts in `text`
    while (true) {
        if (k < old_n) {
            // The lines from k on that are whole (newline included) in the part both texts share.
            const size_t old_pos = old_lines[k];
            const size_t limit = std::min(text.size() - pos, old_text.size() - old_pos);
            const size_t same = common_prefix(text.substr(pos, limit), old_text.substr(old_pos, limit));
            // Lines j >= k with old_lines[j + 1] <= old_pos + same (the last line's end is
            // text size + 1, so it never counts: the per-line step below takes it).
            const size_t end_k = static_cast<size_t>(
                std::upper_bound(old_lines.begin() + static_cast<std::ptrdiff_t>(k + 1), old_lines.end(), old_pos + same) -
                old_lines.begin()) - 1;
            if (end_k > k) {
                const size_t item_base = old_items_at[k];
                for (size_t j = k; j < end_k; ++j) {
                    next.lines.push_back(old_lines[j] - old_pos + pos);
                    next.items_at.push_back(old_items_at[j] - item_base + items.size());
                }
                items.append(old.items, item_base, old_items_at[end_k] - item_base);
                pos += old_lines[end_k] - old_pos;
                k = end_k;
            }
        }
        // One line, the same as the previous text's or not.
        const size_t nl = text.find('\n', pos);
        const size_t end = nl == std::string_view::npos ? text.size() : nl;
        const std::string_view line = text.substr(pos, end - pos);
        next.lines.push_back(pos);
        next.items_at.push_back(items.size());
        if (k < old_n && line == old_text.substr(old_lines[k], old_lines[k + 1] - 1 - old_lines[k]))
            items.append(old.items, old_items_at[k], old_items_at[k + 1] - old_items_at[k]);
        else
            append_items(items, line, lead);
        ++k;
        if (nl == std::string_view::npos) break;
        pos = nl + 1;
    }
    next.lines.push_back(text.size() + 1);
    next.items_at.push_back(items.size());
}

}  // namespace

std::string easybuild_lines(const std::string& s, int indent) {
    if (s.find('\n') == std::string::npos) return easybuild_string(s);
    std::string out;
    append_easybuild_lines(out, s, indent);
    return out;
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

void PythonWriter::assign_lines(const std::string& name, std::string_view text) {
    // A value without a newline is one literal, which assign lays out (it may split it).
    if (text.find('\n') == std::string_view::npos) {
        assign(name, easybuild_string(std::string(text)));
        return;
    }
    const size_t size = out_.size();
    try {
        out_.append(name).append(" = ");
        append_easybuild_lines(out_, text, 0);
    } catch (...) {
        out_.resize(size);  // as assign(name, easybuild_lines(text)): nothing written
        throw;
    }
    out_ += '\n';
}

void PythonWriter::assign_lines(const std::string& name, std::string_view text, LinesMemo& memo) {
    if (text.find('\n') == std::string_view::npos) {
        assign_lines(name, text);
        return;
    }
    LinesMemo next;
    next.text.assign(text);
    next.items.reserve(text.size() + text.size() / 4 + 64);
    next.lines.reserve(memo.lines.size());
    next.items_at.reserve(memo.items_at.size());
    memo_items(text, "    ", memo, next);  // the items of a value at indent 0
    out_.reserve(out_.size() + name.size() + next.items.size() + 32);
    out_.append(name).append(" = ").append(kJoinOpen).append(next.items);
    close_join(out_, 0);
    out_ += '\n';
    memo = std::move(next);
}

void PythonWriter::assign(const std::string& name, const std::string& python_expr) {
    std::string lead = name;
    lead += " = ";
    layout(out_, lead, python_expr, "");
}

void PythonWriter::assign_list(const std::string& name, const std::vector<std::string>& python_exprs) {
    if (python_exprs.empty()) {
        assign(name, "[]");
        return;
    }
    // A list of items is several lines, which assign writes as they are: straight into the file.
    out_.append(name).append(" = ");
    append_python_list(out_, python_exprs, 0);
    out_ += '\n';
}

void PythonWriter::assign_dict(const std::string& name, const std::vector<std::pair<std::string, std::string>>& items) {
    if (items.empty()) { assign(name, "{}"); return; }
    size_t width = 0;
    for (const auto& [key, value] : items) width = std::max(width, key.size());
    out_ += name + " = {\n";
    for (const auto& [key, value] : items) layout(out_, "    " + key + ": " + std::string(width - key.size(), ' '), value, ",");
    out_ += "}\n";
}

}  // namespace sitegen
