// Supervised runs: messages arrive in order, a call stuck in C is killed at its time limit and
// reported at the line that called it, a child that dies is reported, the child holds none of
// the parent's files; an early child (forked before its input) alike, and reaped unused.
#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

#include "lua/lua_sandbox.h"
#include "lua/supervisor.h"
#include "test_support.h"

using namespace sitegen;

namespace {

struct Isolation {  // sets the isolation for one scope
    LuaIsolation saved = lua_isolation();
    explicit Isolation(LuaIsolation i) { set_lua_isolation(i); }
    ~Isolation() { set_lua_isolation(saved); }
};

double since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs `code` in a sandbox with a `wall` limit inside a supervised child; sends "after" when
// the sandbox returned.
RunEnd run_lua(const std::string& code, std::chrono::milliseconds wall, std::vector<std::string>& got) {
    return run_supervised(
        [&](Outbox& out) {
            SandboxLimits limits;
            limits.wall = wall;
            limits.instructions = uint64_t{1} << 50;
            LuaSandbox sandbox(limits);
            const LuaResult r = sandbox.run(code, "@rules/stuck.lua");
            out.send("after: " + r.describe());
        },
        [&](std::string_view m) { got.emplace_back(m); });
}

}  // namespace

TEST_CASE("messages arrive complete and in order, in a child or in process", "[lua][supervisor]") {
    for (auto isolation : {LuaIsolation::child_process, LuaIsolation::in_process}) {
        Isolation scope(isolation);
        std::vector<size_t> sizes;
        size_t bytes_ok = 0;
        const RunEnd end = run_supervised(
            [](Outbox& out) {
                for (size_t i = 0; i < 2000; ++i) out.send(std::string((i * 7919) % 70000, static_cast<char>('a' + i % 26)));
                out.send(std::string(3 << 20, 'z'));  // larger than a pipe's buffer
            },
            [&](std::string_view m) {
                const size_t i = sizes.size();
                sizes.push_back(m.size());
                const char c = i < 2000 ? static_cast<char>('a' + i % 26) : 'z';
                if (m.find_first_not_of(c) == std::string_view::npos) ++bytes_ok;
            });
        CHECK(end.kind == RunEnd::Kind::finished);
        REQUIRE(sizes.size() == 2001);
        CHECK(bytes_ok == 2001);
        CHECK(sizes[3] == (3 * 7919) % 70000);
        CHECK(sizes.back() == (3u << 20));
    }
}

TEST_CASE("a call stuck inside a C function is killed at its time limit, at the line that called it", "[lua][supervisor]") {
    Isolation scope(LuaIsolation::child_process);
    // Each runs for seconds to hours inside one C call, where the instruction hook never fires.
    const std::pair<std::string, int> stuck[] = {
        {"local s = ('a'):rep(40)\nlocal x = s:match(('a*'):rep(12) .. 'b')", 2},
        {"local s = ('a'):rep(40)\n\nlocal x = s:find(('a*'):rep(12) .. 'b')", 3},
        {"local s = ('a'):rep(40)\nfor w in s:gmatch(('a*'):rep(12) .. 'b') do end", 2},
        {"local s = ('a'):rep(40)\nlocal x = s:gsub(('a*'):rep(12) .. 'b', '')", 2},
        {"local h = ('a'):rep(1 << 20)\nlocal n = ('a'):rep(1 << 16) .. 'b'\nlocal x = h:find(n, 1, true)", 3},
    };
    for (const auto& [code, line] : stuck) {
        INFO(code);
        std::vector<std::string> got;
        const auto start = std::chrono::steady_clock::now();
        const RunEnd end = run_lua(code, std::chrono::milliseconds(300), got);
        const double took = since(start);
        INFO(end.why << " at " << end.file << ":" << end.line << " after " << took << " s");
        CHECK(end.kind == RunEnd::Kind::timed_out);
        CHECK(end.why == "time limit exceeded: ran longer than 300 ms (stopped in a library call, e.g. a backtracking pattern?)");
        CHECK(end.file == "rules/stuck.lua");
        CHECK(end.line == line);
        CHECK(got.empty());
        CHECK(took >= 0.3);
        CHECK(took < 1.5);
    }
    // The hook still stops Lua code itself, with its own message and the exact line (unless
    // the machine is so busy that the child did not run for the 50 ms the parent waits: then
    // it is killed, at the same line).
    std::vector<std::string> got;
    const RunEnd loop = run_lua("local n = 0\nwhile true do n = n + 1 end", std::chrono::milliseconds(200), got);
    if (loop.kind == RunEnd::Kind::finished) {
        REQUIRE(got.size() == 1);
        CHECK(got[0] == "after: rules/stuck.lua:2: time limit exceeded: ran longer than 200 ms (runaway loop?)");
    } else {
        CHECK(loop.kind == RunEnd::Kind::timed_out);
        CHECK(loop.line == 2);
    }
}

TEST_CASE("a call's limit counts its CPU time: a call the machine does not run runs on, up to four times its limit", "[lua][supervisor]") {
    Isolation scope(LuaIsolation::child_process);
    // The call is off the CPU (as on a login node too busy to run it) for `off` in all; its
    // limit is 100 ms.
    const auto off_the_cpu = [](std::chrono::milliseconds off, std::vector<std::string>& got) {
        return run_supervised(
            [off](Outbox& out) {
                constexpr auto limit = std::chrono::milliseconds(100);
                watch_call_begins(std::chrono::steady_clock::now() + limit, limit);
                std::this_thread::sleep_for(off);
                watch_call_ends();
                out.send("ended");
            },
            [&](std::string_view m) { got.emplace_back(m); });
    };
    std::vector<std::string> got;
    auto start = std::chrono::steady_clock::now();
    const RunEnd waited = off_the_cpu(std::chrono::milliseconds(250), got);
    INFO(waited.why << " after " << since(start) << " s");
    CHECK(waited.kind == RunEnd::Kind::finished);  // (the wall clock alone killed it at 150 ms)
    CHECK(got == std::vector<std::string>{"ended"});
    got.clear();
    start = std::chrono::steady_clock::now();
    const RunEnd stuck = off_the_cpu(std::chrono::seconds(30), got);
    const double took = since(start);
    INFO(stuck.why << " after " << took << " s");
    CHECK(stuck.kind == RunEnd::Kind::timed_out);
    CHECK(got.empty());
    CHECK(took >= 0.4);
    CHECK(took < 5.0);
    // The rule itself: 0 while it used its CPU time or four times it of wall clock, else
    // what is left of the sooner of the two.
    CHECK(call_time_left_ns(100, 50, 100) == 0);
    CHECK(call_time_left_ns(10, 400, 100) == 0);
    CHECK(call_time_left_ns(30, 100, 100) == 70);
    CHECK(call_time_left_ns(30, 350, 100) == 50);
}

TEST_CASE("a child that dies is reported with its signal, and what it sent before still counts", "[lua][supervisor]") {
    Isolation scope(LuaIsolation::child_process);
    std::vector<std::string> got;
    const RunEnd segv = run_supervised(
        [](Outbox& out) {
            out.send("before");
            std::raise(SIGSEGV);
        },
        [&](std::string_view m) { got.emplace_back(m); });
    CHECK(segv.kind == RunEnd::Kind::crashed);
    CHECK_THAT(segv.why, Catch::Matchers::Contains("died of signal 11 (SIGSEGV)"));
    CHECK(got == std::vector<std::string>{"before"});
    const RunEnd thrown = run_supervised([](Outbox&) { throw std::runtime_error("x"); }, [](std::string_view) {});
    CHECK(thrown.kind == RunEnd::Kind::crashed);
    CHECK(thrown.why == "the process running it failed (unexpected C++ exception)");
    const RunEnd exited = run_supervised([](Outbox&) { ::_exit(9); }, [](std::string_view) {});
    CHECK(exited.why == "the process running it exited with status 9");
}

TEST_CASE("the child holds none of the parent's open files (an output tree's lock)", "[lua][supervisor]") {
    Isolation scope(LuaIsolation::child_process);
    sitegen::test::TempDir dir("supervisor");
    const int fd = ::open(dir.file("lock").c_str(), O_RDWR | O_CREAT, 0644);  // no O_CLOEXEC: fork keeps it
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX) == 0);
    std::string open_in_child = "?";
    run_supervised([&](Outbox& out) { out.send(::fcntl(fd, F_GETFD) == -1 ? "closed" : "open"); },
                   [&](std::string_view m) { open_in_child = std::string(m); });
    CHECK(open_in_child == "closed");
    ::close(fd);
}

TEST_CASE("in process, the body runs here and only the hook limits apply", "[lua][supervisor]") {
    Isolation scope(LuaIsolation::in_process);
    const pid_t self = ::getpid();
    pid_t seen = 0;
    const RunEnd end = run_supervised([&](Outbox&) { seen = ::getpid(); }, [](std::string_view) {});
    CHECK(end.kind == RunEnd::Kind::finished);
    CHECK(seen == self);
    CHECK(supervised_page() == nullptr);
}

TEST_CASE("messages decode safely whatever the bytes", "[lua][supervisor]") {
    MessageWriter w;
    w.u8(7).i64(-5).str("hello").str(std::string("\0x", 2));
    MessageReader r(w.bytes());
    CHECK(r.u8() == 7);
    CHECK(r.i64() == -5);
    CHECK(r.str() == "hello");
    CHECK(r.str() == std::string("\0x", 2));
    CHECK(r.ok());
    CHECK(r.u8() == 0);
    CHECK_FALSE(r.ok());
    // A length larger than the message, a negative length, a cut number.
    for (const std::string& bad : {MessageWriter().i64(1 << 30).bytes(), MessageWriter().i64(-1).bytes(), std::string("\x05\x00", 2)}) {
        MessageReader m(bad);
        CHECK(m.str().empty());
        CHECK_FALSE(m.ok());
    }
    Diagnostic d;
    d.severity = Severity::note;
    d.where = {"f.lua", 3, 4};
    d.message = "m";
    d.hint = "h";
    MessageWriter dw;
    put_diagnostic(dw, d);
    MessageReader dr(dw.bytes());
    const Diagnostic back = get_diagnostic(dr);
    CHECK(dr.ok());
    CHECK(back.severity == Severity::note);
    CHECK(back.where.file == "f.lua");
    CHECK(back.where.line == 3);
    CHECK(back.where.column == 4);
    CHECK(back.message == "m");
    CHECK(back.hint == "h");
}

namespace {
int g_changed_after_fork = 0;  // (a value the parent changes after an early child's fork)
}  // namespace

TEST_CASE("an early child is forked at once and runs its body on the input given later, as a supervised run", "[lua][supervisor]") {
    Isolation scope(LuaIsolation::child_process);
    g_changed_after_fork = 1;
    EarlyChild early([](std::string_view input, Outbox& out) {
        out.send("pid " + std::to_string(::getpid()));
        out.send("seen " + std::to_string(g_changed_after_fork));
        out.send(input);
        out.send(std::string(3 << 20, 'z'));  // larger than a socket's buffer
    });
    g_changed_after_fork = 2;  // (the child was forked before: it still sees 1)
    const std::string input = std::string(5 << 20, 'i') + "end";  // sent whole before any answer is read
    CHECK(early.claim());
    CHECK_FALSE(early.claim());
    std::vector<std::string> got;
    const RunEnd end = early.run(input, [&](std::string_view m) { got.emplace_back(m); });
    CHECK(end.kind == RunEnd::Kind::finished);
    REQUIRE(got.size() == 4);
    CHECK(got[0] != "pid " + std::to_string(::getpid()));
    CHECK(got[1] == "seen 1");
    CHECK(got[2] == input);
    CHECK(got[3].size() == (3u << 20));
    const RunEnd again = early.run("x", [](std::string_view) {});
    CHECK(again.kind == RunEnd::Kind::crashed);
    CHECK(again.why == "an early child runs once");
}

TEST_CASE("an early child ends as a supervised run does: killed at its deadline, or dead, with what it sent", "[lua][supervisor]") {
    Isolation scope(LuaIsolation::child_process);
    EarlyChild stuck([](std::string_view, Outbox& out) {
        SandboxLimits limits;
        limits.wall = std::chrono::milliseconds(300);
        limits.instructions = uint64_t{1} << 50;
        LuaSandbox sandbox(limits);
        out.send("before");
        const LuaResult r = sandbox.run("local s = ('a'):rep(40)\nlocal x = s:match(('a*'):rep(12) .. 'b')", "@rules/stuck.lua");
        out.send("after: " + r.describe());
    });
    std::vector<std::string> got;
    const auto start = std::chrono::steady_clock::now();
    const RunEnd killed = stuck.run("", [&](std::string_view m) { got.emplace_back(m); });
    const double took = since(start);
    INFO(killed.why << " after " << took << " s");
    CHECK(killed.kind == RunEnd::Kind::timed_out);
    CHECK(killed.file == "rules/stuck.lua");
    CHECK(killed.line == 2);
    CHECK(got == std::vector<std::string>{"before"});
    CHECK(took < 1.5);
    EarlyChild dies([](std::string_view, Outbox&) { std::raise(SIGSEGV); });
    const RunEnd segv = dies.run("", [](std::string_view) {});
    CHECK(segv.kind == RunEnd::Kind::crashed);
    CHECK_THAT(segv.why, Catch::Matchers::Contains("died of signal 11 (SIGSEGV)"));
}

TEST_CASE("an early child never run goes when it is dropped, and holds none of the parent's open files", "[lua][supervisor]") {
    Isolation scope(LuaIsolation::child_process);
    sitegen::test::TempDir dir("supervisor-early");
    const int fd = ::open(dir.file("lock").c_str(), O_RDWR | O_CREAT, 0644);  // no O_CLOEXEC: fork keeps it
    REQUIRE(fd >= 0);
    {
        EarlyChild early([fd](std::string_view, Outbox& out) { out.send(::fcntl(fd, F_GETFD) == -1 ? "closed" : "open"); });
        std::string seen;
        early.run("", [&](std::string_view m) { seen = std::string(m); });
        CHECK(seen == "closed");
    }
    // Every child is reaped: none is left (not even a zombie) among this process's children.
    const auto children = [] {  // (by /proc/PID/stat's parent field: zombies have one too)
        std::set<std::string> pids;
        const std::string self = std::to_string(::getpid());
        for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
            const std::string name = entry.path().filename().string();
            if (name.find_first_not_of("0123456789") != std::string::npos) continue;
            std::ifstream in(entry.path() / "stat");
            const std::string stat(std::istreambuf_iterator<char>(in), {});
            const size_t paren = stat.rfind(')');
            if (paren == std::string::npos) continue;
            std::istringstream rest(stat.substr(paren + 1));
            std::string state, ppid;
            if (rest >> state >> ppid && ppid == self) pids.insert(name);
        }
        return pids;
    };
    const std::set<std::string> before = children();
    for (int i = 0; i < 20; ++i) EarlyChild unused([](std::string_view, Outbox&) {});
    CHECK(children() == before);
    ::close(fd);
}

TEST_CASE("an early child in process runs its body here", "[lua][supervisor]") {
    Isolation scope(LuaIsolation::in_process);
    const pid_t self = ::getpid();
    EarlyChild early([&](std::string_view input, Outbox& out) { out.send(std::to_string(::getpid()) + " " + std::string(input)); });
    std::string seen;
    CHECK(early.run("in", [&](std::string_view m) { seen = std::string(m); }).kind == RunEnd::Kind::finished);
    CHECK(seen == std::to_string(self) + " in");
}
