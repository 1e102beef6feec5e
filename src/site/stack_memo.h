// stack_memo: the [[stacks]] entries a build loaded, kept beside its build state, so that the
// next load takes each entry whose text (and what it starts from) is unchanged from the memo
// instead of parsing and reading it again. A cache: a load with it gives the site, regions and
// findings a load without it gives (site/load.cpp uses it; tests compare the two).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "out/fs.h"  // FileText
#include "site/model.h"
#include "text/pieces.h"

namespace sitegen {

struct StackMemo {
    std::string identity;  // the sitegen that reads it (entries of another one never match)
    // The memo as read: each entry's text and digest by key (views into `text`).
    FileText text;
    struct Entry {
        std::string_view text, digest;
    };
    std::unordered_map<std::string_view, Entry> entries;
    // What a load did with it: each [[stacks]] entry it read from a piece of its file, in order.
    struct Piece {
        std::string key;
        std::string python;      // stack_memo_python: the [python] it started from
        std::string path;        // the file it is in
        size_t stack = 0;        // its index in site.stacks
        int line = 0;            // its `[[stacks]]` header's line
        StackMemo::Entry entry;  // taken from the memo (empty text: read from the site file)
        bool clean = true;       // reading it added no finding (else it is not kept)
    };
    std::vector<Piece> pieces;
    size_t taken = 0;  // how many of `pieces` came from the memo
};

// A memo file's text into `memo` (which keeps it); text that is not a memo gives no entries.
void read_stack_memo(FileText text, StackMemo& memo);
inline void read_stack_memo(std::string text, StackMemo& memo) { read_stack_memo(FileText(std::move(text)), memo); }
// The memo file after a load of `site` that used `memo`: every clean piece's entry, those from
// the memo as they were, the others made from the site as loaded.
std::string stack_memo_text(const StackMemo& memo, const Site& site);
// The same text in pieces: views into the memo's text where an entry's record is there as it
// is written, so that it must outlive them.
TextPieces stack_memo_pieces(const StackMemo& memo, const Site& site);

// The key of one `[[stacks]]` piece: the reading sitegen, the file's path (its regions name it)
// and the piece's bytes.
std::string stack_memo_key(const std::string& identity, const std::string& path, std::string_view piece);
// What an entry depends on besides its piece: the [python] its stack starts from (a digest).
std::string stack_memo_python(const Python& python);
// The python digest an entry was made with ("" when the entry is broken).
std::string_view stack_memo_python_of(std::string_view entry);
// The text of the stack an entry holds: stack_text() of the stack stack_from_memo() reads back
// ("" when the entry is broken). A build key takes it instead of making that text again.
std::string_view stack_memo_stack_text(std::string_view entry);
// One entry read back: the stack, and its regions as paths below its own (stacks.<index>),
// lines counted from `line` (in the file of the piece it was read from: Regions::set_stack).
// False when the entry is broken.
struct MemoStack {
    Stack stack;
    std::vector<Regions::Below> regions;  // ("" is the entry's own; views into the entry)
};
bool stack_from_memo(std::string_view entry, int line, MemoStack& out);
// The entry of site.stacks[index], read from a piece at `line` of `path` starting from the
// `python` digest; "" when one of its regions is not in that piece (then it is not kept).
std::string stack_memo_entry(const Site& site, size_t index, int line, const std::string& path,
                             const std::string& python);

}  // namespace sitegen
