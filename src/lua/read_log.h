// read_log: what Lua code read of a read-only value tree, over every item index at once, and a
// digest of those parts of a tree (so findings can be reused while what produced them is unchanged).
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lua/lua_sandbox.h"

namespace sitegen {

struct Site;

// Reads are kept "generalised": a path names a table by the keys from the root, with every
// array index written as "[]" (stacks[].name stands for the name of every stack). A log is a
// superset of what the code saw: while every read gives what it gave before, the code (which
// sees nothing else of the outside) does what it did before.
//   F<path>.<key>  the named field <key> of the tables at <path> (absent reads as nil)
//   I<path>        the items of the tables at <path>: their number and each value (#t, t[i], ipairs)
//   A<path>        everything in the tables at <path>, items and fields (pairs, next)
//   D<path>        whether the dotted site path <path> was written in the site files (declared())
// Keys are escaped ('.', '[', '\\' and control bytes as \HH), so a line is unambiguous.
struct ReadLog {
    const LuaValue* root = nullptr;  // the tree's root: path ""
    std::set<std::string> reads;
    bool broken = false;  // a read could not be recorded (no memory): the log says nothing

    // `child` (a table) was reached from `parent` by item index or by the field `key`.
    void reached_item(const LuaValue* parent, const LuaValue* child);
    void reached_field(const LuaValue* parent, const LuaValue* child, std::string_view key);
    void field(const LuaValue* node, std::string_view key);
    void items(const LuaValue* node);
    void all(const LuaValue* node);
    void declared(std::string_view site_path);

private:
    std::unordered_map<const LuaValue*, std::string> paths_;  // tables reached -> their path
    const std::string* path_of(const LuaValue* node);
    void reached(const LuaValue* parent, const LuaValue* child, std::string_view key, bool item);
    void add(char kind, const LuaValue* node, std::string_view key = {}, bool with_key = false);
};

// The parts of a tree that a set of reads looks at, as a tree of keys from the root: the tables
// the reads walk through and the fields they read ("[]": every item's table), and the tables a
// read takes whole (`all`: an A line). A view made with these needs (site_to_lua) gives every
// one of those reads what the whole view gives it, so reads_digest over it is the same.
struct NeededField;
struct ViewNeeds {
    bool all = false;
    std::vector<NeededField> fields;
    // The needs of `key`'s value: nullptr when not needed (nor reached through `all`).
    const ViewNeeds* field(std::string_view key) const;
    // A value needed for itself alone (an item counted, a field an A line reads): none of its fields.
    static const ViewNeeds& nothing_below();
};
struct NeededField {
    std::string key;  // (unescaped)
    ViewNeeds needs;
};

// What the read lines `reads` (a ReadLog's) need of a tree; lines that do not parse need nothing
// (reads_digest writes them as values of their own).
ViewNeeds view_needs(const std::set<std::string>& reads);

// The escaped form of one key (as a ReadLog path writes it, without the leading '.').
std::string escape_key(std::string_view key);

// The SHA-256 (hex) of what `reads` read: each line's values in `tree`, and for D lines
// whether `site` declares the path. Two trees with the same digest give every read the same
// value. A line that does not parse counts as a value of its own.
std::string reads_digest(const LuaValue& tree, const Site& site, const std::set<std::string>& reads);

}  // namespace sitegen
