// The module tree (see module_tree.h): paths from emit.h, contents from the syntax.
#include "render/module_tree.h"

#include <map>

namespace sitegen {

OutputList render_module_tree(const SitePlan& plan, const ModuleSyntax& syntax) {
    const Site& site = *plan.site;
    OutputList out;
    std::map<std::string, std::string> defaults;  // sorted by name: deterministic order
    for (const auto& stack_plan : plan.stacks) {
        const Stack& stack = *stack_plan.stack;
        out.push_back({modulefile_output_path(site, stack), syntax.modulefile(site, stack_plan), false});
        if (stack.is_default) defaults[stack.name] = stack.module_full_name();
    }
    for (const auto& [name, full] : defaults)
        out.push_back({modulerc_output_path(site, name), syntax.defaults_file(name, full), false});
    return out;
}

std::string keyword_list(const std::vector<std::string>& keywords) {
    std::string kw;
    for (const auto& k : keywords) kw += (kw.empty() ? "" : ", ") + k;
    return kw;
}

}  // namespace sitegen
