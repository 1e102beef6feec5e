// beside: one function on a second thread while the calling thread runs another.
#pragma once

#include <atomic>
#include <exception>
#include <system_error>
#include <thread>

namespace sitegen {

// Runs `other` on a thread of its own while the calling thread runs `mine`, and returns when
// both are done (with `parallel` false: `mine`, then `other`, on the calling thread). The two
// must not write what the other reads. Both run even when one throws; the exception is
// rethrown once both ended (`mine`'s, when both threw). When no thread can be started, both
// run on the calling thread.
template <class Other, class Mine>
void run_beside(bool parallel, Other&& other, Mine&& mine) {
    std::exception_ptr failed, failed_beside;
    const auto run_other = [&] {
        try {
            other();
        } catch (...) {
            failed_beside = std::current_exception();
        }
    };
    std::thread beside;
    if (parallel) {
        try {
            beside = std::thread(run_other);
        } catch (const std::system_error&) {
            parallel = false;  // no thread to be had (a process limit): one after the other
        }
    }
    try {
        mine();
    } catch (...) {
        failed = std::current_exception();
    }
    if (parallel) beside.join();
    else run_other();
    if (failed) std::rethrow_exception(failed);
    if (failed_beside) std::rethrow_exception(failed_beside);
}

// Sets `flag` and wakes its waiters when it goes out of scope, by an exception too: a thread
// that waits for work done beside it (flag.wait(false)) never waits forever.
struct SetOnExit {
    std::atomic<bool>& flag;
    ~SetOnExit() {
        flag.store(true, std::memory_order_release);
        flag.notify_all();
    }
};

}  // namespace sitegen
