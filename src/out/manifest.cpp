// Manifest and build-state text, and the site's digest text walked from the field table.
#include "out/manifest.h"

#include <sstream>
#include <type_traits>
#include <utility>
#include <variant>

#include "site/fields.h"

namespace sitegen {

namespace {

constexpr const char* kStateHeader =
    "# sitegen build state v1: not part of the output tree; a rebuild skips stacks whose key and files are unchanged\n";

template <typename V> struct is_vector : std::false_type {};
template <typename V> struct is_vector<std::vector<V>> : std::true_type {};
template <typename V> struct is_pair : std::false_type {};
template <typename A, typename B> struct is_pair<std::pair<A, B>> : std::true_type {};

// Length-prefixed, so no two different values give the same text.
void put(std::string& out, const std::string& s) {
    out += std::to_string(s.size());
    out += ':';
    out += s;
}

template <typename T>
void put_table(std::string& out, const T& object, bool with_stacks);

template <typename V>
void put_value(std::string& out, const V& v) {
    if constexpr (std::is_same_v<V, std::string>) {
        put(out, v);
    } else if constexpr (std::is_same_v<V, bool>) {
        out += v ? 'T' : 'F';
    } else if constexpr (std::is_same_v<V, int>) {
        out += 'i' + std::to_string(v) + ';';
    } else if constexpr (std::is_enum_v<V>) {
        put(out, enum_names<V>()[static_cast<size_t>(v)].name);
    } else if constexpr (FieldTable<V>) {
        put_table(out, v, true);
    } else if constexpr (is_pair<V>::value) {
        put_value(out, v.first);
        put_value(out, v.second);
    } else if constexpr (is_vector<V>::value) {
        out += '[' + std::to_string(v.size()) + ';';
        for (const auto& item : v) put_value(out, item);
        out += ']';
    } else {
        static_assert(std::is_same_v<V, ExtendsPaths>, "a field type the build key does not cover");
    }
}

template <typename T>
void put_table(std::string& out, const T& object, bool with_stacks) {
    out += '(';
    for (const auto& row : fields_of<T>())
        std::visit(
            [&](auto member) {
                using M = decltype(member);
                if constexpr (!std::is_same_v<M, ExtendsPaths>) {  // its files' values are in the model
                    using V = member_value_t<M>;
                    if constexpr (std::is_same_v<V, std::vector<Stack>>)
                        if (!with_stacks) return;
                    put(out, row.key);
                    put_value(out, object.*member);
                }
            },
            row.member);
    out += ')';
}

}  // namespace

TreeSpec parse_manifest(const std::string& text) {
    TreeSpec out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        auto a = line.find(' ');
        auto b = a == std::string::npos ? a : line.find(' ', a + 1);
        if (b == std::string::npos) continue;
        out[line.substr(b + 1)] = {line.substr(0, a), line.substr(a + 1, b - a - 1) == "755" ? 0755u : 0644u};
    }
    return out;
}

std::string state_text(const BuildState& state) {
    std::string out = kStateHeader;
    for (const auto& [root, s] : state.manifests)
        out += "manifest " + std::to_string(s.size) + " " + std::to_string(s.mtime_ns) + " " + std::to_string(s.ino) +
               " " + root + "\n";
    for (const auto& [id, record] : state.stacks) {
        out += "stack " + record.key + (record.rebuilt ? " rebuilt " : " kept ") + id + "\n";
        for (const auto& path : record.files) {
            const auto it = state.files.find(path);
            if (it == state.files.end()) continue;
            const FileStat& s = it->second;
            out += "file " + std::to_string(s.size) + " " + std::to_string(s.mtime_ns) + " " + std::to_string(s.ino) +
                   " " + path + "\n";
        }
    }
    return out;
}

bool parse_state(const std::string& text, BuildState& state) {
    state = {};
    if (text.compare(0, std::char_traits<char>::length(kStateHeader), kStateHeader) != 0) return false;
    std::istringstream in(text.substr(std::char_traits<char>::length(kStateHeader)));
    std::string line;
    BuildState::StackRecord* current = nullptr;
    while (std::getline(in, line)) {
        std::istringstream words(line);
        std::string kind;
        words >> kind;
        if (kind == "manifest") {
            FileStat s;
            std::string root;
            if (!(words >> s.size >> s.mtime_ns >> s.ino)) { state = {}; return false; }
            words.get();
            std::getline(words, root);
            state.manifests[root] = s;
        } else if (kind == "stack") {
            std::string key, how, id;
            words >> key >> how;
            words.get();
            std::getline(words, id);
            current = &state.stacks[id];
            current->key = key;
            current->rebuilt = how == "rebuilt";
        } else if (kind == "file" && current) {
            FileStat s;
            std::string path;
            if (!(words >> s.size >> s.mtime_ns >> s.ino)) { state = {}; return false; }
            words.get();
            std::getline(words, path);
            current->files.push_back(path);
            state.files[path] = s;
        } else {
            state = {};
            return false;
        }
    }
    return true;
}

std::string state_path(const std::string& dir, const std::string& site_name) { return dir + "/" + site_name; }

std::string site_wide_text(const Site& site) {
    std::string out;
    put_table(out, site, false);
    return out;
}

std::string stack_text(const Stack& stack) {
    std::string out;
    put_table(out, stack, true);
    return out;
}

}  // namespace sitegen
