// parallel_emit: any number of threads gives the sequential outputs, hashed, in stack order; failures arrive in turn.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "out/sha256.h"
#include "pipeline.h"
#include "render/parallel_emit.h"
#include "test_support.h"

using namespace sitegen;

namespace {

// A site with `n` stacks, written by bench/gen-site, loaded and checked.
Site generated_site(const test::TempDir& dir, int n) {
    REQUIRE(test::run("bash " SITEGEN_SOURCE_DIR "/bench/gen-site " + std::to_string(n) + " " + dir.str() + " >/dev/null") == 0);
    auto disk = make_disk_fs();
    Site site;
    Diagnostics diags;
    REQUIRE(load_site(*disk, dir.str(), "bench", site, diags));
    check_site(site, "bench", diags);
    REQUIRE(diags.error_count() == 0);
    return site;
}

struct Delivered {
    size_t stack;
    bool rendered;
    OutputList files;
    std::vector<std::string> hashes;
};

std::vector<Delivered> render_all_stacks(const Site& site, const PlanOptions& options, unsigned threads,
                                         std::function<bool(size_t)> wanted = {}) {
    std::vector<Delivered> out;
    StackSteps steps;
    steps.wanted = std::move(wanted);
    steps.render = [&](size_t i, OutputList& part) { emit_stack(site, site.stacks[i], options, part); };
    steps.deliver = [&](size_t i, RenderedStack* r) {
        if (r) out.push_back({i, true, std::move(r->files), std::move(r->hashes)});
        else out.push_back({i, false, {}, {}});
    };
    render_stacks(site.stacks.size(), threads, steps);
    return out;
}

void check_same_as_sequential(const Site& site, const std::string& name) {
    PlanOptions options;
    options.prefix = site.site.install_prefix;
    std::vector<OutputList> expected;
    for (const Stack& stack : site.stacks) emit_stack(site, stack, options, expected.emplace_back());
    for (unsigned threads : {1u, 2u, 3u, 8u}) {
        INFO(name << ", " << threads << " threads");
        const auto got = render_all_stacks(site, options, threads);
        REQUIRE(got.size() == expected.size());
        for (size_t i = 0; i < got.size(); ++i) {
            INFO("stack " << i);
            CHECK(got[i].stack == i);
            CHECK(got[i].rendered);
            REQUIRE(got[i].files.size() == expected[i].size());
            REQUIRE(got[i].hashes.size() == expected[i].size());
            for (size_t j = 0; j < expected[i].size(); ++j) {
                CHECK(got[i].files[j].path == expected[i][j].path);
                CHECK(got[i].files[j].contents == expected[i][j].contents);
                CHECK(got[i].files[j].executable == expected[i][j].executable);
                CHECK(got[i].hashes[j] == sha256_hex(expected[i][j].contents));
            }
        }
        // Stacks not wanted are not rendered, and delivered in their turn as such.
        const auto some = render_all_stacks(site, options, threads, [](size_t i) { return i % 3 != 1; });
        REQUIRE(some.size() == expected.size());
        for (size_t i = 0; i < some.size(); ++i) {
            CHECK(some[i].stack == i);
            CHECK(some[i].rendered == (i % 3 != 1));
            if (some[i].rendered) CHECK(some[i].files.size() == expected[i].size());
            else CHECK(some[i].files.empty());
        }
    }
}

}  // namespace

TEST_CASE("stacks rendered on any number of threads come back as the sequential render gives them, in stack order", "[render][parallel]") {
    test::TempDir dir("parallel-emit");
    check_same_as_sequential(generated_site(dir, 37), "gen-site 37");
    for (const auto& name : test::seed_site_names()) check_same_as_sequential(test::load_seed_site(name), name);
}

TEST_CASE("at most twice the threads' number of stacks are rendered and not yet delivered", "[render][parallel]") {
    for (unsigned threads : {2u, 3u}) {
        std::atomic<int> in_flight{0}, most{0};
        StackSteps steps;
        steps.render = [&](size_t i, OutputList& out) {
            const int now = ++in_flight;
            int seen = most.load();
            while (now > seen && !most.compare_exchange_weak(seen, now)) {
            }
            out.push_back({"f" + std::to_string(i), std::string(i, 'x'), false});
        };
        std::vector<size_t> order;
        steps.deliver = [&](size_t i, RenderedStack* r) {
            REQUIRE(r);
            CHECK(r->files.at(0).contents.size() == i);
            CHECK(r->hashes.at(0) == sha256_hex(std::string(i, 'x')));
            order.push_back(i);
            --in_flight;
        };
        render_stacks(200, threads, steps);
        CHECK(order.size() == 200);
        for (size_t i = 0; i < order.size(); ++i) CHECK(order[i] == i);
        CHECK(most.load() <= static_cast<int>(2 * threads));
    }
}

TEST_CASE("a stack that fails to render fails the run in its turn, after the stacks before it and before any after it", "[render][parallel]") {
    for (unsigned threads : {1u, 2u, 3u, 8u}) {
        INFO(threads << " threads");
        for (const char* where : {"render", "wanted"}) {
            INFO("thrown by " << where);
            std::vector<size_t> delivered;
            StackSteps steps;
            steps.wanted = [&](size_t i) {
                if (std::string(where) == "wanted" && i == 7) throw std::runtime_error("stack 7 is wrong");
                return true;
            };
            steps.render = [&](size_t i, OutputList& out) {
                if (std::string(where) == "render" && (i == 7 || i == 12)) throw std::invalid_argument("stack " + std::to_string(i) + " is wrong");
                out.push_back({"f", "x", false});
            };
            steps.deliver = [&](size_t i, RenderedStack*) { delivered.push_back(i); };
            try {
                render_stacks(30, threads, steps);
                FAIL("no exception");
            } catch (const std::exception& e) {
                CHECK(std::string(e.what()) == "stack 7 is wrong");
                CHECK((dynamic_cast<const std::invalid_argument*>(&e) != nullptr) == (std::string(where) == "render"));
            }
            CHECK(delivered == std::vector<size_t>{0, 1, 2, 3, 4, 5, 6});
        }
        // An exception of the calling thread's own step goes out at once; the workers stop.
        StackSteps steps;
        steps.render = [](size_t, OutputList& out) { out.push_back({"f", "x", false}); };
        size_t calls = 0;
        steps.deliver = [&](size_t i, RenderedStack*) {
            ++calls;
            if (i == 3) throw std::runtime_error("cannot stage");
        };
        CHECK_THROWS_WITH(render_stacks(1000, threads, steps), "cannot stage");
        CHECK(calls == 4);
    }
}

TEST_CASE("SITEGEN_THREADS sets how many threads render", "[render][parallel]") {
    const char* old = std::getenv("SITEGEN_THREADS");
    const std::string saved = old ? old : "";
    ::setenv("SITEGEN_THREADS", "3", 1);
    CHECK(render_threads() == 3);
    ::setenv("SITEGEN_THREADS", "1", 1);
    CHECK(render_threads() == 1);
    for (const char* bad : {"0", "x", "", "2x", "-1"}) {
        ::setenv("SITEGEN_THREADS", bad, 1);
        CHECK(render_threads() >= 1);
        CHECK(render_threads() <= kMaxRenderThreads);
    }
    ::unsetenv("SITEGEN_THREADS");
    CHECK(render_threads() >= 1);
    CHECK(render_threads() <= kMaxRenderThreads);
    if (old) ::setenv("SITEGEN_THREADS", saved.c_str(), 1);
}
