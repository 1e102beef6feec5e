// Whole-site schema checks: required keys, names, paths and counts that must agree.
#include "site/check.h"

#include <algorithm>
#include <optional>
#include <set>
#include <type_traits>

#include "node/topology.h"
#include "plan/env_profile.h"
#include "plan/install.h"
#include "plan/module.h"
#include "plan/runscripts.h"
#include "plan/traits.h"
#include "text/quote.h"
#include "site/patterns.h"
#include "site/schema.h"
#include "site/suggest.h"

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

    // Values that land in one line of a batch directive or a ':'/','-separated list. `path` is
    // the key's path, or what makes it: made only for a finding (the per-stack checks would
    // otherwise make 8,000 paths at 2,000 stacks).
    template <typename Path>
    static std::string path_of(const Path& path) {
        if constexpr (std::is_invocable_v<const Path&>) return path();
        else return std::string(path);
    }
    static bool is_single_line(std::string_view value) {
        for (unsigned char c : value)
            if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
        return true;
    }
    template <typename Path>
    void single_line(const Path& path, const std::string& value) {
        if (is_single_line(value)) return;
        const std::string at = path_of(path);
        diags.error(site.where(at), "'" + at + "' must be a single line without control characters");
    }
    template <typename Path>
    void no_separator(const Path& path, const std::string& value, const std::string& separators,
                      const std::string& where_used) {
        if (is_single_line(value) && value.find_first_of(separators) == std::string::npos) return;
        const std::string at = path_of(path);
        single_line(at, value);
        for (char c : separators)
            if (value.find(c) != std::string::npos) {
                diags.error(site.where(at), "'" + at + "' contains '" + std::string(1, c) + "', which would split " + where_used);
                return;
            }
    }
    void check_text_placement();
    void check_runtime();
    void check_visibility();
    void check_numa_binding();
    void check_literal_values();
    void check_scheduler();
    void check_batch_options();
    void check_network_plugin();
    void check_job_environment();
    void check_driver_gates();
    std::string layout_path(size_t i) const;
    std::string python_path(size_t i, const std::string& key) const;
    void check_python(size_t i);

    void run(const std::string& expected_name);
    void check_stack(size_t i);
    void check_install_steps(size_t i);
};

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
    check_visibility();
    check_numa_binding();
    check_literal_values();
    check_scheduler();
    check_batch_options();
    check_network_plugin();
    check_job_environment();
    check_driver_gates();
    if (site.stacks.empty()) diags.error(site.where(""), "no [[stacks]] defined: a site publishes at least one stack");
    std::set<std::string> seen;
    std::map<std::string, size_t> default_of;
    for (size_t i = 0; i < site.stacks.size(); ++i) {
        check_stack(i);
        check_install_steps(i);
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
    if (present(p + ".name") && !is_module_word(s.name))
        diags.error(site.where(p + ".name"),
                    "stack name '" + s.name + "' is not a valid module name (letters, digits, '_', '.', '+', '-')");
    if (present(p + ".version") && !is_module_word(s.version))
        diags.error(site.where(p + ".version"),
                    "stack version '" + s.version + "' is not a valid module version");
    if (!is_version_suffix(s.versionsuffix))
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
        if (looks_like_image_file(s.image))
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
    if (!s.image_sha256.empty() && !is_sha256_hex(s.image_sha256))
        diags.error(site.where(p + ".image_sha256"),
                    "image_sha256 '" + s.image_sha256 + "' is not a SHA-256: 64 lowercase hexadecimal digits",
                    "print it with: sha256sum <image>");
    if (!s.image_sha256.empty() && s.image.empty())
        diags.error(site.where(p + ".image_sha256"), "'image_sha256' is set but the stack has no 'image'");
    check_python(i);
}

// Where a stack's python key was set: its own override, else the site's [python].
std::string Checker::python_path(size_t i, const std::string& key) const {
    const std::string own = "stacks." + std::to_string(i) + ".python." + key;
    return present(own) ? own : "python." + key;
}

// The keys each python layout reads, at their TOML locations: conda keys only where conda
// is, the venv of container-system-venv where the install puts it, the environment file
// and channels only where sitegen creates the conda environment.
void Checker::check_python(size_t i) {
    const auto& s = site.stacks[i];
    const Python& py = s.python;
    const std::string layout = to_string(py.layout);
    const bool has_conda = py.layout == PythonLayout::container_venv || py.layout == PythonLayout::conda_env ||
                           py.layout == PythonLayout::frameworks_module;
    for (const auto& [key, value] : {std::pair<const char*, const std::string&>{"conda_root", py.conda_root},
                                     {"conda_env", py.conda_env}, {"environment_file", py.environment_file}})
        if (!value.empty() && !has_conda)
            diags.error(site.where(python_path(i, key)),
                        "'" + std::string(key) + "' is set but stack '" + s.name + "' has the python layout '" + layout +
                            "', which uses no conda",
                        py.layout == PythonLayout::container_system_venv
                            ? "the venv is made by the image's own python (python.interpreter); remove the conda keys"
                            : "remove it, or use a conda layout (conda-env, container-venv, frameworks-module)");
    if (!py.channels.empty() && !has_conda)
        diags.error(site.where(python_path(i, "channels")),
                    "'channels' is set but stack '" + s.name + "' has the python layout '" + layout + "', which uses no conda");
    if (py.layout == PythonLayout::conda_env) {
        if (!py.environment_file.empty() && !py.conda_env.empty())
            diags.error(site.where(python_path(i, "environment_file")),
                        "stack '" + s.name + "' names both the site's conda environment (conda_env) and an environment "
                            "file to create one from",
                        "keep conda_env to use the site's environment, or environment_file to create it at install");
        if (!py.channels.empty() && !py.conda_env.empty())
            diags.error(site.where(python_path(i, "channels")),
                        "'channels' is set but stack '" + s.name + "' uses the site's conda environment (conda_env): "
                            "nothing is created");
        else if (!py.channels.empty() && !py.environment_file.empty())
            diags.error(site.where(python_path(i, "channels")),
                        "'channels' is set with an environment file: `conda env create --file` takes the channels "
                            "from the file",
                        "list them under `channels:` in " + py.environment_file);
    } else if (has_conda) {
        if (!py.environment_file.empty())
            diags.error(site.where(python_path(i, "environment_file")),
                        "'environment_file' is set but stack '" + s.name + "' has the python layout '" + layout +
                            "', which uses an existing conda environment",
                        "an environment is created from a file only with layout 'conda-env'");
        if (!py.channels.empty())
            diags.error(site.where(python_path(i, "channels")),
                        "'channels' is set but stack '" + s.name + "' has the python layout '" + layout +
                            "', which uses an existing conda environment",
                        "channels are used only when layout 'conda-env' creates the environment");
    }
    for (size_t k = 0; k < py.channels.size(); ++k) {
        const std::string at = python_path(i, "channels") + (present(python_path(i, "channels") + "." + std::to_string(k))
                                                                 ? "." + std::to_string(k) : "");
        const std::string& c = py.channels[k];
        if (c.empty() || c[0] == '-' || c.find_first_of(" \t\n\r") != std::string::npos)
            diags.error(site.where(at), "channel '" + c + "' is not a conda channel name or URL",
                        "e.g. \"conda-forge\" or \"https://conda.anaconda.org/pytorch\"");
    }
    if (py.layout != PythonLayout::container_system_venv) return;
    if (py.venv.empty()) {
        diags.error(site.where(layout_path(i)),
                    "python layout 'container-system-venv' creates a venv in the image at install, but 'venv' is "
                        "not set (in [python] or the stack's python)",
                    "e.g. venv = \"/user-software/venv/" + s.name + "\" (the install dir's user-software, mounted "
                        "at /user-software)");
    } else if (!py.venv.starts_with("/user-software/")) {
        diags.error(site.where(python_path(i, "venv")),
                    "venv '" + py.venv + "' is not under /user-software: the install creates it in the image, "
                        "where only <installdir>/user-software (mounted at /user-software) is kept",
                    "e.g. venv = \"/user-software/venv/" + s.name + "\"");
    }
    if (site.container.enabled && traits(site.container.runtime).host_filesystem)
        diags.error(site.where(layout_path(i)),
                    "python layout 'container-system-venv' keeps its venv in /user-software, but " +
                        to_string(site.container.runtime) + " binds nothing into its images",
                    "use layout 'container-system' (the image's python3)");
}

// [[stacks.install]]: each step names components of its stack, once; URLs are https; the
// build environment expands only ${NAME}; nothing a step sets may pass for another pip option.
void Checker::check_install_steps(size_t i) {
    const Stack& s = site.stacks[i];
    const std::string p = "stacks." + std::to_string(i) + ".install";
    if (!s.install.empty() && !installs_with_pip(s))
        diags.error(site.where(p), "stack '" + s.name + "' has [[stacks.install]] steps, but its python layout '" +
                                       to_string(s.python.layout) + "' does not install components with pip",
                    "install steps apply to the layouts 'userbase-venv' and 'conda-env' (without conda_env)");
    std::vector<std::string> components;
    for (const auto& [name, version] : s.components) components.push_back(name);
    std::map<std::string, size_t> step_of;
    for (size_t j = 0; j < s.install.size(); ++j) {
        const InstallStep& step = s.install[j];
        const std::string q = p + "." + std::to_string(j);
        for (size_t k = 0; k < step.packages.size(); ++k) {
            const std::string& name = step.packages[k];
            const std::string at = q + ".packages." + std::to_string(k);
            if (std::find(components.begin(), components.end(), name) == components.end())
                diags.error(site.where(at), "'" + name + "' is not a component of stack '" + s.name + "'",
                            did_you_mean(name, components));
            else if (auto [it, fresh] = step_of.emplace(name, j); !fresh)
                diags.error(site.where(at), "'" + name + "' is already installed by install step #" +
                                                std::to_string(it->second + 1) + " of stack '" + s.name + "'");
        }
        if (present(q + ".packages") && step.packages.empty())
            diags.error(site.where(q + ".packages"), "'packages' is empty: an install step installs at least one component");
        for (const char* key : {"index_url", "extra_index_url"}) {
            const std::string& url = std::string(key) == "index_url" ? step.index_url : step.extra_index_url;
            if (!url.empty() && !is_https_url(url))
                diags.error(site.where(q + "." + key), "'" + std::string(key) + "' must be an https URL without spaces, found '" + url + "'");
        }
        if (!step.source.empty()) {
            if (!is_pip_source_url(step.source))
                diags.error(site.where(q + ".source"),
                            "'source' must be an https:// or git+https:// URL without spaces, found '" + step.source + "'",
                            "e.g. git+https://github.com/thomas-bouvier/horovod.git@compile-cpp17");
            if (step.packages.size() != 1)
                diags.error(site.where(q + ".source"), "'source' replaces one component's name==version, but this step "
                                                       "installs " + std::to_string(step.packages.size()) + " packages");
        }
        for (size_t k = 0; k < step.pip_flags.size(); ++k) {
            const std::string& flag = step.pip_flags[k];
            const std::string at = q + ".pip_flags." + std::to_string(k);
            if (!is_option_word(flag))
                diags.error(site.where(at), "pip flag '" + flag + "' must be one option word starting with '-'");
            const std::string option = flag.substr(0, flag.find('='));
            for (const char* owned : {"--index-url", "-i", "--extra-index-url", "--user", "--prefix", "--target", "-t",
                                      "--root", "--no-cache-dir"})
                if (option == owned)
                    diags.error(site.where(at), "pip flag '" + flag + "' is set by sitegen itself",
                                "use index_url / extra_index_url for indexes; --user and the target follow the layout");
        }
        for (const auto& [name, value] : step.build_env) {
            const std::string at = q + ".build_env." + name;
            single_line(at, value);
            if (has_stray_dollar(value))
                diags.error(site.where(at), "'$' in '" + at + "' must start a ${NAME} reference (only those expand)",
                            "write ${NAME} with braces");
        }
        for (size_t k = 0; k < step.build_modules.size(); ++k)
            single_line(q + ".build_modules." + std::to_string(k), step.build_modules[k]);
        if (present(q + ".check") && step.check.empty())
            diags.error(site.where(q + ".check"), "'check' is empty: give the command's words, e.g. [\"horovodrun\", \"--check-build\"]");
        if (!step.check_expect.empty() && step.check.empty())
            diags.error(site.where(q + ".check_expect"), "'check_expect' is set but the step has no 'check' command");
        for (size_t k = 0; k < step.check.size(); ++k) single_line(q + ".check." + std::to_string(k), step.check[k]);
        for (size_t k = 0; k < step.check_expect.size(); ++k)
            single_line(q + ".check_expect." + std::to_string(k), step.check_expect[k]);
    }
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
}

// The visibility policy against the devices, the ranks and what the vendor can share: the
// wrapper gives local rank r device r (narrow, all) or r / ranks_per_device (shared).
void Checker::check_visibility() {
    const auto& h = site.hardware;
    const auto& c = site.collectives;
    const VisibilityTraits& policy = traits(c.visibility);
    const std::string name = "'" + to_string(c.visibility) + "'";
    const int devices = h.devices_per_node;
    const int k = c.ranks_per_device;
    const bool explicit_policy = present("collectives.visibility");
    if (present("collectives.ranks_per_device") && !policy.shares && k != 1)
        diags.error(site.where("collectives.ranks_per_device"),
                    "ranks_per_device = " + std::to_string(k) + " applies only to visibility = \"shared\" (visibility is " +
                        name + ")",
                    "set visibility = \"shared\" in [collectives], or remove ranks_per_device");
    if (explicit_policy && policy.narrows) {
        if (devices == 0) {
            diags.error(site.where("collectives.visibility"),
                        "visibility " + name + " gives each rank a device, but gpu_vendor '" + to_string(h.gpu_vendor) +
                            "' has no devices per node",
                        "use visibility = \"all\" (or leave it out) on CPU-only nodes");
            return;
        }
        if (c.visibility_var.empty())
            diags.error(site.where("collectives.visibility"),
                        "visibility " + name + " narrows each rank to its device through collectives.visibility_var, "
                            "which is not set",
                        "set visibility_var (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES or ZE_AFFINITY_MASK), or use "
                        "visibility = \"all\"");
    }
    if (devices == 0) return;
    const int ranks = site.batch.tasks_per_node;
    if (!policy.shares) {
        // More ranks than devices: ranks `devices` and above would point at devices that do not exist.
        if (ranks > devices) {
            const std::string how = c.visibility == VisibilityPolicy::all
                                        ? "with visibility = \"all\" each rank picks device LOCAL_RANK"
                                        : "the rank wrapper narrows each rank to device LOCAL_RANK";
            diags.error(site.where("batch.tasks_per_node"),
                        std::to_string(ranks) + " ranks per node but " + std::to_string(devices) + " devices: " + how +
                            ", so ranks " + std::to_string(devices) + " and above would have none",
                        "to run several ranks on each device, set visibility = \"shared\" and ranks_per_device = " +
                            std::to_string((ranks + devices - 1) / devices) +
                            " in [collectives]; else tasks_per_node <= devices_per_node");
        }
        return;
    }
    const SharingTraits& sharing = sharing_traits(h.gpu_vendor);
    const std::string at = present("collectives.ranks_per_device") ? "collectives.ranks_per_device" : "collectives.visibility";
    if (!sharing.mechanism) {
        diags.error(site.where("collectives.visibility"),
                    "gpu_vendor '" + to_string(h.gpu_vendor) + "' has no way for ranks to share a device");
        return;
    }
    if (const char* why = traits(c.library).one_rank_per_device; why && k > 1) {
        diags.error(site.where(at),
                    "visibility = \"shared\" puts " + std::to_string(k) + " ranks on each device, but " + why,
                    "run one rank per device (visibility = \"narrow\", tasks_per_node <= devices_per_node), or use "
                    "library = \"gloo\" if the ranks' collectives may run on the CPUs");
        return;
    }
    bool allowed = k <= sharing.max_ranks;
    if (!sharing.ranks_per_device.empty())
        allowed = std::find(sharing.ranks_per_device.begin(), sharing.ranks_per_device.end(), k) !=
                  sharing.ranks_per_device.end();
    if (!allowed) {
        std::string counts;
        for (int n : sharing.ranks_per_device) counts += (counts.empty() ? "" : ", ") + std::to_string(n);
        diags.error(site.where(at),
                    "ranks_per_device = " + std::to_string(k) + ": " + to_string(h.gpu_vendor) + " devices are shared through " +
                        sharing.mechanism + ", which allows " +
                        (counts.empty() ? "at most " + std::to_string(sharing.max_ranks) : counts) + " ranks per device");
    }
    if (ranks > 0 && ranks % devices != 0)
        diags.error(site.where("batch.tasks_per_node"),
                    std::to_string(ranks) + " ranks per node do not divide evenly among " + std::to_string(devices) +
                        " devices shared by ranks_per_device = " + std::to_string(k) + " ranks each",
                    "tasks_per_node = " + std::to_string(devices * k) + " (devices_per_node x ranks_per_device)");
    else if (ranks > 0 && ranks != devices * k)
        diags.error(site.where("batch.tasks_per_node"),
                    std::to_string(ranks) + " ranks per node but " + std::to_string(devices) + " devices x ranks_per_device " +
                        std::to_string(k) + " = " + std::to_string(devices * k) + ": the wrapper gives local rank r device r / " +
                        std::to_string(k),
                    "tasks_per_node = " + std::to_string(devices * k) + ", or leave it out");
    // Each device's cores are split among its ranks: every rank must still get its cores.
    if (site.binding.style != BindingStyle::none && static_cast<int>(h.device_cores.size()) == devices && allowed) {
        std::string error;
        if (!rank_cores(h, site.binding, k, error))
            diags.error(site.where(present("binding.cores_per_rank") ? "binding.cores_per_rank" : "binding.style"),
                        "with " + std::to_string(k) + " ranks per device, each device's cores are split among its ranks: " + error);
    }
}

// binding.style = "numa": the NUMA node of every device, and a place to bind from.
void Checker::check_numa_binding() {
    const auto& h = site.hardware;
    if (present("hardware.device_numa") && static_cast<int>(h.device_numa.size()) != h.devices_per_node)
        diags.error(site.where("hardware.device_numa"),
                    "'device_numa' lists " + std::to_string(h.device_numa.size()) + " devices but devices_per_node is " +
                        std::to_string(h.devices_per_node));
    if (site.binding.style != BindingStyle::numa || h.devices_per_node == 0) return;
    if (!present("hardware.device_numa"))
        diags.error(site.where("binding.style"),
                    "binding style 'numa' binds each rank to its device's NUMA node, but hardware.device_numa is not set",
                    "add device_numa = [...] to [hardware] (sitegen topology import prints it)");
    // Under mpiexec the wrapper runs numactl, inside the image on container sites.
    if (site.site.scheduler == Scheduler::pbs && site.container.enabled)
        diags.error(site.where("binding.style"),
                    "binding style 'numa' under mpiexec runs each rank under numactl in the rank wrapper, which runs "
                    "inside the container image",
                    "use style = \"list\" (mpiexec --cpu-bind list:)");
}

// What the scheduler and the rank starter cannot carry out, at the key that asks for it.
void Checker::check_scheduler() {
    const Scheduler scheduler = site.site.scheduler;
    const SchedulerTraits& st = traits(scheduler);
    // A [batch] value only another scheduler's job script writes would be dropped silently.
    std::set<std::string> written;
    for (const auto& f : st.directives) written.insert(f.key);
    for (const auto& u : st.unsupported) written.insert(u.key);  // refused by check_batch_options
    for (const char* key : st.implied) written.insert(key);
    std::set<std::string> warned;
    for (const auto& [other, other_name] : enum_names<Scheduler>()) {
        (void)other_name;
        for (const auto& f : traits(other).directives) {
            const std::string path = std::string("batch.") + f.key;
            if (written.count(f.key) || !present(path) || !directive_text(site.batch, f) || !warned.insert(path).second)
                continue;
            diags.warning(site.where(path), "'" + path + "' is not written into " + to_string(scheduler) +
                                                " job scripts (only " + to_string(other) + " has a directive for it)");
        }
    }
    // flux-batch(1) --output takes mustache templates ({{id}}, {{name}}); '%' is no pattern there.
    if (scheduler == Scheduler::flux && site.batch.output.find('%') != std::string::npos)
        diags.warning(site.where("batch.output"),
                      "'%' patterns in 'batch.output' are Slurm's: Flux writes them literally",
                      "use Flux's mustache tags, e.g. \"flux-{{id}}.out\"");
    const RankStarterTraits& starter = traits(site.batch.rank_starter);
    if (starter.per_rank_binding) return;
    if (site.binding.style != BindingStyle::none)
        diags.error(site.where("binding.style"),
                    "binding style '" + to_string(site.binding.style) + "' binds each task the launcher starts, but with "
                    "rank_starter = '" + to_string(site.batch.rank_starter) + "' it starts one task per node: per-rank CPU "
                    "binding cannot apply (the node's ranks share the task's CPUs)",
                    "set style = \"none\", or rank_starter = \"launcher\"");
    if (!site.collectives.visibility_var.empty())
        diags.error(site.where("collectives.visibility_var"),
                    "with rank_starter = '" + to_string(site.batch.rank_starter) + "' the rank wrapper runs once per node, "
                    "so it cannot narrow '" + site.collectives.visibility_var + "' to one device per rank: every rank "
                    "sees the node's devices and picks its own by LOCAL_RANK",
                    "remove visibility_var, or set rank_starter = \"launcher\"");
}

// Batch options a scheduler cannot express, and GPU requests that contradict each other or
// the rank wrapper's one device per rank.
void Checker::check_batch_options() {
    const Batch& b = site.batch;
    const SchedulerTraits& sched = traits(site.site.scheduler);
    const std::string scheduler = to_string(site.site.scheduler);
    for (const auto& u : sched.unsupported)
        if (present(std::string("batch.") + u.key))
            diags.error(site.where(std::string("batch.") + u.key),
                        "'batch." + std::string(u.key) + "' cannot be expressed for " + scheduler + ": " + u.why);
    const int devices = site.hardware.devices_per_node;
    const int ranks = b.tasks_per_node > 0 ? b.tasks_per_node : (devices > 0 ? devices : 1);
    const bool narrows = !site.collectives.visibility_var.empty() && devices > 0;
    if (b.gpus_per_task > 0) {
        if (devices == 0)
            diags.error(site.where("batch.gpus_per_task"), "'batch.gpus_per_task' requests GPUs but devices_per_node is 0");
        else if (b.gpus_per_task * ranks > devices)
            diags.error(site.where("batch.gpus_per_task"),
                        std::to_string(b.gpus_per_task) + " GPUs per task x " + std::to_string(ranks) + " ranks per node = " +
                            std::to_string(b.gpus_per_task * ranks) + " GPUs, but a node has " + std::to_string(devices));
        if (present("batch.gpus_per_node"))
            diags.error(site.where("batch.gpus_per_node"),
                        "set either gpus_per_node or gpus_per_task: with gpus_per_task the job requests " +
                            std::to_string(b.gpus_per_task) + " x " + std::to_string(ranks) + " GPUs per node itself");
        if (narrows && b.gpus_per_task > 1)
            diags.error(site.where("batch.gpus_per_task"),
                        std::to_string(b.gpus_per_task) + " GPUs per task, but the rank wrapper narrows each rank to one device (" +
                            site.collectives.visibility_var + ")",
                        "set gpus_per_task = 1");
    }
    if (!b.gpu_bind.empty()) {
        if (devices == 0)
            diags.error(site.where("batch.gpu_bind"), "'batch.gpu_bind' binds GPUs but devices_per_node is 0");
        // --gpu-bind=closest may leave a rank every GPU of its NUMA domain; the wrapper would
        // then narrow that list by LOCAL_RANK, not by locality. One GPU per task makes Slurm
        // bind exactly one, which the wrapper keeps.
        else if (narrows && b.gpu_bind != "none" && b.gpus_per_task != 1)
            diags.error(site.where("batch.gpu_bind"),
                        "gpu_bind '" + b.gpu_bind + "' may leave a rank several GPUs, which the rank wrapper narrows again to one by "
                            "LOCAL_RANK (" + site.collectives.visibility_var + "), not by locality",
                        "set gpus_per_task = 1: Slurm then binds one GPU per rank and the wrapper keeps it");
    }
    switch (site.site.scheduler) {
        case Scheduler::slurm:
            if (const std::string dir = batch_output_directory(site); dir.find('%') != std::string::npos)
                diags.error(site.where("batch.output"),
                            "the directory of output '" + b.output + "' holds a '%' pattern: it must exist before the job "
                            "starts (Slurm opens the file first), and runscripts/submit cannot create it before the pattern "
                            "is known",
                            "keep patterns in the file name, e.g. logs/%x_%j.out");
            break;
        case Scheduler::flux:
            if (const std::string dir = batch_output_directory(site); dir.find("{{") != std::string::npos)
                diags.error(site.where("batch.output"),
                            "the directory of output '" + b.output + "' holds a '{{...}}' template: it must exist before the "
                            "job writes into it, and runscripts/submit cannot create it before the template is known",
                            "keep templates in the file name, e.g. logs/flux-{{id}}.out");
            break;
        case Scheduler::pbs:
            if (b.exclusive && present("batch.place"))
                diags.error(site.where("batch.exclusive"),
                            "PBS takes one place= value and 'batch.place' is set: write excl into it instead",
                            "place = \"" + b.place + ":excl\"");
            if (!b.reservation.empty() && !b.partition.empty())
                diags.error(site.where("batch.reservation"),
                            "PBS submits to a reservation as its queue (-q), and 'batch.partition' already names the queue '" +
                                b.partition + "'");
            break;
    }
}

// The network plugin's library directory reaches the ranks (LD_LIBRARY_PATH, the container's
// binds), so a named plugin needs one; a directory in the image needs an image.
void Checker::check_network_plugin() {
    const Collectives& c = site.collectives;
    if (!c.network_plugin.empty() && c.network_plugin_path.empty())
        diags.error(site.where("collectives.network_plugin"),
                    "network plugin '" + c.network_plugin + "' has no library directory: nothing would load it",
                    "set network_plugin_path to the directory holding its library (librccl-net*.so / libnccl-net*.so)");
    if (!c.network_plugin_path.empty() && c.network_plugin.empty())
        diags.error(site.where("collectives.network_plugin_path"), "'network_plugin_path' is set but no network_plugin is named");
    absolute("collectives.network_plugin_path", c.network_plugin_path);
    no_separator("collectives.network_plugin_path", c.network_plugin_path, ":,",
                 site.container.enabled ? "LD_LIBRARY_PATH or the bind list" : "LD_LIBRARY_PATH");
    if (c.network_plugin_in_image && !site.container.enabled)
        diags.error(site.where("collectives.network_plugin_in_image"),
                    "'network_plugin_in_image' is true but the site has no [container] table");
}

// [batch] env and prepend_path: one line each in the job script, written as one bash word
// (so literal, like the module's values); a prepend is one absolute directory.
void Checker::check_job_environment() {
    for (const auto& [name, value] : site.batch.env) {
        const std::string path = "batch.env." + name;
        single_line(path, value);
        if (const auto m = first_shell_variable(value))
            diags.warning(site.where(path),
                          "'" + std::string(*m) + "' in '" + path + "' is written literally: the job script does not "
                          "expand variables in values", "write the value in full");
    }
    // In a container the job's host environment is not what the ranks see (podman-hpc passes
    // variables by name, host directories are not mounted): refused rather than silently lost.
    if (site.container.enabled)
        for (const char* key : {"batch.env", "batch.prepend_path"})
            if (present(key))
                diags.error(site.where(key), std::string("'") + key + "' is for bare-metal sites: in a container the "
                            "ranks do not see the job script's environment", "use [collectives.env] or the stack's env");
    for (const auto& [name, dir] : site.batch.prepend_path) {
        const std::string path = "batch.prepend_path." + name;
        if (dir.empty()) diags.error(site.where(path), "'" + path + "' is empty: name one absolute directory");
        absolute(path, dir);
        no_separator(path, dir, ":", name);
    }
}

// A stack's min_driver is compared, number by number, with the version in the GPU driver's
// version file (plan/traits.h: driver_traits), so it must be such a version, on a GPU site.
// The bandwidth threshold needs the peak it is a fraction of.
void Checker::check_driver_gates() {
    for (size_t i = 0; i < site.stacks.size(); ++i) {
        const std::string path = "stacks." + std::to_string(i) + ".min_driver", &v = site.stacks[i].min_driver;
        if (!present(path)) continue;
        if (!is_driver_version(v))
            diags.error(site.where(path), "min_driver '" + v + "' is not a driver version: numbers separated by '.'",
                        "write it as the node's driver version file does, e.g. \"535.104.05\" or \"6.7.0\"");
        else if (site.hardware.gpu_vendor == GpuVendor::none)
            diags.error(site.where(path), "min_driver is set but hardware.gpu_vendor is 'none': there is no GPU driver to check");
    }
    if (present("hardware.driver_gate") && site.hardware.gpu_vendor == GpuVendor::none)
        diags.warning(site.where("hardware.driver_gate"), "'driver_gate' has no effect: hardware.gpu_vendor is 'none'");
    if (site.collectives.min_busbw_percent > 0 && (site.hardware.network_links == 0 || site.hardware.link_gbps == 0))
        diags.error(site.where("collectives.min_busbw_percent"),
                    "min_busbw_percent needs the per-node link bandwidth it is a fraction of",
                    "set hardware.network_links and hardware.link_gbps");
}

// Values are written as they are: a module's setenv and the wrapper's exports never expand
// $VAR, so "/scratch/$USER/hf" would reach the program literally.
void Checker::check_literal_values() {
    auto warn = [&](const std::string& path, const std::string& value) {
        if (const auto m = first_shell_variable(value))
            diags.warning(site.where(path),
                          "'" + std::string(*m) + "' in '" + path + "' is written literally: modules and the rank wrapper do "
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
            single_line([&, &name = name] { return "stacks." + std::to_string(i) + ".env." + name; }, value);
    // The module sets these itself (or they are path lists / Lmod state a setenv would clobber).
    std::set<std::string> reported;
    for (size_t i = 0; i < site.stacks.size(); ++i) {
        const Stack& stack = site.stacks[i];
        if (site.collectives.env.empty() && stack.env.empty()) continue;
        const std::vector<std::string> owned = module_owned_variables(site, stack);  // once per stack, not per name
        auto refuse = [&](const std::string& path, const std::string& name) {
            if (!reported.insert(path).second) return;
            diags.error(site.where(path), "'" + name + "' is set by the generated module itself (or is a path list or Lmod's state); it cannot come from the site's env",
                        "for PATH-like variables use the stack's layout ([python]) instead");
        };
        for (const auto& [name, value] : site.collectives.env)
            if (module_owns_variable(owned, name)) refuse("collectives.env." + name, name);
        for (const auto& [name, value] : stack.env)
            if (module_owns_variable(owned, name)) refuse("stacks." + std::to_string(i) + ".env." + name, name);
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
        for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"conda_root", &py.conda_root},
                                         {"conda_env", &py.conda_env}, {"venv", &py.venv},
                                         {"interpreter", &py.interpreter}})
            no_separator([&, key = key] { return present(p + ".python." + key) ? p + ".python." + key : std::string("python.") + key; },
                         *value, ":", "PATH-like variables");
        for (size_t k = 0; k < site.stacks[i].base_modules.size(); ++k)
            single_line([&] { return p + ".base_modules." + std::to_string(k); }, site.stacks[i].base_modules[k]);
    }
}

// ---- [[profiles]] (docs/profiles.md) ----------------------------------------------------

bool profile_extends(const Site& site, size_t from, size_t base, std::set<size_t>& seen) {
    if (!seen.insert(from).second) return false;
    for (const auto& name : site.profiles[from].extends)
        for (size_t j = 0; j < site.profiles.size(); ++j)
            if (site.profiles[j].name == name && (j == base || profile_extends(site, j, base, seen))) return true;
    return false;
}

// The profile index of a settings path ("profiles.3.vars.1"), or npos.
size_t profile_index(const std::string& path) {
    if (path.rfind("profiles.", 0) != 0) return std::string::npos;
    return std::stoul(path.substr(9));
}

std::string located(const Site& site, const std::string& path) {
    const SourceRegion at = site.where(path);
    return at.file + ":" + std::to_string(at.line);
}

void check_profiles(const Site& site, Diagnostics& diags) {
    std::vector<std::string> names;
    for (size_t i = 0; i < site.profiles.size(); ++i) {
        const Profile& profile = site.profiles[i];
        const std::string p = "profiles." + std::to_string(i);
        if (std::find(names.begin(), names.end(), profile.name) != names.end())
            diags.error(site.where(p + ".name"), "profile '" + profile.name + "' is defined twice",
                        "give one of them another name, and `extends` the other to build on it");
        names.push_back(profile.name);
    }
    auto known = [&](const std::string& path, const std::string& name) {
        if (std::find(names.begin(), names.end(), name) == names.end())
            diags.error(site.where(path), "no profile named '" + name + "'", did_you_mean(name, names));
    };
    for (size_t i = 0; i < site.collectives.profiles.size(); ++i)
        known("collectives.profiles." + std::to_string(i), site.collectives.profiles[i]);
    for (size_t i = 0; i < site.profiles.size(); ++i) {
        const Profile& profile = site.profiles[i];
        const std::string p = "profiles." + std::to_string(i);
        for (size_t j = 0; j < profile.extends.size(); ++j) known(p + ".extends." + std::to_string(j), profile.extends[j]);
        std::set<size_t> seen;
        if (profile_extends(site, i, i, seen))
            diags.error(site.where(p + ".extends"), "profile '" + profile.name + "' extends itself (an 'extends' cycle)");
        for (size_t v = 0; v < profile.vars.size(); ++v) {
            const ProfileVar& var = profile.vars[v];
            const std::string vp = p + ".vars." + std::to_string(v);
            if (!is_valid_var_name(var.name))
                diags.error(site.where(vp + ".name"),
                            "'" + var.name + "' is not a valid environment variable name (^[A-Za-z_][A-Za-z0-9_]*$)");
            for (const auto& [key, text] : {std::pair<std::string, std::string>{"value", var.value}, {"reason", var.reason}})
                for (unsigned char c : text)
                    if ((c < 0x20 && c != '\t') || c == 0x7f) {
                        diags.error(site.where(vp + "." + key), "'" + vp + "." + key + "' must be a single line without control characters");
                        break;
                    }
            if (const auto m = first_shell_variable(var.value))
                diags.warning(site.where(vp + ".value"),
                              "'" + std::string(*m) + "' in '" + vp + ".value' is written literally: modules and the rank "
                              "wrapper do not expand variables in values", "write the value in full");
            if (!var.when.plugin_version.empty() && !valid_version_spec(var.when.plugin_version))
                diags.error(site.where(vp + ".when.plugin_version"),
                            "'" + var.when.plugin_version + "' is not a version condition such as \">=1.4\", \"<1.4\" or \"=1.4.0\"");
        }
    }
    // Per stack: what applies, conflicting values for the same runs, module-owned names, shadows.
    std::set<std::string> reported;
    for (size_t k = 0; k < site.stacks.size(); ++k) {
        const Stack& stack = site.stacks[k];
        const std::vector<EnvSetting> applied = applied_settings(site, stack);
        std::optional<std::vector<std::string>> owned;  // the module's variables, once per stack when a profile sets any
        auto owns = [&](const std::string& name) {
            if (!owned) owned = module_owned_variables(site, stack);
            return module_owns_variable(*owned, name);
        };
        for (size_t b = 0; b < applied.size(); ++b) {
            const EnvSetting& later = applied[b];
            if (later.path.rfind("profiles.", 0) == 0 && owns(later.name) &&
                reported.insert("owned " + later.path).second)
                diags.error(site.where(later.path + ".name"),
                            "'" + later.name + "' is set by the generated module itself (or is a path list or Lmod's state); "
                            "it cannot come from a profile");
            for (size_t a = 0; a < b; ++a) {
                const EnvSetting& earlier = applied[a];
                const bool overlap = earlier.nodes == NodeScope::any || later.nodes == NodeScope::any ||
                                     earlier.nodes == later.nodes;
                if (earlier.name != later.name || earlier.value == later.value || !overlap) continue;
                if (!reported.insert(earlier.path + " " + later.path).second) continue;
                const std::string message = "'" + later.name + "' is '" + later.value + "' here (" + later.origin +
                                            ") but '" + earlier.value + "' in " + earlier.origin + " at " +
                                            located(site, earlier.path) + ", for the same runs of '" +
                                            stack.module_full_name() + "'";
                const size_t from = profile_index(later.path), base = profile_index(earlier.path);
                std::set<size_t> seen;
                if (from != std::string::npos && base != std::string::npos && from != base &&
                    profile_extends(site, from, base, seen))
                    diags.warning(site.where(later.path + ".value"), message + "; this profile extends that one, so its value wins");
                else
                    diags.error(site.where(later.path + ".value"), message,
                                "give the two settings disjoint conditions ('when'), or let one profile extend the other to override it");
            }
        }
        for (const auto& [name, value] : stack.env)
            for (const EnvSetting& e : applied)
                if (e.name == name && e.path.rfind("profiles.", 0) == 0 &&
                    reported.insert("shadow " + std::to_string(k) + " " + e.path).second)
                    diags.warning(site.where("stacks." + std::to_string(k) + ".env." + name),
                                  "'" + name + "' in the stack's env shadows " + e.origin + " at " + located(site, e.path) +
                                  ": the module and every rank of '" + stack.module_full_name() + "' get '" + value + "'",
                                  "remove it from the stack's env, or give the profile's setting a 'when' that excludes this stack");
    }
}

// The user-install flow, the NCCL debug switch and per-rank MIOpen caches: each needs what
// makes it meaningful (a variable to name the prefix, NCCL/RCCL, AMD GPUs).
void check_user_install_and_debug(const Site& site, Diagnostics& diags) {
    const SiteInfo& info = site.site;
    if (info.user_install) {
        if (info.user_prefix_var.empty())
            diags.error(site.where("site.user_install"), "user_install = true needs user_prefix_var",
                        "name the variable that holds a user's install prefix, e.g. user_prefix_var = \"EBU_USER_PREFIX\"");
        if (info.user_install_modules.empty())
            diags.error(site.where("site.user_install"), "user_install = true needs user_install_modules",
                        "list the modules loaded before `eb`, e.g. [\"LUMI/24.03\", \"partition/container\", \"EasyBuild-user\"]");
    }
    if (!info.user_prefix_var.empty() && !is_valid_var_name(info.user_prefix_var))
        diags.error(site.where("site.user_prefix_var"), "'" + info.user_prefix_var + "' is not a valid environment variable name");
    for (size_t i = 0; i < info.user_install_modules.size(); ++i) {
        const std::string& m = info.user_install_modules[i];
        if (m.empty() || m.find_first_of("\n\r") != std::string::npos)
            diags.error(site.where("site.user_install_modules." + std::to_string(i)), "a module name must be one non-empty line");
    }
    if (!info.user_install && (site.regions.count("site.user_prefix_var") || site.regions.count("site.user_install_modules")))
        diags.warning(site.where(site.regions.count("site.user_prefix_var") ? "site.user_prefix_var" : "site.user_install_modules"),
                      "user_prefix_var and user_install_modules are used only with user_install = true",
                      "set user_install = true, or remove them");
    const Collectives& c = site.collectives;
    if (c.debug_switch && c.library != CollectiveLib::nccl && c.library != CollectiveLib::rccl)
        diags.error(site.where("collectives.debug_switch"),
                    "debug_switch sets NCCL_DEBUG, which only NCCL and RCCL read, but library is '" + to_string(c.library) + "'");
    if (!c.debug_subsys.empty() && !c.debug_switch)
        diags.error(site.where("collectives.debug_subsys"), "debug_subsys is used only with debug_switch = true");
    if (!c.debug_subsys.empty() && c.debug_subsys.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_,^") != std::string::npos)
        diags.error(site.where("collectives.debug_subsys"),
                    "debug_subsys '" + c.debug_subsys + "' is not a list of NCCL subsystems such as INIT,COLL");
    if (site.batch.miopen_cache_per_rank && site.hardware.gpu_vendor != GpuVendor::amd)
        diags.error(site.where("batch.miopen_cache_per_rank"), "miopen_cache_per_rank is for AMD GPUs (MIOpen), but gpu_vendor is '" +
                                                                   to_string(site.hardware.gpu_vendor) + "'");
}

}  // namespace

void check_site(const Site& site, const std::string& expected_name, Diagnostics& diags) {
    Checker{site, diags}.run(expected_name);
    check_user_install_and_debug(site, diags);
    check_runscript_values(site, diags);  // what would break a #SBATCH / #PBS line
    check_profiles(site, diags);
}

}  // namespace sitegen
