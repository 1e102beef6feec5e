// The inputs of a build as the file system answered them: a FileSystem that forwards every
// call and records each query a load makes (read, exists, is_dir, entry, listings) with its
// answer, so a later build can ask the same questions and know, without loading, parsing or
// checking, whether anything it would read has changed (ninja's "deps log", for a load).
#pragma once

#include <string>
#include <vector>

#include "out/fs.h"

namespace sitegen {

struct InputQuery {
    enum class Op : char { read = 'r', exists = 'e', is_dir = 'd', entry = 't', list_dirs = 'l', list_files = 'f' };
    Op op = Op::read;
    std::string path;
};

// Forwards to `inner`; the queries are recorded in order, with a digest of their answers.
class RecordingFs : public FileSystem {
public:
    explicit RecordingFs(FileSystem& inner) : inner_(inner) {}
    const std::vector<InputQuery>& queries() const { return queries_; }
    // The answers' text (one line per query; a read's content by its SHA-256).
    const std::string& answers() const { return answers_; }

    bool read(const std::string& path, std::string& out, std::string& error, size_t max_bytes) override;
    bool exists(const std::string& path) override;
    bool is_dir(const std::string& path) override;
    bool entry(const std::string& path, TreeEntry& out) override;
    std::vector<std::string> list_dirs(const std::string& dir) override;
    std::vector<std::string> list_files(const std::string& dir) override;
    // Not queries of a load: forwarded unrecorded.
    bool write(const std::string& path, const std::string& data, bool executable, std::string& error) override {
        return inner_.write(path, data, executable, error);
    }
    bool write_pieces(const std::string& path, const std::vector<std::string_view>& pieces, std::string& error) override {
        return inner_.write_pieces(path, pieces, error);
    }
    bool sync(const std::string& path, std::string& error) override { return inner_.sync(path, error); }
    bool make_dirs(const std::string& path, std::string& error) override { return inner_.make_dirs(path, error); }
    std::vector<TreeEntry> scan(const std::string& dir, bool stat_files = true) override {
        return inner_.scan(dir, stat_files);
    }
    bool rename(const std::string& from, const std::string& to, std::string& error) override {
        return inner_.rename(from, to, error);
    }
    bool remove_all(const std::string& path, std::string& error) override { return inner_.remove_all(path, error); }
    bool is_executable(const std::string& path) override { return inner_.is_executable(path); }
    bool exchange(const std::string& a, const std::string& b, std::string& error) override {
        return inner_.exchange(a, b, error);
    }
    bool lock(const std::string& path, std::string& error) override { return inner_.lock(path, error); }
    void unlock() override { inner_.unlock(); }
    bool concurrent_reads() const override { return inner_.concurrent_reads(); }
    bool link(const std::string& from, const std::string& to, std::string& error) override {
        return inner_.link(from, to, error);
    }

private:
    void note(InputQuery::Op op, const std::string& path, const std::string& answer);
    FileSystem& inner_;
    std::vector<InputQuery> queries_;
    std::string answers_;
};

// Asks `fs` the recorded queries again: the answers' text, equal to the recording's
// RecordingFs::answers() exactly when every answer is the same.
std::string answer_again(FileSystem& fs, const std::vector<InputQuery>& queries);

}  // namespace sitegen
