// selfcheck_batches: checked in batches on a background thread, the findings are those of one check of every file sorted by path.
#include <catch2/catch.hpp>

#include <algorithm>
#include <utility>
#include <string>
#include <vector>

#include "lua/selfcheck.h"
#include "lua/selfcheck_batches.h"

using namespace sitegen;

namespace {

// Many modulefiles in an order that is not the paths' (reversed, one path twice), some broken
// in different ways, one stuck past its time limit, so findings come from several batches.
OutputList modulefiles() {
    OutputList files;
    for (int i = 599; i >= 0; --i) {
        const std::string path = "modules-out/t/modulefiles/M" + std::to_string(i % 97) + "/" + std::to_string(i) + ".lua";
        std::string text = "setenv('A" + std::to_string(i) + "', 'x')\nprepend_path('PATH', '/p/" + std::to_string(i) + "')\n";
        if (i % 41 == 5) text += "setenvv('B', 'c')\n";       // unknown function
        if (i % 53 == 7) text = "setenv('A', \n";             // syntax error
        if (i % 67 == 3) text += "if mode() == 'unload' then setenv('Z', '1') end\n";  // asymmetry
        if (i == 300) text += "local x = ('a'):rep(40):match(('a*'):rep(12) .. 'b')\n";  // time limit
        files.push_back({path, text, false});
        if (i == 250) files.push_back({path, "setenv('DUP', 1, 2, 3, 4)\n", false});  // the same path again
    }
    files.push_back({"modules-out/t/modulefiles/M1/.modulerc.lua", "module_version('M1/1', 'default')\nbogus()\n", false});
    return files;
}

std::vector<std::string> shown(const Diagnostics& diags) {
    std::vector<std::string> out;
    for (const auto& d : diags.all())
        out.push_back(d.where.file + ":" + std::to_string(d.where.line) + ":" + std::to_string(d.where.column) + ": " + d.message + " | " + d.hint);
    return out;
}

}  // namespace

TEST_CASE("batched self-check findings are those of one check of all files sorted by path", "[lua][selfcheck]") {
    const OutputList files = modulefiles();
    OutputList sorted = files;
    std::stable_sort(sorted.begin(), sorted.end(), [](const OutputFile& a, const OutputFile& b) { return a.path < b.path; });
    for (size_t cap : {size_t{1000}, size_t{7}}) {  // a small cap keeps only the first findings added
        INFO("cap " << cap);
        Diagnostics expected(cap);
        self_check_modulefiles(sorted, expected);
        REQUIRE(expected.error_count() > 20);
        for (bool background : {false, true})
            for (size_t batch : {size_t{1}, size_t{64}, size_t{256}, size_t{1000}}) {
                if (!background && batch != 256) continue;
                INFO((background ? "background, batch " : "in finish(), batch ") << batch);
                Diagnostics got(cap);
                BatchedSelfCheck check(background, batch);
                for (const auto& f : files) check.add(f);
                check.finish(got);
                CHECK(shown(got) == shown(expected));
                CHECK(got.error_count() == expected.error_count());
                CHECK(render_all(got, {}) == render_all(expected, {}));
            }
        // The first batch checked by an early child (forked before the files exist), the whole
        // check in it (stopped at the stuck file, then went on in children of its own) or only
        // the first of several batches.
        for (const auto& [background, batch] : {std::pair{false, size_t{256}}, std::pair{true, size_t{64}},
                                                std::pair{true, size_t{1000}}}) {
            INFO("an early child, " << (background ? "background, batch " : "in finish(), batch ") << batch);
            EarlyChild early(early_self_check());
            Diagnostics got(cap);
            {
                BatchedSelfCheck check(background, batch, &early);
                for (const auto& f : files) check.add(f);
                check.finish(got);
            }
            CHECK_FALSE(early.claim());  // (it was taken)
            CHECK(shown(got) == shown(expected));
            CHECK(render_all(got, {}) == render_all(expected, {}));
        }
    }
}

TEST_CASE("a batched self-check dropped before finish stops without hanging", "[lua][selfcheck]") {
    const OutputList files = modulefiles();
    BatchedSelfCheck check(true, 16);
    for (size_t i = 0; i < 100; ++i) check.add(files[i]);
}

TEST_CASE("each file's self-check findings are reported with its index", "[lua][selfcheck]") {
    const OutputList files = {{"modules-out/t/README", "x", false},
                              {"modules-out/t/modulefiles/A/1.lua", "setenvv('A', 'b')\n", false},
                              {"modules-out/t/modulefiles/B/1.lua", "setenv('A', 'b')\n", false},
                              {"modules-out/t/modulefiles/C/1.lua", "setenv('A',\n", false}};
    std::vector<size_t> at;
    CHECK(self_check_each(files, [&](size_t i, Diagnostic) { at.push_back(i); }) == files.size());
    CHECK(at == std::vector<size_t>{1, 3});
}

TEST_CASE("a batched self-check flushed early gives the findings of one check of all files", "[lua][selfcheck]") {
    const OutputList files = modulefiles();
    OutputList sorted = files;
    std::stable_sort(sorted.begin(), sorted.end(), [](const OutputFile& a, const OutputFile& b) { return a.path < b.path; });
    Diagnostics expected;
    self_check_modulefiles(sorted, expected);
    for (size_t flush_at : {size_t{1}, size_t{40}, size_t{200}, files.size()}) {
        INFO("flushed after " << flush_at << " files");
        Diagnostics got;
        BatchedSelfCheck check(true, 256);
        for (size_t i = 0; i < files.size(); ++i) {
            check.add(files[i]);
            if (i + 1 == flush_at) check.flush();
        }
        check.finish(got);
        CHECK(shown(got) == shown(expected));
    }
}
