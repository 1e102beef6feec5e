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
    bool (*applies)(const Site&) = nullptr;  // which sites it renders for; nullptr: every site
};

std::span<const Renderer> renderers();

// Whether `r` writes outputs for `site` (e.g. Tcl modulefiles only for Environment Modules sites).
inline bool renders_for(const Renderer& r, const Site& site) { return !r.applies || r.applies(site); }

}  // namespace sitegen
