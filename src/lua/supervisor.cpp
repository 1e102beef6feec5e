// Supervised Lua runs: fork, a shared page with the running call's deadline, a message pipe,
// SIGKILL at the deadline.
#include "lua/supervisor.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <exception>
#include <fcntl.h>
#include <new>
#include <utility>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sitegen {

namespace {

// Supervised runs may start on any thread, several at once (the build's self-check runs on a
// background thread while others render): each run has its own page, pipe and child, and
// waits for that child by its pid. The child has only the forking thread; it closes
// every descriptor it inherited (other threads' files too) and runs only its body. Its
// PR_SET_PDEATHSIG follows the forking thread, which waits for it before returning.
std::atomic<LuaIsolation> g_isolation{LuaIsolation::child_process};
// Set in a supervised child only (which has one thread). Atomic only for ThreadSanitizer,
// which takes the child's write for a race with the threads its parent had when it forked.
std::atomic<WatchPage*> g_page{nullptr};
WatchPage* page_of_this_child() { return g_page.load(std::memory_order_relaxed); }

// The hook raises the time limit itself as soon as it sees it (with the exact line); the
// parent gives it this long before it kills, so only code stuck in C is killed (a child that
// a busy machine did not run has its deadline moved on: child_time_left_ns).
constexpr int64_t kKillSlackNs = 50'000'000;
constexpr int kIdleTickMs = 20;                      // how often an idle parent looks for a new call
constexpr uint32_t kMaxMessage = 64u << 20;          // longer frames are a protocol error

int64_t to_ns(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

int64_t now_ns() { return to_ns(std::chrono::steady_clock::now()); }

int64_t cpu_ns(clockid_t clock) {
    timespec ts{};
    if (::clock_gettime(clock, &ts) != 0) return 0;
    return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// How much longer the call the child `pid` is running may run, by its CPU time and the
// page's record of its start (call_time_left_ns); 0 when it is over its limit, or when its
// CPU time cannot be read (then its deadline alone counts).
int64_t child_time_left_ns(pid_t pid, const WatchPage& page) {
    clockid_t clock;
    if (::clock_getcpuclockid(pid, &clock) != 0) return 0;
    const int64_t cpu = cpu_ns(clock);
    if (cpu == 0) return 0;
    return call_time_left_ns(cpu - page.cpu_at_start_ns.load(std::memory_order_relaxed),
                             now_ns() - page.started_ns.load(std::memory_order_relaxed),
                             page.wall_ms.load(std::memory_order_relaxed) * 1'000'000);
}

// (`socket`: sent without SIGPIPE, so that a reader gone is a failure to report, not a signal.)
bool write_all(int fd, const char* p, size_t n, bool socket = false) {
    while (n > 0) {
        const ssize_t w = socket ? ::send(fd, p, n, MSG_NOSIGNAL) : ::write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
    return true;
}

class PipeOutbox : public Outbox {
public:
    explicit PipeOutbox(int fd) : fd_(fd) {}
    void send(std::string_view message) override {
        std::string frame;
        frame.reserve(4 + message.size());
        const auto n = static_cast<uint32_t>(message.size());
        for (int i = 0; i < 4; ++i) frame += static_cast<char>((n >> (8 * i)) & 0xFF);
        frame.append(message);
        if (!write_all(fd_, frame.data(), frame.size())) ::_exit(4);  // the parent is gone
    }

private:
    int fd_;
};

class DirectOutbox : public Outbox {
public:
    explicit DirectOutbox(const std::function<void(std::string_view)>& to) : to_(to) {}
    void send(std::string_view message) override { to_(message); }

private:
    const std::function<void(std::string_view)>& to_;
};

// Frames from the child, delivered as they complete.
class FrameReader {
public:
    explicit FrameReader(const std::function<void(std::string_view)>& to) : to_(to) {}
    // False on a frame longer than any message may be.
    bool feed(const char* p, size_t n) {
        buf_.append(p, n);
        while (buf_.size() - at_ >= 4) {
            uint32_t len = 0;
            for (int i = 0; i < 4; ++i) len |= static_cast<uint32_t>(static_cast<unsigned char>(buf_[at_ + i])) << (8 * i);
            if (len > kMaxMessage) return false;
            if (buf_.size() - at_ - 4 < len) break;
            to_(std::string_view(buf_).substr(at_ + 4, len));
            at_ += 4 + len;
        }
        if (at_ > 0 && (at_ == buf_.size() || at_ > (1u << 20))) {
            buf_.erase(0, at_);
            at_ = 0;
        }
        return true;
    }

private:
    const std::function<void(std::string_view)>& to_;
    std::string buf_;
    size_t at_ = 0;
};

std::string display(const char* source) {
    if (source[0] == '@' || source[0] == '=') return source + 1;
    return source;
}

[[noreturn]] void child_main(int out_fd, pid_t parent, WatchPage* page, const std::function<void(Outbox&)>& body) {
    // Die with the parent, and hold nothing of its open files (the output tree's lock).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(5);
    if (out_fd > 3) ::close_range(3, static_cast<unsigned>(out_fd - 1), 0);
    ::close_range(static_cast<unsigned>(out_fd + 1), ~0u, 0);
    // A crash kills the child and is reported by the parent, not handled by the parent's
    // handlers (a test framework's, a sanitizer's) running in the child.
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS, SIGPIPE, SIGTERM, SIGINT})
        std::signal(sig, SIG_DFL);
    g_page.store(page, std::memory_order_relaxed);
    PipeOutbox box(out_fd);
    int code = 0;
    try {
        body(box);
    } catch (const std::bad_alloc&) {
        code = 6;
    } catch (...) {
        code = 3;
    }
    ::_exit(code);  // no atexit handlers, no flushing of the parent's stdio buffers
}

std::string exit_text(int status) {
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        const char* name = ::sigabbrev_np(sig);
        return "the process running it died of signal " + std::to_string(sig) + (name ? std::string(" (SIG") + name + ")" : "") +
               (sig == SIGKILL ? ": out of memory?" : "");
    }
    switch (WEXITSTATUS(status)) {
        case 3: return "the process running it failed (unexpected C++ exception)";
        case 6: return "the process running it ran out of memory";
        default: return "the process running it exited with status " + std::to_string(WEXITSTATUS(status));
    }
}

}  // namespace

void set_lua_isolation(LuaIsolation isolation) { g_isolation = isolation; }
LuaIsolation lua_isolation() { return g_isolation.load(); }
WatchPage* supervised_page() { return page_of_this_child(); }

int64_t call_time_left_ns(int64_t cpu_used_ns, int64_t elapsed_ns, int64_t limit_ns) {
    if (cpu_used_ns >= limit_ns || elapsed_ns >= kWallStretch * limit_ns) return 0;
    return std::min(limit_ns - cpu_used_ns, kWallStretch * limit_ns - elapsed_ns);
}

int64_t thread_cpu_ns() { return cpu_ns(CLOCK_THREAD_CPUTIME_ID); }

void watch_call_begins(std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds wall) {
    WatchPage* page = page_of_this_child();
    if (!page) return;
    page->wall_ms.store(wall.count(), std::memory_order_relaxed);
    page->started_ns.store(to_ns(deadline - wall), std::memory_order_relaxed);
    page->cpu_at_start_ns.store(cpu_ns(CLOCK_PROCESS_CPUTIME_ID), std::memory_order_relaxed);
    watch_position("", 0);  // no position of this call yet
    page->deadline_ns.store(to_ns(deadline), std::memory_order_release);
}

void watch_call_extends(std::chrono::steady_clock::time_point deadline) {
    if (WatchPage* page = page_of_this_child()) page->deadline_ns.store(to_ns(deadline), std::memory_order_release);
}

void watch_call_ends() {
    if (WatchPage* page = page_of_this_child()) page->deadline_ns.store(0, std::memory_order_release);
}

void watch_position(const char* source, int line) {
    WatchPage* page = page_of_this_child();
    if (!page) return;
    const uint32_t next = page->published.load(std::memory_order_relaxed) + 1;
    WatchPage::Slot& slot = page->slots[next % 2];
    const size_t n = ::strnlen(source, sizeof slot.source - 1);
    std::memcpy(slot.source, source, n);
    slot.source[n] = 0;
    slot.line = line;
    page->published.store(next, std::memory_order_release);
}

namespace {

// The parent's side of a supervised run: the child `pid`'s messages from `fd` (closed here)
// to on_message, a kill at its call's deadline, then its end (reaped here).
RunEnd supervise(pid_t pid, int fd, WatchPage* page, const std::function<void(std::string_view)>& on_message) {
    RunEnd end;
    ::fcntl(fd, F_SETFL, O_NONBLOCK);
    FrameReader frames(on_message);
    bool killed = false, broken = false, eof = false;
    char buf[65536];
    while (!eof) {
        const int64_t deadline = page->deadline_ns.load(std::memory_order_acquire);
        int timeout = kIdleTickMs;
        if (deadline != 0) {
            const int64_t left = deadline + kKillSlackNs - now_ns();
            if (left <= 0) {
                // A call that had too little of the CPU to use its time runs on (its deadline
                // moved on, unless the call ended or the child moved it meanwhile).
                if (const int64_t more = child_time_left_ns(pid, *page); more > 0) {
                    int64_t passed = deadline;
                    page->deadline_ns.compare_exchange_strong(passed, now_ns() + more, std::memory_order_acq_rel);
                    continue;
                }
                ::kill(pid, SIGKILL);
                killed = true;
                break;
            }
            timeout = static_cast<int>(std::min<int64_t>(left / 1'000'000 + 1, kIdleTickMs * 50));
        }
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, timeout) < 0 && errno != EINTR) {
            ::kill(pid, SIGKILL);
            broken = true;
            break;
        }
        for (;;) {
            const ssize_t n = ::read(fd, buf, sizeof buf);
            if (n > 0) {
                if (!frames.feed(buf, static_cast<size_t>(n))) {
                    ::kill(pid, SIGKILL);
                    broken = true;
                    eof = true;
                    break;
                }
                continue;
            }
            if (n == 0) eof = true;
            else if (errno == EINTR) continue;
            else if (errno != EAGAIN) eof = broken = true;
            break;
        }
    }
    // What the child wrote before it died is still in the pipe: deliver whole frames.
    if (killed) {
        ::fcntl(fd, F_SETFL, 0);
        for (;;) {
            const ssize_t n = ::read(fd, buf, sizeof buf);
            if (n > 0 && frames.feed(buf, static_cast<size_t>(n))) continue;
            if (n < 0 && errno == EINTR) continue;
            break;
        }
    }
    ::close(fd);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const auto& slot = page->slots[page->published.load(std::memory_order_acquire) % 2];
    char source[sizeof slot.source];
    std::memcpy(source, slot.source, sizeof source);
    source[sizeof source - 1] = 0;
    if (killed) {
        end.kind = RunEnd::Kind::timed_out;
        end.why = "time limit exceeded: ran longer than " + std::to_string(page->wall_ms.load()) +
                  " ms (stopped in a library call, e.g. a backtracking pattern?)";
    } else if (broken || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        end.kind = RunEnd::Kind::crashed;
        end.why = broken ? "the process running it sent a malformed message" : exit_text(status);
    }
    if (end.kind != RunEnd::Kind::finished && source[0]) {
        end.file = display(source);
        end.line = slot.line;
    }
    return end;
}

// A supervised child started: its pid, the parent's end of its channel and its watch page;
// or why it could not start (nothing is left open then).
struct Started {
    pid_t pid = -1;
    int fd = -1;
    WatchPage* page = nullptr;
    std::string why;
};

// Maps a watch page, makes the child's channel (a pipe for its messages; `two_way`: a socket
// pair, which also takes its input) and forks: body(its end of the channel, outbox) runs in
// the child (child_main).
Started start_child(bool two_way, const std::function<void(int, Outbox&)>& body) {
    Started started;
    const auto failed = [&](const char* what) { started.why = std::string(what) + std::strerror(errno); };
    void* mem = ::mmap(nullptr, sizeof(WatchPage), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        failed("cannot map memory for a supervised process: ");
        return started;
    }
    auto* page = new (mem) WatchPage();
    int fds[2];
    if ((two_way ? ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) : ::pipe2(fds, O_CLOEXEC)) != 0) {
        failed(two_way ? "cannot create a socket pair: " : "cannot create a pipe: ");
        ::munmap(mem, sizeof(WatchPage));
        return started;
    }
    const int child_fd = fds[1];
    const std::function<void(Outbox&)> run = [&](Outbox& box) { body(child_fd, box); };
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(fds[0]);
        child_main(child_fd, parent, page, run);
    }
    if (pid < 0) failed("cannot start a process to run it: ");
    ::close(fds[1]);
    if (pid < 0) {
        ::close(fds[0]);
        ::munmap(mem, sizeof(WatchPage));
        return started;
    }
    started.pid = pid;
    started.fd = fds[0];
    started.page = page;
    return started;
}

}  // namespace

RunEnd run_supervised(const std::function<void(Outbox&)>& body,
                      const std::function<void(std::string_view)>& on_message) {
    RunEnd end;
    if (g_isolation.load() == LuaIsolation::in_process || page_of_this_child()) {  // (a child does not fork again)
        DirectOutbox box(on_message);
        try {
            body(box);
        } catch (const std::exception& e) {
            end.kind = RunEnd::Kind::crashed;
            end.why = std::string("failed: ") + e.what();
        }
        return end;
    }
    const Started child = start_child(false, [&](int, Outbox& box) { body(box); });
    if (!child.why.empty()) {
        end.kind = RunEnd::Kind::crashed;
        end.why = child.why;
        return end;
    }
    struct Unmap { WatchPage* p; ~Unmap() { ::munmap(p, sizeof(WatchPage)); } } unmap{child.page};
    return supervise(child.pid, child.fd, child.page, on_message);
}

namespace {

// (An early child's input: its length, 8 bytes little-endian, then its bytes.)
bool read_all(int fd, char* p, size_t n) {
    while (n > 0) {
        const ssize_t r = ::read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= static_cast<size_t>(r);
    }
    return true;
}

}  // namespace

EarlyChild::EarlyChild(Body body) : body_(std::move(body)) {
    if (g_isolation.load() == LuaIsolation::in_process || page_of_this_child()) return;  // (run() runs it here)
    const Started child = start_child(true, [this](int fd, Outbox& box) {
        unsigned char head[8];
        if (!read_all(fd, reinterpret_cast<char*>(head), sizeof head)) ::_exit(0);  // never given its input
        uint64_t n = 0;
        for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(head[i]) << (8 * i);
        std::string input(static_cast<size_t>(n), '\0');
        if (!read_all(fd, input.data(), input.size())) ::_exit(0);
        body_(input, box);
    });
    why_not_ = child.why;
    pid_ = child.pid;
    fd_ = child.fd;
    page_ = child.page;
}

EarlyChild::~EarlyChild() {
    if (pid_ > 0) {
        ::close(fd_);  // (its read of the input ends: it exits)
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
    }
    if (page_) ::munmap(page_, sizeof(WatchPage));
}

RunEnd EarlyChild::run(std::string_view input, const std::function<void(std::string_view)>& on_message) {
    RunEnd end;
    if (ran_) {
        end.kind = RunEnd::Kind::crashed;
        end.why = "an early child runs once";
        return end;
    }
    ran_ = true;
    if (!why_not_.empty()) {
        end.kind = RunEnd::Kind::crashed;
        end.why = why_not_;
        return end;
    }
    if (pid_ <= 0) {  // (in process)
        DirectOutbox box(on_message);
        try {
            body_(input, box);
        } catch (const std::exception& e) {
            end.kind = RunEnd::Kind::crashed;
            end.why = std::string("failed: ") + e.what();
        }
        return end;
    }
    // Sent whole before its messages are read (it reads all of it first); when it cannot be
    // sent the child is gone, and supervise() says how it ended.
    std::string head(8, '\0');
    for (int i = 0; i < 8; ++i) head[static_cast<size_t>(i)] = static_cast<char>((static_cast<uint64_t>(input.size()) >> (8 * i)) & 0xFF);
    if (write_all(fd_, head.data(), head.size(), true)) (void)write_all(fd_, input.data(), input.size(), true);
    const pid_t pid = std::exchange(pid_, -1);
    end = supervise(pid, std::exchange(fd_, -1), page_, on_message);
    return end;
}

MessageWriter& MessageWriter::u8(uint8_t v) {
    out_ += static_cast<char>(v);
    return *this;
}

MessageWriter& MessageWriter::i64(int64_t v) {
    for (int i = 0; i < 8; ++i) out_ += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xFF);
    return *this;
}

MessageWriter& MessageWriter::str(std::string_view v) {
    i64(static_cast<int64_t>(v.size()));
    out_.append(v);
    return *this;
}

uint8_t MessageReader::u8() {
    if (at_ + 1 > in_.size()) {
        ok_ = false;
        return 0;
    }
    return static_cast<uint8_t>(in_[at_++]);
}

int64_t MessageReader::i64() {
    if (at_ + 8 > in_.size()) {
        ok_ = false;
        at_ = in_.size();
        return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in_[at_ + i])) << (8 * i);
    at_ += 8;
    return static_cast<int64_t>(v);
}

std::string MessageReader::str() {
    const int64_t n = i64();
    if (!ok_ || n < 0 || static_cast<uint64_t>(n) > in_.size() - at_) {
        ok_ = false;
        at_ = in_.size();
        return {};
    }
    std::string out(in_.substr(at_, static_cast<size_t>(n)));
    at_ += static_cast<size_t>(n);
    return out;
}

void put_diagnostic(MessageWriter& w, const Diagnostic& d) {
    w.u8(static_cast<uint8_t>(d.severity)).str(d.where.file).i64(d.where.line).i64(d.where.column).str(d.message).str(d.hint);
}

Diagnostic get_diagnostic(MessageReader& r) {
    Diagnostic d;
    const uint8_t severity = r.u8();
    d.severity = severity == 1 ? Severity::warning : severity == 2 ? Severity::note : Severity::error;
    d.where.file = r.str();
    d.where.line = static_cast<int>(r.i64());
    d.where.column = static_cast<int>(r.i64());
    d.message = r.str();
    d.hint = r.str();
    return d;
}

}  // namespace sitegen
