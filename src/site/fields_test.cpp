// Every row of the field tables reaches the loader, the reference and the rules' Lua view.
#include <catch2/catch.hpp>

#include <regex>

#include <cctype>
#include <functional>
#include <map>
#include <set>

#include "lua/site_view.h"
#include "site/fields.h"
#include "site/load.h"
#include "site/schema.h"

using namespace sitegen;

namespace {

const std::string kSiteFile = "sites/t/site.toml";

// ---- values as text, the same way for the model, the view and the samples ---------------

std::string shown(const std::string& v) { return "\"" + v + "\""; }
std::string shown(int v) { return std::to_string(v); }
std::string shown(bool v) { return v ? "true" : "false"; }

template <typename E>
    requires std::is_enum_v<E>
std::string shown(E v) { return shown(to_string(v)); }

template <typename V>
std::string shown(const std::vector<V>& values) {
    std::string out;
    for (const auto& v : values) out += (out.empty() ? "" : ", ") + shown(v);
    return "[" + out + "]";
}

std::string shown(const EnvList& entries) {
    std::string out;
    for (const auto& [name, value] : entries) out += (out.empty() ? "" : ", ") + name + " = " + shown(value);
    return "{ " + out + " }";
}

// A view value: a table shows its named fields when it has any (name/value tables also list
// their pairs as items, checked separately), else its items.
std::string shown(const LuaValue& v) {
    switch (v.kind) {
        case LuaValue::Kind::nil: return "nil";
        case LuaValue::Kind::boolean: return shown(v.flag);
        case LuaValue::Kind::integer: return std::to_string(v.number);
        case LuaValue::Kind::string: return shown(v.text);
        case LuaValue::Kind::table: break;
    }
    std::string out;
    if (!v.fields.empty()) {
        for (const auto& f : v.fields) out += (out.empty() ? "" : ", ") + f.key + " = " + shown(f.value);
        return "{ " + out + " }";
    }
    for (const auto& item : v.items) out += (out.empty() ? "" : ", ") + shown(item);
    return "[" + out + "]";
}

// ---- a non-default value for each kind of row --------------------------------------------

struct Sample {
    std::string toml;   // as written in the site file
    std::string shown;  // as the model and the view show it
};

Sample same(const std::string& toml) { return {toml, toml}; }

template <typename T, typename V>
Sample sample_for(const Field<T>& row, const V& default_value, const std::string& tag) {
    if constexpr (std::is_same_v<V, std::string>) {
        if (row.choices.empty()) return same(shown("sample " + tag));
        for (auto it = row.choices.rbegin(); it != row.choices.rend(); ++it)
            if (*it != default_value) return same(shown(std::string(*it)));
        return same(shown(std::string(row.choices.front())));  // a single choice cannot differ
    } else if constexpr (std::is_same_v<V, int>) {
        for (int candidate : {row.min + 1, row.max, row.min})
            if (candidate != default_value) return same(shown(candidate));
        return same(shown(row.min));
    } else if constexpr (std::is_same_v<V, bool>) {
        return same(shown(!default_value));
    } else if constexpr (std::is_enum_v<V>) {
        const auto names = enum_names<V>();
        for (auto it = names.rbegin(); it != names.rend(); ++it)
            if (it->value != default_value) return same(shown(std::string(it->name)));
        return same(shown(std::string(names.front().name)));
    } else if constexpr (std::is_same_v<V, std::vector<std::string>> || std::is_same_v<V, ExtendsPaths>) {
        return same("[" + shown("sample a " + tag) + ", " + shown("sample b " + tag) + "]");
    } else if constexpr (std::is_same_v<V, std::vector<int>>) {
        return same("[" + shown(row.min + 1) + ", " + shown(row.min + 2) + "]");
    } else if constexpr (std::is_same_v<V, CoreLists>) {
        return {R"(["0-1", "2-3"])", "[[0, 1], [2, 3]]"};
    } else if constexpr (std::is_same_v<V, EnvList>) {
        return same("{ SAMPLE_NAME = " + shown(row.choices.empty() ? "sample " + tag : std::string(row.choices.back())) + " }");
    } else {
        static_assert(FieldTable<V> || is_table_array<V>::value, "a sample for every value type");
        return {};
    }
}

// ---- where a row sits, and documents that set one key there ------------------------------

struct Place {
    std::string schema_path;  // "stacks[].python"
    std::string model_path;   // "stacks.0.python"
    // A whole site file that sets `key = value` in this table (and what the table needs around it).
    std::function<std::string(const std::string& key, const std::string& value)> put;
};

// Keys every entry of an array of tables carries, as a real file would (a bind needs `host`).
template <FieldTable C>
std::vector<std::pair<std::string, std::string>> required_keys() {
    std::vector<std::pair<std::string, std::string>> out;
    for (const Field<C>& row : fields_of<C>())
        if (std::string(row.requirement) == "required")
            std::visit([&](auto member) {
                using V = member_value_t<decltype(member)>;
                if constexpr (!FieldTable<V> && !is_table_array<V>::value && !std::is_same_v<V, ExtendsPaths>)
                    out.emplace_back(row.key, sample_for(row, V{}, "context").toml);
            }, row.member);
    return out;
}

Place nested_place(const Place& outer, const std::string& key) {
    return {child_path(outer.schema_path, key), child_path(outer.model_path, key),
            [outer, key](const std::string& k, const std::string& v) { return outer.put(key, "{ " + k + " = " + v + " }"); }};
}

template <FieldTable C>
Place entry_place(const Place& outer, const std::string& key) {
    const auto context = required_keys<C>();
    return {child_path(outer.schema_path, key) + "[]", child_path(outer.model_path, key) + ".0",
            [outer, key, context](const std::string& k, const std::string& v) {
                std::string body;
                for (const auto& [ck, cv] : context)
                    if (ck != k) body += ck + " = " + cv + ", ";
                return outer.put(key, "[ { " + body + k + " = " + v + " } ]");
            }};
}

// ---- loading, the reference and the view ------------------------------------------------

Site load_document(const std::string& document, MemoryFs& fs) {
    fs.files[kSiteFile] = {document, false};
    // The files a document names exist beside it (python.environment_file is read at load).
    static const std::regex kNamedFile(R"re(environment_file = "([^"]*)")re");
    for (std::sregex_iterator it(document.begin(), document.end(), kNamedFile), end; it != end; ++it)
        fs.files["sites/t/" + (*it)[1].str()] = {"dependencies: []\n", false};
    Site site;
    Diagnostics diags;
    const bool loaded = load_site(fs, "sites", "t", site, diags);
    SourceReader read = [&](const std::string& path, std::string& out) {
        std::string error;
        return fs.read(path, out, error);
    };
    INFO(document << render_all(diags, read));
    REQUIRE(loaded);
    return site;
}

// The reference's section for a table ("" = top level), up to the next heading.
std::string reference_section(const std::string& schema_path) {
    static const std::string markdown = schema_markdown();
    const std::string heading = "\n## `" + (schema_path.empty() ? "(top level)" : "[" + schema_path + "]") + "`\n";
    const size_t start = markdown.find(heading);
    if (start == std::string::npos) return "";
    return markdown.substr(start, markdown.find("\n## ", start + heading.size()) - start);
}

// The view's value at a dotted model path ("stacks.0.python.layout"), or nil.
const LuaValue* view_at(const LuaValue& root, const std::string& path) {
    const LuaValue* at = &root;
    size_t start = 0;
    while (at && start <= path.size()) {
        const size_t dot = std::min(path.find('.', start), path.size());
        const std::string part = path.substr(start, dot - start);
        const LuaValue* next = nullptr;
        if (!part.empty() && std::isdigit(static_cast<unsigned char>(part[0]))) {
            const size_t i = std::stoul(part);
            if (i < at->items.size()) next = &at->items[i];
        } else {
            for (const auto& f : at->fields)
                if (f.key == part) next = &f.value;
        }
        at = next;
        start = dot + 1;
    }
    return at;
}

void check_regions(const Site& site, const std::string& path, RegionRule rule) {
    auto recorded = [&](const std::string& p) {
        INFO("region of " << p);
        REQUIRE(site.regions.count(p) == 1);
        CHECK(site.regions.at(p).file == kSiteFile);
        CHECK(site.regions.at(p).line >= 1);
    };
    recorded(path);
    if (rule == RegionRule::items) {
        recorded(path + ".0");
        recorded(path + ".1");
    }
    if (rule == RegionRule::names) recorded(path + ".SAMPLE_NAME");
}

// A key holding a value: set it to a sample, load, and find it in the model, the regions and the view.
template <typename T, typename V>
void check_value_row(const Field<T>& row, V T::*member, const Place& place,
                     const std::function<const T*(const Site&)>& get) {
    const std::string path = child_path(place.model_path, row.key);
    INFO("row " << path);
    const Sample sample = sample_for(row, T{}.*member, path);
    if (row.choices.size() != 1) CHECK(sample.shown != shown(T{}.*member));  // a non-default value
    MemoryFs fs;
    const Site site = load_document(place.put(row.key, sample.toml), fs);
    const T* object = get(site);
    REQUIRE(object);
    CHECK(shown(object->*member) == sample.shown);
    check_regions(site, path, region_rule(row));
    const LuaValue view = site_to_lua(site);
    const LuaValue* in_view = view_at(view, path);
    REQUIRE(in_view);
    CHECK(shown(*in_view) == sample.shown);
    if constexpr (std::is_same_v<V, EnvList>) {  // pairs in order too, each at path.NAME
        REQUIRE(in_view->items.size() == 1);
        CHECK(in_view->items[0].path == path + ".SAMPLE_NAME");
    }
}

// `extends`: the named file is applied and listed in the view's `files`; it has no view of its own.
void check_extends_row(const Field<Site>& row) {
    INFO("row extends");
    MemoryFs fs;
    fs.files["sites/t/frag.toml"] = {"", false};
    const Site site = load_document(std::string(row.key) + " = [\"frag.toml\"]\n", fs);
    CHECK(site.files == std::vector<std::string>{kSiteFile, "sites/t/frag.toml"});
    check_regions(site, row.key, RegionRule::key);
    check_regions(site, std::string(row.key) + ".0", RegionRule::key);
    const LuaValue view = site_to_lua(site);
    CHECK(view_at(view, row.key) == nullptr);
    REQUIRE(view_at(view, "files"));
    CHECK(shown(*view_at(view, "files")) == R"(["sites/t/site.toml", "sites/t/frag.toml"])");
}

template <FieldTable T>
void check_table(const Place& place, const std::function<const T*(const Site&)>& get);

template <typename T>
void check_row(const Field<T>& row, const Place& place, const std::function<const T*(const Site&)>& get) {
    INFO("table [" << place.schema_path << "] key " << row.key);
    CHECK(reference_section(place.schema_path).find("\n| `" + std::string(row.key) + "` | ") != std::string::npos);
    std::visit([&](auto member) {
        using V = member_value_t<decltype(member)>;
        if constexpr (std::is_same_v<V, ExtendsPaths>) {
            if constexpr (std::is_same_v<T, Site>) check_extends_row(row);
            else FAIL("extends outside the top level");
        } else if constexpr (FieldTable<V>) {
            CHECK_FALSE(reference_section(child_path(place.schema_path, row.key)).empty());
            check_table<V>(nested_place(place, row.key), [get, member](const Site& s) -> const V* {
                const T* parent = get(s);
                return parent ? &(parent->*member) : nullptr;
            });
        } else if constexpr (is_table_array<V>::value) {
            using C = typename V::value_type;
            CHECK_FALSE(reference_section(child_path(place.schema_path, row.key) + "[]").empty());
            check_table<C>(entry_place<C>(place, row.key), [get, member](const Site& s) -> const C* {
                const T* parent = get(s);
                return parent && !(parent->*member).empty() ? &(parent->*member).front() : nullptr;
            });
        } else {
            if constexpr (std::is_same_v<V, EnvList>)
                CHECK_FALSE(reference_section(child_path(place.schema_path, row.key)).empty());
            check_value_row(row, member, place, get);
        }
    }, row.member);
}

template <FieldTable T>
void check_table(const Place& place, const std::function<const T*(const Site&)>& get) {
    for (const Field<T>& row : fields_of<T>()) check_row(row, place, get);
}

// ---- the rows themselves -----------------------------------------------------------------

template <FieldTable T>
void check_rows_are_well_formed(const std::string& table) {
    std::set<std::string> keys;
    for (size_t i = 0; i < fields_of<T>().size(); ++i) {
        const Field<T>& row = fields_of<T>()[i];
        INFO("[" << table << "] " << row.key);
        CHECK(keys.insert(row.key).second);
        CHECK(std::string(row.meaning) != "");
        for (size_t j = 0; j < i; ++j) CHECK_FALSE(fields_of<T>()[j].member == row.member);  // one row per member
        std::visit([&](auto member) {
            using V = member_value_t<decltype(member)>;
            constexpr bool is_table = FieldTable<V> || is_table_array<V>::value || std::is_same_v<V, EnvList>;
            CHECK((row.section != nullptr) == is_table);  // every table has a reference sentence
            if constexpr (std::is_same_v<V, int> || std::is_same_v<V, std::vector<int>>) CHECK(row.min + 2 <= row.max);
            else CHECK(row.min == row.max);
            if constexpr (!std::is_same_v<V, std::string> && !std::is_same_v<V, EnvList>) CHECK(row.choices.empty());
            if constexpr (!FieldTable<V>) CHECK(row.same_keys_as == nullptr);
            if constexpr (!std::is_same_v<V, std::string>) CHECK_FALSE(row.absolute_path);
        }, row.member);
    }
}

// Keys the view has beyond the rows (site_view.cpp's extras), by table.
const std::map<std::string, std::set<std::string>> kViewExtras = {
    {"", {"files"}},
    {"container", {"enabled"}},
    {"stacks[]", {"is_default", "module_version", "module_full_name"}},
};

// Every view table holds its rows' keys and the documented extras, nothing else.
template <FieldTable T>
void check_view_keys(const LuaValue& view, const std::string& schema_path) {
    INFO("view of [" << schema_path << "]");
    std::set<std::string> expected, actual;
    for (const auto& f : view.fields) actual.insert(f.key);
    if (auto it = kViewExtras.find(schema_path); it != kViewExtras.end()) expected = it->second;
    for (const Field<T>& row : fields_of<T>())
        std::visit([&](auto member) {
            using V = member_value_t<decltype(member)>;
            if constexpr (std::is_same_v<V, ExtendsPaths>) return;
            else {
                expected.insert(row.key);
                const LuaValue* child = view_at(view, row.key);
                REQUIRE(child);
                if constexpr (FieldTable<V>) check_view_keys<V>(*child, child_path(schema_path, row.key));
                else if constexpr (is_table_array<V>::value)
                    for (const auto& entry : child->items)
                        check_view_keys<typename V::value_type>(entry, child_path(schema_path, row.key) + "[]");
            }
        }, row.member);
    CHECK(actual == expected);
}

}  // namespace

TEST_CASE("every field row loads, is documented and is in the Lua view", "[fields]") {
    check_table<Site>({"", "", [](const std::string& k, const std::string& v) { return k + " = " + v + "\n"; }},
                      [](const Site& s) { return &s; });
}

TEST_CASE("field rows are well formed: unique keys and members, bounds and choices where they apply", "[fields]") {
    check_rows_are_well_formed<Site>("");
    check_rows_are_well_formed<SiteInfo>("site");
    check_rows_are_well_formed<Hardware>("hardware");
    check_rows_are_well_formed<Binding>("binding");
    check_rows_are_well_formed<Batch>("batch");
    check_rows_are_well_formed<Collectives>("collectives");
    check_rows_are_well_formed<Container>("container");
    check_rows_are_well_formed<Bind>("container.binds[]");
    check_rows_are_well_formed<Python>("python");
    check_rows_are_well_formed<Stack>("stacks[]");
    check_rows_are_well_formed<Profile>("profiles[]");
    check_rows_are_well_formed<ProfileVar>("profiles[].vars[]");
    check_rows_are_well_formed<ProfileWhen>("profiles[].vars[].when");
    check_rows_are_well_formed<InstallStep>("stacks[].install[]");
}

TEST_CASE("the Lua view has exactly the rows' keys plus its documented extras", "[fields]") {
    MemoryFs fs;
    const Site site = load_document(
        "container = { binds = [ { host = \"/h\" } ] }\nstacks = [ { name = \"n\" } ]\n", fs);
    check_view_keys<Site>(site_to_lua(site), "");
}

TEST_CASE("the reference's known keys are the rows' keys", "[fields]") {
    CHECK(known_keys("hardware").size() == fields_of<Hardware>().size());
    CHECK(known_keys("stacks[].python") == known_keys("python"));
    CHECK(known_keys("") == std::vector<std::string>{"extends", "site", "hardware", "binding", "batch",
                                                     "collectives", "container", "python", "stacks",
                                                     "profiles"});
}
