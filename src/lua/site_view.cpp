// The site as rules see it: every model field under its TOML key, enums by name, read-only.
#include "lua/site_view.h"

namespace sitegen {

namespace {

// ---- the site as a Lua value tree -------------------------------------------------------
// Paths are left empty (derived from the key, see LuaValue) except where a value stands for
// another key: name/value pairs, stacks' derived and alias fields.

LuaValue str(const std::string& v, std::string path = {}) { return LuaValue::make_string(v, std::move(path)); }
LuaValue num(long long v) { return LuaValue::make_int(v); }
LuaValue flag(bool v, std::string path = {}) { return LuaValue::make_bool(v, std::move(path)); }

LuaValue strings(const std::vector<std::string>& values) {
    LuaValue t = LuaValue::make_table();
    for (const auto& v : values) t.push(str(v));
    return t;
}

LuaValue ints(const std::vector<int>& values) {
    LuaValue t = LuaValue::make_table();
    for (int v : values) t.push(num(v));
    return t;
}

// Name/value pairs in order ({name=, value=} items, each at path.NAME) plus a by-name lookup.
LuaValue pairs_table(const EnvList& env, const std::string& path) {
    LuaValue t = LuaValue::make_table();
    for (const auto& [name, value] : env) {
        const std::string p = path + "." + name;
        LuaValue pair = LuaValue::make_table(p);
        pair.add("name", str(name, p)).add("value", str(value, p));
        t.push(std::move(pair));
    }
    for (const auto& [name, value] : env) t.add(name, str(value));
    return t;
}

LuaValue python_table(const Python& py) {
    LuaValue t = LuaValue::make_table();
    t.add("layout", str(to_string(py.layout)))
        .add("version", str(py.version))
        .add("interpreter", str(py.interpreter))
        .add("conda_root", str(py.conda_root))
        .add("conda_env", str(py.conda_env))
        .add("venv", str(py.venv));
    return t;
}

LuaValue site_info_table(const SiteInfo& s) {
    LuaValue t = LuaValue::make_table();
    t.add("name", str(s.name))
        .add("description", str(s.description))
        .add("url", str(s.url))
        .add("scheduler", str(to_string(s.scheduler)))
        .add("launcher", str(to_string(s.launcher)))
        .add("install_prefix", str(s.install_prefix))
        .add("module_system", str(s.module_system))
        .add("module_use", strings(s.module_use))
        .add("base_modules", strings(s.base_modules));
    return t;
}

LuaValue hardware_table(const Hardware& h) {
    LuaValue cores = LuaValue::make_table();
    for (const auto& list : h.device_cores) cores.push(ints(list));
    LuaValue t = LuaValue::make_table();
    t.add("gpu_vendor", str(to_string(h.gpu_vendor)))
        .add("gpu_model", str(h.gpu_model))
        .add("devices_per_node", num(h.devices_per_node))
        .add("cores_per_node", num(h.cores_per_node))
        .add("threads_per_core", num(h.threads_per_core))
        .add("device_cores", std::move(cores))
        .add("reserved_cores", ints(h.reserved_cores))
        .add("nics", strings(h.nics))
        .add("interconnect", str(h.interconnect));
    return t;
}

LuaValue binding_table(const Binding& b) {
    LuaValue t = LuaValue::make_table();
    t.add("style", str(to_string(b.style)))
        .add("cores_per_rank", num(b.cores_per_rank))
        .add("core_offset", num(b.core_offset))
        .add("verbose", flag(b.verbose))
        .add("affinity_env", pairs_table(b.affinity_env, "binding.affinity_env"));
    return t;
}

LuaValue batch_table(const Batch& b) {
    LuaValue t = LuaValue::make_table();
    t.add("nodes", num(b.nodes))
        .add("tasks_per_node", num(b.tasks_per_node))
        .add("gpus_per_node", num(b.gpus_per_node))
        .add("cpus_per_task", num(b.cpus_per_task))
        .add("partition", str(b.partition))
        .add("account", str(b.account))
        .add("time", str(b.time))
        .add("mem", str(b.mem))
        .add("output", str(b.output))
        .add("place", str(b.place))
        .add("filesystems", str(b.filesystems));
    return t;
}

LuaValue collectives_table(const Collectives& c) {
    LuaValue t = LuaValue::make_table();
    t.add("library", str(to_string(c.library)))
        .add("network_plugin", str(c.network_plugin))
        .add("visibility_var", str(c.visibility_var))
        .add("master_port_base", num(c.master_port_base))
        .add("master_port_span", num(c.master_port_span))
        .add("env", pairs_table(c.env, "collectives.env"));
    return t;
}

LuaValue container_table(const Container& c) {
    LuaValue binds = LuaValue::make_table();
    for (const auto& bind : c.binds) {
        LuaValue b = LuaValue::make_table();
        b.add("host", str(bind.host)).add("container", str(bind.container)).add("options", str(bind.options));
        binds.push(std::move(b));
    }
    LuaValue t = LuaValue::make_table();
    t.add("enabled", flag(c.enabled))
        .add("runtime", str(to_string(c.runtime)))
        .add("image_dir", str(c.image_dir))
        .add("binds", std::move(binds));
    return t;
}

LuaValue stack_table(const Stack& s, const std::string& p) {
    LuaValue t = LuaValue::make_table();
    t.add("name", str(s.name))
        .add("version", str(s.version))
        .add("versionsuffix", str(s.versionsuffix))
        .add("description", str(s.description))
        .add("homepage", str(s.homepage))
        .add("keywords", strings(s.keywords))
        .add("docurls", strings(s.docurls))
        .add("moduleclass", str(s.moduleclass))
        .add("family", str(s.family))
        .add("conflicts", strings(s.conflicts))
        .add("base_modules", strings(s.base_modules))
        .add("default", flag(s.is_default))
        .add("is_default", flag(s.is_default, p + ".default"))
        .add("image", str(s.image))
        .add("python", python_table(s.python))
        .add("components", pairs_table(s.components, p + ".components"))
        .add("env", pairs_table(s.env, p + ".env"))
        .add("venv_extension", flag(s.venv_extension))
        .add("module_version", str(s.module_version(), p + ".version"))
        .add("module_full_name", str(s.module_full_name(), p));
    return t;
}

}  // namespace

LuaValue site_to_lua(const Site& site) {
    LuaValue stacks = LuaValue::make_table();
    for (size_t i = 0; i < site.stacks.size(); ++i)
        stacks.push(stack_table(site.stacks[i], "stacks." + std::to_string(i)));
    LuaValue root = LuaValue::make_table();
    root.add("site", site_info_table(site.site))
        .add("hardware", hardware_table(site.hardware))
        .add("binding", binding_table(site.binding))
        .add("batch", batch_table(site.batch))
        .add("collectives", collectives_table(site.collectives))
        .add("container", container_table(site.container))
        .add("python", python_table(site.python))
        .add("stacks", std::move(stacks))
        .add("files", strings(site.files));
    return root;
}

}  // namespace sitegen
