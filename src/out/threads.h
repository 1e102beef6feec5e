// threads: how many threads sitegen's parallel steps use (SITEGEN_THREADS, else the CPUs).
#pragma once

#include <optional>

namespace sitegen {

// SITEGEN_THREADS when it is a positive number (at most 64; 1: every step on the calling
// thread), else nothing.
std::optional<unsigned> threads_from_env();

// threads_from_env(), else the CPUs (at least 1).
unsigned usable_threads();

}  // namespace sitegen
