// Records a load's file-system queries and their answers, and asks them again.
#include "out/input_log.h"

#include "out/sha256.h"

namespace sitegen {

namespace {

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += std::to_string(n.size()) + ":" + n;
    return out;
}

std::string entry_answer(bool found, const TreeEntry& e) {
    if (!found) return "absent";
    return std::to_string(static_cast<int>(e.type)) + " " + std::to_string(e.mode) + " " + std::to_string(e.size) + " " +
           std::to_string(e.mtime_ns) + " " + std::to_string(e.ino);
}

// One query's answer, asked of `fs` (the content of a read by its digest: inputs are small
// next to the outputs, but a site file is read whole anyway).
std::string answer(FileSystem& fs, InputQuery::Op op, const std::string& path) {
    switch (op) {
        case InputQuery::Op::read: {
            std::string text, error;
            return fs.read(path, text, error, kMaxInputFileBytes) ? "ok " + sha256_hex(text) : "error " + error;
        }
        case InputQuery::Op::exists: return fs.exists(path) ? "yes" : "no";
        case InputQuery::Op::is_dir: return fs.is_dir(path) ? "yes" : "no";
        case InputQuery::Op::entry: {
            TreeEntry e;
            const bool found = fs.entry(path, e);
            return entry_answer(found, e);
        }
        case InputQuery::Op::list_dirs: return joined(fs.list_dirs(path));
        case InputQuery::Op::list_files: return joined(fs.list_files(path));
    }
    return {};
}

void append(std::string& out, InputQuery::Op op, const std::string& path, const std::string& answer) {
    out += static_cast<char>(op);
    out += std::to_string(path.size()) + ":" + path + " " + std::to_string(answer.size()) + ":" + answer + "\n";
}

}  // namespace

void RecordingFs::note(InputQuery::Op op, const std::string& path, const std::string& ans) {
    queries_.push_back({op, path});
    append(answers_, op, path, ans);
}

bool RecordingFs::read(const std::string& path, std::string& out, std::string& error, size_t max_bytes) {
    // The recorded answer is what a later build's read (of at most kMaxInputFileBytes) gets.
    const bool ok = inner_.read(path, out, error, max_bytes);
    note(InputQuery::Op::read, path,
         max_bytes == kMaxInputFileBytes ? (ok ? "ok " + sha256_hex(out) : "error " + error) : answer(inner_, InputQuery::Op::read, path));
    return ok;
}

bool RecordingFs::exists(const std::string& path) {
    const bool yes = inner_.exists(path);
    note(InputQuery::Op::exists, path, yes ? "yes" : "no");
    return yes;
}

bool RecordingFs::is_dir(const std::string& path) {
    const bool yes = inner_.is_dir(path);
    note(InputQuery::Op::is_dir, path, yes ? "yes" : "no");
    return yes;
}

bool RecordingFs::entry(const std::string& path, TreeEntry& out) {
    const bool found = inner_.entry(path, out);
    note(InputQuery::Op::entry, path, entry_answer(found, out));
    return found;
}

std::vector<std::string> RecordingFs::list_dirs(const std::string& dir) {
    auto out = inner_.list_dirs(dir);
    note(InputQuery::Op::list_dirs, dir, joined(out));
    return out;
}

std::vector<std::string> RecordingFs::list_files(const std::string& dir) {
    auto out = inner_.list_files(dir);
    note(InputQuery::Op::list_files, dir, joined(out));
    return out;
}

std::string answer_again(FileSystem& fs, const std::vector<InputQuery>& queries) {
    std::string out;
    for (const auto& q : queries) append(out, q.op, q.path, answer(fs, q.op, q.path));
    return out;
}

}  // namespace sitegen
