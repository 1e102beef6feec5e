// threads: share_out runs every item once, on at most the threads asked for, and rethrows the
// first failing item's exception after all have run; share_out_helped too, with the threads
// that join it (help_posted).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "out/threads.h"

using namespace sitegen;

TEST_CASE("share_out runs every item once, on at most the threads asked for", "[threads]") {
    for (unsigned threads : {1u, 2u, 4u, 64u}) {
        INFO(threads << " threads");
        std::vector<int> runs(100, 0);
        std::set<unsigned> slots;
        std::mutex m;
        share_out(runs.size(), threads, [&](size_t i, unsigned slot) {
            std::lock_guard<std::mutex> lock(m);
            ++runs[i];
            slots.insert(slot);
        });
        CHECK(std::count(runs.begin(), runs.end(), 1) == 100);
        CHECK(*slots.rbegin() < threads);
    }
    int ran = 0;
    share_out(0, 4, [&](size_t, unsigned) { ++ran; });
    CHECK(ran == 0);
}

TEST_CASE("share_out rethrows the first failing item's exception once every item ran", "[threads]") {
    std::vector<int> runs(50, 0);
    try {
        share_out(runs.size(), 4, [&](size_t i, unsigned) {
            runs[i] = 1;
            if (i == 7 || i == 30) throw std::runtime_error("item " + std::to_string(i));
        });
        FAIL("no exception");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) == "item 7");
    }
    CHECK(std::count(runs.begin(), runs.end(), 1) == 50);
}

TEST_CASE("share_out_slices runs every index once, a slice's indices in order on one thread", "[threads]") {
    for (const size_t count : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}}) {
        std::vector<int> runs(count, 0);
        std::vector<unsigned> slot_of(count, 99);
        share_out_slices(count, 64, 4, [&](size_t i, unsigned slot) {
            ++runs[i];
            slot_of[i] = slot;
        });
        INFO(count << " indices");
        CHECK(std::count(runs.begin(), runs.end(), 1) == static_cast<long>(count));
        for (size_t i = 0; i < count; ++i) {
            CHECK(slot_of[i] < 4);
            if (i % 64 != 0) CHECK(slot_of[i] == slot_of[i - 1]);  // (the same slice: the same thread)
        }
    }
}

TEST_CASE("stat steps use SITEGEN_THREADS (at most 4), or the CPUs when nothing runs beside them", "[threads]") {
    const char* saved = std::getenv("SITEGEN_THREADS");
    const std::string before = saved ? saved : "";
    ::setenv("SITEGEN_THREADS", "2", 1);
    CHECK(lone_stat_threads() == 2);
    CHECK(stat_threads() == 2);
    ::setenv("SITEGEN_THREADS", "16", 1);
    CHECK(lone_stat_threads() == 4);
    CHECK(stat_threads() == 4);
    ::unsetenv("SITEGEN_THREADS");
    // (Alone, a step takes the CPUs even below kMinCpusToSplit, where stat_threads() takes one.)
    const unsigned cpus = std::max(std::thread::hardware_concurrency(), 1u);
    CHECK(lone_stat_threads() == std::min(cpus, 4u));
    CHECK(stat_threads() == (cpus >= kMinCpusToSplit ? std::min(cpus, 4u) : 1u));
    if (saved) ::setenv("SITEGEN_THREADS", before.c_str(), 1);
}

TEST_CASE("share_out_helped runs every item once, a helper taking some, and rethrows the first failure", "[threads]") {
    CHECK_FALSE(help_posted());  // (nothing posted)
    for (const bool fails : {false, true}) {
        INFO("an item throws: " << fails);
        std::vector<int> runs(200, 0);
        std::atomic<bool> stop{false};
        std::atomic<size_t> helped{0};
        // (As the build's thread does; the items are slow enough that the post wakes it in time.)
        std::thread helper([&] { helped.store(help_posted_until(stop)); });
        std::thread::id owner = std::this_thread::get_id();
        std::atomic<size_t> on_helper{0};
        std::string failure;
        try {
            share_out_helped(runs.size(), [&](size_t i) {
                ++runs[i];  // (each item once: no two threads touch one slot)
                if (std::this_thread::get_id() != owner) on_helper.fetch_add(1);
                // (slow enough that the helper, woken by the post, takes some)
                std::this_thread::sleep_for(std::chrono::microseconds(200));
                if (fails && (i == 7 || i == 150)) throw std::runtime_error("item " + std::to_string(i));
            });
        } catch (const std::runtime_error& e) {
            failure = e.what();
        }
        stop.store(true);
        wake_helpers();
        helper.join();
        CHECK(std::count(runs.begin(), runs.end(), 1) == 200);
        CHECK(on_helper.load() > 0);
        CHECK(helped.load() > 0);
        CHECK(failure == (fails ? "item 7" : ""));
        CHECK_FALSE(help_posted());  // (left: nothing to take once it returned)
    }
}

TEST_CASE("share_out_helped posted while another is runs on its own thread alone", "[threads]") {
    std::atomic<bool> outer_in{false}, inner_done{false};
    std::vector<int> inner_runs(10, 0);
    std::thread other;
    share_out_helped(1, [&](size_t) {
        outer_in.store(true);
        other = std::thread([&] {
            std::thread::id self = std::this_thread::get_id();
            share_out_helped(inner_runs.size(), [&](size_t i) {
                CHECK(std::this_thread::get_id() == self);
                ++inner_runs[i];
            });
            inner_done.store(true);
        });
        while (!inner_done.load()) std::this_thread::yield();
    });
    other.join();
    CHECK(std::count(inner_runs.begin(), inner_runs.end(), 1) == 10);
    CHECK_FALSE(help_posted());
}
