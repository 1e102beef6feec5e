// Compiler-style findings: file:line:col: severity: message, the source line and a caret.
#pragma once

#include <functional>
#include <string>
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

// Collects findings; stops storing after `cap` errors but keeps counting.
class Diagnostics {
public:
    explicit Diagnostics(size_t cap = 50) : cap_(cap) {}

    void error(const SourceRegion& where, std::string message, std::string hint = {});
    void warning(const SourceRegion& where, std::string message, std::string hint = {});
    void add(Diagnostic d);

    bool has_errors() const { return error_count_ > 0; }
    size_t error_count() const { return error_count_; }
    size_t warning_count() const { return warning_count_; }
    const std::vector<Diagnostic>& all() const { return items_; }

    // Sorted by file, line, column (stable), so output is deterministic.
    std::vector<Diagnostic> sorted() const;

private:
    size_t cap_;
    size_t error_count_ = 0;
    size_t warning_count_ = 0;
    std::vector<Diagnostic> items_;
};

// Reads a file's text for the source-line excerpt; returns false if unavailable.
using SourceReader = std::function<bool(const std::string& path, std::string& text)>;

// Renders one finding: header, source line, caret, hint.
std::string render(const Diagnostic& d, const SourceReader& read);
// Renders all findings plus a "N errors, M warnings" trailer when there are any.
std::string render_all(const Diagnostics& diags, const SourceReader& read);

}  // namespace sitegen
