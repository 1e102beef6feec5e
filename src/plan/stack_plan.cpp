// plan: assembles a stack's plan once (files first: the module's help lists them, the
// install writes them), and the small constructors of plan values.
#include "plan/stack_plan.h"

#include <atomic>

#include "plan/acceptance.h"
#include "plan/install.h"
#include "plan/module.h"
#include "plan/runscripts.h"
#include "plan/venv_extension.h"

namespace sitegen {

namespace {
std::atomic<size_t> g_plans_computed{0};
}  // namespace

ModuleValue text_value(std::string text) { return {{ValuePiece::Kind::text, std::move(text), {}}}; }
ModuleValue root_value() { return {{ValuePiece::Kind::root, {}, {}}}; }
ModuleValue under_root(std::vector<std::string> parts) { return {{ValuePiece::Kind::under_root, {}, std::move(parts)}}; }
ModuleValue local_value(std::string name) { return {{ValuePiece::Kind::local, std::move(name), {}}}; }
ModuleValue under_local(std::string name, std::vector<std::string> parts) {
    return {{ValuePiece::Kind::under_local, std::move(name), std::move(parts)}};
}

const HookAdditions* hook_additions(const Site& site, const Stack& stack, const PlanOptions& options) {
    // By position: stacks are identified by their place in the site, as the hooks saw them.
    const auto i = stack_index(site, stack);
    return i && *i < options.hooks.size() ? &options.hooks[*i] : nullptr;
}

ShellCommand shell(std::initializer_list<ShellPiece> pieces) { return ShellCommand(pieces); }
ShellPiece bash_text(std::string source) { return {false, std::move(source)}; }
ShellPiece install_path(std::string rel) { return {true, std::move(rel)}; }

StackPlan plan_stack(const Site& site, const Stack& stack, const PlanOptions& options) {
    ++g_plans_computed;
    StackPlan plan;
    plan.stack = &stack;
    plan_runscripts(site, stack, options, plan.files);
    plan_venv_extension(stack, plan.files);
    plan_acceptance(site, stack, options, plan.files);
    plan.module = plan_module(site, stack, options, plan.files);
    plan.install = plan_install(site, stack, plan.files);
    return plan;
}

SitePlan plan_site(const Site& site, const PlanOptions& options) {
    SitePlan plan{&site, {}};
    plan.stacks.reserve(site.stacks.size());
    for (const auto& stack : site.stacks) plan.stacks.push_back(plan_stack(site, stack, options));
    return plan;
}

size_t plans_computed() { return g_plans_computed.load(); }

}  // namespace sitegen
