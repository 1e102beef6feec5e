// Loads site TOML into the model: parse, follow `extends`, apply each layer in order.
#include "site/load.h"

#include <filesystem>

#include <toml++/toml.h>

#include "site/schema.h"
#include "site/toml_reader.h"
#include "node/topology.h"

namespace sitegen {

namespace {

const std::initializer_list<std::pair<const char*, PythonLayout>> kLayouts = {
    {"container-venv", PythonLayout::container_venv},
    {"conda-env", PythonLayout::conda_env},
    {"userbase-venv", PythonLayout::userbase_venv},
    {"frameworks-module", PythonLayout::frameworks_module},
    {"system", PythonLayout::system},
};

constexpr int kMaxCount = 1 << 20;

void apply_site(TomlReader& r, SiteInfo& s) {
    r.read("name", s.name);
    r.read("description", s.description);
    r.read("url", s.url);
    r.read_enum("scheduler", s.scheduler, {{"slurm", Scheduler::slurm}, {"pbs", Scheduler::pbs}});
    r.read_enum("launcher", s.launcher, {{"srun", Launcher::srun}, {"mpiexec", Launcher::mpiexec}});
    r.read("install_prefix", s.install_prefix);
    r.read_enum("module_system", s.module_system, {{"lmod", std::string("lmod")}});
    r.read("module_use", s.module_use);
    r.read("base_modules", s.base_modules);
}

void apply_hardware(TomlReader& r, Hardware& h) {
    r.read_enum("gpu_vendor", h.gpu_vendor,
                {{"none", GpuVendor::none}, {"amd", GpuVendor::amd},
                 {"nvidia", GpuVendor::nvidia}, {"intel", GpuVendor::intel}});
    r.read("gpu_model", h.gpu_model);
    r.read("devices_per_node", h.devices_per_node, 0, 1024);
    r.read("cores_per_node", h.cores_per_node, 1, 65536);
    r.read("threads_per_core", h.threads_per_core, 1, 16);
    std::vector<std::string> ranges;
    if (r.read("device_cores", ranges)) {
        std::vector<std::vector<int>> cores;
        bool ok = true;
        for (size_t i = 0; i < ranges.size(); ++i) {
            auto parsed = parse_core_ranges(ranges[i]);
            if (!parsed) {
                r.diags().error(r.regions()[r.child("device_cores") + "." + std::to_string(i)],
                                "'" + ranges[i] + "' is not a core list such as \"48-55\" or \"0-3,8-11\"");
                ok = false;
                continue;
            }
            cores.push_back(*parsed);
        }
        if (ok) h.device_cores = std::move(cores);
    }
    r.read("reserved_cores", h.reserved_cores, 0, 65535);
    r.read("nics", h.nics);
    r.read("interconnect", h.interconnect);
}

void apply_binding(TomlReader& r, Binding& b) {
    r.read_enum("style", b.style,
                {{"none", BindingStyle::none}, {"mask", BindingStyle::mask}, {"list", BindingStyle::list}});
    r.read("cores_per_rank", b.cores_per_rank, 0, 65536);
    r.read("core_offset", b.core_offset, 0, 65536);
    r.read("verbose", b.verbose);
    EnvList picks = b.affinity_env;
    if (r.read_string_table("affinity_env", picks, true)) {
        bool ok = true;
        for (const auto& [name, pick] : picks)
            if (pick != "last" && pick != "next") {
                r.diags().error(r.regions()[r.child("affinity_env") + "." + name],
                                "'" + r.child("affinity_env") + "." + name +
                                    "' must be 'last' or 'next', found '" + pick + "'");
                ok = false;
            }
        if (ok) b.affinity_env = picks;
    }
}

void apply_batch(TomlReader& r, Batch& b) {
    r.read("nodes", b.nodes, 1, kMaxCount);
    r.read("tasks_per_node", b.tasks_per_node, 1, 4096);
    r.read("gpus_per_node", b.gpus_per_node, 0, 1024);
    r.read("cpus_per_task", b.cpus_per_task, 1, 65536);
    r.read("partition", b.partition);
    r.read("account", b.account);
    r.read("time", b.time);
    r.read("mem", b.mem);
    r.read("output", b.output);
    r.read("place", b.place);
    r.read("filesystems", b.filesystems);
}

void apply_collectives(TomlReader& r, Collectives& c) {
    r.read_enum("library", c.library,
                {{"nccl", CollectiveLib::nccl}, {"rccl", CollectiveLib::rccl},
                 {"oneccl", CollectiveLib::oneccl}, {"gloo", CollectiveLib::gloo}});
    r.read("network_plugin", c.network_plugin);
    r.read("visibility_var", c.visibility_var);
    r.read("master_port_base", c.master_port_base, 1, 65535);
    r.read("master_port_span", c.master_port_span, 1, 65535);
    r.read_string_table("env", c.env, true);
}

void apply_container(TomlReader& r, Container& c) {
    c.enabled = true;
    r.read_enum("runtime", c.runtime,
                {{"singularity", ContainerRuntime::singularity}, {"apptainer", ContainerRuntime::apptainer}});
    r.read("image_dir", c.image_dir);
    if (const toml::array* binds = r.array("binds")) {
        std::vector<Bind> out;
        size_t i = 0;
        for (const auto& item : *binds) {
            std::string path = r.child("binds") + "." + std::to_string(i++);
            r.regions()[path] = region_of(item.source());
            if (!item.is_table()) {
                r.diags().error(region_of(item.source()),
                                "'" + path + "' must be a table such as { host = \"/opt/cray\" }, found " +
                                    toml_type_name(item));
                continue;
            }
            TomlReader b(*item.as_table(), "container.binds[]", path, r.regions(), r.diags());
            Bind bind;
            if (!b.read("host", bind.host) && !b.has("host"))
                r.diags().error(region_of(item.source()), "'" + path + "' is missing required key 'host'");
            b.read("container", bind.container);
            b.read_enum("options", bind.options, {{"ro", std::string("ro")}, {"rw", std::string("rw")}});
            if (bind.container.empty()) bind.container = bind.host;
            b.report_unknown_keys();
            out.push_back(bind);
        }
        c.binds = std::move(out);
    }
}

void apply_python(TomlReader& r, Python& p) {
    r.read_enum("layout", p.layout, kLayouts);
    r.read("version", p.version);
    r.read("interpreter", p.interpreter);
    r.read("conda_root", p.conda_root);
    r.read("conda_env", p.conda_env);
    r.read("venv", p.venv);
}

void apply_stack(TomlReader& r, Stack& s, const Python& site_python) {
    s.python = site_python;
    r.read("name", s.name);
    r.read("version", s.version);
    r.read("versionsuffix", s.versionsuffix);
    r.read("description", s.description);
    r.read("homepage", s.homepage);
    r.read("keywords", s.keywords);
    r.read("docurls", s.docurls);
    r.read("moduleclass", s.moduleclass);
    r.read("family", s.family);
    r.read("conflicts", s.conflicts);
    r.read("base_modules", s.base_modules);
    r.read("default", s.is_default);
    r.read("image", s.image);
    r.read("venv_extension", s.venv_extension);
    if (const toml::table* py = r.table("python")) {
        TomlReader pr(*py, "stacks[].python", r.child("python"), r.regions(), r.diags());
        apply_python(pr, s.python);
        pr.report_unknown_keys();
    }
    r.read_string_table("components", s.components, false);
    r.read_string_table("env", s.env, true);
}

template <typename Fn>
void section(TomlReader& top, const char* key, Fn apply) {
    if (const toml::table* t = top.table(key)) {
        TomlReader r(*t, key, key, top.regions(), top.diags());
        apply(r);
        r.report_unknown_keys();
    }
}

struct Loader {
    FileSystem& fs;
    Site& site;
    Diagnostics& diags;
    std::vector<std::string> chain;  // canonical paths currently being applied

    void apply_file(const std::string& path, const std::string& text, const SourceRegion& from, int depth);
    void apply_layer(const toml::table& root, const std::string& path, int depth);
};

std::string lexical(const std::string& p) {
    return std::filesystem::path(p).lexically_normal().generic_string();
}

void Loader::apply_file(const std::string& path, const std::string& text, const SourceRegion& from,
                        int depth) {
    const std::string key = lexical(path);
    for (const auto& c : chain)
        if (c == key) {
            std::string cycle;
            for (const auto& c2 : chain) cycle += c2 + " -> ";
            diags.error(from, "'extends' cycle: " + cycle + key);
            return;
        }
    if (depth > kMaxExtendsDepth) {
        diags.error(from, "'extends' chain deeper than " + std::to_string(kMaxExtendsDepth) + " files");
        return;
    }
    if (text.size() > kMaxSiteFileBytes) {
        diags.error({path, 0, 0}, "file is " + std::to_string(text.size()) +
                                      " bytes; site files are limited to " +
                                      std::to_string(kMaxSiteFileBytes) + " bytes");
        return;
    }
    toml::table root;
    try {
        root = toml::parse(std::string_view(text), std::string_view(path));
    } catch (const toml::parse_error& e) {
        diags.error(region_of(e.source()), std::string(e.description()));
        return;
    }
    site.files.push_back(path);
    chain.push_back(key);
    apply_layer(root, path, depth);
    chain.pop_back();
}

void Loader::apply_layer(const toml::table& root, const std::string& path, int depth) {
    TomlReader top(root, "", "", site.regions, diags);
    std::vector<std::string> extends;
    if (top.read("extends", extends)) {
        const auto dir = std::filesystem::path(path).parent_path();
        for (size_t i = 0; i < extends.size(); ++i) {
            SourceRegion at = site.regions["extends." + std::to_string(i)];
            std::string target = lexical((dir / extends[i]).generic_string());
            std::string text, error;
            if (!fs.read(target, text, error)) {
                diags.error(at, "cannot read extended file: " + error);
                continue;
            }
            apply_file(target, text, at, depth + 1);
        }
    }
    section(top, "site", [&](TomlReader& r) { apply_site(r, site.site); });
    section(top, "hardware", [&](TomlReader& r) { apply_hardware(r, site.hardware); });
    section(top, "binding", [&](TomlReader& r) { apply_binding(r, site.binding); });
    section(top, "batch", [&](TomlReader& r) { apply_batch(r, site.batch); });
    section(top, "collectives", [&](TomlReader& r) { apply_collectives(r, site.collectives); });
    section(top, "container", [&](TomlReader& r) { apply_container(r, site.container); });
    section(top, "python", [&](TomlReader& r) { apply_python(r, site.python); });
    if (const toml::array* stacks = top.array("stacks")) {
        for (const auto& item : *stacks) {
            std::string mpath = "stacks." + std::to_string(site.stacks.size());
            site.regions[mpath] = region_of(item.source());
            if (!item.is_table()) {
                diags.error(region_of(item.source()),
                            std::string("'stacks' entries must be tables ([[stacks]]), found ") + toml_type_name(item));
                continue;
            }
            TomlReader r(*item.as_table(), "stacks[]", mpath, site.regions, diags);
            Stack s;
            apply_stack(r, s, site.python);
            r.report_unknown_keys();
            site.stacks.push_back(std::move(s));
        }
    }
    top.report_unknown_keys();
}

}  // namespace

std::string site_file(const std::string& sites_dir, const std::string& name) {
    return lexical(sites_dir + "/" + name + "/site.toml");
}

std::vector<std::string> list_sites(FileSystem& fs, const std::string& sites_dir) {
    std::vector<std::string> out;
    for (const auto& d : fs.list_dirs(sites_dir))
        if (fs.exists(site_file(sites_dir, d))) out.push_back(d);
    return out;
}

bool load_site_text(FileSystem& fs, const std::string& path, const std::string& text, Site& out,
                    Diagnostics& diags) {
    size_t before = diags.error_count();
    Loader loader{fs, out, diags, {}};
    loader.apply_file(path, text, {path, 0, 0}, 0);
    return diags.error_count() == before;
}

bool load_site(FileSystem& fs, const std::string& sites_dir, const std::string& name, Site& out,
               Diagnostics& diags) {
    const std::string path = site_file(sites_dir, name);
    std::string text, error;
    if (!fs.read(path, text, error)) {
        diags.error({}, "cannot read site '" + name + "': " + error);
        return false;
    }
    return load_site_text(fs, path, text, out, diags);
}

}  // namespace sitegen
