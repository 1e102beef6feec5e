// Python-source writer for EasyBuild easyconfigs: one item per line, lines within
// EasyBuild's --check-contrib style (pycodestyle as EasyBuild runs it: 120 characters).
// Over-long lines are split without changing any value: string literals into adjacent
// literals, "'a' + name + 'b'" after its "+", an assignment's value inside parentheses.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sitegen {

// The text to put in an easyconfig string so that, after EasyBuild's templating
// (easybuild-framework easyconfig.resolve_template: every '%' not starting a %(name)s
// template is doubled, then `value % templates`), the value is exactly `s`. Only runs of
// '%' followed by "(name)s" are doubled; "100%" and "%s" stay as they are.
std::string easybuild_escape(const std::string& s);
// easybuild_escape(s) appended to `out`.
void append_easybuild_escaped(std::string& out, std::string_view s);

// A Python string literal whose value after EasyBuild's templating is exactly `s`.
std::string easybuild_string(const std::string& s);

// A Python string literal that keeps the EasyBuild templates in `templated` and makes
// `literal` (appended to it) come out exactly as written.
std::string easybuild_template(const std::string& templated, const std::string& literal = "");

// A Python expression for a long multi-line value, one line per source line:
// '\n'.join([ 'line', ... ]) -- lossless (the last item is '' when `s` ends with '\n').
// `s` is escaped with easybuild_escape.
std::string easybuild_lines(const std::string& s, int indent = 0);

// A Python list expression, one item per line, indented for nesting at depth `indent`
// (in spaces); "[]" when empty.
std::string python_list(const std::vector<std::string>& python_exprs, int indent = 0);

// What assign_lines last wrote through it: the text's lines and each line's items, so that
// the lines of the next text that equal the previous one's at the same place are copied, not
// quoted, escaped and laid out again. A site's stacks share most of each script (two stacks'
// acceptance.py differ in one line of ~560), and an easyconfig embeds every script. The
// output never depends on it: a line is reused only when it is byte for byte the same.
// Only assign_lines reads and writes its fields.
struct LinesMemo {
    std::string text;             // the previous text
    std::vector<size_t> lines;    // where each of its lines starts, then text.size() + 1
    std::string items;            // its lines' items, as easybuild_lines writes them
    std::vector<size_t> items_at;  // where each line's item starts, then items.size()
};

class PythonWriter {
public:
    void comment(const std::string& text);
    void blank();
    // name = expr
    void assign(const std::string& name, const std::string& python_expr);
    // name = [ one expr per line ]
    void assign_list(const std::string& name, const std::vector<std::string>& python_exprs);
    // name = { key: value, one per line, values aligned }; keys are Python expressions.
    void assign_dict(const std::string& name, const std::vector<std::pair<std::string, std::string>>& items);
    // name = easybuild_lines(text), written straight into the file (no copy of a long value).
    void assign_lines(const std::string& name, std::string_view text);
    // The same text, with the lines `memo` holds from its previous text copied; `memo` then
    // holds this text (left as it was when this throws).
    void assign_lines(const std::string& name, std::string_view text, LinesMemo& memo);
    // Room for `bytes` of text, so a long file is not copied as it grows.
    void reserve(size_t bytes) { out_.reserve(bytes); }
    const std::string& text() const { return out_; }
    // The text, moved out; the writer is empty after.
    std::string take() {
        std::string text = std::move(out_);
        out_.clear();
        return text;
    }

private:
    std::string out_;
};

}  // namespace sitegen
