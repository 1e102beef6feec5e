// stack_memo: loaded [[stacks]] entries by the hash of their text, written and read back.
#include "site/stack_memo.h"

#include <algorithm>

#include "out/sha256.h"
#include "site/model_text.h"

namespace sitegen {

namespace {

constexpr std::string_view kHeader = "# sitegen stack memo v1: loaded [[stacks]] entries by key; a cache beside the build state\n";
constexpr size_t kKeyChars = 64;  // hex SHA-256

void put_int(std::string& out, long long n) {
    out += std::to_string(n);
    out += ';';
}

}  // namespace

std::string stack_memo_key(const std::string& identity, const std::string& path, std::string_view piece) {
    std::string head(kHeader);
    append_prefixed(head, identity);
    append_prefixed(head, path);
    return Sha256().update(head).update(piece).hex();
}

std::string stack_memo_python(const Python& python) { return sha256_hex(python_text(python)); }

std::string_view stack_memo_python_of(std::string_view entry) {
    PrefixedReader in{entry};
    const std::string_view python = in.prefixed();
    return in.ok ? python : std::string_view();
}

std::string_view stack_memo_stack_text(std::string_view entry) {
    PrefixedReader in{entry};
    in.prefixed();  // (the python digest)
    const std::string_view text = in.prefixed();
    return in.ok ? text : std::string_view();
}

// An entry: the python digest, the stack's text, then its regions, each as its path below
// stacks.<index>, its line counted from the piece's first (-1: none) and its column.
std::string stack_memo_entry(const Site& site, size_t index, int line, const std::string& path,
                             const std::string& python) {
    std::string out;
    append_prefixed(out, python);
    append_prefixed(out, stack_text(site.stacks[index]));
    std::string regions;
    size_t count = 0;
    bool from_piece = true;
    site.regions.each_below_stack(index, [&](std::string_view below, const std::string& file, int at, int column) {
        if (file != path || (at != 0 && at < line)) from_piece = false;  // (not from this piece)
        if (!from_piece) return;
        append_prefixed(regions, below);
        put_int(regions, at == 0 ? -1 : at - line);
        put_int(regions, column);
        ++count;
    });
    if (!from_piece) return {};
    put_int(out, static_cast<long long>(count));
    out += regions;
    return out;
}

bool stack_from_memo(std::string_view entry, int line, MemoStack& out) {
    PrefixedReader in{entry};
    in.prefixed();  // (the python digest: the caller compared it)
    const std::string_view text = in.prefixed();
    if (!in.ok || !read_stack_text(text, out.stack)) return false;
    const size_t count = in.number<size_t>(';');
    if (!in.ok || count > in.in.size()) return false;
    out.regions.clear();
    out.regions.reserve(count);
    for (size_t i = 0; i < count && in.ok; ++i) {
        const std::string_view below = in.prefixed();
        const int delta = in.number<int>(';');
        const int column = in.number<int>(';');
        if (delta < -1 || (!below.empty() && below.front() != '.')) in.ok = false;
        out.regions.push_back({below, delta < 0 ? 0 : line + delta, column});
    }
    return in.ok && in.in.empty();
}

void read_stack_memo(FileText text, StackMemo& memo) {
    memo.entries.clear();
    memo.text = std::move(text);
    std::string_view rest = memo.text.view();
    if (rest.substr(0, kHeader.size()) != kHeader) return;
    rest.remove_prefix(kHeader.size());
    // Each entry: its key, a space, its bytes' digest, a space, their length, a newline, the
    // bytes, a newline. (The digest: a memo changed since it was written is not trusted.)
    while (!rest.empty()) {
        if (rest.size() < 2 * kKeyChars + 3 || rest[kKeyChars] != ' ' || rest[2 * kKeyChars + 1] != ' ') break;
        const std::string_view key = rest.substr(0, kKeyChars), digest = rest.substr(kKeyChars + 1, kKeyChars);
        rest.remove_prefix(2 * kKeyChars + 2);
        PrefixedReader in{rest};
        const size_t n = in.number<size_t>('\n');
        if (!in.ok || n >= in.in.size() || in.in[n] != '\n') break;
        const std::string_view entry = in.in.substr(0, n);
        if (sha256_hex(entry) != digest) break;
        memo.entries.emplace(key, StackMemo::Entry{entry, digest});
        rest = in.in.substr(n + 1);
    }
    if (!rest.empty()) memo.entries.clear();  // (a broken memo is not half used)
}

namespace {

// An entry's record as read_stack_memo found it in `text` (key, digest, length, the entry),
// when it is exactly what stack_memo_pieces writes for `key`; empty otherwise.
std::string_view written_record(std::string_view text, const std::string& key, const StackMemo::Entry& entry) {
    const char* begin = entry.digest.data() - (kKeyChars + 1);
    const char* end = entry.text.data() + entry.text.size() + 1;
    if (entry.digest.size() != kKeyChars || begin < text.data() || end > text.data() + text.size()) return {};
    const std::string_view record(begin, static_cast<size_t>(end - begin));
    const std::string length = " " + std::to_string(entry.text.size()) + "\n";
    const size_t at = 2 * kKeyChars + 1;
    if (record.substr(0, kKeyChars) != key || record[kKeyChars] != ' ' || record.substr(at, length.size()) != length ||
        record.size() != at + length.size() + entry.text.size() + 1 || record.back() != '\n')
        return {};
    return record;
}

}  // namespace

TextPieces stack_memo_pieces(const StackMemo& memo, const Site& site) {
    TextPieces out;
    PieceWriter w{out};
    w.view(kHeader);
    for (const StackMemo::Piece& p : memo.pieces) {
        if (!p.clean || p.stack >= site.stacks.size() || p.key.size() != kKeyChars) continue;
        // An entry from the memo is written from there, its record as it was (a one-stack
        // rebuild hashes one entry and copies no bytes of the others).
        if (!p.entry.text.empty()) {
            if (const std::string_view record = written_record(memo.text.view(), p.key, p.entry); !record.empty()) {
                w.view(record);
                continue;
            }
        }
        const bool made_here = p.entry.text.empty();
        const std::string made = made_here ? stack_memo_entry(site, p.stack, p.line, p.path, p.python) : std::string();
        const std::string_view entry = made_here ? std::string_view(made) : p.entry.text;
        if (entry.empty()) continue;
        std::string& text = w.text();
        text += p.key;
        text += ' ';
        text += made_here ? sha256_hex(entry) : std::string(p.entry.digest);
        text += ' ';
        text += std::to_string(entry.size());
        text += '\n';
        text += entry;
        text += '\n';
    }
    w.close();
    return out;
}

std::string stack_memo_text(const StackMemo& memo, const Site& site) { return stack_memo_pieces(memo, site).joined(); }

}  // namespace sitegen
