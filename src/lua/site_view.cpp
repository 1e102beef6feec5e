// The site as rules see it: every model field under its TOML key, enums by name, read-only.
#include "lua/site_view.h"

#include <algorithm>

#include "site/fields.h"
#include "site/schema.h"

namespace sitegen {

namespace {

// ---- the site as a Lua value tree -------------------------------------------------------
// Each table is built from its field rows (site/fields.h), in row order. Paths are left empty
// (derived from the key, see LuaValue) except where a value stands for another key: name/value
// pairs, stacks' derived and alias fields.

LuaValue str(const std::string& v, std::string path = {}) { return LuaValue::make_string(v, std::move(path)); }
LuaValue num(long long v) { return LuaValue::make_int(v); }
LuaValue flag(bool v, std::string path = {}) { return LuaValue::make_bool(v, std::move(path)); }

LuaValue strings(const std::vector<std::string>& values) {
    LuaValue t = LuaValue::make_table();
    t.items.reserve(values.size());
    for (const auto& v : values) t.push(str(v));
    return t;
}

LuaValue ints(const std::vector<int>& values) {
    LuaValue t = LuaValue::make_table();
    t.items.reserve(values.size());
    for (int v : values) t.push(num(v));
    return t;
}

// Name/value pairs in order ({name=, value=} items, each at path.NAME) plus a by-name lookup.
LuaValue pairs_table(const EnvList& env, const std::string& path) {
    LuaValue t = LuaValue::make_table();
    t.items.reserve(env.size());  // (no regrowth moving the values: a big site has thousands of these)
    t.fields.reserve(env.size());
    for (const auto& [name, value] : env) {
        std::string p = path + "." + name;
        LuaValue pair = LuaValue::make_table(p);
        pair.fields.reserve(2);
        pair.add("name", str(name, p)).add("value", str(value, std::move(p)));
        t.push(std::move(pair));
    }
    for (const auto& [name, value] : env) t.add(name, str(value));
    return t;
}

// `needs` (read_log.h): what to build of a model table (nullptr: all of it).
// A scalar's path: none (namespace scope, not a function's static: a sandbox's child, forked
// while another thread makes its first view, must not find it half made).
const std::string kNoPath;

template <FieldTable T>
LuaValue table_view(const T& object, const std::string& path, const ViewNeeds* needs);

// One value, by its type; `path` is its dotted model path. Only model tables use `needs`.
LuaValue value_view(const std::string& v, const std::string&, const ViewNeeds*) { return str(v); }
LuaValue value_view(int v, const std::string&, const ViewNeeds*) { return num(v); }
LuaValue value_view(bool v, const std::string&, const ViewNeeds*) { return flag(v); }
LuaValue value_view(const std::vector<std::string>& v, const std::string&, const ViewNeeds*) { return strings(v); }
LuaValue value_view(const std::vector<int>& v, const std::string&, const ViewNeeds*) { return ints(v); }
LuaValue value_view(const EnvList& v, const std::string& path, const ViewNeeds*) { return pairs_table(v, path); }

LuaValue value_view(const CoreLists& lists, const std::string&, const ViewNeeds*) {
    LuaValue t = LuaValue::make_table();
    t.items.reserve(lists.size());
    for (const auto& list : lists) t.push(ints(list));
    return t;
}

template <typename E>
    requires std::is_enum_v<E>
LuaValue value_view(E v, const std::string&, const ViewNeeds*) { return str(to_string(v)); }

template <FieldTable C>
LuaValue value_view(const C& child, const std::string& path, const ViewNeeds* needs) {
    return table_view(child, path, needs);
}

template <FieldTable C>
LuaValue value_view(const std::vector<C>& entries, const std::string& path, const ViewNeeds* needs) {
    LuaValue t = LuaValue::make_table();
    t.items.reserve(entries.size());
    const ViewNeeds* items = needs ? needs->field("[]") : nullptr;  // (every item is there: #t counts them)
    if (needs && !items) items = &ViewNeeds::nothing_below();
    for (size_t i = 0; i < entries.size(); ++i) t.push(table_view(entries[i], path + "." + std::to_string(i), items));
    return t;
}

// ---- fields the view has beyond the rows ------------------------------------------------

// Fields added before the rows, after the row `key`, and after the rows; rows shown later
// (moved_to_end). Each table is built in its final order: a stack's ~50 fields are not moved
// about per stack.
template <typename T>
void add_view_first(LuaValue&, const T&) {}
template <typename T>
void add_view_after(LuaValue&, const T&, const std::string&, const std::string&) {}
template <typename T>
bool moved_to_end(const T&, const std::string&) { return false; }
template <typename T>
void add_view_extras(LuaValue&, const T&, const std::string&) {}

void add_view_first(LuaValue& t, const Container& c) {
    t.add("enabled", flag(c.enabled));  // whether [container] exists
}

// Derived names and the `is_default` alias. venv_extension goes after env, where rules iterating
// with pairs() have always met it (the view kept its historical order when the rows took over).
void add_view_after(LuaValue& t, const Stack& s, const std::string& key, const std::string& p) {
    if (key == "default") t.add("is_default", flag(s.is_default, p + ".default"));
}

bool moved_to_end(const Stack&, const std::string& key) { return key == "venv_extension"; }

void add_view_extras(LuaValue& t, const Stack& s, const std::string& p) {
    t.add("venv_extension", flag(s.venv_extension));
    t.add("module_version", str(s.module_version(), p + ".version"))
        .add("module_full_name", str(s.module_full_name(), p));
}

void add_view_extras(LuaValue& t, const Site& site, const std::string&) {
    t.add("files", strings(site.files));  // the site file and every file it extends
}

template <FieldTable T>
LuaValue table_view(const T& object, const std::string& path, const ViewNeeds* needs) {
    LuaValue t = LuaValue::make_table();
    // The rows and the extras: no regrowth moving fields. (With `needs`, those it names and the
    // extras: a stack has ~50 rows, and a rules' memo check of 2,000 stacks reads a few of each.)
    const size_t rows = fields_of<T>().size() + 3;
    t.fields.reserve(needs && !needs->all ? std::min(rows, needs->fields.size() + 4) : rows);
    add_view_first(t, object);
    for (const Field<T>& row : fields_of<T>()) {
        if (moved_to_end(object, row.key)) continue;
        // (A row left out still has its add_view_after: a derived field may be read alone.)
        const ViewNeeds* row_needs = needs ? needs->field(row.key) : nullptr;
        if (needs && !row_needs) {
            add_view_after(t, object, row.key, path);
            continue;
        }
        std::visit([&](auto member) {
            using V = member_value_t<decltype(member)>;
            // Only tables use their path (a scalar's is derived from its key when asked): no
            // string built per scalar of every stack.
            constexpr bool uses_path = region_rule_for<V>() == RegionRule::nested || region_rule_for<V>() == RegionRule::names;
            if constexpr (!std::is_same_v<decltype(member), ExtendsPaths>)  // shown as `files`
                t.add(row.key, value_view(object.*member, uses_path ? child_path(path, row.key) : kNoPath, row_needs));
        }, row.member);
        add_view_after(t, object, row.key, path);
    }
    add_view_extras(t, object, path);
    return t;
}

// ---- the reference table ----------------------------------------------------------------

// The schema table of a view path: "site.stacks[i].python" -> "stacks[].python".
std::string schema_path(std::string view_path) {
    view_path = view_path == "site" ? "" : view_path.substr(5);
    for (size_t at; (at = view_path.find("[i]")) != std::string::npos;) view_path.replace(at, 3, "[]");
    return view_path;
}

// A field's entry: its name, and an enumeration's or choice's names as they read in Lua.
std::string field_entry(const TableSchema* schema, const std::string& key) {
    std::string entry = "`" + key + "`";
    if (!schema) return entry;
    for (const auto& k : schema->keys) {
        if (k.key != key || !k.type.starts_with("`")) continue;
        std::string names;  // "`a` | `b`" -> "`"a"`/`"b"`"
        for (size_t at = 0; at < k.type.size();) {
            const size_t open = k.type.find('`', at), close = k.type.find('`', open + 1);
            if (open == std::string::npos || close == std::string::npos) break;
            names += (names.empty() ? "`\"" : "`/`\"") + k.type.substr(open + 1, close - open - 1) + "\"";
            at = close + 1;
        }
        entry += " (" + names + "`)";
    }
    return entry;
}

bool is_table_of_tables(const LuaValue& v) {
    return v.kind == LuaValue::Kind::table && !v.items.empty() && v.items.front().kind == LuaValue::Kind::table &&
           !v.items.front().fields.empty();
}

// One row per table with named fields, depth first after its parent's row.
void reference_rows(const LuaValue& table, const std::string& path, std::string& out) {
    const TableSchema* schema = find_table_schema(schema_path(path));
    std::string fields;
    for (const auto& f : table.fields) fields += (fields.empty() ? "" : ", ") + field_entry(schema, f.key);
    out += "| `" + path + "` | " + fields + " |\n";
    for (const auto& f : table.fields) {
        if (f.value.kind == LuaValue::Kind::table && !f.value.fields.empty() && f.value.items.empty())
            reference_rows(f.value, path + "." + f.key, out);
        else if (is_table_of_tables(f.value))
            reference_rows(f.value.items.front(), path + "." + f.key + "[i]", out);
    }
}

}  // namespace

LuaValue site_to_lua(const Site& site, const ViewNeeds* needs) { return table_view(site, "", needs); }

std::string site_view_reference() {
    Site sample;  // one stack and one bind, so that their tables have rows
    sample.container.enabled = true;
    sample.container.binds.push_back(Bind{"/scratch", "", ""});
    sample.stacks.push_back(Stack{});
    std::string out = "| table | fields |\n| --- | --- |\n";
    reference_rows(site_to_lua(sample), "site", out);
    return out;
}

}  // namespace sitegen
