// pieces: TextPieces and its writer.
#include "text/pieces.h"

namespace sitegen {

size_t TextPieces::size() const {
    size_t n = 0;
    for (const auto v : pieces) n += v.size();
    return n;
}

std::string TextPieces::joined() const {
    std::string out;
    out.reserve(size());
    for (const auto v : pieces) out += v;
    return out;
}

bool TextPieces::same_as(std::string_view text) const {
    if (size() != text.size()) return false;
    size_t at = 0;
    for (const auto v : pieces) {
        const std::string_view there = text.substr(at, v.size());
        if (v.data() != there.data() && v != there) return false;
        at += v.size();
    }
    return true;
}

std::string& PieceWriter::text(size_t reserve) {
    if (!open) {
        open = &out.owned.emplace_back();
        open->reserve(reserve);
    }
    return *open;
}

void PieceWriter::close() {
    if (open && !open->empty()) add(*open);
    open = nullptr;
}

void PieceWriter::view(std::string_view v) {
    close();
    if (!v.empty()) add(v);
}

void PieceWriter::add(std::string_view v) {
    if (!out.pieces.empty() && out.pieces.back().data() + out.pieces.back().size() == v.data())
        out.pieces.back() = std::string_view(out.pieces.back().data(), out.pieces.back().size() + v.size());
    else
        out.pieces.push_back(v);
}

void PieceWriter::append(TextPieces& part) {
    close();
    for (const auto v : part.pieces) add(v);
    out.owned.splice(out.owned.end(), part.owned);
}

}  // namespace sitegen
