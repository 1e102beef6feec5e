// render: the planned files of every stack, byte for byte, under the stack's install dir.
#include "render/install_files.h"

namespace sitegen {

OutputList render_install_files(const SitePlan& plan) {
    OutputList out;
    for (const auto& stack_plan : plan.stacks)
        for (const auto& f : stack_plan.files)
            out.push_back({stack_output_path(*plan.site, *stack_plan.stack, f.rel), f.contents, f.executable});
    return out;
}

}  // namespace sitegen
