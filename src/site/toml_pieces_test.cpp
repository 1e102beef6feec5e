// toml_pieces: a file parsed in pieces gives one parse's table, source positions and errors.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "site/load.h"
#include "site/toml_pieces.h"

using namespace sitegen;

namespace {

// Every piece as small as it can be, several threads.
const TomlPieces kSmallest{0, 1, 3, false};

// "ok" and the table, or the error with its position, as one parse or the pieces give them.
struct Outcome {
    toml::table root;
    std::string error;
};

Outcome parse_with(std::string_view text, bool pieces) {
    Outcome out;
    try {
        out.root = pieces ? parse_in_pieces(text, "site.toml", outline_toml(text, kMaxDottedKeyDepth), kSmallest)
                          : toml::parse(text, std::string_view("site.toml"));
    } catch (const toml::parse_error& e) {
        std::ostringstream s;
        s << *e.source().path << ":" << e.source().begin.line << ":" << e.source().begin.column << ": "
          << e.description();
        out.error = s.str();
    }
    return out;
}

// Where each node of `n` begins, in a walk of the tree ("key@line:col" lines).
void positions(const toml::node& n, const std::string& key, std::string& out) {
    out += key + "@" + std::to_string(n.source().begin.line) + ":" + std::to_string(n.source().begin.column) + "\n";
    if (const toml::table* t = n.as_table())
        for (const auto& [k, v] : *t) positions(v, key + "." + std::string(k.str()), out);
    else if (const toml::array* a = n.as_array())
        for (size_t i = 0; i < a->size(); ++i) positions(*a->get(i), key + "." + std::to_string(i), out);
}

// The pieces give what one parse gives: the same error at the same place, or an equal table
// whose every node begins where one parse's does.
void check_same(std::string_view text) {
    const Outcome whole = parse_with(text, false), pieces = parse_with(text, true);
    CHECK(pieces.error == whole.error);
    if (!whole.error.empty() || !pieces.error.empty()) return;
    CHECK(pieces.root == whole.root);
    std::string a, b;
    positions(whole.root, "", a);
    positions(pieces.root, "", b);
    CHECK(b == a);
}

// A site head and `n` stacks with what a splitter could take for a header: `[[stacks]]` and
// `[` at the start of lines inside multi-line strings and arrays, comments, sub-tables.
std::string site(int n, const std::string& after = {}) {
    std::string s = "# head\n[site]\nname = \"x\"\nnotes = \"\"\"\n[[stacks]]\nname = 'not one'\n\"\"\"\n"
                    "[hardware]\ndevice_cores = [\n[\"0-7\"],\n  \"8-15\"]\n";
    for (int i = 0; i < n; ++i) {
        s += i % 3 == 0 ? "\n[[stacks]]   # entry\n" : "\n  [[ stacks ]]\n";
        s += "name = \"s" + std::to_string(i) + "\"\nhelp = '''\n[[stacks]]\n'''\nbinds = [\n[\"/a\", \"/b\"],\n]\n";
        s += "[stacks.python]\nversion = \"3.1" + std::to_string(i % 10) + "\"\n";
        s += "[[stacks.components]]\nname = \"c\"\n[[stacks.components]]\nname = \"d\" # [[stacks]]\n";
        s += "[stacks.env]\nA = \"\\\"[[stacks]]\\\"\"\n";
    }
    return s + after;
}

}  // namespace

TEST_CASE("a site file in pieces: one parse's table, with every node where one parse puts it", "[toml_pieces]") {
    for (int n : {0, 1, 2, 7, 40}) {
        INFO(n << " stacks");
        check_same(site(n));
        check_same("\xEF\xBB\xBF" + site(n));  // a byte order mark
        check_same(site(n) + "\r\n");
    }
    // Splits only where every piece parses alone as it would in the file.
    const std::string text = site(40);
    const TomlOutline outline = outline_toml(text, kMaxDottedKeyDepth);
    REQUIRE(std::count_if(outline.headers.begin(), outline.headers.end(),
                          [](const TomlHeader& h) { return h.array && !h.dotted && h.first == "stacks"; }) == 40);
    CHECK(piece_starts(text, outline, kSmallest).size() == 39);
    CHECK(piece_starts(text, outline, {0, text.size() / 4, 2, false}).size() == 3);
    const std::string other = text + "[python]\nversion = \"3.12\"\n";
    CHECK(piece_starts(other, outline_toml(other, kMaxDottedKeyDepth), kSmallest).empty());
}

TEST_CASE("a site file in pieces: one parse's first error, at its line and column", "[toml_pieces]") {
    check_same(site(9) + "\n[[stacks]]\nname = \"late\"\nname = \"twice\"\n");            // a duplicate key, last piece
    check_same(site(4) + "\n[[stacks]]\nname = \"x\n" + site(3).substr(1));             // an unterminated string
    check_same(site(5) + "\n[[stacks]]\nname = '''\nnever closed\n");                    // ... a multi-line one
    check_same(site(3) + "\n[stacks]\nname = \"table\"\n" + site(3).substr(1));         // [stacks] after entries
    check_same("stacks = []\n" + site(6));                                               // a static array first
    check_same("[stacks.x]\na = 1\n" + site(6));                                         // a table first
    check_same(site(6) + "\n[python]\nversion = \"3.12\"\n[[stacks]]\nname = \"after\"\n");  // not under stacks
    check_same(site(6) + "\n[\"stacks\"]\nname = 1\n");                                    // quoted
    check_same(site(6) + "\n[[stacks]]\n[[stacks.components]]\nname = \"c\"\n[stacks.components]\n");
    check_same(site(6) + "\n[[stacks]]\nbinds = [\n  \"/a\",\n");                          // an array left open
}

TEST_CASE("a site file in pieces: every fuzz corpus input parses as one parse does", "[toml_pieces]") {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(SITEGEN_SOURCE_DIR "/tests/fuzz/corpus")) {
        std::ifstream in(e.path(), std::ios::binary);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (outline_toml(text, kMaxDottedKeyDepth).too_deep) continue;  // (never parsed)
        INFO(e.path().string());
        check_same(text);
        ++n;
    }
    CHECK(n > 1000);
}
