// Resolves a stack's collective environment from [collectives.env], [[profiles]] and its env.
#include "plan/env_profile.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "plan/traits.h"

namespace sitegen {

namespace {

std::optional<std::vector<long>> version_numbers(const std::string& text) {
    std::vector<long> out;
    size_t i = 0;
    while (i <= text.size()) {
        size_t dot = text.find('.', i);
        if (dot == std::string::npos) dot = text.size();
        const std::string part = text.substr(i, dot - i);
        if (part.empty() || part.size() > 9 ||
            !std::all_of(part.begin(), part.end(), [](unsigned char c) { return std::isdigit(c); }))
            return std::nullopt;
        out.push_back(std::stol(part));
        i = dot + 1;
    }
    return out;
}

// The operator and the version of a spec; op "" when malformed.
std::pair<std::string, std::string> split_spec(const std::string& spec) {
    for (const char* op : {">=", "<=", ">", "<", "="})
        if (spec.rfind(op, 0) == 0) return {op, spec.substr(std::string(op).size())};
    return {"", ""};
}

int compare_versions(std::vector<long> a, std::vector<long> b) {
    const size_t n = std::max(a.size(), b.size());
    a.resize(n, 0);
    b.resize(n, 0);
    return a < b ? -1 : a > b ? 1 : 0;
}

// The static conditions of `when`, whether they hold for the stack, and their text.
bool static_conditions_hold(const Site& site, const Stack& stack, const ProfileWhen& when, std::string& text) {
    auto add = [&](const std::string& part) { text += (text.empty() ? "" : ", ") + part; };
    bool ok = true;
    if (!when.library.empty()) {
        ok = ok && when.library == to_string(site.collectives.library);
        add("library " + when.library);
    }
    if (!when.plugin_version.empty()) {
        const std::string version = plugin_version(site, stack);
        ok = ok && version_matches(when.plugin_version, version);
        add("plugin " + when.plugin_version + (version.empty() ? "" : " (" + version + ")"));
    }
    if (!when.stack.empty()) {
        ok = ok && glob_matches(when.stack, stack.module_full_name());
        add("stack " + when.stack);
    }
    if (!when.image.empty()) {
        ok = ok && glob_matches(when.image, stack.image);
        add("image " + when.image);
    }
    if (!when.in_container.empty()) {
        const bool inside = runs_in_container(site, stack);
        ok = ok && inside == (when.in_container == "yes");
        add(when.in_container == "yes" ? "in a container" : "on bare metal");
    }
    return ok;
}

NodeScope scope_of(const ProfileWhen& when) {
    if (when.nodes == "single") return NodeScope::single;
    if (when.nodes == "multi") return NodeScope::multi;
    return NodeScope::any;
}

}  // namespace

bool valid_version_spec(const std::string& spec) {
    const auto [op, version] = split_spec(spec);
    return !op.empty() && version_numbers(version).has_value();
}

bool version_matches(const std::string& spec, const std::string& version) {
    const auto [op, wanted] = split_spec(spec);
    const auto a = version_numbers(version), b = version_numbers(wanted);
    if (op.empty() || !a || !b) return false;
    const int c = compare_versions(*a, *b);
    if (op == ">=") return c >= 0;
    if (op == "<=") return c <= 0;
    if (op == ">") return c > 0;
    if (op == "<") return c < 0;
    return c == 0;
}

bool glob_matches(const std::string& pattern, const std::string& text) {
    // Iterative match with one backtrack point for the last '*' (linear in practice).
    size_t p = 0, t = 0, star = std::string::npos, mark = 0;
    while (t < text.size()) {
        if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
            ++p;
            ++t;
        } else if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            mark = t;
        } else if (star != std::string::npos) {
            p = star + 1;
            t = ++mark;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

std::string plugin_version(const Site& site, const Stack& stack) {
    if (!site.collectives.network_plugin.empty())
        for (const auto& [name, version] : stack.components)
            if (name == site.collectives.network_plugin) return version;
    return site.collectives.network_plugin_version;
}

std::vector<EnvSetting> applied_settings(const Site& site, const Stack& stack) {
    std::vector<EnvSetting> out;
    for (const auto& [name, value] : site.collectives.env)
        out.push_back({name, value, "", "collectives.env", "collectives.env." + name, NodeScope::any, "", false});
    for (size_t i : profile_order(site)) {
        const Profile& profile = site.profiles[i];
        for (size_t v = 0; v < profile.vars.size(); ++v) {
            const ProfileVar& var = profile.vars[v];
            std::string conditions;
            if (!static_conditions_hold(site, stack, var.when, conditions)) continue;
            out.push_back({var.name, var.value, var.reason, "profile " + profile.name,
                           "profiles." + std::to_string(i) + ".vars." + std::to_string(v), scope_of(var.when),
                           conditions, false});
        }
    }
    return out;
}

std::vector<EnvSetting> resolve_env(const Site& site, const Stack& stack) {
    std::vector<EnvSetting> out;
    for (EnvSetting& s : applied_settings(site, stack)) {
        auto same = std::find_if(out.begin(), out.end(),
                                 [&](const EnvSetting& e) { return e.name == s.name && e.nodes == s.nodes; });
        if (same != out.end()) *same = std::move(s);
        else out.push_back(std::move(s));
    }
    for (const auto& pair : stack.env)  // (not a structured binding: clang 14 cannot capture one)
        std::erase_if(out, [&](const EnvSetting& e) { return e.name == pair.first; });
    if (stack.env.empty()) return out;
    const auto index = stack_index(site, stack);
    const std::string prefix = index ? "stacks." + std::to_string(*index) + ".env" : "env";
    for (const auto& [name, value] : stack.env)
        out.push_back({name, value, "", prefix, prefix + "." + name, NodeScope::any, "", true});
    return out;
}

const char* node_scope_text(NodeScope scope) {
    switch (scope) {
        case NodeScope::any: return "";
        case NodeScope::single: return "single-node";
        case NodeScope::multi: return "multi-node";
    }
    return "";
}

}  // namespace sitegen
