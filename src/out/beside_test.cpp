// run_beside: both functions run, on two threads or in turn, and either one's exception reaches the caller.
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>

#include "out/beside.h"

using sitegen::run_beside;

TEST_CASE("run_beside runs both functions, the other one on its own thread when parallel", "[beside]") {
    for (const bool parallel : {false, true}) {
        std::thread::id mine_on, other_on;
        run_beside(parallel, [&] { other_on = std::this_thread::get_id(); }, [&] { mine_on = std::this_thread::get_id(); });
        CHECK(mine_on == std::this_thread::get_id());
        CHECK((other_on == std::this_thread::get_id()) == !parallel);
    }
}

TEST_CASE("run_beside without threads runs the caller's function first", "[beside]") {
    std::string order;
    run_beside(false, [&] { order += "other "; }, [&] { order += "mine "; });
    CHECK(order == "mine other ");
}

TEST_CASE("run_beside rethrows once both ended, the caller's exception first", "[beside]") {
    for (const bool parallel : {false, true}) {
        std::atomic<bool> other_done{false};
        const auto fail_other = [&] {
            other_done = true;
            throw std::runtime_error("other");
        };
        try {
            run_beside(parallel, fail_other, [] { throw std::logic_error("mine"); });
            FAIL("nothing thrown");
        } catch (const std::logic_error& e) {
            CHECK(std::string(e.what()) == "mine");
        }
        // (sequentially the other one still runs after the caller's threw: nothing is left half done)
        CHECK(other_done);
        try {
            run_beside(parallel, fail_other, [] {});
            FAIL("nothing thrown");
        } catch (const std::runtime_error& e) {
            CHECK(std::string(e.what()) == "other");
        }
    }
}
