// TomlReader: typed reads with source regions, type errors and unknown-key suggestions.
#include "site/toml_reader.h"

#include <algorithm>
#include <cctype>

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
                       std::map<std::string, SourceRegion>& regions, Diagnostics& diags)
    : table_(table), schema_path_(std::move(schema_path)), model_path_(std::move(model_path)),
      regions_(regions), diags_(diags) {}

const toml::node* TomlReader::fetch(const std::string& key) {
    seen_.push_back(key);
    const toml::node* n = table_.get(key);
    if (n) regions_[child(key)] = region_of(n->source());
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
        regions_[path] = region_of(item.source());
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
        regions_[path] = region_of(item.source());
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
        regions_[path] = region_of(k.source());
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
    diags_.error(regions_[child(key)],
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
