// The site file's keys as data: one row per TOML key, walked by the loader, `sitegen schema`
// and the rules' Lua view, so adding a key means adding a model member and one row.
#pragma once

#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "site/model.h"

namespace sitegen {

using CoreLists = std::vector<std::vector<int>>;  // Hardware::device_cores

// The `extends` key: an array of strings with no model member; the loader applies the files
// it names before the rest of the file (their paths end up in Site::files).
struct ExtendsPaths {
    bool operator==(const ExtendsPaths&) const = default;
};

// The model member a row fills. Its type selects how the key is read, documented and shown:
// scalars, arrays, enumerations (names from enum_names<E>()), `CoreLists` (core ranges such
// as "0-3,8-11"), `EnvList` (a table of strings), a struct (a nested table with rows of its
// own, see fields_of) or a vector of structs (an array of tables).
template <typename T>
using Member = std::variant<ExtendsPaths, std::string T::*, int T::*, bool T::*,
                            std::vector<std::string> T::*, std::vector<int> T::*, CoreLists T::*,
                            EnvList T::*, Scheduler T::*, Launcher T::*, GpuVendor T::*,
                            CollectiveLib T::*, ContainerRuntime T::*, PythonLayout T::*,
                            BindingStyle T::*, SiteInfo T::*, Hardware T::*, Binding T::*, Batch T::*,
                            Collectives T::*, Container T::*, Python T::*, std::vector<Bind> T::*,
                            std::vector<Stack> T::*, VisibilityPolicy T::*, RankStarter T::*,
                            ModuleSystem T::*, ProfileWhen T::*, std::vector<ProfileVar> T::*,
                            std::vector<Profile> T::*, std::vector<InstallStep> T::*, DriverGate T::*>;

// Which names a table of strings accepts as keys.
enum class KeyNames { env_vars, free };

// One TOML key. Where the loader records its source region follows from the member's type
// (see RegionRule); everything else a driver needs is here.
template <typename T>
struct Field {
    const char* key;
    Member<T> member;
    int min = 0;  // integers and arrays of integers: inclusive bounds
    int max = 0;
    std::vector<const char*> choices;  // a string (or each value of a table of strings) must be one of these
    KeyNames key_names = KeyNames::env_vars;  // tables of strings
    bool absolute_path = false;  // shown as "string (absolute path)"; check.cpp enforces it
    const char* same_keys_as = nullptr;  // a table overriding another's keys: its reference rows say "see [that]"
    const char* requirement = "optional";  // reference text: "required", "optional", "default 1"
    const char* meaning = "";
    const char* section = nullptr;  // tables: the sentence under their own reference heading
};

// The rows of each model struct that is a TOML table, in file/reference order. Deleted for any
// other type, so that FieldTable below tells tables from values.
template <typename T>
const std::vector<Field<T>>& fields_of() = delete;
template <> const std::vector<Field<Site>>& fields_of();  // the top level
template <> const std::vector<Field<SiteInfo>>& fields_of();
template <> const std::vector<Field<Hardware>>& fields_of();
template <> const std::vector<Field<Binding>>& fields_of();
template <> const std::vector<Field<Batch>>& fields_of();
template <> const std::vector<Field<Collectives>>& fields_of();
template <> const std::vector<Field<Container>>& fields_of();
template <> const std::vector<Field<Bind>>& fields_of();
template <> const std::vector<Field<Python>>& fields_of();
template <> const std::vector<Field<Stack>>& fields_of();
template <> const std::vector<Field<Profile>>& fields_of();
template <> const std::vector<Field<ProfileVar>>& fields_of();
template <> const std::vector<Field<ProfileWhen>>& fields_of();
template <> const std::vector<Field<InstallStep>>& fields_of();

// The sentence under the top level's reference heading (every other table's is its row's `section`).
extern const char* const kTopLevelSection;

// Model structs with rows of their own: a member of such a type is a nested table.
template <typename T>
concept FieldTable = requires { fields_of<T>(); };

// The type of the value a member pointer designates (`int` for `int Hardware::*`).
template <typename M>
struct member_value;
template <typename T, typename V>
struct member_value<V T::*> {
    using type = V;
};
template <>
struct member_value<ExtendsPaths> {
    using type = ExtendsPaths;
};
template <typename M>
using member_value_t = typename member_value<M>::type;

template <typename V>
struct is_table_array : std::false_type {};
template <FieldTable C>
struct is_table_array<std::vector<C>> : std::true_type {};

// Where the loader records source regions for a key (model path P of the key):
// `key` at P; `items` at P and P.<index> for each array item; `names` at P and P.<name> for
// each entry of a table of strings; `nested` at P and below, following the child's rows.
enum class RegionRule { key, items, names, nested };

template <typename V>
constexpr RegionRule region_rule_for() {
    if constexpr (FieldTable<V> || is_table_array<V>::value) return RegionRule::nested;
    else if constexpr (std::is_same_v<V, EnvList>) return RegionRule::names;
    else if constexpr (std::is_same_v<V, std::vector<std::string>> || std::is_same_v<V, std::vector<int>> ||
                       std::is_same_v<V, CoreLists> || std::is_same_v<V, ExtendsPaths>) return RegionRule::items;
    else return RegionRule::key;
}

template <typename T>
RegionRule region_rule(const Field<T>& row) {
    return std::visit(
        [](auto member) {
            return region_rule_for<member_value_t<decltype(member)>>();
        },
        row.member);
}

// "key" under the table at `path` ("" = top level), as Site::regions and the Lua view name it.
inline std::string child_path(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
}

}  // namespace sitegen
