// The module tree every module-system renderer writes: one modulefile per stack and one
// defaults file per module name with a default, each in the renderer's own syntax.
#pragma once

#include <string>
#include <vector>

#include "plan/stack_plan.h"
#include "render/emit.h"

namespace sitegen {

struct ModuleSyntax {
    std::string (*modulefile)(const Site&, const StackPlan&);
    // The defaults file of module NAME whose default is FULL_NAME (NAME/VERSION).
    std::string (*defaults_file)(const std::string& name, const std::string& full_name);
};

OutputList render_module_tree(const SitePlan& plan, const ModuleSyntax& syntax);

// The whatis line of the keywords: "a, b, c".
std::string keyword_list(const std::vector<std::string>& keywords);

}  // namespace sitegen
