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

// "stacks.<index>": the model path of a stack and the prefix of its regions.
std::string stack_path(size_t index) { return "stacks." + std::to_string(index); }

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
    const std::string prefix = stack_path(index);
    std::string regions;
    size_t count = 0;
    for (auto it = site.regions.lower_bound(prefix); it != site.regions.end(); ++it) {
        const std::string& key = it->first;
        if (key.compare(0, prefix.size(), prefix) != 0) break;
        if (key.size() > prefix.size() && key[prefix.size()] != '.') {
            if (key[prefix.size()] > '.') break;  // stacks.<index><digit>...: past this stack's keys
            continue;
        }
        const SourceRegion& r = it->second;
        if (r.file != path || (r.line != 0 && r.line < line)) return {};  // (not from this piece)
        append_prefixed(regions, std::string_view(key).substr(prefix.size()));
        put_int(regions, r.line == 0 ? -1 : r.line - line);
        put_int(regions, r.column);
        ++count;
    }
    put_int(out, static_cast<long long>(count));
    out += regions;
    return out;
}

bool stack_from_memo(std::string_view entry, int line, const std::string& path, MemoStack& out) {
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
        out.regions.push_back({below, {path, delta < 0 ? 0 : line + delta, column}});
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

std::string stack_memo_text(const StackMemo& memo, const Site& site) {
    std::string out(kHeader);
    // (No regrowth copying megabytes: the entries read back as they are, the others about as big.)
    size_t bytes = 0;
    for (const StackMemo::Piece& p : memo.pieces) bytes += 2 * kKeyChars + 24 + p.entry.text.size();
    out.reserve(bytes + bytes / std::max<size_t>(memo.pieces.size(), 1) * 4);
    for (const StackMemo::Piece& p : memo.pieces) {
        if (!p.clean || p.stack >= site.stacks.size()) continue;
        // (An entry from the memo keeps its digest: a one-stack rebuild hashes one entry.)
        const bool made_here = p.entry.text.empty();
        const std::string made = made_here ? stack_memo_entry(site, p.stack, p.line, p.path, p.python) : std::string();
        const std::string_view entry = made_here ? std::string_view(made) : p.entry.text;
        if (entry.empty() || p.key.size() != kKeyChars) continue;
        out += p.key;
        out += ' ';
        out += made_here ? sha256_hex(entry) : std::string(p.entry.digest);
        out += ' ';
        out += std::to_string(entry.size());
        out += '\n';
        out += entry;
        out += '\n';
    }
    return out;
}

}  // namespace sitegen
