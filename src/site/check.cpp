// Whole-site schema checks: required keys, names, paths and counts that must agree.
#include "site/check.h"

#include <regex>
#include <set>

#include "plan/module.h"
#include "plan/runscripts.h"
#include "plan/traits.h"
#include "text/quote.h"
#include "site/schema.h"

namespace sitegen {

namespace {

struct Checker {
    const Site& site;
    Diagnostics& diags;

    bool present(const std::string& path) const { return site.regions.count(path) > 0; }

    void require(const std::string& path) {
        if (present(path)) return;
        auto dot = path.rfind('.');
        std::string table = dot == std::string::npos ? "" : path.substr(0, dot);
        std::string key = dot == std::string::npos ? path : path.substr(dot + 1);
        std::string in = table.empty() ? "at the top level" : "in [" + table + "]";
        if (table.rfind("stacks.", 0) == 0) in = "in stack '" + stack_label(table) + "'";
        diags.error(site.where(table), "missing required key '" + key + "' " + in);
    }

    std::string stack_label(const std::string& table) const {
        size_t i = std::stoul(table.substr(7));
        if (i < site.stacks.size() && !site.stacks[i].name.empty()) return site.stacks[i].name;
        return "#" + std::to_string(i + 1);
    }

    void absolute(const std::string& path, const std::string& value) {
        if (!value.empty() && value[0] != '/')
            diags.error(site.where(path), "'" + path + "' must be an absolute path, found '" + value + "'");
    }

    // Values that land in one line of a batch directive or a ':'/','-separated list.
    void single_line(const std::string& path, const std::string& value) {
        for (unsigned char c : value)
            if ((c < 0x20 && c != '\t') || c == 0x7f) {
                diags.error(site.where(path), "'" + path + "' must be a single line without control characters");
                return;
            }
    }
    void no_separator(const std::string& path, const std::string& value, const std::string& separators,
                      const std::string& where_used) {
        single_line(path, value);
        for (char c : separators)
            if (value.find(c) != std::string::npos) {
                diags.error(site.where(path), "'" + path + "' contains '" + std::string(1, c) + "', which would split " + where_used);
                return;
            }
    }
    void check_text_placement();
    void check_runtime();
    void check_literal_values();
    std::string layout_path(size_t i) const;

    void run(const std::string& expected_name);
    void check_stack(size_t i);
};

const std::regex kModuleName(R"(^[A-Za-z0-9][A-Za-z0-9_.+-]*$)");
const std::regex kVersion(R"(^[A-Za-z0-9][A-Za-z0-9_.+-]*$)");
const std::regex kSuffix(R"(^([-_.][A-Za-z0-9_.+-]*)?$)");

void Checker::run(const std::string& expected_name) {
    for (const char* table : {"site", "hardware", "collectives", "python"})
        if (!present(table)) diags.error(site.where(""), std::string("missing required table [") + table + "]");
    if (present("site")) {
        for (const char* k : {"site.name", "site.description", "site.scheduler", "site.launcher",
                              "site.install_prefix"})
            require(k);
        if (present("site.name") && site.site.name != expected_name)
            diags.error(site.where("site.name"),
                        "site name '" + site.site.name + "' does not match its directory '" +
                            expected_name + "'");
        absolute("site.install_prefix", site.site.install_prefix);
        for (size_t i = 0; i < site.site.module_use.size(); ++i)
            absolute("site.module_use." + std::to_string(i), site.site.module_use[i]);
    }
    if (present("hardware")) {
        for (const char* k : {"hardware.gpu_vendor", "hardware.devices_per_node", "hardware.cores_per_node"})
            require(k);
        const auto& h = site.hardware;
        if (h.devices_per_node > 0 && !present("hardware.device_cores"))
            diags.error(site.where("hardware"),
                        "missing required key 'device_cores' in [hardware] (one core list per device)");
        if (present("hardware.device_cores") &&
            static_cast<int>(h.device_cores.size()) != h.devices_per_node)
            diags.error(site.where("hardware.device_cores"),
                        "'device_cores' lists " + std::to_string(h.device_cores.size()) + " devices but devices_per_node is " +
                            std::to_string(h.devices_per_node));
        if (h.gpu_vendor == GpuVendor::none && h.devices_per_node > 0)
            diags.error(site.where("hardware.gpu_vendor"),
                        "'hardware.gpu_vendor' is 'none' but devices_per_node is " +
                            std::to_string(h.devices_per_node));
        for (size_t i = 0; i < h.reserved_cores.size(); ++i)
            if (h.reserved_cores[i] >= h.cores_per_node)
                diags.error(site.where("hardware.reserved_cores." + std::to_string(i)),
                            "reserved core " + std::to_string(h.reserved_cores[i]) +
                                " is outside the node's " + std::to_string(h.cores_per_node) + " cores");
    }
    if (present("binding.style") && site.binding.style != BindingStyle::none &&
        site.hardware.devices_per_node == 0)
        diags.error(site.where("binding.style"), "CPU binding by device needs devices_per_node > 0");
    if (present("collectives")) require("collectives.library");
    const std::string& vis = site.collectives.visibility_var;
    if (!vis.empty() && !is_valid_var_name(vis))
        diags.error(site.where("collectives.visibility_var"),
                    "'" + vis + "' is not a valid environment variable name (^[A-Za-z_][A-Za-z0-9_]*$)");
    if (site.collectives.master_port_base + site.collectives.master_port_span > 65536)
        diags.error(site.where("collectives.master_port_span"),
                    "master_port_base + master_port_span exceeds 65535");
    if (site.container.enabled) {
        require("container.runtime");
        if (!traits(site.container.runtime).image_is_name) require("container.image_dir");
        absolute("container.image_dir", site.container.image_dir);
    }
    if (present("python")) {
        require("python.layout");
        require("python.version");
    }
    check_text_placement();
    check_runtime();
    check_literal_values();
    if (site.stacks.empty()) diags.error(site.where(""), "no [[stacks]] defined: a site publishes at least one stack");
    std::set<std::string> seen;
    std::map<std::string, size_t> default_of;
    for (size_t i = 0; i < site.stacks.size(); ++i) {
        check_stack(i);
        const auto& s = site.stacks[i];
        const std::string p = "stacks." + std::to_string(i);
        if (!seen.insert(s.module_full_name()).second)
            diags.error(site.where(p + ".version"),
                        "duplicate stack '" + s.module_full_name() + "': each module name/version is published once");
        if (s.is_default) {
            auto [it, fresh] = default_of.emplace(s.name, i);
            if (!fresh)
                diags.error(site.where(p + ".default"),
                            "two default versions of '" + s.name + "' (also stack #" +
                                std::to_string(it->second + 1) + ")");
        }
    }
}

void Checker::check_stack(size_t i) {
    const auto& s = site.stacks[i];
    const std::string p = "stacks." + std::to_string(i);
    for (const char* k : {"name", "version", "description", "homepage"}) require(p + "." + k);
    if (present(p + ".name") && !std::regex_match(s.name, kModuleName))
        diags.error(site.where(p + ".name"),
                    "stack name '" + s.name + "' is not a valid module name (letters, digits, '_', '.', '+', '-')");
    if (present(p + ".version") && !std::regex_match(s.version, kVersion))
        diags.error(site.where(p + ".version"),
                    "stack version '" + s.version + "' is not a valid module version");
    if (!std::regex_match(s.versionsuffix, kSuffix))
        diags.error(site.where(p + ".versionsuffix"),
                    "versionsuffix '" + s.versionsuffix + "' must start with '-', '_' or '.' and hold only letters, digits, '_', '.', '+', '-'");
    const LayoutTraits& layout = traits(s.python.layout);
    const std::string layout_at = layout_path(i);
    if (site.container.enabled && layout.in_container && s.image.empty())
        diags.error(site.where(p), "stack '" + s.name + "' runs in a container but has no 'image'");
    if (!site.container.enabled && !s.image.empty())
        diags.error(site.where(p + ".image"), "'image' is set but the site has no [container] table");
    if (layout.in_container && !site.container.enabled)
        diags.error(site.where(layout_at),
                    "python layout '" + to_string(s.python.layout) + "' needs a [container] table");
    // The module of a container site binds and names the image; a host layout would run the
    // host's python in every job and never enter it.
    if (site.container.enabled && !layout.in_container)
        diags.error(site.where(layout_at),
                    "stack '" + s.name + "' has the host layout '" + to_string(s.python.layout) +
                        "' but the site runs its stacks in a [container]: its jobs would run the host's python "
                        "and never enter the image",
                    "use 'container-venv' or 'container-system', or remove [container]");
    if (layout.in_container && layout.conda_venv) {
        std::string missing;
        for (const auto& [key, value] : {std::pair<const char*, const std::string&>{"conda_root", s.python.conda_root},
                                         {"conda_env", s.python.conda_env}, {"venv", s.python.venv}})
            if (value.empty()) missing += std::string(missing.empty() ? "" : ", ") + key;
        if (!missing.empty())
            diags.error(site.where(layout_at),
                        "python layout '" + to_string(s.python.layout) + "' activates a conda environment and a venv "
                            "in the image, but " + missing + (missing.find(',') == std::string::npos ? " is" : " are") +
                            " not set (in [python] or the stack's python)",
                        "for an image without conda, use layout 'container-system' (the image's own python)");
    }
    const RuntimeTraits& rt = traits(site.container.runtime);
    if (site.container.enabled && rt.image_is_name) {
        // A name the runtime resolves in its own store, never a file.
        static const std::regex kFileImage(R"(^[/.~]|\.(sif|sqsh|squashfs|simg)$)");
        if (std::regex_search(s.image, kFileImage))
            diags.error(site.where(p + ".image"),
                        "'" + s.image + "' looks like an image file, but " + to_string(site.container.runtime) +
                            " runs images by name",
                        site.container.runtime == ContainerRuntime::uenv
                            ? "give the uenv label, e.g. prgenv-gnu/24.11:v1 (uenv image pull)"
                            : "give the image reference, e.g. docker.io/library/python:3.12 (podman-hpc migrate)");
        if (!s.image_sha256.empty())
            diags.error(site.where(p + ".image_sha256"),
                        "'image_sha256' checks an image file, but " + to_string(site.container.runtime) +
                            " images are names in its own store");
        single_line(p + ".image", s.image);
    } else if (s.image.find('/') != std::string::npos)
        diags.error(site.where(p + ".image"), "'image' is a file name in container.image_dir, not a path");
    if (site.container.enabled && layout.in_container && layout.conda_venv && !rt.conda_images)
        diags.error(site.where(layout_at),
                    "python layout '" + to_string(s.python.layout) + "' activates conda in the image, but a " +
                        to_string(site.container.runtime) + " image is a Spack software stack with views, not conda",
                    "use layout 'container-system' (the view's python3)");
    static const std::regex kSha256("[0-9a-f]{64}");
    if (!s.image_sha256.empty() && !std::regex_match(s.image_sha256, kSha256))
        diags.error(site.where(p + ".image_sha256"),
                    "image_sha256 '" + s.image_sha256 + "' is not a SHA-256: 64 lowercase hexadecimal digits",
                    "print it with: sha256sum <image>");
    if (!s.image_sha256.empty() && s.image.empty())
        diags.error(site.where(p + ".image_sha256"), "'image_sha256' is set but the stack has no 'image'");
}

// Where a stack's python layout was set: its own override, else the site's [python].
std::string Checker::layout_path(size_t i) const {
    const std::string own = "stacks." + std::to_string(i) + ".python.layout";
    return present(own) ? own : "python.layout";
}

// The combinations of [container], [hardware] and [batch] that would produce outputs that
// cannot work: refused (or warned about) at their TOML location.
void Checker::check_runtime() {
    const auto& c = site.container;
    const auto& h = site.hardware;
    if (c.enabled) {
        const RuntimeTraits& rt = traits(c.runtime);
        const std::string runtime = to_string(c.runtime);
        const char* vendor_flag = h.gpu_vendor == GpuVendor::nvidia ? rt.nvidia_flag
                                  : h.gpu_vendor == GpuVendor::amd  ? rt.amd_flag
                                                                    : nullptr;
        const std::string at = present("container.gpu_flag") ? "container.gpu_flag" : "container.runtime";
        if (h.gpu_vendor == GpuVendor::nvidia && vendor_flag && !c.gpu_flag)
            diags.error(site.where(at), "CUDA is invisible in containers that " + runtime + " runs without " + vendor_flag +
                                            " (the host's driver libraries are not bound in)",
                        "set gpu_flag = true in [container]");
        if (c.gpu_flag && !vendor_flag)
            diags.error(site.where(at), runtime + " has no GPU flag for gpu_vendor '" + to_string(h.gpu_vendor) + "'",
                        c.runtime == ContainerRuntime::charliecloud
                            ? "inject the host's GPU libraries into the image with ch-fromhost, and set gpu_flag = false"
                            : "set gpu_flag = false");
        if (h.gpu_vendor == GpuVendor::nvidia && !vendor_flag && !c.gpu_flag && rt.nvidia_note)
            diags.warning(site.where("container.runtime"), rt.nvidia_note);
        // A runtime that gives the container its own /dev shows no GPU without its flag.
        if (h.devices_per_node > 0 && !rt.gpu_devices_shared && !vendor_flag)
            diags.error(site.where("hardware.gpu_vendor"),
                        runtime + " gives the container its own /dev and has no GPU flag for gpu_vendor '" +
                            to_string(h.gpu_vendor) + "': the devices would be invisible in the container");
        if (rt.slurm_only && site.site.scheduler != Scheduler::slurm)
            diags.error(site.where("container.runtime"),
                        std::string(rt.slurm_only) + "; the site's scheduler is '" + to_string(site.site.scheduler) + "'",
                        "use scheduler 'slurm', or a runtime that runs anywhere (apptainer, singularity, charliecloud)");
        if (rt.host_filesystem && !c.binds.empty())
            diags.error(site.where("container.binds"),
                        runtime + " mounts only its image; the host's files are visible as they are, so there is "
                                  "nothing to bind",
                        "remove container.binds");
        if (rt.view_flag && c.view.empty())
            diags.error(site.where("container"), "missing required key 'view' in [container]: " + runtime +
                                                     " puts the image's software on PATH only through a view",
                        "e.g. view = \"default\"");
        if (!rt.view_flag && present("container.view"))
            diags.error(site.where("container.view"), runtime + " has no views ('view' is for uenv)");
        if (rt.image_is_name && present("container.image_dir"))
            diags.warning(site.where("container.image_dir"),
                          runtime + " runs images by name from its own store: image_dir is not used");
        if (!rt.bind_options && !rt.host_filesystem)
            for (size_t i = 0; i < c.binds.size(); ++i)
                if (!c.binds[i].options.empty())
                    diags.error(site.where("container.binds." + std::to_string(i) + ".options"),
                                runtime + " takes no bind options ('" + c.binds[i].options + "'): " + rt.bind_flag +
                                    " SRC:DST only");
    }
    // The wrapper gives each rank the device LOCAL_RANK: more ranks than devices would
    // point ranks at devices that do not exist.
    const int ranks = site.batch.tasks_per_node;
    if (h.devices_per_node > 0 && ranks > h.devices_per_node && !site.collectives.visibility_var.empty())
        diags.error(site.where("batch.tasks_per_node"),
                    std::to_string(ranks) + " ranks per node but " + std::to_string(h.devices_per_node) +
                        " devices: the rank wrapper narrows each rank to device LOCAL_RANK, so ranks " +
                        std::to_string(h.devices_per_node) + " and above would have none",
                    "one rank per device (tasks_per_node <= devices_per_node); devices shared by several ranks "
                    "are not expressible yet");
}

// Values are written as they are: a module's setenv and the wrapper's exports never expand
// $VAR, so "/scratch/$USER/hf" would reach the program literally.
void Checker::check_literal_values() {
    static const std::regex kShellVariable(R"(\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*))");
    auto warn = [&](const std::string& path, const std::string& value) {
        std::smatch m;
        if (std::regex_search(value, m, kShellVariable))
            diags.warning(site.where(path),
                          "'" + m.str(0) + "' in '" + path + "' is written literally: modules and the rank wrapper do "
                          "not expand variables in values",
                          "write the value in full");
    };
    for (const auto& [name, value] : site.collectives.env) warn("collectives.env." + name, value);
    for (size_t i = 0; i < site.stacks.size(); ++i)
        for (const auto& [name, value] : site.stacks[i].env) warn("stacks." + std::to_string(i) + ".env." + name, value);
}

void Checker::check_text_placement() {
    no_separator("site.install_prefix", site.site.install_prefix, site.container.enabled ? ":," : ":",
                 site.container.enabled ? "PATH-like variables or the bind list" : "PATH-like variables");
    // Lmod 8.6 emits `export NAME='...'` for the user's shell to eval: a line break in a
    // value ends the quoted word there and the rest would run as a command.
    for (const auto& [name, value] : site.collectives.env) single_line("collectives.env." + name, value);
    for (size_t i = 0; i < site.stacks.size(); ++i)
        for (const auto& [name, value] : site.stacks[i].env)
            single_line("stacks." + std::to_string(i) + ".env." + name, value);
    // The module sets these itself (or they are path lists / Lmod state a setenv would clobber).
    std::set<std::string> reported;
    for (size_t i = 0; i < site.stacks.size(); ++i) {
        const Stack& stack = site.stacks[i];
        auto refuse = [&](const std::string& path, const std::string& name) {
            if (!module_owns_variable(site, stack, name) || !reported.insert(path).second) return;
            diags.error(site.where(path), "'" + name + "' is set by the generated module itself (or is a path list or Lmod's state); it cannot come from the site's env",
                        "for PATH-like variables use the stack's layout ([python]) instead");
        };
        for (const auto& [name, value] : site.collectives.env) refuse("collectives.env." + name, name);
        for (const auto& [name, value] : stack.env) refuse("stacks." + std::to_string(i) + ".env." + name, name);
    }
    for (size_t i = 0; i < site.site.base_modules.size(); ++i)
        single_line("site.base_modules." + std::to_string(i), site.site.base_modules[i]);
    for (size_t i = 0; i < site.container.binds.size(); ++i) {
        const auto& bind = site.container.binds[i];
        const std::string p = "container.binds." + std::to_string(i);
        no_separator(p + ".host", bind.host, ":,", "the bind list");
        if (present(p + ".container")) no_separator(p + ".container", bind.container, ":,", "the bind list");
        if (!bind.host.empty() && bind.host[0] != '/')
            diags.error(site.where(p + ".host"), "bind host path '" + bind.host + "' must be absolute");
        if (present(p + ".container") && !bind.container.empty() && bind.container[0] != '/')
            diags.error(site.where(p + ".container"), "bind container path '" + bind.container + "' must be absolute");
    }
    no_separator("container.image_dir", site.container.image_dir, ",", "the bind list");
    single_line("container.view", site.container.view);
    for (size_t i = 0; i < site.stacks.size(); ++i) {
        const auto& py = site.stacks[i].python;
        const std::string p = "stacks." + std::to_string(i);
        for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
                 {"conda_root", py.conda_root}, {"conda_env", py.conda_env}, {"venv", py.venv},
                 {"interpreter", py.interpreter}})
            no_separator(site.regions.count(p + ".python." + key) ? p + ".python." + key : "python." + key,
                         value, ":", "PATH-like variables");
        for (size_t k = 0; k < site.stacks[i].base_modules.size(); ++k)
            single_line(p + ".base_modules." + std::to_string(k), site.stacks[i].base_modules[k]);
    }
}

}  // namespace

void check_site(const Site& site, const std::string& expected_name, Diagnostics& diags) {
    Checker{site, diags}.run(expected_name);
    check_runscript_values(site, diags);  // what would break a #SBATCH / #PBS line
}

}  // namespace sitegen
