// selfcheck_batches: a queue of modulefile batches, one thread checking them, and the findings merged in path order.
#include "lua/selfcheck_batches.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "lua/selfcheck.h"

namespace sitegen {

namespace {
constexpr size_t kMaxWaiting = 2;  // batches queued and not yet being checked
// At finish, what is left is checked in two halves at once (the rendering is over: a core is
// free), unless it is too few files to pay for a second child.
constexpr size_t kSplitAtLeast = 64;
}

BatchedSelfCheck::BatchedSelfCheck(bool background, size_t batch, EarlyChild* early)
    : background_(background), batch_size_(std::max<size_t>(batch, 1)), early_(early) {}

BatchedSelfCheck::~BatchedSelfCheck() {
    {
        std::lock_guard<std::mutex> lock(m_);
        abandon_ = true;
    }
    cv_.notify_all();
    if (worker_.joinable()) worker_.join();
}

void BatchedSelfCheck::add(OutputFile modulefile) {
    if (background_) paths_.push_back(modulefile.path);
    pending_.push_back(std::move(modulefile));
    if (background_ && pending_.size() >= batch_size_) send_batch(pending_.size(), true, true);
}

void BatchedSelfCheck::send_batch(size_t files, bool wait, bool start_worker) {
    Batch b;
    b.first = paths_.size() - pending_.size();
    if (files >= pending_.size()) {
        b.files = std::move(pending_);
        pending_ = {};
    } else {
        const auto end = pending_.begin() + static_cast<std::ptrdiff_t>(files);
        b.files.assign(std::make_move_iterator(pending_.begin()), std::make_move_iterator(end));
        pending_.erase(pending_.begin(), end);
    }
    {
        std::unique_lock<std::mutex> lock(m_);
        if (wait) cv_.wait(lock, [&] { return abandon_ || queue_.size() < kMaxWaiting; });
        if (abandon_) return;  // a batch's check failed: finish() says so
        queue_.push_back(std::move(b));
    }
    cv_.notify_all();
    if (start_worker && !worker_.joinable()) worker_ = std::thread([this] { work(); });
}

void BatchedSelfCheck::work() {
    for (;;) {
        Batch b;
        {
            std::unique_lock<std::mutex> lock(m_);
            cv_.wait(lock, [&] { return abandon_ || closing_ || !queue_.empty(); });
            if (abandon_ || queue_.empty()) return;
            b = std::move(queue_.front());
            queue_.pop_front();
        }
        cv_.notify_all();  // room in the queue
        std::vector<Found> found;
        size_t stopped = b.files.size();
        try {
            stopped = self_check_each(b.files, [&](size_t i, Diagnostic d) { found.push_back({b.first + i, std::move(d)}); },
                                      claim_early());
        } catch (...) {  // (e.g. no memory) finish() throws it, as the whole check would have
            std::lock_guard<std::mutex> lock(m_);
            if (!error_) error_ = std::current_exception();
            abandon_ = true;
            cv_.notify_all();
            return;
        }
        std::lock_guard<std::mutex> lock(m_);
        for (auto& f : found) found_.push_back(std::move(f));
        if (stopped < b.files.size()) stops_.push_back(b.first + stopped);
    }
}

EarlyChild* BatchedSelfCheck::claim_early() {
    EarlyChild* early = early_.exchange(nullptr);
    return early && early->claim() ? early : nullptr;
}

void BatchedSelfCheck::flush() {
    if (!background_ || pending_.empty()) return;
    if (pending_.size() >= kSplitAtLeast) send_batch(pending_.size() / 2, true, true);
    send_batch(pending_.size(), true, true);
}

void BatchedSelfCheck::finish(Diagnostics& diags) {
    if (!background_) {  // all files at once, as before batching
        std::stable_sort(pending_.begin(), pending_.end(), [](const OutputFile& a, const OutputFile& b) { return a.path < b.path; });
        self_check_each(pending_, [&](size_t, Diagnostic d) { diags.add(std::move(d)); }, claim_early());
        pending_ = {};
        return;
    }
    // Every file is here now: the last ones are queued at once (no bound), in two halves when
    // there are many, and this thread checks queued batches beside the worker (a build calls
    // finish when its rendering is over, so a core is free), the worker started only for a half.
    if (pending_.size() >= kSplitAtLeast) send_batch(pending_.size() / 2, false, true);
    if (!pending_.empty()) send_batch(pending_.size(), false, false);
    {
        std::lock_guard<std::mutex> lock(m_);
        closing_ = true;
    }
    cv_.notify_all();
    work();
    if (worker_.joinable()) worker_.join();
    if (error_) std::rethrow_exception(error_);
    // Each file's place among all files stably sorted by path; findings go in that order.
    std::vector<size_t> order(paths_.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return paths_[a] < paths_[b]; });
    std::vector<size_t> rank(paths_.size());
    for (size_t r = 0; r < order.size(); ++r) rank[order[r]] = r;
    std::stable_sort(found_.begin(), found_.end(), [&](const Found& a, const Found& b) { return rank[a.file] < rank[b.file]; });
    // The whole check would have stopped at the first file (in this order) where a batch's did.
    size_t last = SIZE_MAX;
    for (size_t file : stops_) last = std::min(last, rank[file]);
    for (auto& f : found_) {
        if (last != SIZE_MAX && rank[f.file] > last) break;
        diags.add(std::move(f.d));
    }
    found_.clear();
    stops_.clear();
    paths_.clear();
}

}  // namespace sitegen
