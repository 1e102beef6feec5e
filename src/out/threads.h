// threads: how many threads sitegen's parallel steps use (SITEGEN_THREADS, else the CPUs).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

namespace sitegen {

// SITEGEN_THREADS when it is a positive number (at most 64; 1: every step on the calling
// thread), else nothing.
std::optional<unsigned> threads_from_env();

// Below this many CPUs a build's own threads (the main one, the look at the output tree, the
// rules' child) keep them all busy: splitting a step's work further only adds to it.
constexpr unsigned kMinCpusToSplit = 4;

// How many threads a step that splits its own work uses (the pieces of a site file, the rule
// files' children, a tree's scan): threads_from_env(), else the CPUs when there are at least
// kMinCpusToSplit, else 1.
unsigned split_threads();

// How many threads a step made of many small file system calls uses (a tree's scan, the
// stats of a tree's files): split_threads(), at most 4. Their system calls, not the CPU, set
// its pace: on a 16-core node a one-stack rebuild of 2,000 stacks took 0.31 s (median) with
// one, 0.27 s with four; eight there took the system time from 0.22 to 0.87 s for no gain.
unsigned stat_threads();

// How many threads such a step uses when nothing else of the build runs meanwhile (an
// up-to-date build's stats): threads_from_env(), else the CPUs, at most 4 either way. Below
// kMinCpusToSplit no other thread of the build is then kept busy: on two CPUs an up-to-date
// build of 2,000 stacks took 0.16-0.19 s with one thread, 0.10-0.11 s with two.
unsigned lone_stat_threads();

// Calls work(i, slot) for every i in [0, count) on up to `threads` threads, the calling one
// included; each item goes to whichever thread is free, and `slot` (0 for the calling thread,
// below `threads`) names the thread, so per-slot state needs no lock. A thread that cannot be
// started (a process limit) leaves its share to the others. Every item runs; then the
// exception of the first item (by index) that threw, if any, is rethrown.
template <class Work>
void share_out(size_t count, unsigned threads, Work&& work) {
    std::atomic<size_t> next{0};
    std::vector<std::exception_ptr> failed(count);
    const auto run = [&](unsigned slot) {
        for (size_t i; (i = next.fetch_add(1)) < count;) {
            try {
                work(i, slot);
            } catch (...) {
                failed[i] = std::current_exception();
            }
        }
    };
    std::vector<std::thread> helpers;
    try {
        for (unsigned slot = 1; slot < std::min<size_t>(threads, count); ++slot) helpers.emplace_back(run, slot);
    } catch (const std::system_error&) {
        // no more threads to be had: the ones started and this one share the items
    }
    run(0);
    for (auto& t : helpers) t.join();
    for (const auto& e : failed)
        if (e) std::rethrow_exception(e);
}

// Calls work(i, slot) for every i in [0, count), the indices in slices of `slice` consecutive
// ones shared out as share_out shares its items (a slice's indices in order, on the thread
// `slot`): for many small steps, each too small to be an item of its own.
template <class Work>
void share_out_slices(size_t count, size_t slice, unsigned threads, Work&& work) {
    share_out((count + slice - 1) / slice, threads, [&](size_t s, unsigned slot) {
        const size_t end = std::min(count, (s + 1) * slice);
        for (size_t i = s * slice; i < end; ++i) work(i, slot);
    });
}

// Work that one thread does while others may join it instead of waiting idle: below
// kMinCpusToSplit a build's two threads each have their own part, and the one done first
// (the build's thread, once its sites are checked and its spares looked at) takes items of the
// look's stats rather than waiting for them.
// share_out_helped calls work(i) for every i in [0, count) on the calling thread, while any
// thread in help_posted() takes items too, and returns once every item is done (then it
// rethrows the exception of the first item, by index, that threw). One work is posted at a
// time: posted while another is, it runs on the calling thread alone.
void share_out_helped(size_t count, const std::function<void(size_t)>& work);
// work(i) for every i in [0, count): shared out on `threads` threads (share_out) when there
// are more than one, else share_out_helped (a thread in help_posted() may take items).
void share_out_or_helped(size_t count, unsigned threads, const std::function<void(size_t)>& work);
// Takes items of the work posted now until none is left; false when it took none (none is
// posted, or every item of it is taken).
bool help_posted();
// Until `done` is set, takes items of whatever work is posted, else waits for work to be
// posted or for wake_helpers() (whoever sets `done` calls it after: WakeHelpersOnExit).
// Returns how many times it took items.
size_t help_posted_until(const std::atomic<bool>& done);
void wake_helpers();

// Sets no flag: wake_helpers() when it goes out of scope (declared before the SetOnExit of
// the flag a helper waits for, so that it runs after it, also when leaving by an exception).
struct WakeHelpersOnExit {
    WakeHelpersOnExit() = default;
    WakeHelpersOnExit(const WakeHelpersOnExit&) = delete;
    WakeHelpersOnExit& operator=(const WakeHelpersOnExit&) = delete;
    ~WakeHelpersOnExit() { wake_helpers(); }
};

}  // namespace sitegen
