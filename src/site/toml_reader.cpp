// TomlReader: typed reads with source regions, type errors and unknown-key suggestions.
#include "site/toml_reader.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "text/quote.h"
#include "site/schema.h"
#include "site/suggest.h"

namespace sitegen {

SourceRegion region_of(const toml::source_region& r) {
    SourceRegion out;
    if (r.path) out.file = *r.path;
    out.line = static_cast<int>(r.begin.line);
    out.column = static_cast<int>(r.begin.column);
    return out;
}

const char* toml_type_name(const toml::node& n) {
    switch (n.type()) {
        case toml::node_type::string: return "a string";
        case toml::node_type::integer: return "an integer";
        case toml::node_type::floating_point: return "a float";
        case toml::node_type::boolean: return "a boolean";
        case toml::node_type::array: return "an array";
        case toml::node_type::table: return "a table";
        case toml::node_type::date: return "a date";
        case toml::node_type::time: return "a time";
        case toml::node_type::date_time: return "a date-time";
        default: return "nothing";
    }
}

TomlReader::TomlReader(const toml::table& table, std::string schema_path, std::string model_path,
                       Regions& regions, Diagnostics& diags)
    : table_(table), schema_path_(std::move(schema_path)), model_path_(std::move(model_path)),
      regions_(regions), diags_(diags) {}

const toml::node* TomlReader::fetch(const std::string& key) {
    seen_.push_back(key);
    const toml::node* n = table_.get(key);
    if (n) regions_.set(child(key), region_of(n->source()));
    return n;
}

const toml::node* TomlReader::node(const std::string& key) { return fetch(key); }

void TomlReader::type_error(const std::string& key, const toml::node& n, const char* expected) {
    diags_.error(region_of(n.source()),
                 "'" + child(key) + "' must be " + expected + ", found " + toml_type_name(n));
}

bool TomlReader::check_string(const std::string& path, const toml::node& n, const std::string& s) {
    if (!is_valid_utf8_without_nul(s)) {
        diags_.error(region_of(n.source()), "'" + path + "' must be UTF-8 text without NUL bytes");
        return false;
    }
    return true;
}

bool TomlReader::read(const std::string& key, std::string& out) {
    const toml::node* n = fetch(key);
    if (!n) return false;
    if (!n->is_string()) { type_error(key, *n, "a string"); return false; }
    const std::string& s = n->as_string()->get();
    if (!check_string(child(key), *n, s)) return false;
    out = s;
    return true;
}

bool TomlReader::read(const std::string& key, int& out, int min, int max) {
    const toml::node* n = fetch(key);
    if (!n) return false;
    if (!n->is_integer()) { type_error(key, *n, "an integer"); return false; }
    int64_t v = n->as_integer()->get();
    if (v < min || v > max) {
        diags_.error(region_of(n->source()), "'" + child(key) + "' must be between " +
                                                 std::to_string(min) + " and " + std::to_string(max) +
                                                 ", found " + std::to_string(v));
        return false;
    }
    out = static_cast<int>(v);
    return true;
}

bool TomlReader::read(const std::string& key, bool& out) {
    const toml::node* n = fetch(key);
    if (!n) return false;
    if (!n->is_boolean()) { type_error(key, *n, "a boolean (true or false)"); return false; }
    out = n->as_boolean()->get();
    return true;
}

bool TomlReader::read(const std::string& key, std::vector<std::string>& out) {
    const toml::node* n = fetch(key);
    if (!n) return false;
    if (!n->is_array()) { type_error(key, *n, "an array of strings"); return false; }
    std::vector<std::string> values;
    bool ok = true;
    size_t i = 0;
    for (const auto& item : *n->as_array()) {
        std::string path = child(key) + "." + std::to_string(i++);
        regions_.set(path, region_of(item.source()));
        if (!item.is_string()) {
            diags_.error(region_of(item.source()),
                         "'" + path + "' must be a string, found " + toml_type_name(item));
            ok = false;
            continue;
        }
        if (!check_string(path, item, item.as_string()->get())) { ok = false; continue; }
        values.push_back(item.as_string()->get());
    }
    if (ok) out = std::move(values);
    return ok;
}

bool TomlReader::read(const std::string& key, std::vector<int>& out, int min, int max) {
    const toml::node* n = fetch(key);
    if (!n) return false;
    if (!n->is_array()) { type_error(key, *n, "an array of integers"); return false; }
    std::vector<int> values;
    bool ok = true;
    size_t i = 0;
    for (const auto& item : *n->as_array()) {
        std::string path = child(key) + "." + std::to_string(i++);
        regions_.set(path, region_of(item.source()));
        if (!item.is_integer() || item.as_integer()->get() < min || item.as_integer()->get() > max) {
            diags_.error(region_of(item.source()),
                         "'" + path + "' must be an integer between " + std::to_string(min) +
                             " and " + std::to_string(max));
            ok = false;
            continue;
        }
        values.push_back(static_cast<int>(item.as_integer()->get()));
    }
    if (ok) out = std::move(values);
    return ok;
}

static bool valid_free_key(const std::string& k, bool env) {
    if (env) return is_valid_var_name(k);
    if (k.empty() || !(std::isalpha(static_cast<unsigned char>(k[0])) || k[0] == '_')) return false;
    return std::all_of(k.begin(), k.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
    });
}

bool TomlReader::read_string_table(const std::string& key,
                                   std::vector<std::pair<std::string, std::string>>& out,
                                   bool names_are_env_vars) {
    const toml::node* n = fetch(key);
    if (!n) return false;
    if (!n->is_table()) { type_error(key, *n, "a table of strings"); return false; }
    bool ok = true;
    for (const auto& [k, v] : *n->as_table()) {
        std::string name(k.str());
        std::string path = child(key) + "." + name;
        regions_.set(path, region_of(k.source()));
        if (!valid_free_key(name, names_are_env_vars)) {
            diags_.error(region_of(k.source()),
                         names_are_env_vars
                             ? "'" + name + "' is not a valid environment variable name (^[A-Za-z_][A-Za-z0-9_]*$)"
                             : "'" + name + "' is not a valid name (letters, digits, '_', '-', '.')");
            ok = false;
            continue;
        }
        if (!v.is_string()) {
            diags_.error(region_of(v.source()),
                         "'" + path + "' must be a string, found " + toml_type_name(v),
                         v.is_integer() || v.is_boolean() ? "quote the value: " + name + " = \"...\"" : "");
            ok = false;
            continue;
        }
        const std::string& s = v.as_string()->get();
        if (!check_string(path, v, s)) { ok = false; continue; }
        auto same = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == name; });
        if (same != out.end()) same->second = s;
        else out.emplace_back(name, s);
    }
    return ok;
}

bool TomlReader::read_choice(const std::string& key, std::string& out, const std::vector<const char*>& choices) {
    std::string text;
    if (!read(key, text)) return false;
    if (std::find_if(choices.begin(), choices.end(), [&](const char* c) { return text == c; }) != choices.end()) {
        out = text;
        return true;
    }
    bad_choice(key, text, {choices.begin(), choices.end()});
    return false;
}

void TomlReader::bad_choice(const std::string& key, const std::string& value,
                            const std::vector<std::string>& choices) {
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "'" : ", '") + c + "'";
    diags_.error(regions_.touch(child(key)),
                 "'" + child(key) + "' must be one of " + list + ", found '" + value + "'",
                 did_you_mean(value, choices));
}

const toml::table* TomlReader::table(const std::string& key) {
    const toml::node* n = fetch(key);
    if (!n) return nullptr;
    if (!n->is_table()) { type_error(key, *n, "a table"); return nullptr; }
    return n->as_table();
}

const toml::array* TomlReader::array(const std::string& key) {
    const toml::node* n = fetch(key);
    if (!n) return nullptr;
    if (!n->is_array()) { type_error(key, *n, "an array"); return nullptr; }
    return n->as_array();
}

void TomlReader::report_unknown_keys() {
    const auto known = known_keys(schema_path_);
    for (const auto& [k, v] : table_) {
        std::string name(k.str());
        if (std::find(seen_.begin(), seen_.end(), name) != seen_.end()) continue;
        std::string where = schema_path_.empty() ? "at the top level"
                            : schema_path_ == "stacks[]" ? "in [[stacks]]"
                            : "in [" + schema_path_ + "]";
        bool is_known = std::find(known.begin(), known.end(), name) != known.end();
        if (is_known) continue;  // known but not applicable here (reported by the loader)
        diags_.error(region_of(k.source()), "unknown key '" + name + "' " + where,
                     did_you_mean(name, known));
    }
}

}  // namespace sitegen

// ---- dotted-key depth, before toml++ sees the text ----------------------------------------

namespace sitegen {

namespace {

// Just enough of TOML's lexical structure to find keys: strings, comments, headers, key/value
// pairs, arrays and inline tables. Invalid text is skipped forward (toml++ reports it).
class KeyDepthScanner {
public:
    KeyDepthScanner(std::string_view text, int limit, std::vector<TomlHeader>* headers = nullptr)
        : text_(text), limit_(limit), headers_(headers) {}
    std::optional<size_t> run();  // byte offset of the first part beyond the limit

private:
    // What the text at the cursor is expected to be.
    enum class Mode { line, key, value, after_value };
    struct Open {
        bool is_array;  // else an inline table
        int depth;      // tables opened by dotted keys above its values or keys
    };

    bool at_end() const { return pos_ >= text_.size(); }
    char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
    bool starts_with(std::string_view s) const { return !at_end() && text_.substr(pos_, s.size()) == s; }
    void skip_blanks() { while (peek() == ' ' || peek() == '\t' || peek() == '\r') ++pos_; }
    void skip_comment() {
        const size_t eol = at_end() ? pos_ : text_.find('\n', pos_);
        if (eol != std::string_view::npos) pos_ = eol;
        else pos_ = text_.size();
    }
    void skip_string();
    static bool is_bare_key_char(char c) {
        const auto u = static_cast<unsigned char>(c);
        // (ASCII by hand: std::isalnum is a library call per byte of a megabyte site file.)
        const bool alnum = (u >= '0' && u <= '9') || ((u | 0x20) >= 'a' && (u | 0x20) <= 'z');
        return alnum || c == '_' || c == '-' || u >= 0x80;  // (non-ASCII: unreleased TOML 1.1 keys)
    }
    static bool ends_scalar(char c) { return c == '\0' || std::strchr(",]}#\n \t\r", c); }
    // A (dotted) key. `tables` counts the parts that open a table: all of a header's, all but
    // the last of a key's. False when base + tables goes beyond the limit (pos_ at that part).
    bool scan_key(int base, bool is_header, int& tables);

    void line();
    void key();
    void value();
    void after_value();

    // The first key part of a header whose key starts at `at`: bare, or "" (quoted).
    TomlHeader header_at(size_t line, bool array, size_t at) const;

    std::string_view text_;
    int limit_;
    std::vector<TomlHeader>* headers_;
    size_t pos_ = 0;
    Mode mode_ = Mode::line;
    int header_depth_ = 0;
    int value_depth_ = 0;  // tables opened by dotted keys above the value being scanned
    std::vector<Open> open_;
    bool too_deep_ = false;
};

void KeyDepthScanner::skip_string() {
    const char quote = peek();
    const bool basic = quote == '"';
    const std::string_view triple = basic ? R"(""")" : "'''";
    if (starts_with(triple)) {
        pos_ += 3;
        while (!at_end() && !starts_with(triple)) pos_ += (basic && peek() == '\\') ? 2 : 1;
        pos_ += 3;
        while (peek() == quote) ++pos_;  // up to two quotes may end the content
        return;
    }
    // (A megabyte of site file is mostly such strings: a pointer walk, not a checked peek per byte.)
    const char* const begin = text_.data();
    const char* const end = begin + text_.size();
    const char* p = begin + pos_ + 1;
    if (basic)
        while (p < end && *p != '"' && *p != '\n') p += *p == '\\' && p + 1 < end ? 2 : 1;
    else
        while (p < end && *p != '\'' && *p != '\n') ++p;
    pos_ = static_cast<size_t>(p - begin);
    if (peek() == quote) ++pos_;
}

bool KeyDepthScanner::scan_key(int base, bool is_header, int& tables) {
    tables = 0;
    for (;;) {
        skip_blanks();
        const size_t part = pos_;
        if (peek() == '"' || peek() == '\'') skip_string();
        else while (is_bare_key_char(peek())) ++pos_;
        if (pos_ == part) return true;  // not a key: toml++ reports it
        skip_blanks();
        const bool dotted = peek() == '.';
        if ((dotted || is_header) && base + ++tables > limit_) {
            pos_ = part;
            return false;
        }
        if (!dotted) return true;
        ++pos_;
    }
}

// Start of a top-level line: blank, comment, [table] / [[array]] header or key = value.
void KeyDepthScanner::line() {
    const size_t start = pos_;  // (each call starts where a line does: see the modes' ends)
    skip_blanks();
    if (peek() == '\n') { ++pos_; return; }
    if (peek() == '#') { skip_comment(); return; }
    if (peek() != '[') { mode_ = Mode::key; return; }
    const bool array = starts_with("[[");
    pos_ += array ? 2 : 1;
    const size_t key = pos_;
    if (!scan_key(0, true, header_depth_)) { too_deep_ = true; return; }
    if (headers_) headers_->push_back(header_at(start, array, key));
    skip_comment();  // the closing bracket(s) and an optional comment
}

TomlHeader KeyDepthScanner::header_at(size_t line, bool array, size_t at) const {
    TomlHeader h;
    h.offset = line;
    h.array = array;
    while (at < text_.size() && (text_[at] == ' ' || text_[at] == '\t')) ++at;
    size_t end = at;
    while (end < text_.size() && is_bare_key_char(text_[end])) ++end;
    h.first = text_.substr(at, end - at);
    while (end < text_.size() && (text_[end] == ' ' || text_[end] == '\t')) ++end;
    h.dotted = end < text_.size() && text_[end] == '.';
    return h;
}

void KeyDepthScanner::key() {
    const int base = open_.empty() ? header_depth_ : open_.back().depth;
    skip_blanks();
    if (!open_.empty() && peek() == '}') { mode_ = Mode::after_value; return; }  // {} or a trailing comma
    int tables = 0;
    if (!scan_key(base, false, tables)) { too_deep_ = true; return; }
    skip_blanks();
    if (peek() != '=') {  // not a key/value pair: toml++ reports it; resume on the next line
        skip_comment();
        open_.clear();
        mode_ = Mode::line;
        return;
    }
    ++pos_;
    value_depth_ = base + tables;
    mode_ = Mode::value;
}

void KeyDepthScanner::value() {
    skip_blanks();
    const char c = peek();
    const bool in_array = !open_.empty() && open_.back().is_array;
    if (in_array && c == '#') { skip_comment(); return; }
    if (in_array && c == '\n') { ++pos_; return; }  // arrays span lines
    if (in_array && c == ']') { mode_ = Mode::after_value; return; }  // [] or a trailing comma
    if (c == '[') { ++pos_; open_.push_back({true, value_depth_}); return; }
    if (c == '{') { ++pos_; open_.push_back({false, value_depth_}); mode_ = Mode::key; return; }
    if (c == '"' || c == '\'') skip_string();
    else while (!at_end() && !ends_scalar(peek())) ++pos_;  // number, date, boolean
    mode_ = Mode::after_value;
}

void KeyDepthScanner::after_value() {
    skip_blanks();
    const char c = peek();
    if (c == '#') { skip_comment(); return; }
    if (open_.empty()) {  // a top-level value ends with its line
        skip_comment();
        mode_ = Mode::line;
        return;
    }
    ++pos_;
    if (c == '\n') return;  // arrays span lines
    if (c == ']' || c == '}') {
        open_.pop_back();
        return;
    }
    if (c == ',') {
        value_depth_ = open_.back().depth;
        mode_ = open_.back().is_array ? Mode::value : Mode::key;
    }
}

std::optional<size_t> KeyDepthScanner::run() {
    if (starts_with("\xEF\xBB\xBF")) pos_ = 3;  // a UTF-8 byte order mark, which toml++ skips too
    while (!at_end() && !too_deep_) {
        switch (mode_) {
            case Mode::line: line(); break;
            case Mode::key: key(); break;
            case Mode::value: value(); break;
            case Mode::after_value: after_value(); break;
        }
    }
    if (too_deep_) return pos_;
    return std::nullopt;
}

}  // namespace

namespace {

OverDeepKey position_of(std::string_view text, size_t offset) {
    OverDeepKey at{1, 1};
    for (size_t i = 0; i < offset; ++i) {
        if (text[i] == '\n') {
            ++at.line;
            at.column = 1;
        } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
            ++at.column;  // UTF-8 continuation bytes belong to the code point before them
        }
    }
    return at;
}

}  // namespace

std::optional<OverDeepKey> find_over_deep_key(std::string_view text, int limit) {
    const auto offset = KeyDepthScanner(text, limit).run();
    if (!offset) return std::nullopt;
    return position_of(text, *offset);
}

TomlOutline outline_toml(std::string_view text, int limit) {
    TomlOutline out;
    if (const auto offset = KeyDepthScanner(text, limit, &out.headers).run()) {
        out.too_deep = position_of(text, *offset);
        out.headers.clear();
    }
    return out;
}

}  // namespace sitegen
