// Quoting writers: exact outputs, and round trips through the real lua5.4, bash and python3.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>

#include "text/quote.h"
#include "test_support.h"

using namespace sitegen;

namespace {

using namespace sitegen::test;

// Values that break naive quoting in at least one target language. Valid UTF-8, no NUL.
std::vector<std::string> injection_corpus(const std::string& marker) {
    std::vector<std::string> corpus = {
        "", "plain", "\"", "'", "\\", "\\\\'", "'\\''", "$(touch " + marker + ")",
        "`touch " + marker + "`", "${x}", "$x", "$((1+1))", "; touch " + marker,
        "& touch " + marker + " &", "| touch " + marker, "\ntouch " + marker + "\n",
        "%(installdir)s", "100%", "%%", "%s %d", "]]", "]=]", "[[", "--[[ x ]]", "a]]..os.exit(3)..[[b",
        "\"..os.exit(3)..\"", "'; import os; os._exit(3); '", "\"\"\"", "'''",
        "line1\nline2\r\nline3", "\ttab\t", "-n", "--help", "-", "has space", "a:b", "a&b",
        "~", "~root", "a=b", "*", "?", "[a-z]", "{a,b}", "!!", "#comment", "\\n", "\\x41", "\\101",
        "\\u0041", "Jülich", "日本語", "emoji 😀", "\u2028\u2029", "\u202eevil", "\ufeffbom",
        "\u0085nel", "\x7f",
    };
    std::string controls;
    for (char c = 1; c < 0x20; ++c) controls += c;
    corpus.push_back(controls);
    corpus.push_back(std::string("\x01") + "2");  // an escape followed by a digit
    std::string long_text;
    while (long_text.size() < 10 * 1024) long_text += "aé€😀'\"\\%$`\n\x01]]";
    corpus.push_back(long_text);
    return corpus;
}

// The corpus plus bytes only Lua and bash can carry: invalid UTF-8 and every byte 1..255.
std::vector<std::string> byte_corpus(const std::string& marker) {
    auto corpus = injection_corpus(marker);
    corpus.push_back("\xff\xfe\x80\xc0\xaf");
    std::string all_bytes;
    while (all_bytes.size() < 10 * 1024)
        for (int b = 1; b < 256; ++b) all_bytes += static_cast<char>(b);
    corpus.push_back(all_bytes);
    return corpus;
}

}  // namespace

TEST_CASE("lua_string escapes to printable ASCII", "[quote]") {
    CHECK(lua_string("") == "\"\"");
    CHECK(lua_string("a\"b\\c\n\r\t") == R"("a\"b\\c\n\r\t")");
    CHECK(lua_string(std::string("\x01") + "2") == R"("\0012")");
    CHECK(lua_string(std::string(1, '\0')) == R"("\000")");
    CHECK(lua_string("é") == R"("\195\169")");
    CHECK(lua_string("]]") == "\"]]\"");
    for (const auto& s : byte_corpus("/nonexistent")) {
        const std::string literal = lua_string(s);
        CHECK(std::all_of(literal.begin(), literal.end(), [](char c) { return c >= 0x20 && c < 0x7f; }));
    }
}

TEST_CASE("bash_word is bare only for safe words", "[quote]") {
    CHECK(bash_word("nid001") == "nid001");
    CHECK(bash_word("/appl/local/a-b_c.sif") == "/appl/local/a-b_c.sif");
    CHECK(bash_word("-x") == "-x");
    CHECK(bash_word("list:2-4,5") == "list:2-4,5");
    CHECK(bash_word("") == "''");
    CHECK(bash_word("a b") == "'a b'");
    CHECK(bash_word("~") == "'~'");
    CHECK(bash_word("it's") == R"('it'\''s')");
    CHECK(bash_word("$HOME") == "'$HOME'");
    CHECK_THROWS_AS(bash_word(std::string("a\0b", 3)), std::invalid_argument);
    CHECK(bash_double_quoted("a\"$b`c\\d'e") == R"(a\"\$b\`c\\d'e)");
    CHECK_THROWS_AS(bash_double_quoted(std::string("a\0b", 3)), std::invalid_argument);
}

TEST_CASE("python_string writes repr-like literals", "[quote]") {
    CHECK(python_string("") == "''");
    CHECK(python_string("a'b\"c\\") == R"('a\'b"c\\')");
    CHECK(python_string("\n\r\t\x01\x7f") == R"('\n\r\t\x01\x7f')");
    CHECK(python_string(std::string(1, '\0')) == R"('\x00')");
    CHECK(python_string("Jülich") == "'Jülich'");
    CHECK(python_string("\u202e\u2028") == R"('\u202e\u2028')");
    CHECK(python_string("%(installdir)s 50%") == "'%(installdir)s 50%'");
    CHECK(python_string("%(installdir)s 50%", true) == "'%%(installdir)s 50%%'");
    CHECK_THROWS_AS(python_string("\xff"), std::invalid_argument);
    CHECK_THROWS_AS(python_string("\xed\xa0\x80"), std::invalid_argument);  // a surrogate
}

TEST_CASE("text validity checks", "[quote]") {
    CHECK(is_valid_utf8_without_nul(""));
    CHECK(is_valid_utf8_without_nul("aé€😀"));
    CHECK_FALSE(is_valid_utf8_without_nul(std::string("a\0", 2)));
    CHECK_FALSE(is_valid_utf8_without_nul("\xc0\xaf"));          // overlong '/'
    CHECK_FALSE(is_valid_utf8_without_nul("\xed\xa0\x80"));      // surrogate
    CHECK_FALSE(is_valid_utf8_without_nul("\xf4\x90\x80\x80"));  // past U+10FFFF
    CHECK_FALSE(is_valid_utf8_without_nul("\xe2\x82"));          // truncated
    CHECK_FALSE(is_valid_utf8_without_nul("\x80"));
    CHECK(is_valid_var_name("NCCL_SOCKET_IFNAME"));
    CHECK(is_valid_var_name("_x1"));
    for (const char* bad : {"", "1X", "A-B", "A B", "A=B", "é", "$A"}) CHECK_FALSE(is_valid_var_name(bad));
}

TEST_CASE("lua5.4 reads every lua_string back byte for byte", "[quote]") {
    require_tool("lua5.4");
    TempDir dir("quote");
    auto corpus = byte_corpus(dir.file("MARKER"));
    corpus.push_back(std::string("a\0b\0", 4) + "1");
    std::string script = "local dir = " + lua_string(dir.str()) + "\n" +
                         "local function put(i, s) local f = assert(io.open(dir .. '/lua.' .. i, 'wb'));"
                         " f:write(s); f:close() end\n";
    for (size_t i = 0; i < corpus.size(); ++i)
        script += "put(" + std::to_string(i) + ", " + lua_string(corpus[i]) + ")\n";
    write_file(dir.file("roundtrip.lua"), script);
    REQUIRE(run("lua5.4 " + dir.file("roundtrip.lua")) == 0);
    for (size_t i = 0; i < corpus.size(); ++i) {
        INFO("corpus entry " << i);
        CHECK(read_file(dir.file("lua." + std::to_string(i))) == corpus[i]);
    }
}

TEST_CASE("bash reads every bash_word and bash_double_quoted back and runs nothing", "[quote]") {
    require_tool("bash");
    TempDir dir("quote");
    const auto corpus = byte_corpus(dir.file("MARKER"));
    std::string script = "set -euo pipefail\ncd " + bash_word(dir.str()) + "\n";
    for (size_t i = 0; i < corpus.size(); ++i) {
        const std::string n = std::to_string(i);
        script += "printf %s " + bash_word(corpus[i]) + " > word." + n + "\n";
        script += "value=" + bash_word(corpus[i]) + "; printf %s \"$value\" > assign." + n + "\n";
        script += "export VALUE=" + bash_word(corpus[i]) + "; printf %s \"$VALUE\" > export." + n + "\n";
        script += "printf %s \"" + bash_double_quoted(corpus[i]) + "\" > dq." + n + "\n";
    }
    write_file(dir.file("roundtrip.sh"), script);
    REQUIRE(run("bash " + dir.file("roundtrip.sh")) == 0);
    CHECK_FALSE(std::filesystem::exists(dir.file("MARKER")));
    for (size_t i = 0; i < corpus.size(); ++i) {
        INFO("corpus entry " << i);
        for (const char* context : {"word.", "assign.", "export.", "dq."})
            CHECK(read_file(dir.file(context + std::to_string(i))) == corpus[i]);
    }
}

TEST_CASE("bash_word_expanding_braced_vars expands ${NAME} only, the rest is literal", "[quote]") {
    CHECK(bash_word_expanding_braced_vars("cc -shared") == "'cc -shared'");
    CHECK(bash_word_expanding_braced_vars("${NVHPC_ROOT}/cuda/12.4") == "\"${NVHPC_ROOT}/cuda/12.4\"");
    CHECK(bash_word_expanding_braced_vars("a${X}b$Y`c`${1}${") == "\"a${X}b\\$Y\\`c\\`\\${1}\\${\"");
    require_tool("bash");
    TempDir dir("quote");
    const auto corpus = byte_corpus(dir.file("MARKER"));
    std::string script = "cd " + bash_word(dir.str()) + "\nexport SG_A='x y' SG_B='$(touch " +
                         bash_word(dir.file("MARKER")) + ")'\n";
    for (size_t i = 0; i < corpus.size(); ++i) {
        const std::string n = std::to_string(i);
        script += "v=" + bash_word_expanding_braced_vars(corpus[i]) + "; printf %s \"$v\" > plain." + n + "\n";
        script += "v=" + bash_word_expanding_braced_vars("${SG_A}" + corpus[i] + "${SG_B}") +
                  "; printf %s \"$v\" > refs." + n + "\n";
    }
    write_file(dir.file("roundtrip.sh"), script);
    REQUIRE(run("bash " + dir.file("roundtrip.sh")) == 0);
    CHECK_FALSE(std::filesystem::exists(dir.file("MARKER")));
    for (size_t i = 0; i < corpus.size(); ++i) {
        INFO("corpus entry " << i);
        // A corpus entry may itself hold a ${NAME}: it expands (to "" when unset), as documented.
        if (corpus[i].find("${") != std::string::npos) continue;
        CHECK(read_file(dir.file("plain." + std::to_string(i))) == corpus[i]);
        CHECK(read_file(dir.file("refs." + std::to_string(i))) == "x y" + corpus[i] + "$(touch " +
                                                                     bash_word(dir.file("MARKER")) + ")");
    }
}

TEST_CASE("python3 parses every python_string back, EasyBuild templating included", "[quote]") {
    require_tool("python3");
    TempDir dir("quote");
    const auto corpus = injection_corpus(dir.file("MARKER"));
    auto with_nul = corpus;
    with_nul.push_back(std::string("a\0b", 3));
    std::string literals = "values = [\n";
    for (const auto& s : with_nul) literals += "    " + python_string(s) + ",\n";
    literals += "]\neb_values = [\n";
    for (const auto& s : corpus) literals += "    " + python_string(s, true) + ",\n";
    literals += "]\n";
    write_file(dir.file("literals.py"), literals);
    // literal_eval proves the literals are data; exec (how EasyBuild reads easyconfigs)
    // must agree with it; `% template_values` is what EasyBuild applies to string values.
    write_file(dir.file("roundtrip.py"), R"PY(import ast, sys
d = sys.argv[1]
source = open(d + '/literals.py', encoding='utf-8').read()
namespace = {}
exec(compile(source, 'literals.py', 'exec'), namespace)
for node in ast.parse(source).body:
    name = node.targets[0].id
    values = ast.literal_eval(node.value)
    assert values == namespace[name], name
    for i, v in enumerate(values):
        if name == 'eb_values':
            v = v % {'installdir': '/TEMPLATE-EXPANDED'}
        with open('%s/%s.%d' % (d, name, i), 'wb') as f:
            f.write(v.encode('utf-8'))
)PY");
    REQUIRE(run("python3 " + dir.file("roundtrip.py") + " " + bash_word(dir.str())) == 0);
    CHECK_FALSE(std::filesystem::exists(dir.file("MARKER")));
    for (size_t i = 0; i < with_nul.size(); ++i) {
        INFO("corpus entry " << i);
        CHECK(read_file(dir.file("values." + std::to_string(i))) == with_nul[i]);
    }
    for (size_t i = 0; i < corpus.size(); ++i) {
        INFO("EasyBuild corpus entry " << i);
        CHECK(read_file(dir.file("eb_values." + std::to_string(i))) == corpus[i]);
    }
}

TEST_CASE("lua_string, bash_word and bash_double_quoted agree with per-byte references on random bytes", "[quote]") {
    // The writers copy unescaped runs whole; these references escape one byte at a time.
    const auto lua_reference = [](const std::string& s) {
        std::string out = "\"";
        for (unsigned char c : s) {
            if (c == '\\') out += "\\\\";
            else if (c == '"') out += "\\\"";
            else if (c == '\n') out += "\\n";
            else if (c == '\r') out += "\\r";
            else if (c == '\t') out += "\\t";
            else if (c < 0x20 || c >= 0x7f) out += "\\" + std::string(c < 100 ? "0" : "") + std::string(c < 10 ? "0" : "") + std::to_string(c);
            else out += static_cast<char>(c);
        }
        return out + "\"";
    };
    const auto double_quoted_reference = [](const std::string& s) {
        std::string out;
        for (char c : s) out += std::string(c == '\\' || c == '"' || c == '$' || c == '`' ? "\\" : "") + c;
        return out;
    };
    const auto single_quoted_reference = [](const std::string& s) {
        std::string out = "'";
        for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
        return out + "'";
    };
    uint32_t state = 12345;
    const auto next = [&] { return state = state * 1103515245u + 12345u, (state >> 16) & 0x7fff; };
    const std::string alphabet = "ab/'\"\\$`%\n\r\t\x01\x7f\xc3\xa9\xff ";
    for (int i = 0; i < 5000; ++i) {
        std::string s;
        for (unsigned n = next() % 30; n > 0; --n)
            s += next() % 4 == 0 ? static_cast<char>(1 + next() % 255) : alphabet[next() % alphabet.size()];
        INFO("input " << i);
        CHECK(lua_string(s) == lua_reference(s));
        CHECK(bash_double_quoted(s) == double_quoted_reference(s));
        const bool bare = !s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") ==
                                            std::string::npos;
        CHECK(bash_word(s) == (bare ? s : single_quoted_reference(s)));
    }
}

TEST_CASE("a heredoc delimiter is no whole line of its content", "[quote]") {
    CHECK(heredoc_delimiter("echo hi\n") == "SITEGEN_EOF");
    // As part of a line it is harmless: only a whole line ends a heredoc.
    CHECK(heredoc_delimiter("x SITEGEN_EOF\nSITEGEN_EOFx\n") == "SITEGEN_EOF");
    CHECK(heredoc_delimiter("a\nSITEGEN_EOF\nb") == "SITEGEN_EOF_");
    CHECK(heredoc_delimiter("SITEGEN_EOF") == "SITEGEN_EOF_");
    CHECK(heredoc_delimiter("SITEGEN_EOF_\nSITEGEN_EOF\n") == "SITEGEN_EOF__");
    CHECK(heredoc_delimiter("") == "SITEGEN_EOF");
    // Found inside a longer line first, then as a whole line further on.
    CHECK(heredoc_delimiter("SITEGEN_EOF_SITEGEN_EOF\nSITEGEN_EOF") == "SITEGEN_EOF_");
    CHECK(heredoc_delimiter("aSITEGEN_EOF\nSITEGEN_EOF_\n") == "SITEGEN_EOF");
}
