// parallel_emit: a site's stacks rendered and hashed on a few worker threads, each stack's outputs handed back on the calling thread in stack order.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "render/emit.h"

namespace sitegen {

// The most threads that render by default (more gain little: the calling thread writes alone).
constexpr unsigned kMaxRenderThreads = 8;

// How many threads render: SITEGEN_THREADS when it is a positive number (1: the stacks are
// rendered in the calling thread, one after the other), else the CPUs, at most kMaxRenderThreads.
unsigned render_threads();

// One stack's outputs, each with its hash.
struct RenderedStack {
    OutputList files;
    std::vector<std::string> hashes;  // hashes[i] == sha256_hex(files[i].contents)
};

struct StackSteps {
    // Calling thread, in stack order, a few stacks ahead of delivery: whether stack i is
    // rendered (if not, deliver gets null). Unset: every stack is.
    std::function<bool(size_t i)> wanted;
    // A worker thread (the calling thread when one thread renders): stack i's outputs, in the
    // order they are produced. Runs for several stacks at once: it must only read shared state.
    std::function<void(size_t i, OutputList& out)> render;
    // Calling thread, in stack order: stack i's outputs (null when not wanted); it may move them.
    std::function<void(size_t i, RenderedStack* rendered)> deliver;
};

// Runs `steps` for stacks 0..count-1 with `threads` rendering threads (<= 1: all in the calling
// thread, one stack after the other). At most 2 x threads stacks are rendered and not yet
// delivered, so memory holds a few stacks' outputs, not the site's. An exception that wanted(i)
// or render(i) throws is rethrown here when stack i's turn comes, after the stacks before it
// were delivered and before any after it, as a loop over the stacks would; one that deliver
// throws propagates at once. Either way the workers are stopped and joined first.
void render_stacks(size_t count, unsigned threads, const StackSteps& steps);

}  // namespace sitegen
