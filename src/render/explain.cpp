// `sitegen explain`'s text, from the resolved collective environment (plan/env_profile.h).
#include "render/explain.h"

#include <algorithm>

#include "plan/env_profile.h"
#include "text/quote.h"

namespace sitegen {

namespace {

std::string line(const Site& site, const EnvSetting& e, bool overridden) {
    const SourceRegion at = site.where(e.path);
    std::string conditions = e.conditions;
    if (e.nodes != NodeScope::any) conditions += (conditions.empty() ? "" : ", ") + std::string(node_scope_text(e.nodes));
    std::string out = (overridden ? "(overridden) " : "") + e.name + "=" + bash_word(e.value) + "  " + at.file + ":" +
                      std::to_string(at.line) + "  " + e.origin;
    if (!conditions.empty()) out += "  (" + conditions + ")";
    return out + "\n";
}

}  // namespace

std::string explain_text(const Site& site, const Stack& stack, const std::string& var) {
    const std::vector<EnvSetting> resolved = resolve_env(site, stack);
    std::string out;
    if (!var.empty()) {
        auto wins = [&](const EnvSetting& e) {
            return std::any_of(resolved.begin(), resolved.end(), [&](const EnvSetting& r) { return r.path == e.path; });
        };
        for (const EnvSetting& e : applied_settings(site, stack))
            if (e.name == var && !wins(e)) out += line(site, e, true);
    }
    std::string current;
    for (const EnvSetting& e : resolved)
        if (var.empty() || e.name == var) current += line(site, e, false);
    return current.empty() ? "" : out + current;
}

}  // namespace sitegen
