// pieces: a text made of views into other texts and of strings of its own, written one piece
// after the other without joining them (a rebuild's caches are mostly the last build's bytes).
#pragma once

#include <list>
#include <string>
#include <string_view>
#include <vector>

namespace sitegen {

// The pieces in order: views into `owned` and into texts that must outlive them.
struct TextPieces {
    std::vector<std::string_view> pieces;
    std::list<std::string> owned;  // (a list: a piece's view stays put as more are added)
    size_t size() const;
    std::string joined() const;
    // Whether the pieces, one after the other, are the bytes of `text` (no byte compared where
    // a piece is the same view of it: a cache written back unchanged costs nothing to find so).
    bool same_as(std::string_view text) const;
};

// Builds TextPieces: text appended to the last owned string, views added as pieces of their own
// (one piece with the view before when they are adjacent in memory: runs of the last build's
// text come back as one piece).
struct PieceWriter {
    TextPieces& out;
    std::string* open = nullptr;  // the owned string being appended to, if any
    std::string& text(size_t reserve = 0);
    void close();
    void view(std::string_view v);
    void add(std::string_view v);
    // The pieces of `part` after these (its owned strings moved over whole: list nodes).
    void append(TextPieces& part);
};

}  // namespace sitegen
