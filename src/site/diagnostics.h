// Compiler-style findings: file:line:col: severity: message, the source line and a caret.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "site/source_region.h"

namespace sitegen {

enum class Severity { error, warning, note };

struct Diagnostic {
    Severity severity = Severity::error;
    SourceRegion where;
    std::string message;
    std::string hint;  // e.g. "did you mean 'gpus_per_node'?"; printed as a note line
};

// Longest message (and hint) kept; longer ones are cut at a UTF-8 boundary and say so.
constexpr size_t kMaxMessageBytes = 4096;

// Collects findings. Shows at most `cap` of them, errors first, so no number of warnings or
// notes can hide an error; every finding is counted, shown or not.
class Diagnostics {
public:
    explicit Diagnostics(size_t cap = 50) : cap_(cap) {}

    void error(const SourceRegion& where, std::string message, std::string hint = {});
    void warning(const SourceRegion& where, std::string message, std::string hint = {});
    void add(Diagnostic d);
    // Adds the findings `later` collected (with the same cap) after these, as if each had been
    // added here in turn: its kept ones are added, the ones it only counted are counted.
    void append(const Diagnostics& later);

    bool has_errors() const { return error_count_ > 0; }
    size_t error_count() const { return error_count_; }
    size_t warning_count() const { return warning_count_; }
    size_t note_count() const { return note_count_; }
    size_t cap() const { return cap_; }
    // What is kept, in the order added: the first `cap` findings of each severity.
    const std::vector<Diagnostic>& all() const { return items_; }

    // The findings to show: at most `cap`, errors before warnings before notes, then
    // sorted by file, line, column (stable), so output is deterministic.
    std::vector<Diagnostic> sorted() const;

private:
    size_t cap_;
    size_t error_count_ = 0;
    size_t warning_count_ = 0;
    size_t note_count_ = 0;
    size_t kept_[3] = {0, 0, 0};  // items_ per severity
    std::vector<Diagnostic> items_;
};

// `text` as one printable line: C0 controls and DEL, C1 controls, bidirectional and line
// separator code points and bytes that are not UTF-8 are written as escapes (\n, \t, \x1b,
// \u{202e}), so what a finding prints can neither span lines nor move the cursor. With
// keep_tabs, tabs stay (source excerpts: the caret lines up under them).
std::string printable(std::string_view text, bool keep_tabs = false);

// Reads a file's text for the source-line excerpt; returns false if unavailable.
using SourceReader = std::function<bool(const std::string& path, std::string& text)>;

// Renders one finding: header, source line, caret, hint; every part made printable().
std::string render(const Diagnostic& d, const SourceReader& read);
// Renders the findings to show, "note: N more findings not shown (...)" when some are not,
// and a "N errors, M warnings" trailer when there are any.
std::string render_all(const Diagnostics& diags, const SourceReader& read);

}  // namespace sitegen
