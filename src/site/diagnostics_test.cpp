// Diagnostics: errors are never hidden by warnings or notes, hidden findings are counted, and
// every message, path and excerpt prints as exactly one line with control characters visible.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "site/diagnostics.h"

using namespace sitegen;

namespace {

size_t lines_in(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

void add(Diagnostics& d, Severity s, int line, const std::string& message) {
    Diagnostic x;
    x.severity = s;
    x.where = {"sites/x/site.toml", line, 1};
    x.message = message;
    d.add(x);
}

// The header line of every rendered finding ("file:line:col: severity: ...").
std::vector<std::string> headers(const std::string& rendered) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start < rendered.size()) {
        const size_t nl = rendered.find('\n', start);
        const std::string line = rendered.substr(start, nl - start);
        if (line.rfind("sites/", 0) == 0) out.push_back(line);
        start = nl == std::string::npos ? rendered.size() : nl + 1;
    }
    return out;
}

}  // namespace

TEST_CASE("notes and warnings reported first cannot hide an error", "[diagnostics]") {
    Diagnostics d;  // shows 50
    for (int i = 1; i <= 60; ++i) add(d, Severity::note, i, "note " + std::to_string(i));
    add(d, Severity::error, 100, "the real problem");
    const std::string out = render_all(d, {});
    CHECK_THAT(out, Catch::Matchers::Contains("sites/x/site.toml:100:1: error: the real problem\n"));
    CHECK_THAT(out, Catch::Matchers::Contains("note: 11 more findings not shown (11 notes)\n"));
    CHECK_THAT(out, Catch::Matchers::EndsWith("1 error, 0 warnings\n"));
    CHECK(headers(out).size() == 50);
    CHECK(d.note_count() == 60);
}

TEST_CASE("shown findings: errors, then warnings, then notes, up to the cap, in file order", "[diagnostics]") {
    Diagnostics d;
    for (int i = 1; i <= 5; ++i) add(d, Severity::note, i, "n");
    for (int i = 1; i <= 60; ++i) add(d, Severity::warning, 10 + i, "w");
    for (int i = 1; i <= 3; ++i) add(d, Severity::error, 200 + i, "e");
    const auto shown = d.sorted();
    REQUIRE(shown.size() == 50);
    CHECK(std::count_if(shown.begin(), shown.end(), [](const Diagnostic& x) { return x.severity == Severity::error; }) == 3);
    CHECK(std::count_if(shown.begin(), shown.end(), [](const Diagnostic& x) { return x.severity == Severity::note; }) == 0);
    CHECK(std::is_sorted(shown.begin(), shown.end(), [](const Diagnostic& a, const Diagnostic& b) { return a.where.line < b.where.line; }));
    const std::string out = render_all(d, {});
    CHECK_THAT(out, Catch::Matchers::Contains("note: 18 more findings not shown (13 warnings, 5 notes)\n"));
    CHECK_THAT(out, Catch::Matchers::EndsWith("3 errors, 60 warnings\n"));

    Diagnostics many;
    for (int i = 1; i <= 70; ++i) add(many, Severity::error, i, "e");
    CHECK_THAT(render_all(many, {}), Catch::Matchers::Contains("note: 20 more findings not shown (20 errors)\n"));
    Diagnostics few;
    add(few, Severity::warning, 1, "w");
    CHECK(render_all(few, {}).find("not shown") == std::string::npos);
}

TEST_CASE("a flood of findings keeps at most `cap` of each severity in memory, and counts all", "[diagnostics]") {
    Diagnostics d(10);
    for (int i = 0; i < 100000; ++i) add(d, static_cast<Severity>(i % 3), i, std::string(100, 'x'));
    CHECK(d.all().size() == 30);
    CHECK(d.error_count() + d.warning_count() + d.note_count() == 100000);
    CHECK(d.sorted().size() == 10);
    // A huge message is cut (at a UTF-8 boundary), saying how long it was.
    Diagnostics big;
    add(big, Severity::error, 1, std::string(1 << 20, 'y') + "\xc3\xa9");
    REQUIRE(big.all().size() == 1);
    CHECK(big.all()[0].message.size() <= kMaxMessageBytes);
    CHECK_THAT(big.all()[0].message, Catch::Matchers::EndsWith("... (cut: 1048578 bytes in all)"));
}

TEST_CASE("findings collected apart and appended equal the same findings added in turn", "[diagnostics]") {
    // (A build collects a site's rule findings on a thread of their own and appends them.)
    const auto fill = [](Diagnostics& d, int from, int warnings, int errors) {
        for (int i = 0; i < warnings; ++i) add(d, Severity::warning, from + i, "w" + std::to_string(from + i));
        for (int i = 0; i < errors; ++i) add(d, Severity::error, from + 100 + i, "e" + std::to_string(from + i));
        add(d, Severity::note, from + 200, "n" + std::to_string(from));
    };
    for (const auto& [first_warnings, later_warnings] : {std::pair{2, 3}, {3, 4}, {5, 2}, {7, 9}}) {
        Diagnostics in_turn(4), first(4), later(4);
        fill(in_turn, 1000, first_warnings, 1);
        fill(in_turn, 2000, later_warnings, 2);
        fill(first, 1000, first_warnings, 1);
        fill(later, 2000, later_warnings, 2);
        first.append(later);
        CHECK(first.error_count() == in_turn.error_count());
        CHECK(first.warning_count() == in_turn.warning_count());
        CHECK(first.note_count() == in_turn.note_count());
        REQUIRE(first.all().size() == in_turn.all().size());
        for (size_t i = 0; i < first.all().size(); ++i) CHECK(first.all()[i].message == in_turn.all()[i].message);
        CHECK(render_all(first, {}) == render_all(in_turn, {}));
    }
}

TEST_CASE("printable() escapes what could break, recolour or reorder a line", "[diagnostics]") {
    CHECK(printable("plain text: 'x' = \"y\" \\ ok") == "plain text: 'x' = \"y\" \\ ok");
    CHECK(printable("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x99\x82") == "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x99\x82");  // UTF-8 stays
    CHECK(printable("\x1b[2J\x1b[31mred") == "\\x1b[2J\\x1b[31mred");
    CHECK(printable("a\nb\rc\td") == "a\\nb\\rc\\td");
    CHECK(printable("a\td", true) == "a\td");
    CHECK(printable(std::string("nul\0here", 8)) == "nul\\x00here");
    CHECK(printable("del\x7f") == "del\\x7f");
    CHECK(printable("\x07\x08\x0b\x0c") == "\\x07\\x08\\x0b\\x0c");
    CHECK(printable("c1 \xc2\x85 \xc2\x9b[31m") == "c1 \\u{0085} \\u{009b}[31m");              // NEL, CSI
    CHECK(printable("bidi \xe2\x80\xae" "drowssap \xe2\x81\xa6x\xe2\x81\xa9") == "bidi \\u{202e}drowssap \\u{2066}x\\u{2069}");
    CHECK(printable("ls\xe2\x80\xa8ps\xe2\x80\xa9") == "ls\\u{2028}ps\\u{2029}");
    CHECK(printable("lrm\xe2\x80\x8e alm\xd8\x9c") == "lrm\\u{200e} alm\\u{061c}");
    CHECK(printable("bad \xff \xfe") == "bad \\xff \\xfe");
    CHECK(printable("cut \xe2\x80") == "cut \\xe2\\x80");
    CHECK(printable("overlong \xc0\xaf \xe0\x80\xaf") == "overlong \\xc0\\xaf \\xe0\\x80\\xaf");
    CHECK(printable("surrogate \xed\xa0\x80") == "surrogate \\xed\\xa0\\x80");
    CHECK(printable("too big \xf4\x90\x80\x80") == "too big \\xf4\\x90\\x80\\x80");
    CHECK(printable("lone \x80 continuation") == "lone \\x80 continuation");
}

TEST_CASE("a forged or hostile finding renders as exactly one line", "[diagnostics]") {
    const std::string hostile[] = {
        "x\nsites/lumi/site.toml:1:1: error: forged line",
        "clear \x1b[2J\x1b[H and title \x1b]0;pwned\x07",
        std::string("nul \0 inside", 12),
        "carriage\rsites/lumi/site.toml:1:1: error: overwritten",
        "csi \xc2\x9b" "2J and bidi \xe2\x80\xae",
        "invalid \xff\xfe utf-8",
    };
    for (const auto& message : hostile) {
        Diagnostic d;
        d.where = {"sites/x/rules/r.lua", 3, 0};
        d.message = message + " [rule r]";
        d.hint = message;
        const std::string out = render(d, {});
        INFO(out);
        CHECK(lines_in(out) == 2);  // the header and the hint, each one line
        CHECK(out.find('\x1b') == std::string::npos);
        CHECK(out.find('\r') == std::string::npos);
        CHECK(out.find('\0') == std::string::npos);
        CHECK(out.find("\xc2\x9b") == std::string::npos);
        CHECK(out.find("\xe2\x80\xae") == std::string::npos);
        CHECK(out.rfind("sites/x/rules/r.lua:3: error: ", 0) == 0);
    }
    Diagnostic forged;
    forged.where = {"sites/x/rules/r.lua", 3, 0};
    forged.message = "x\nsites/lumi/site.toml:1:1: error: forged line";
    CHECK(render(forged, {}) == "sites/x/rules/r.lua:3: error: x\\nsites/lumi/site.toml:1:1: error: forged line\n");
    // A file name with a line break or an escape sequence cannot forge a line either.
    Diagnostic path;
    path.where = {"sites/x\n/\x1b[1mbold.lua", 1, 0};
    path.message = "m";
    CHECK(render(path, {}) == "sites/x\\n/\\x1b[1mbold.lua:1: error: m\n");
}

TEST_CASE("source excerpts are printable and the caret stays under its column", "[diagnostics]") {
    const auto reader = [](const std::string& text) {
        return [text](const std::string&, std::string& out) {
            out = text;
            return true;
        };
    };
    Diagnostic d;
    d.where = {"sites/x/site.toml", 2, 12};
    d.message = "m";
    // Line 2: ESC (4 columns as \x1b), a tab (kept), then the target at byte column 12.
    const std::string out = render(d, reader("first\na\x1b[31m\tb = 1 # x\n"));
    CHECK(out == "sites/x/site.toml:2:12: error: m\n"
                 "  a\\x1b[31m\tb = 1 # x\n"
                 "           \t    ^\n");
    // Multi-byte characters take one column each.
    d.where = {"sites/x/site.toml", 1, 8};
    CHECK(render(d, reader("k = \"\xc3\xa9\xc3\xa9x\"\n")) == "sites/x/site.toml:1:8: error: m\n"
                                                           "  k = \"\xc3\xa9\xc3\xa9x\"\n"
                                                           "        ^\n");
    // A line break inside a long (windowed) line still cannot break the excerpt.
    d.where = {"sites/x/site.toml", 1, 200};
    const std::string long_out = render(d, reader(std::string(195, 'a') + "\r\x1b" + std::string(195, 'b')));
    CHECK(lines_in(long_out) == 3);
    CHECK(long_out.find('\x1b') == std::string::npos);
}
