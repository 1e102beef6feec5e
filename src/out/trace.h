// trace: where one run's time goes, span by span on each thread, written as a Chrome trace
// event file (chrome://tracing, ui.perfetto.dev) when SITEGEN_TRACE names a file.
#pragma once

#include <string>

namespace sitegen {

class FileSystem;

// Whether SITEGEN_TRACE names a file (read once; a span costs one branch when it does not).
bool tracing();

// Times its scope as one span of the calling thread, when tracing. `name` is a literal of
// sitegen's code (spans keep the pointer), never a value from a site.
class TraceSpan {
public:
    explicit TraceSpan(const char* name);
    ~TraceSpan();
    TraceSpan(const TraceSpan&) = delete;
    TraceSpan& operator=(const TraceSpan&) = delete;

private:
    const char* name_;
    unsigned long long start_ = 0;  // ns on the steady clock; 0: not tracing
    unsigned thread_ = 0;
};

// The spans ended so far, as trace event JSON: {"traceEvents": [...]} of complete ("X") events
// in microseconds from the first span's start, threads numbered in the order they began their
// first span (1: the first), sorted by start, then thread.
std::string trace_json();

// Writes trace_json() to the file SITEGEN_TRACE names, when it names one; false with `error`
// when that fails. (main calls it once the command has run.)
bool write_trace(FileSystem& fs, std::string& error);

}  // namespace sitegen
