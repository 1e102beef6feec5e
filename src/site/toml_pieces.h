// toml_pieces: a big site file parsed by toml++ in pieces on several threads, each piece a run
// of its `[[stacks]]` entries, joined into the table one parse of the whole file gives.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "site/toml_reader.h"

namespace sitegen {

struct TomlPieces {
    size_t min_bytes = 256 * 1024;   // smaller files are parsed whole
    size_t piece_bytes = 128 * 1024;  // at least about this much text per piece
    unsigned threads = 0;            // parsing at once (0: split_threads(), out/threads.h)
    // A piece's padding is parsed too, so pieces are 1/threads of the text when that is more
    // than piece_bytes (tests turn it off for the most and smallest pieces).
    bool piece_per_thread = true;
};

// toml::parse(text, path), the same table with the same source positions, or the same
// toml::parse_error. A piece starts at a top-level `[[stacks]]` header (`outline`, of the
// same text) and holds only headers under `stacks`; the first holds everything before it and
// the first entry. Parsed alone, a piece is preceded by as many newlines as the text before
// it holds, so its lines and columns are the file's. Any piece failing, or a file that does
// not split so, or one thread, means one parse of the whole file.
// Where the pieces after the first start (none: parsed whole).
std::vector<size_t> piece_starts(std::string_view text, const TomlOutline& outline, const TomlPieces& how);

// A part of a text parsed alone: text[begin, end) after `lines` newlines (as many as precede
// `begin`), so that its positions are the file's.
struct TomlPart {
    size_t begin = 0, end = 0, lines = 0;
};
// Each part parsed alone, on up to `threads` threads, its table appended to `roots` in order;
// false when one of them fails (toml::parse_error).
bool parse_parts(std::string_view text, std::string_view path, const std::vector<TomlPart>& parts, unsigned threads,
                 std::vector<toml::table>& roots);

// The offset of every top-level `[[stacks]]` header (each at a line's start), when the text
// splits at them as parse_in_pieces splits (none otherwise): site/load.cpp's stack memo.
std::vector<size_t> entry_starts(std::string_view text, const TomlOutline& outline);

toml::table parse_in_pieces(std::string_view text, std::string_view path, const TomlOutline& outline,
                            const TomlPieces& how = {});

}  // namespace sitegen
