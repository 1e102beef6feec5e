// The site-file reference, derived from the field tables (fields.h): every table, key, type and
// meaning. The loader takes its known-key lists (for did-you-mean) from here and `sitegen schema`
// prints docs/site-schema.md.
#pragma once

#include <string>
#include <vector>

namespace sitegen {

struct KeySchema {
    std::string key;
    std::string type;         // "string", "integer", "boolean", "array of strings", ...
    std::string requirement;  // "required", "optional", or the default, e.g. "default 29500"
    std::string meaning;
};

struct TableSchema {
    std::string path;  // "site", "hardware", "stacks[]", "stacks[].python", "" = top level
    std::string meaning;
    bool free_keys = false;  // keys are names chosen by the user (env tables)
    std::vector<KeySchema> keys;
};

const std::vector<TableSchema>& site_schema();
const TableSchema* find_table_schema(const std::string& path);
std::vector<std::string> known_keys(const std::string& table_path);

// docs/site-schema.md, generated so the reference cannot drift from the loader.
std::string schema_markdown();

}  // namespace sitegen
