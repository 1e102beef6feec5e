// beside: one function on a second thread while the calling thread runs another.
#pragma once

#include <exception>
#include <thread>

namespace sitegen {

// Runs `other` on a thread of its own while the calling thread runs `mine`, and returns when
// both are done (with `parallel` false: `mine`, then `other`, on the calling thread). The two
// must not write what the other reads. Both run even when one throws; the exception is
// rethrown once both ended (`mine`'s, when both threw).
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
    if (parallel) beside = std::thread(run_other);
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

}  // namespace sitegen
