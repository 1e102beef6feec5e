// pieces: views joined in order, adjacent views as one piece, and the comparison with a text.
#include <catch2/catch.hpp>

#include "text/pieces.h"

using namespace sitegen;

TEST_CASE("pieces: views and owned text, adjacent views as one piece", "[pieces]") {
    const std::string last = "alpha\nbeta\ngamma\n";
    const std::string_view v(last);
    TextPieces out;
    PieceWriter w{out};
    w.view(v.substr(0, 6));
    w.view(v.substr(6, 5));  // (adjacent: one piece with the one before)
    w.text() += "new\n";
    w.text() += "more\n";  // (the same owned string)
    w.view(v.substr(11));
    w.close();
    REQUIRE(out.pieces.size() == 3);
    CHECK(out.pieces[0] == "alpha\nbeta\n");
    CHECK(out.pieces[1] == "new\nmore\n");
    CHECK(out.joined() == "alpha\nbeta\nnew\nmore\ngamma\n");
    CHECK(out.size() == out.joined().size());
    // Appended parts keep their owned strings (moved) and their views.
    TextPieces part;
    PieceWriter p{part};
    p.text() += "tail\n";
    p.close();
    w.append(part);
    CHECK(out.joined() == "alpha\nbeta\nnew\nmore\ngamma\ntail\n");
    CHECK(part.owned.empty());
}

TEST_CASE("pieces: same_as compares bytes, and views of the text itself without comparing", "[pieces]") {
    const std::string text = "one\ntwo\nthree\n";
    TextPieces same;
    PieceWriter w{same};
    w.view(text);
    w.close();
    CHECK(same.same_as(text));
    const std::string copy = text;
    CHECK(same.same_as(copy));  // (other memory, the same bytes)
    CHECK_FALSE(same.same_as(text.substr(1)));
    std::string changed = text;
    changed[5] = 'W';
    CHECK_FALSE(same.same_as(changed));
    TextPieces split;
    PieceWriter s{split};
    s.text() += "one\n";
    s.close();
    s.view(std::string_view(text).substr(4));
    s.close();
    CHECK(split.same_as(text));
    CHECK(TextPieces{}.same_as(""));
}
