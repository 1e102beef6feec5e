// What Lua code read of a read-only tree, generalised over item indices, and its digest.
#include "lua/read_log.h"

#include <charconv>
#include <cstdio>
#include <vector>

#include "out/sha256.h"
#include "site/model.h"
#include "site/model_text.h"

namespace sitegen {

namespace {

constexpr std::string_view kItem = "[]";

bool needs_escape(unsigned char c) { return c == '.' || c == '[' || c == '\\' || c < 0x20 || c == 0x7f; }

// One step of a path: an item (any index) or a named field.
struct Step {
    bool item = false;
    std::string key;
};

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The steps of an escaped path ("" is the root); false when it is not one a ReadLog writes.
bool parse_path(std::string_view path, std::vector<Step>& steps) {
    size_t at = 0;
    while (at < path.size()) {
        if (path.substr(at, kItem.size()) == kItem) {
            steps.push_back({true, {}});
            at += kItem.size();
            continue;
        }
        if (path[at] != '.') return false;
        Step s;
        for (++at; at < path.size() && path[at] != '.' && path[at] != '['; ++at) {
            if (path[at] != '\\') {
                s.key += path[at];
                continue;
            }
            if (at + 2 >= path.size()) return false;
            const int hi = hex_digit(path[at + 1]), lo = hex_digit(path[at + 2]);
            if (hi < 0 || lo < 0) return false;
            s.key += static_cast<char>(hi * 16 + lo);
            at += 2;
        }
        steps.push_back(std::move(s));
    }
    return true;
}

const LuaValue* field_of(const LuaValue& node, std::string_view key) {
    for (const auto& f : node.fields)
        if (f.key == key) return &f.value;
    return nullptr;
}

void put_number(std::string& out, long long n) {
    char buf[24];
    const auto end = std::to_chars(buf, buf + sizeof buf, n).ptr;
    out.append(buf, end);
}

// Appends what a script can learn of `v` from its parent: its kind, a scalar's value, and the
// path pathof() gives it (a table's contents are read through its own lines).
void put_value(std::string& out, const LuaValue* v) {
    if (!v) {
        out += "n;";
        return;
    }
    switch (v->kind) {
        case LuaValue::Kind::nil: out += 'n'; break;
        case LuaValue::Kind::boolean: out += v->flag ? "b1" : "b0"; break;
        case LuaValue::Kind::integer:
            out += 'i';
            put_number(out, v->number);
            break;
        case LuaValue::Kind::string:
            out += 's';
            append_prefixed(out, v->text);
            break;
        case LuaValue::Kind::table: out += 't'; break;
    }
    out += '@';
    append_prefixed(out, v->path);
    out += ';';
}

// Calls at(node) for every table the steps from `i` on reach from `node`, in order; what was
// not there is written to `out` so that a missing table differs from an empty one.
template <typename At>
void walk(const LuaValue& node, const std::vector<Step>& steps, size_t i, std::string& out, At&& at) {
    if (node.kind != LuaValue::Kind::table) {
        out += "-;";
        return;
    }
    if (i == steps.size()) return at(node);
    if (steps[i].item) {
        out += '[';
        put_number(out, static_cast<long long>(node.items.size()));
        out += ';';
        for (const auto& item : node.items) walk(item, steps, i + 1, out, at);
        return;
    }
    const LuaValue* child = field_of(node, steps[i].key);
    if (!child) {
        out += "-;";
        return;
    }
    walk(*child, steps, i + 1, out, at);
}

// The values one line reads in `tree` (and `site`), appended to `out`.
void put_read(std::string& out, const LuaValue& tree, const Site& site, const std::string& line) {
    std::vector<Step> steps;
    const char kind = line.empty() ? '?' : line[0];
    const std::string_view rest = std::string_view(line).substr(line.empty() ? 0 : 1);
    if (kind == 'D') {
        std::vector<Step> one;
        if (!parse_path("." + std::string(rest), one) || one.size() != 1 || one[0].item) {
            out += "?;";
            return;
        }
        out += site.regions.count(one[0].key) ? "1;" : "0;";
        return;
    }
    if ((kind != 'F' && kind != 'I' && kind != 'A') || !parse_path(rest, steps) ||
        (kind == 'F' && (steps.empty() || steps.back().item))) {
        out += "?;";
        return;
    }
    std::string key;
    if (kind == 'F') {
        key = std::move(steps.back().key);
        steps.pop_back();
    }
    walk(tree, steps, 0, out, [&](const LuaValue& node) {
        if (kind == 'F') return put_value(out, field_of(node, key));
        put_number(out, static_cast<long long>(node.items.size()));
        out += ';';
        for (const auto& item : node.items) put_value(out, &item);
        if (kind != 'A') return;
        put_number(out, static_cast<long long>(node.fields.size()));
        out += ';';
        for (const auto& f : node.fields) {
            append_prefixed(out, f.key);
            put_value(out, &f.value);
        }
    });
}

}  // namespace

const ViewNeeds& ViewNeeds::nothing_below() {
    static const ViewNeeds nothing;
    return nothing;
}

const ViewNeeds* ViewNeeds::field(std::string_view key) const {
    for (const auto& f : fields)
        if (f.key == key) return &f.needs;
    return all ? &nothing_below() : nullptr;
}

ViewNeeds view_needs(const std::set<std::string>& reads) {
    ViewNeeds root;
    const auto child = [](ViewNeeds& node, const std::string& key) -> ViewNeeds& {
        for (auto& f : node.fields)
            if (f.key == key) return f.needs;
        return node.fields.push_back({key, {}}), node.fields.back().needs;
    };
    for (const auto& line : reads) {
        std::vector<Step> steps;
        const char kind = line.empty() ? '?' : line[0];
        if ((kind != 'F' && kind != 'I' && kind != 'A') || !parse_path(std::string_view(line).substr(1), steps)) continue;
        ViewNeeds* node = &root;
        for (const Step& s : steps) node = &child(*node, s.item ? std::string(kItem) : s.key);
        if (kind == 'A') node->all = true;
    }
    return root;
}

std::string escape_key(std::string_view key) {
    std::string out;
    out.reserve(key.size());
    for (const char c : key) {
        if (!needs_escape(static_cast<unsigned char>(c))) {
            out += c;
            continue;
        }
        char buf[4];
        std::snprintf(buf, sizeof buf, "\\%02X", static_cast<unsigned char>(c));
        out += buf;
    }
    return out;
}

namespace {
const std::string kRootPath;  // (not a function's static: see prime_statics, pipeline.h)
}  // namespace

const std::string* ReadLog::path_of(const LuaValue* node) {
    if (node == root) return &kRootPath;
    const auto it = paths_.find(node);
    return it == paths_.end() ? nullptr : &it->second;
}

void ReadLog::reached(const LuaValue* parent, const LuaValue* child, std::string_view step, bool item) {
    if (broken || paths_.count(child) || child == root) return;
    try {
        const std::string* p = path_of(parent);
        if (!p) { broken = true; return; }
        paths_.emplace(child, item ? *p + std::string(kItem) : *p + "." + escape_key(step));
    } catch (...) {
        broken = true;
    }
}

void ReadLog::reached_item(const LuaValue* parent, const LuaValue* child) { reached(parent, child, {}, true); }

void ReadLog::reached_field(const LuaValue* parent, const LuaValue* child, std::string_view key) {
    reached(parent, child, key, false);
}

void ReadLog::add(char kind, const LuaValue* node, std::string_view key, bool with_key) {
    if (broken) return;
    try {
        const std::string* p = path_of(node);
        if (!p) {  // (a table the log did not see reached: it cannot say where it is)
            broken = true;
            return;
        }
        std::string line;
        line.reserve(p->size() + key.size() + 2);
        line += kind;
        line += *p;
        if (with_key) line += "." + escape_key(key);
        reads.insert(std::move(line));
    } catch (...) {
        broken = true;
    }
}

void ReadLog::field(const LuaValue* node, std::string_view key) { add('F', node, key, true); }
void ReadLog::items(const LuaValue* node) { add('I', node); }
void ReadLog::all(const LuaValue* node) { add('A', node); }

void ReadLog::declared(std::string_view site_path) {
    if (broken) return;
    try {
        reads.insert("D" + escape_key(site_path));
    } catch (...) {
        broken = true;
    }
}

std::string reads_digest(const LuaValue& tree, const Site& site, const std::set<std::string>& reads) {
    Sha256 h;
    std::string out;
    for (const auto& line : reads) {
        out.clear();
        append_prefixed(out, line);
        out += '=';
        put_read(out, tree, site, line);
        out += '\n';
        h.update(out);
    }
    return h.hex();
}

}  // namespace sitegen
