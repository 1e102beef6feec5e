// trace: spans timed on each thread, kept under one lock, written as Chrome trace events.
#include "out/trace.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <tuple>
#include <vector>

#include <unistd.h>

#include "out/fs.h"

namespace sitegen {

namespace {

struct Span {
    const char* name;
    unsigned thread;
    unsigned long long start, end;  // ns on the steady clock
};

struct Spans {
    std::mutex lock;
    std::vector<Span> ended;
};

Spans& spans() {
    static Spans s;  // (never destroyed before the threads that trace have ended: main joins them)
    return s;
}

// The process that traces (the first to ask): a child forked by a thread while another held
// the spans' lock must not wait for it (nor are its spans the run's).
bool in_tracing_process() {
    static const pid_t tracer = ::getpid();
    return ::getpid() == tracer;
}

const char* trace_path() {
    static const char* path = [] {
        const char* env = std::getenv("SITEGEN_TRACE");
        if (!env || !*env) return static_cast<const char*>(nullptr);
        in_tracing_process();  // (the process that reads the variable is the one that traces)
        return env;
    }();
    return path;
}

unsigned long long now_ns() {
    return static_cast<unsigned long long>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

unsigned this_thread_number() {
    static std::atomic<unsigned> next{1};
    thread_local const unsigned number = next.fetch_add(1);
    return number;
}

// `s` as a JSON string (quotes, backslashes and control characters escaped).
void append_json_string(std::string& out, const char* s) {
    out += '"';
    for (; *s; ++s) {
        const unsigned char c = static_cast<unsigned char>(*s);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
            out += escaped;
        } else {
            out += static_cast<char>(c);
        }
    }
    out += '"';
}

// `ns` as microseconds with three decimals (the format's unit is the microsecond).
void append_us(std::string& out, unsigned long long ns) {
    char text[32];
    std::snprintf(text, sizeof text, "%llu.%03llu", ns / 1000, ns % 1000);
    out += text;
}

}  // namespace

bool tracing() { return trace_path() != nullptr; }

TraceSpan::TraceSpan(const char* name) : name_(name) {
    if (!tracing() || !in_tracing_process()) return;
    thread_ = this_thread_number();
    start_ = now_ns();
}

TraceSpan::~TraceSpan() {
    if (start_ == 0 || !in_tracing_process()) return;
    const Span span{name_, thread_, start_, now_ns()};
    Spans& s = spans();
    const std::lock_guard<std::mutex> hold(s.lock);
    s.ended.push_back(span);
}

std::string trace_json() {
    std::vector<Span> ended;
    {
        Spans& s = spans();
        const std::lock_guard<std::mutex> hold(s.lock);
        ended = s.ended;
    }
    std::sort(ended.begin(), ended.end(), [](const Span& a, const Span& b) {
        return std::tie(a.start, a.thread, a.end) < std::tie(b.start, b.thread, b.end);
    });
    const unsigned long long origin = ended.empty() ? 0 : ended.front().start;
    std::string out = "{\"traceEvents\": [";
    for (size_t i = 0; i < ended.size(); ++i) {
        const Span& e = ended[i];
        out += i == 0 ? "\n" : ",\n";
        out += "{\"name\": ";
        append_json_string(out, e.name);
        out += ", \"ph\": \"X\", \"pid\": 1, \"tid\": " + std::to_string(e.thread) + ", \"ts\": ";
        append_us(out, e.start - origin);
        out += ", \"dur\": ";
        append_us(out, e.end - e.start);
        out += '}';
    }
    out += "\n], \"displayTimeUnit\": \"ms\"}\n";
    return out;
}

bool write_trace(FileSystem& fs, std::string& error) {
    const char* path = trace_path();
    return !path || fs.write(path, trace_json(), false, error);
}

}  // namespace sitegen
