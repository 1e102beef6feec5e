// Tcl quoting: exact outputs, and a round trip through the real tclsh (at top level and
// inside a braced `if` body) that must run nothing and give every value back byte for byte.
#include <catch2/catch.hpp>

#include <filesystem>
#include <stdexcept>

#include "test_support.h"
#include "text/quote.h"
#include "text/tcl_writer.h"

using namespace sitegen;
using namespace sitegen::test;

TEST_CASE("tcl_string escapes substitutions, braces and control bytes", "[tcl]") {
    CHECK(tcl_string("") == "\"\"");
    CHECK(tcl_string("plain/path-1.2_x:y,z") == "\"plain/path-1.2_x:y,z\"");
    CHECK(tcl_string("$HOME") == R"("\$HOME")");
    CHECK(tcl_string("[exec id]") == R"("\[exec id\]")");
    CHECK(tcl_string("a\\b\"c") == R"("a\\b\"c")");
    CHECK(tcl_string("}{") == R"("\}\{")");
    CHECK(tcl_string("a;b c") == "\"a;b c\"");  // ; and space are literal inside "..."
    CHECK(tcl_string("l1\nl2\tt\r") == R"("l1\nl2\tt\r")");
    CHECK(tcl_string(std::string("\x01") + "7") == R"("\0017")");  // three digits: 7 is not taken in
    CHECK(tcl_string("\x7f") == R"("\177")");
    CHECK(tcl_string("Jülich") == "\"Jülich\"");
    CHECK_THROWS_AS(tcl_string(std::string("a\0b", 3)), std::invalid_argument);
    CHECK(tcl_comment("a\\\n{b}") == "# a???b?");
}

TEST_CASE("tclsh reads every tcl_string back and runs nothing", "[tcl]") {
    require_tool("tclsh");
    TempDir dir("tcl");
    const std::string marker = dir.file("MARKER");
    std::vector<std::string> corpus = {
        "", "plain", "\"", "'", "\\", "\\\\", "\\\n", "$x", "${x}", "$env(HOME)", "$::env(PATH)",
        "[exec touch " + marker + "]", "\\[exec touch " + marker + "\\]", "[[exec touch " + marker + "]]",
        "\"; exec touch " + marker + "; \"", "}; exec touch " + marker + "; {", "{", "}", "}{", "{{}",
        "; exec touch " + marker, "\nexec touch " + marker + "\n", "# comment", "a:b,c", "has space",
        "%(installdir)s", "line1\nline2\r\nline3", "\ttab", "Jülich", "日本語", "\x7f", "\\101", "\\x41",
        "\\u0041", "\\n",
    };
    std::string controls;
    for (char c = 1; c < 0x20; ++c) controls += c;
    corpus.push_back(controls);
    corpus.push_back(std::string("\x01") + "2");
    // Each value written twice: as a top-level word and inside a braced if body (where an
    // unescaped brace would unbalance the body).
    std::string script = "set dir " + tcl_string(dir.str()) + "\n"
                         "proc put {name value} {\n"
                         "    set f [open [file join $::dir $name] w]\n"
                         "    fconfigure $f -translation binary -encoding utf-8\n"
                         "    puts -nonewline $f $value\n"
                         "    close $f\n"
                         "}\n";
    for (size_t i = 0; i < corpus.size(); ++i) {
        const std::string n = std::to_string(i);
        script += tcl_comment("value " + n + ": " + corpus[i]) + "\n";
        script += "put top." + n + " " + tcl_string(corpus[i]) + "\n";
        script += "if { 1 } {\n    " + tcl_comment(corpus[i]) + "\n    set v " + tcl_string(corpus[i]) + "\n    put braced." + n +
                  " $v\n}\n";
    }
    write_file(dir.file("roundtrip.tcl"), script);
    REQUIRE(run("LC_ALL=C.UTF-8 tclsh " + bash_word(dir.file("roundtrip.tcl"))) == 0);
    CHECK_FALSE(std::filesystem::exists(marker));
    for (size_t i = 0; i < corpus.size(); ++i) {
        INFO("corpus entry " << i);
        CHECK(read_file(dir.file("top." + std::to_string(i))) == corpus[i]);
        CHECK(read_file(dir.file("braced." + std::to_string(i))) == corpus[i]);
    }
}
