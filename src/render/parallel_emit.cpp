// parallel_emit: worker threads render and hash stacks in a bounded window; the calling thread takes them in order.
#include "render/parallel_emit.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

#include "out/sha256.h"
#include "out/threads.h"

namespace sitegen {

namespace {

void render_one(const StackSteps& steps, size_t i, RenderedStack& r) {
    steps.render(i, r.files);
    r.hashes.reserve(r.files.size());
    for (const auto& f : r.files) r.hashes.push_back(sha256_hex(f.contents));
}

void render_in_order(size_t count, const StackSteps& steps) {
    for (size_t i = 0; i < count; ++i) {
        if (steps.wanted && !steps.wanted(i)) {
            steps.deliver(i, nullptr);
            continue;
        }
        RenderedStack r;
        render_one(steps, i, r);
        steps.deliver(i, &r);
    }
}

// A stack between submission and delivery.
struct Slot {
    size_t stack = 0;
    bool wanted = false;
    bool done = false;  // rendered (or failed, or not wanted); guarded by Pool::m_
    RenderedStack rendered;
    std::exception_ptr error;
    size_t worker = 0;  // which worker rendered it
};

class Pool {
public:
    Pool(const StackSteps& steps, unsigned threads, size_t window) : steps_(steps), slots_(window) {
        workers_.reserve(threads);
        garbage_.resize(threads);
        try {
            for (unsigned t = 0; t < threads; ++t) workers_.emplace_back([this, t] { work(t); });
        } catch (const std::system_error&) {  // no more threads: those started do the work
        }
    }
    ~Pool() { stop_and_join(); }
    bool has_workers() const { return !workers_.empty(); }

    void run(size_t count) {
        size_t submitted = 0;
        bool stop_submitting = false;  // a stack failed in wanted(): none after it is looked at
        for (size_t next = 0; next < count; ++next) {
            while (!stop_submitting && submitted < count && submitted < next + slots_.size()) {
                Slot& s = slots_[submitted % slots_.size()];
                s = Slot{};
                s.stack = submitted;
                try {
                    s.wanted = !steps_.wanted || steps_.wanted(submitted);
                } catch (...) {
                    s.error = std::current_exception();
                    stop_submitting = true;
                }
                ++submitted;
                std::lock_guard<std::mutex> lock(m_);
                if (s.wanted && !s.error) {
                    queue_.push_back(&s);
                    work_.notify_one();
                } else {
                    s.done = true;
                }
            }
            Slot& s = slots_[next % slots_.size()];
            {
                std::unique_lock<std::mutex> lock(m_);
                done_.wait(lock, [&] { return s.done; });
            }
            if (s.error) std::rethrow_exception(s.error);  // the destructor stops the workers
            steps_.deliver(next, s.wanted ? &s.rendered : nullptr);
            // Its memory goes back on the thread that allocated it, before that one renders
            // again: glibc frees another thread's blocks under that thread's arena lock, while
            // it allocates (a full build's malloc and free were 15% of its CPU).
            std::lock_guard<std::mutex> lock(m_);
            garbage_[s.worker].push_back(std::move(s.rendered));
            s.rendered = {};
        }
    }

private:
    void work(size_t worker) {
        for (;;) {
            Slot* s = nullptr;
            std::vector<RenderedStack> delivered;
            {
                std::unique_lock<std::mutex> lock(m_);
                work_.wait(lock, [&] { return stop_ || !queue_.empty(); });
                if (stop_) return;
                s = queue_.front();
                queue_.pop_front();
                delivered.swap(garbage_[worker]);
            }
            delivered.clear();
            s->worker = worker;
            try {
                render_one(steps_, s->stack, s->rendered);
            } catch (...) {
                s->error = std::current_exception();
                s->rendered = {};
            }
            std::lock_guard<std::mutex> lock(m_);
            s->done = true;
            done_.notify_one();
        }
    }

    void stop_and_join() {
        {
            std::lock_guard<std::mutex> lock(m_);
            stop_ = true;
        }
        work_.notify_all();
        for (auto& t : workers_)
            if (t.joinable()) t.join();
        workers_.clear();
    }

    const StackSteps& steps_;
    std::vector<Slot> slots_;
    std::vector<std::thread> workers_;
    std::mutex m_;
    std::condition_variable work_, done_;
    std::deque<Slot*> queue_;
    std::vector<std::vector<RenderedStack>> garbage_;  // per worker: its stacks, delivered, to free
    bool stop_ = false;
};

}  // namespace

unsigned render_threads() {
    if (const auto n = threads_from_env()) return *n;
    const unsigned cpus = std::thread::hardware_concurrency();
    return cpus == 0 ? 1 : std::min(cpus, kMaxRenderThreads);
}

void render_stacks(size_t count, unsigned threads, const StackSteps& steps) {
    if (threads <= 1 || count <= 1) {
        render_in_order(count, steps);
        return;
    }
    Pool pool(steps, threads, 2 * static_cast<size_t>(threads));
    if (pool.has_workers()) pool.run(count);
    else render_in_order(count, steps);
}

}  // namespace sitegen
