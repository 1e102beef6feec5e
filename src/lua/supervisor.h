// supervisor: runs Lua work in a forked child process that the parent SIGKILLs when a call
// passes its time limit, so no Lua execution outlives its limit, whatever it calls: a
// backtracking pattern inside string.find, a sort, a handler run with hooks off. The child
// streams its results back as messages over a pipe; the caller records the failure of the
// step that was running and starts a new child from the next step.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <sys/types.h>

#include "site/diagnostics.h"

namespace sitegen {

// child_process (default): every supervised run forks. in_process: runs in this process with
// only the sandbox's hook limits (for the fuzzer, which must see the coverage; and where
// fork is impossible). Tests switch it to check both.
enum class LuaIsolation { child_process, in_process };
void set_lua_isolation(LuaIsolation isolation);
LuaIsolation lua_isolation();

// What the parent knows about the call a supervised child is running: its deadline and the
// last position of untrusted Lua code (on one shared page; the parent reads the position only
// after the child is dead). Written by the sandbox in the child; the parent only moves a
// passed deadline on (compare-exchange) for a call that had too little of the CPU to use its time.
struct WatchPage {
    std::atomic<int64_t> deadline_ns{0};  // steady_clock, nanoseconds; 0 = no call running
    std::atomic<int64_t> wall_ms{0};      // that call's limit, for the message
    std::atomic<int64_t> started_ns{0};   // steady_clock when that call began
    std::atomic<int64_t> cpu_at_start_ns{0};  // the child's CPU time (CLOCK_PROCESS_CPUTIME_ID) then
    std::atomic<uint32_t> published{0};   // slot (published % 2) holds the latest position
    struct Slot {
        char source[240];  // Lua chunk source ("@rules/x.lua"); "" = unknown
        int32_t line;
    } slots[2];
};
static_assert(std::atomic<int64_t>::is_always_lock_free, "WatchPage is shared between processes");

// The page of the supervised child this process is (null in the parent and in process).
WatchPage* supervised_page();
// A call's time limit counts the CPU time it used, so that a call on a machine too busy to
// run it is not stopped for the time it waited: it is over its limit once it used `limit_ns`
// of CPU, or kWallStretch times that of wall clock (a call off the CPU for that long, stuck
// or starved, is stopped too). The wall clock it may still run before it is looked at again
// (its CPU time cannot reach the limit sooner); 0 = over its limit.
constexpr int64_t kWallStretch = 4;
int64_t call_time_left_ns(int64_t cpu_used_ns, int64_t elapsed_ns, int64_t limit_ns);
// This thread's CPU time, in nanoseconds.
int64_t thread_cpu_ns();

// Called by the sandbox around every protected call and as untrusted code runs; `deadline`
// is `wall` from the call's start.
void watch_call_begins(std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds wall);
// The running call's deadline moved on (call_time_left_ns), for the parent to follow.
void watch_call_extends(std::chrono::steady_clock::time_point deadline);
void watch_call_ends();
void watch_position(const char* source, int line);

// Where the child sends its results: one message (bytes) at a time, in order.
class Outbox {
public:
    virtual ~Outbox() = default;
    virtual void send(std::string_view message) = 0;
};

// How a supervised run ended.
struct RunEnd {
    enum class Kind { finished, timed_out, crashed } kind = Kind::finished;
    std::string why;   // timed_out: "time limit exceeded: ...", crashed: "... (signal 11)"
    std::string file;  // last position of untrusted code when it ended abnormally ("" = unknown)
    int line = 0;
};

// Runs body(outbox) in a child process (or in process) and hands each message it sends to
// on_message, in order, as it arrives. Returns when the body returned (finished), or when the
// child was killed at a call's deadline (timed_out) or died (crashed); a message cut off by
// the end is dropped. Never throws; on_message must not throw either.
RunEnd run_supervised(const std::function<void(Outbox&)>& body,
                      const std::function<void(std::string_view)>& on_message);

// A supervised child forked before its input exists, while this process is small: a fork late
// in a build copies the page tables of ~100 MB (stalling the build's other threads as they
// fault meanwhile), and each page either side writes afterwards is copied. run() sends it its
// input and supervises it as run_supervised does; until then it waits, holding nothing of this
// process's open files. In process (LuaIsolation) run() runs the body here.
class EarlyChild {
public:
    using Body = std::function<void(std::string_view input, Outbox&)>;
    explicit EarlyChild(Body body);  // forks now
    ~EarlyChild();                   // one never run ends (its input closed) and is reaped here
    EarlyChild(const EarlyChild&) = delete;
    EarlyChild& operator=(const EarlyChild&) = delete;
    // True for the first caller only: the one that may run it (several may be offered it).
    bool claim() { return !claimed_.exchange(true); }
    // body(input, outbox) in the child, as run_supervised(body, on_message) would run it.
    // Once (a second run is a crashed one); never throws.
    RunEnd run(std::string_view input, const std::function<void(std::string_view)>& on_message);

private:
    Body body_;
    pid_t pid_ = -1;
    int fd_ = -1;
    WatchPage* page_ = nullptr;
    std::string why_not_;  // why it could not start (run() says so)
    bool ran_ = false;
    std::atomic<bool> claimed_{false};
};

// A small binary encoding for messages.
class MessageWriter {
public:
    MessageWriter& u8(uint8_t v);
    MessageWriter& i64(int64_t v);
    MessageWriter& str(std::string_view v);
    MessageWriter& reserve(size_t bytes) { out_.reserve(bytes); return *this; }
    const std::string& bytes() const { return out_; }
    std::string take() { return std::move(out_); }

private:
    std::string out_;
};

class MessageReader {
public:
    explicit MessageReader(std::string_view in) : in_(in) {}
    uint8_t u8();
    int64_t i64();
    std::string str();
    bool ok() const { return ok_; }  // false once a read ran past the end

private:
    std::string_view in_;
    size_t at_ = 0;
    bool ok_ = true;
};

// A finding as a message field, and back.
void put_diagnostic(MessageWriter& w, const Diagnostic& d);
Diagnostic get_diagnostic(MessageReader& r);

}  // namespace sitegen
