// threads: SITEGEN_THREADS, else the CPUs.
#include "out/threads.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace sitegen {

namespace {

constexpr unsigned long kMaxThreadsFromEnv = 64;

}  // namespace

std::optional<unsigned> threads_from_env() {
    if (const char* env = std::getenv("SITEGEN_THREADS"); env && *env >= '0' && *env <= '9') {
        char* end = nullptr;
        const unsigned long n = std::strtoul(env, &end, 10);
        if (end != env && *end == '\0' && n > 0) return static_cast<unsigned>(std::min(n, kMaxThreadsFromEnv));
    }
    return std::nullopt;
}

unsigned split_threads() {
    if (const auto n = threads_from_env()) return *n;
    const unsigned cpus = std::thread::hardware_concurrency();
    return cpus >= kMinCpusToSplit ? cpus : 1;
}

unsigned stat_threads() { return std::min(split_threads(), 4u); }

unsigned lone_stat_threads() {
    const unsigned cpus = std::max(std::thread::hardware_concurrency(), 1u);
    return std::min(threads_from_env().value_or(cpus), 4u);
}

}  // namespace sitegen
