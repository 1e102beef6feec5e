// Typed, schema-aware access to one TOML table: records where each key came from and
// reports wrong types and unknown keys (with did-you-mean) instead of ignoring them.
#pragma once

#include <map>
#include <optional>
#include <string_view>
#include <string>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "site/diagnostics.h"
#include "site/model.h"

namespace sitegen {

SourceRegion region_of(const toml::source_region& r);

class TomlReader {
public:
    // `schema_path` names the table in schema.h ("stacks[]"); `model_path` is the dotted path
    // recorded in Site::regions ("stacks.0").
    TomlReader(const toml::table& table, std::string schema_path, std::string model_path,
               Regions& regions, Diagnostics& diags);

    bool has(const std::string& key) const { return table_.contains(key); }
    const toml::node* node(const std::string& key);  // marks key as known

    bool read(const std::string& key, std::string& out);
    bool read(const std::string& key, int& out, int min, int max);
    bool read(const std::string& key, bool& out);
    bool read(const std::string& key, std::vector<std::string>& out);
    bool read(const std::string& key, std::vector<int>& out, int min, int max);
    // A table of string values, in file order; later layers override by name.
    bool read_string_table(const std::string& key, std::vector<std::pair<std::string, std::string>>& out,
                           bool names_are_env_vars);

    // A string naming one of the enumeration's values (enum_names<E>()).
    template <typename E>
    bool read_enum(const std::string& key, E& out) {
        std::string text;
        if (!read(key, text)) return false;
        std::vector<std::string> choices;
        for (const auto& n : enum_names<E>()) {
            if (text == n.name) { out = n.value; return true; }
            choices.push_back(n.name);
        }
        bad_choice(key, text, choices);
        return false;
    }
    // A string that must be one of `choices`.
    bool read_choice(const std::string& key, std::string& out, const std::vector<const char*>& choices);

    // A sub-table (nullptr if absent or of the wrong type, which is reported).
    const toml::table* table(const std::string& key);
    const toml::array* array(const std::string& key);

    // Reports every key that no read/node/table call asked for.
    void report_unknown_keys();

    const std::string& schema_path() const { return schema_path_; }
    const std::string& model_path() const { return model_path_; }
    std::string child(const std::string& key) const {
        return model_path_.empty() ? key : model_path_ + "." + key;
    }
    Diagnostics& diags() { return diags_; }
    Regions& regions() { return regions_; }

private:
    const toml::node* fetch(const std::string& key);
    void type_error(const std::string& key, const toml::node& n, const char* expected);
    void bad_choice(const std::string& key, const std::string& value, const std::vector<std::string>& choices);
    bool check_string(const std::string& path, const toml::node& n, const std::string& s);

    const toml::table& table_;
    std::string schema_path_;
    std::string model_path_;
    Regions& regions_;
    Diagnostics& diags_;
    std::vector<std::string> seen_;
};

const char* toml_type_name(const toml::node& n);

// toml++ builds one nested table per dotted-key part and frees them recursively: a header
// `[a.a.a...]` tens of thousands deep overflows the stack. Before parsing, the tables that
// dotted notation opens (every part of a header, every part but the last of a key) are added
// up along each path, through the keys of every inline table the path enters, and the first
// part beyond `limit` is returned. Nesting of arrays and inline tables themselves is left to
// toml++'s own limit of 256, so a path is at most limit + 256 tables deep. Linear, no recursion.
struct OverDeepKey {
    int line = 0;    // 1-based
    int column = 0;  // 1-based, in code points as toml++ counts them
};
std::optional<OverDeepKey> find_over_deep_key(std::string_view text, int limit);

// A top-level `[table]` or `[[array]]` header: the offset of its line, and its first key
// part when that part is a bare key ("" when quoted), with whether more parts follow.
struct TomlHeader {
    size_t offset = 0;
    bool array = false;
    std::string_view first;
    bool dotted = false;
};
// find_over_deep_key's pass, also listing the top-level headers (toml_pieces.h splits at
// them); `headers` is complete only when no key is too deep.
struct TomlOutline {
    std::optional<OverDeepKey> too_deep;
    std::vector<TomlHeader> headers;
};
TomlOutline outline_toml(std::string_view text, int limit);

}  // namespace sitegen
