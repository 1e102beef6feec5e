// render: the table of output formats. Each renders the site's plan and nothing else; adding
// a format is one renderer file and one row here.
#pragma once

#include <span>

#include "plan/stack_plan.h"
#include "render/emit.h"

namespace sitegen {

struct Renderer {
    const char* name;  // what it writes, for messages and tests
    OutputList (*render)(const SitePlan&);
};

std::span<const Renderer> renderers();

}  // namespace sitegen
