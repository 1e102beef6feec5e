// Python writer: hand-computed layouts of long literals, python_string against a plain
// per-character reference, and random multi-line values read back by python3.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.h"
#include "text/python_writer.h"
#include "text/quote.h"

using namespace sitegen;

namespace {

using namespace sitegen::test;

// python_string as its header states it, written the slow obvious way (decode, then one
// code point at a time): the fast one-pass writer must agree byte for byte.
std::string reference_python_string(const std::string& s, bool easybuild_template) {
    std::vector<uint32_t> cps;
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (len == 0 || i + len > s.size()) throw std::invalid_argument("bad");
        uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1f : len == 3 ? c & 0x0f : c & 0x07;
        for (size_t k = 1; k < len; ++k) {
            const unsigned char t = static_cast<unsigned char>(s[i + k]);
            if ((t & 0xc0) != 0x80) throw std::invalid_argument("bad");
            cp = cp << 6 | (t & 0x3f);
        }
        const uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : len == 4 ? 0x10000 : 0;
        if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) throw std::invalid_argument("bad");
        cps.push_back(cp);
        i += len;
    }
    const char* hex = "0123456789abcdef";
    std::string out = "'";
    for (size_t i = 0, at = 0; i < cps.size(); ++i) {
        const uint32_t cp = cps[i];
        const size_t len = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        if (cp == '\\') out += "\\\\";
        else if (cp == '\'') out += "\\'";
        else if (cp == '\n') out += "\\n";
        else if (cp == '\r') out += "\\r";
        else if (cp == '\t') out += "\\t";
        else if (cp == '%' && easybuild_template) out += "%%";
        else if (cp < 0x20 || cp == 0x7f) out += std::string("\\x") + hex[cp >> 4] + hex[cp & 15];
        else if ((cp >= 0x80 && cp <= 0x9f) || (cp >= 0x200b && cp <= 0x200f) || cp == 0x2028 || cp == 0x2029 ||
                 (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2069) || cp == 0xfeff) {
            out += "\\u";
            for (int shift = 12; shift >= 0; shift -= 4) out += hex[(cp >> shift) & 15];
        } else {
            out += s.substr(at, len);
        }
        at += len;
    }
    return out + "'";
}

// Random text from pieces that matter to the writers: escapes, quotes, '%' and templates,
// spaces (split points), multi-byte and escaped code points, newlines, long runs.
std::string random_text(std::mt19937& rng, bool with_invalid) {
    static const std::vector<std::string> pieces = {
        "a", "word", " ", " ", "'", "\"", "\\", "\\'", "\t", "\r", "\n", "\n", "\x01", "\x7f", "%", "%%",
        "%(installdir)s", "%(name)s", "100%", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xc2\x85",
        "\xe2\x80\xa8", "\xe2\x80\xae", "\xef\xbb\xbf", std::string(1, '\0'), std::string(60, 'x'),
        std::string(130, 'y'), " + ", "' + x + '"};
    static const std::vector<std::string> invalid = {"\xff", "\x80", "\xc3", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80"};
    std::string s;
    const size_t n = rng() % 40;
    for (size_t i = 0; i < n; ++i) s += pieces[rng() % pieces.size()];
    if (with_invalid && rng() % 4 == 0) s.insert(rng() % (s.size() + 1), invalid[rng() % invalid.size()]);
    return s;
}

// The lines of `s` as easybuild_lines makes them items: split at each '\n', the last one ''
// when `s` ends with a newline.
std::vector<std::string> lines_of(const std::string& s) {
    std::vector<std::string> lines;
    for (size_t start = 0;;) {
        const size_t nl = s.find('\n', start);
        lines.push_back(s.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
        if (nl == std::string::npos) return lines;
        start = nl + 1;
    }
}

size_t columns_of(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xc0) != 0x80;
    return n;
}

// A long literal's pieces the slow obvious way, one atom (escape or code point) at a time:
// at most `width` columns a piece (two for its quotes), cut after the piece's last space when
// that space is past half its atoms, else before the atom that does not fit.
std::vector<std::string> reference_pieces(const std::string& literal, size_t width) {
    const std::string body = literal.substr(1, literal.size() - 2);
    const size_t room = width > 12 ? width - 2 : 10;
    std::vector<std::string> atoms;
    for (size_t i = 0; i < body.size();) {
        const unsigned char c = static_cast<unsigned char>(body[i]);
        size_t len = c == '\\' ? (body[i + 1] == 'x' ? 4 : body[i + 1] == 'u' ? 6 : 2)
                                : c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
        atoms.push_back(body.substr(i, len));
        i += len;
    }
    std::vector<std::string> pieces;
    std::vector<std::string> piece;  // its atoms
    const auto cols = [](const std::vector<std::string>& p) {
        size_t n = 0;
        for (const auto& a : p) n += columns_of(a);
        return n;
    };
    const auto text = [](const std::vector<std::string>& p, size_t from, size_t to) {
        std::string s;
        for (size_t k = from; k < to; ++k) s += p[k];
        return s;
    };
    for (const auto& atom : atoms) {
        if (!piece.empty() && cols(piece) + columns_of(atom) > room) {
            size_t space = piece.size();  // atoms through the last space
            while (space > 0 && piece[space - 1] != " ") --space;
            if (space > 0 && space > piece.size() / 2) {
                pieces.push_back(text(piece, 0, space));
                piece.erase(piece.begin(), piece.begin() + static_cast<long>(space));
            } else {
                pieces.push_back(text(piece, 0, piece.size()));
                piece.clear();
            }
        }
        piece.push_back(atom);
    }
    pieces.push_back(text(piece, 0, piece.size()));
    return pieces;
}

}  // namespace

TEST_CASE("python_string agrees with a per-code-point reference on random text", "[python_writer]") {
    std::mt19937 rng(20240923);
    for (int i = 0; i < 20000; ++i) {
        const std::string s = random_text(rng, true);
        const bool eb = rng() % 2 == 0;
        std::string expected;
        bool valid = true;
        try { expected = reference_python_string(s, eb); } catch (const std::invalid_argument&) { valid = false; }
        INFO("input " << i);
        if (valid) {
            CHECK(python_string(s, eb) == expected);
            std::string out = "prefix";
            append_python_string(out, s, eb);
            CHECK(out == "prefix" + expected);
        } else {
            CHECK_THROWS_AS(python_string(s, eb), std::invalid_argument);
            std::string out = "prefix";
            CHECK_THROWS_AS(append_python_string(out, s, eb), std::invalid_argument);
            CHECK(out == "prefix");  // left as it was
        }
    }
}

TEST_CASE("a long literal is cut into 120-column lines, after a space in a piece's second half", "[python_writer]") {
    // "x = " leads, so the value goes in parentheses at indent 4: 4 + 116 columns per line,
    // 114 of them the literal's body.
    PythonWriter w;
    w.assign("x", python_string(std::string(130, 'a')));
    CHECK(w.text() == "x = (\n    '" + std::string(114, 'a') + "'\n    '" + std::string(16, 'a') + "'\n)\n");
    PythonWriter spaced;
    spaced.assign("x", python_string(std::string(100, 'a') + " " + std::string(50, 'b')));
    CHECK(spaced.text() == "x = (\n    '" + std::string(100, 'a') + " '\n    '" + std::string(50, 'b') + "'\n)\n");
    // A space in the first half is no cut point; escapes and é are one atom each, é one column.
    PythonWriter early;
    early.assign("x", python_string("a " + std::string(60, 'c') + "\n" + std::string(51, 'e') + "\xc3\xa9" + "zz"));
    CHECK(early.text() == "x = (\n    'a " + std::string(60, 'c') + "\\n" + std::string(50, 'e') + "'\n    '" + "e\xc3\xa9" +
                              "zz'\n)\n");
    // Terms joined by " +" share a line while they fit.
    PythonWriter terms;
    terms.assign("y", "'" + std::string(50, 'p') + "' + local_x + '" + std::string(70, 'q') + "'");
    CHECK(terms.text() == "y = (\n    '" + std::string(50, 'p') + "' + local_x +\n    '" + std::string(70, 'q') + "'\n)\n");
}

TEST_CASE("python3 reads random multi-line values back from easybuild_lines, lines within 120 columns",
          "[python_writer]") {
    require_tool("python3");
    TempDir dir("python_writer");
    std::mt19937 rng(7);
    std::vector<std::string> values;
    PythonWriter w;
    for (int i = 0; i < 300; ++i) {
        values.push_back(random_text(rng, false));
        w.assign("v" + std::to_string(i), easybuild_lines(values.back(), static_cast<int>(rng() % 9)));
    }
    const std::string source = w.text();
    size_t start = 0;
    for (size_t nl; (nl = source.find('\n', start)) != std::string::npos; start = nl + 1) {
        size_t cols = 0;
        for (size_t i = start; i < nl; ++i) cols += (static_cast<unsigned char>(source[i]) & 0xc0) != 0x80;
        INFO(source.substr(start, nl - start));
        CHECK(cols <= 120);
    }
    write_file(dir.file("values.py"), source);
    // EasyBuild's templating: every '%' not starting %(name)s doubled, then `% templates`.
    write_file(dir.file("read.py"), R"PY(import re, sys
d = sys.argv[1]
ns = {}
exec(compile(open(d + '/values.py', encoding='utf-8').read(), 'values.py', 'exec'), ns)
i = 0
while 'v%d' % i in ns:
    v = re.sub(r"(%)(?!%*\(\w+\)s)", r"\1\1", ns['v%d' % i]) % {'installdir': '%(installdir)s', 'name': '%(name)s'}
    with open('%s/out.%d' % (d, i), 'wb') as f:
        f.write(v.encode('utf-8'))
    i += 1
)PY");
    REQUIRE(run("python3 " + dir.file("read.py") + " " + bash_word(dir.str())) == 0);
    for (size_t i = 0; i < values.size(); ++i) {
        INFO("value " << i);
        CHECK(read_file(dir.file("out." + std::to_string(i))) == values[i]);
    }
}

TEST_CASE("append_python_lines is each line's python_string, joined by the line break", "[python_writer]") {
    std::mt19937 rng(1170);
    const std::string line_break = "',\n    '";
    for (int i = 0; i < 5000; ++i) {
        const std::string s = random_text(rng, true);
        const bool eb = rng() % 2 == 0;
        INFO("input " << i);
        std::string expected = "'";
        bool valid = true;
        try {
            const auto lines = lines_of(s);
            for (size_t k = 0; k < lines.size(); ++k) {
                const std::string literal = reference_python_string(lines[k], eb);
                expected += (k == 0 ? "" : line_break) + literal.substr(1, literal.size() - 2);
            }
        } catch (const std::invalid_argument&) {
            valid = false;
        }
        std::string out = "prefix";
        if (valid) {
            append_python_lines(out, s, eb, line_break);
            CHECK(out == "prefix" + expected + "'");
        } else {
            CHECK_THROWS_AS(append_python_lines(out, s, eb, line_break), std::invalid_argument);
            CHECK(out == "prefix");  // left as it was
        }
    }
}

TEST_CASE("easybuild_lines and assign_lines lay out one literal per line as python_list does", "[python_writer]") {
    std::mt19937 rng(52096);
    for (int i = 0; i < 3000; ++i) {
        const std::string s = random_text(rng, true);
        const int indent = static_cast<int>(rng() % 9);
        INFO("input " << i << " indent " << indent);
        std::string expected;
        bool valid = true;
        try {
            if (s.find('\n') == std::string::npos) {
                expected = easybuild_string(s);
            } else {
                std::vector<std::string> literals;
                for (const auto& line : lines_of(s)) literals.push_back(easybuild_string(line));
                expected = "'\\n'.join(" + python_list(literals, indent) + ")";
            }
        } catch (const std::invalid_argument&) {
            valid = false;
        }
        PythonWriter w;
        w.assign("before", "1");
        if (valid) {
            CHECK(easybuild_lines(s, indent) == expected);
            PythonWriter reference;
            reference.assign("before", "1");
            reference.assign("v", easybuild_lines(s));
            w.assign_lines("v", s);
            CHECK(w.text() == reference.text());
        } else {
            CHECK_THROWS_AS(easybuild_lines(s, indent), std::invalid_argument);
            CHECK_THROWS_AS(w.assign_lines("v", s), std::invalid_argument);
            CHECK(w.text() == "before = 1\n");  // nothing written
        }
    }
}

TEST_CASE("long literals are cut where a per-atom reference cuts them", "[python_writer]") {
    std::mt19937 rng(120);
    for (int i = 0; i < 3000; ++i) {
        std::string s;
        do s += random_text(rng, false); while (s.size() < 100);
        const std::string literal = python_string(s);
        INFO("input " << i);
        PythonWriter w;
        w.assign("x", literal);
        std::string expected = "x = " + literal + "\n";
        if (columns_of(expected) > 121) {  // 120 and the newline
            expected = "x = (\n";
            for (const auto& piece : reference_pieces(literal, 116)) expected += "    '" + piece + "'\n";
            expected += ")\n";
        }
        CHECK(w.text() == expected);
    }
}

TEST_CASE("assign_list writes what assign writes for the list's expression", "[python_writer]") {
    std::mt19937 rng(35);
    for (int i = 0; i < 500; ++i) {
        std::vector<std::string> items;
        const size_t n = rng() % 4;
        for (size_t k = 0; k < n; ++k) items.push_back(python_string(random_text(rng, false)));
        PythonWriter w, reference;
        w.assign_list("cmds", items);
        reference.assign("cmds", python_list(items));
        CHECK(w.text() == reference.text());
    }
}

namespace {

// `s` after one random edit of its lines: a line changed, added, removed or repeated, the
// trailing newline added or removed, or the whole text new (what one stack's script does
// against another's, and worse).
std::string edited(std::mt19937& rng, const std::string& s) {
    std::vector<std::string> lines = lines_of(s);
    const size_t at = rng() % lines.size();
    const auto where = lines.begin() + static_cast<std::ptrdiff_t>(at);
    const unsigned edit = rng() % 7;
    if (edit == 0) lines[at] = random_text(rng, true);
    else if (edit == 1) lines.insert(where, random_text(rng, false));
    else if (edit == 2 && lines.size() > 1) lines.erase(where);
    else if (edit == 3) lines.insert(where, lines[at]);
    else if (edit == 4 && lines.back().empty() && lines.size() > 1) lines.pop_back();
    else if (edit == 4) lines.emplace_back();
    else if (edit == 5) lines[at] += lines[at];
    else if (edit == 6) return random_text(rng, true) + "\n" + random_text(rng, false);
    std::string out;
    for (size_t k = 0; k < lines.size(); ++k) out += (k ? "\n" : "") + lines[k];
    return out;
}

}  // namespace

TEST_CASE("assign_lines through a LinesMemo writes what it writes without, edit after edit", "[python_writer]") {
    std::mt19937 rng(90210);
    LinesMemo memo;
    std::string text = "first\nsecond\n";
    size_t reused = 0;
    for (int i = 0; i < 4000; ++i) {
        text = edited(rng, text);
        INFO("edit " << i);
        PythonWriter plain, memoized;
        plain.assign("before", "1");
        memoized.assign("before", "1");
        bool valid = true;
        try {
            plain.assign_lines("v", text);
        } catch (const std::invalid_argument&) {
            valid = false;
        }
        if (valid) {
            const size_t items_before = memo.items.size();
            memoized.assign_lines("v", text, memo);
            CHECK(memoized.text() == plain.text());
            reused += items_before > 0;
        } else {
            const LinesMemo kept = memo;
            CHECK_THROWS_AS(memoized.assign_lines("v", text, memo), std::invalid_argument);
            CHECK(memoized.text() == "before = 1\n");  // nothing written
            CHECK(memo.text == kept.text);               // the memo still holds the previous text
            CHECK(memo.items == kept.items);
        }
        if (!valid || rng() % 3 == 0) text = "restart\n" + random_text(rng, false);
    }
    CHECK(reused > 1000);
}

TEST_CASE("a LinesMemo copies the lines a script shares with the previous one", "[python_writer]") {
    std::string body;
    for (int k = 0; k < 200; ++k) body += "line " + std::to_string(k) + " with 'quotes' and %(installdir)s and 100%\n";
    const std::string a = "STACK = 'a'\n" + body, b = "STACK = 'b'\n" + body + "tail";
    LinesMemo memo;
    for (const auto* text : {&a, &b, &a, &a}) {
        PythonWriter plain, memoized;
        plain.assign_lines("v", *text);
        memoized.assign_lines("v", *text, memo);
        CHECK(memoized.text() == plain.text());
        CHECK(memo.text == *text);
        CHECK(memo.lines.size() == lines_of(*text).size() + 1);
    }
}
