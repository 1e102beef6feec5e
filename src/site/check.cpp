// Whole-site schema checks: required keys, names, paths and counts that must agree.
#include "site/check.h"

#include <algorithm>
#include <regex>
#include <set>

#include "node/topology.h"
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
    void check_visibility();
    void check_numa_binding();
    void check_literal_values();
    void check_scheduler();
    void check_batch_options();
    void check_network_plugin();
    void check_driver_gates();
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
    check_visibility();
    check_numa_binding();
    check_literal_values();
    check_scheduler();
    check_batch_options();
    check_network_plugin();
    check_driver_gates();
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

// A stack's min_driver is compared, number by number, with the version in the GPU driver's
// version file (plan/traits.h: driver_traits), so it must be such a version, on a GPU site.
// The bandwidth threshold needs the peak it is a fraction of.
void Checker::check_driver_gates() {
    static const std::regex kDriverVersion(R"(^[0-9]{1,9}(\.[0-9]{1,9}){0,5}$)");
    for (size_t i = 0; i < site.stacks.size(); ++i) {
        const std::string path = "stacks." + std::to_string(i) + ".min_driver", &v = site.stacks[i].min_driver;
        if (!present(path)) continue;
        if (!std::regex_match(v, kDriverVersion))
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
