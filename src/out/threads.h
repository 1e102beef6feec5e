// threads: how many threads sitegen's parallel steps use (SITEGEN_THREADS, else the CPUs).
#pragma once

#include <optional>

namespace sitegen {

// SITEGEN_THREADS when it is a positive number (at most 64; 1: every step on the calling
// thread), else nothing.
std::optional<unsigned> threads_from_env();

// Below this many CPUs a build's own threads (the main one, the look at the output tree, the
// rules' child) keep them all busy: splitting a step's work further only adds to it.
constexpr unsigned kMinCpusToSplit = 4;

// How many threads a step that splits its own work uses (the pieces of a site file, the rule
// files' children, a tree's scan): threads_from_env(), else the CPUs when there are at least
// kMinCpusToSplit, else 1.
unsigned split_threads();

}  // namespace sitegen
