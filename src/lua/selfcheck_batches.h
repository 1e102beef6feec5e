// selfcheck_batches: the modulefile self-check run in batches on a background thread while the build renders, its findings as the whole check gives them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lua/supervisor.h"
#include "render/emit.h"
#include "site/diagnostics.h"

namespace sitegen {

// Takes one site's modulefiles as they are rendered and self-checks them, `batch` at a time,
// on one background thread (or, when not `background`, all in finish(), in the calling
// thread). finish() adds the findings to `diags` exactly as self_check_modulefiles would for
// every file added, stably sorted by path: each file's findings depend on that file alone, so
// the batches' findings are merged in that order. finish() checks the last files in two halves
// at once, one in the calling thread. A few batches wait at most (add() blocks),
// so memory holds a few batches of modulefiles, not the site's. Each batch is one forked child,
// and a fork of a big build (300 MB for 10,000 stacks) costs its page tables and then a copy of
// every page the build writes while the child lives: 1024 a batch took a 10,000-stack build's
// system time from 3.8 to 3.3 s against 256 (docs/performance.md).
class BatchedSelfCheck {
public:
    // With `early` (an EarlyChild of early_self_check(), outliving this), the first batch is
    // checked by that child, unless another check claimed it first.
    explicit BatchedSelfCheck(bool background, size_t batch = 1024, EarlyChild* early = nullptr);
    // Stops the background thread, dropping what is not checked yet (a build that failed).
    ~BatchedSelfCheck();
    BatchedSelfCheck(const BatchedSelfCheck&) = delete;
    BatchedSelfCheck& operator=(const BatchedSelfCheck&) = delete;

    void add(OutputFile modulefile);
    // Starts checking the files added so far now, not at the next full batch or finish: the
    // caller has no more to add for a while (background only; finish() still waits for them).
    void flush();
    void finish(Diagnostics& diags);

private:
    struct Batch {
        size_t first = 0;  // sequence number of its first file
        OutputList files;
    };
    struct Found {
        size_t file = 0;  // sequence number
        Diagnostic d;
    };
    // Queues the first `files` pending files (waiting for room when `wait`), starting the
    // worker if it is not yet running and `start_worker`.
    void send_batch(size_t files, bool wait, bool start_worker);
    void work();
    EarlyChild* claim_early();  // the early child, for the first caller (when no other site's self-check took it)

    const bool background_;
    const size_t batch_size_;
    OutputList pending_;              // the batch being filled (all files when not background)
    std::vector<std::string> paths_;  // of every file added, by sequence number
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<Batch> queue_;       // guarded by m_
    std::vector<Found> found_;      // guarded by m_
    std::vector<size_t> stops_;     // files after which a batch's check could not go on; guarded by m_
    std::exception_ptr error_;      // what a batch's check threw; guarded by m_
    bool closing_ = false, abandon_ = false;
    std::thread worker_;
    std::atomic<EarlyChild*> early_;  // (taken by the first batch checked)
};

}  // namespace sitegen
