// threads: SITEGEN_THREADS, else the CPUs.
#include "out/threads.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace sitegen {

namespace {

constexpr unsigned long kMaxThreadsFromEnv = 64;

// The work share_out_helped posted (null: none), and how many helpers are in it: it is not
// left (nor destroyed) before they are out, which they say under the lock.
struct PostedWork {
    size_t count = 0;
    const std::function<void(size_t)>* work = nullptr;
    std::atomic<size_t> next{0}, done{0};
    unsigned helpers = 0;  // (under posted_lock)
    std::vector<std::exception_ptr> failed;  // by item
};
std::mutex posted_lock;
std::condition_variable helpers_out;
PostedWork* posted = nullptr;
std::atomic<unsigned> epoch{0};

size_t take_items(PostedWork& w) {
    size_t taken = 0;
    for (size_t i; (i = w.next.fetch_add(1)) < w.count; ++taken) {
        try {
            (*w.work)(i);
        } catch (...) {
            w.failed[i] = std::current_exception();
        }
        if (w.done.fetch_add(1, std::memory_order_acq_rel) + 1 == w.count) w.done.notify_all();
    }
    return taken;
}

}  // namespace

void wake_helpers() {
    epoch.fetch_add(1, std::memory_order_release);
    epoch.notify_all();
}

size_t help_posted_until(const std::atomic<bool>& done) {
    size_t helped = 0;
    while (!done.load(std::memory_order_acquire)) {
        const unsigned seen = epoch.load(std::memory_order_acquire);  // (before looking: a post or wake after it ends the wait)
        if (help_posted()) {
            ++helped;
            continue;
        }
        if (done.load(std::memory_order_acquire)) break;
        epoch.wait(seen, std::memory_order_acquire);
    }
    return helped;
}

void share_out_helped(size_t count, const std::function<void(size_t)>& work) {
    PostedWork w;
    w.count = count;
    w.work = &work;
    w.failed.resize(count);
    bool posting = false;
    {
        const std::lock_guard<std::mutex> lock(posted_lock);
        posting = posted == nullptr;
        if (posting) posted = &w;
    }
    if (posting) wake_helpers();
    take_items(w);
    for (size_t done; (done = w.done.load(std::memory_order_acquire)) < count;) w.done.wait(done, std::memory_order_acquire);
    if (posting) {
        std::unique_lock<std::mutex> lock(posted_lock);
        posted = nullptr;
        helpers_out.wait(lock, [&] { return w.helpers == 0; });
    }
    for (const auto& e : w.failed)
        if (e) std::rethrow_exception(e);
}

bool help_posted() {
    PostedWork* w = nullptr;
    {
        const std::lock_guard<std::mutex> lock(posted_lock);
        w = posted;
        if (w) ++w->helpers;
    }
    if (!w) return false;
    const size_t taken = take_items(*w);
    const std::lock_guard<std::mutex> lock(posted_lock);
    if (--w->helpers == 0) helpers_out.notify_all();  // (under the lock: `w` lives until it is released)
    return taken > 0;
}

std::optional<unsigned> threads_from_env() {
    if (const char* env = std::getenv("SITEGEN_THREADS"); env && *env >= '0' && *env <= '9') {
        char* end = nullptr;
        const unsigned long n = std::strtoul(env, &end, 10);
        if (end != env && *end == '\0' && n > 0) return static_cast<unsigned>(std::min(n, kMaxThreadsFromEnv));
    }
    return std::nullopt;
}

unsigned split_threads() {
    if (const auto n = threads_from_env()) return *n;
    const unsigned cpus = std::thread::hardware_concurrency();
    return cpus >= kMinCpusToSplit ? cpus : 1;
}

unsigned stat_threads() { return std::min(split_threads(), 4u); }

unsigned lone_stat_threads() {
    const unsigned cpus = std::max(std::thread::hardware_concurrency(), 1u);
    return std::min(threads_from_env().value_or(cpus), 4u);
}

void share_out_or_helped(size_t count, unsigned threads, const std::function<void(size_t)>& work) {
    if (threads > 1) share_out(count, threads, [&](size_t i, unsigned) { work(i); });
    else share_out_helped(count, work);
}

}  // namespace sitegen
