// The site model: plain structs filled by load, read by check and the emitters. No I/O here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "site/regions.h"
#include "site/source_region.h"

namespace sitegen {

enum class Scheduler { slurm, pbs, flux };
enum class Launcher { srun, mpiexec, flux };
enum class GpuVendor { none, amd, nvidia, intel };
enum class CollectiveLib { nccl, rccl, oneccl, gloo };
enum class ContainerRuntime { singularity, apptainer, charliecloud, podman_hpc, pyxis, uenv };
enum class PythonLayout {
    container_venv, conda_env, userbase_venv, frameworks_module, system, container_system,
    container_system_venv,  // a venv over the image's own python (no conda), created at install
    module_venv,            // a venv over the site's python module, created at install
};
enum class BindingStyle { none, mask, list, numa };
// Which devices a rank sees: one (narrow), all of its node's (all), or one shared with
// ranks_per_device - 1 other ranks (shared: Intel PVC CCS, NVIDIA MPS).
enum class VisibilityPolicy { narrow, all, shared };
// Who starts the ranks on a node: the scheduler's launcher (one task per rank), or torchrun
// (the launcher starts one task per node, which runs torchrun with the node's ranks).
enum class RankStarter { launcher, torchrun };
// Which program reads the modulefiles: Lmod (Lua modulefiles) or Environment Modules (Tcl).
enum class ModuleSystem { lmod, environment_modules };
// What a module does on a node whose GPU driver is older than its stack's min_driver.
enum class DriverGate { refuse, warn };

// One name table per enumeration, in declaration order (as Lua's ltm.h "ORDER TM"; model.cpp
// static_asserts it). The loader, `sitegen schema`, the rules' view and to_string all read
// these, so a value added to an enum and its table is known everywhere at once.
template <typename E>
struct EnumName {
    E value;
    const char* name;
};
template <typename E>
std::span<const EnumName<E>> enum_names();
template <> std::span<const EnumName<Scheduler>> enum_names();
template <> std::span<const EnumName<Launcher>> enum_names();
template <> std::span<const EnumName<GpuVendor>> enum_names();
template <> std::span<const EnumName<CollectiveLib>> enum_names();
template <> std::span<const EnumName<ContainerRuntime>> enum_names();
template <> std::span<const EnumName<PythonLayout>> enum_names();
template <> std::span<const EnumName<BindingStyle>> enum_names();
template <> std::span<const EnumName<VisibilityPolicy>> enum_names();
template <> std::span<const EnumName<RankStarter>> enum_names();
template <> std::span<const EnumName<ModuleSystem>> enum_names();
template <> std::span<const EnumName<DriverGate>> enum_names();

std::string to_string(Scheduler);
std::string to_string(Launcher);
std::string to_string(GpuVendor);
std::string to_string(CollectiveLib);
std::string to_string(ContainerRuntime);
std::string to_string(PythonLayout);
std::string to_string(BindingStyle);
std::string to_string(VisibilityPolicy);
std::string to_string(RankStarter);
std::string to_string(ModuleSystem);
std::string to_string(DriverGate);

// Ordered name=value pairs (TOML tables keep source order; we sort where output needs it).
using EnvList = std::vector<std::pair<std::string, std::string>>;

struct SiteInfo {
    std::string name;           // must equal the sites/<name>/ directory
    std::string description;
    std::string url;
    Scheduler scheduler = Scheduler::slurm;
    Launcher launcher = Launcher::srun;
    std::string install_prefix;  // absolute; --prefix overrides it
    ModuleSystem module_system = ModuleSystem::lmod;
    std::vector<std::string> module_use;    // `module use` paths users need first (Aurora)
    std::vector<std::string> base_modules;  // modules users load first; stacks depend on them
    // Installed per user or project with EasyBuild (LUMI's EasyBuild-user into $EBU_USER_PREFIX),
    // so each copy's user-software venv is writable by its owner; false: one central copy.
    bool user_install = false;
    std::string user_prefix_var;                    // the variable naming the user's prefix
    std::vector<std::string> user_install_modules;  // loaded before `eb` for a user install
    bool depend_on_base_modules = true;             // false: base_modules are loaded by the job only
};

struct Hardware {
    GpuVendor gpu_vendor = GpuVendor::none;
    std::string gpu_model;
    int devices_per_node = 0;   // GCDs/tiles as the scheduler counts them (0 for CPU-only)
    int cores_per_node = 1;
    int threads_per_core = 1;
    // device_cores[i]: the cores nearest device i, as a sorted list of core ids.
    std::vector<std::vector<int>> device_cores;
    std::vector<int> reserved_cores;  // never bound to a rank (OS / low-noise cores)
    std::vector<std::string> nics;
    std::string interconnect;
    std::vector<int> device_numa;  // device_numa[i]: the NUMA node of device i (binding style numa)
    DriverGate driver_gate = DriverGate::refuse;  // a stack's min_driver not met: refuse or warn
    int network_links = 0;  // network links (NICs) per node used by collectives; 0 = unknown
    int link_gbps = 0;      // line rate of each link in Gbit/s; 0 = unknown
};

// How ranks are pinned: cores_per_rank cores of each device's domain, skipping reserved
// ones, starting core_offset cores into the domain; 0 cores_per_rank = all that remain.
struct Binding {
    BindingStyle style = BindingStyle::none;
    int cores_per_rank = 0;
    int core_offset = 0;
    bool verbose = false;
    // Extra affinity variables: name -> "last" (last core of each rank) or "next" (first
    // core after each rank's set), e.g. HOROVOD_THREAD_AFFINITY, CCL_WORKER_AFFINITY.
    std::vector<std::pair<std::string, std::string>> affinity_env;
};

struct Batch {
    int nodes = 1;
    int tasks_per_node = 0;  // 0 = one per device (or 1 on CPU-only sites)
    int gpus_per_node = 0;   // 0 = devices_per_node
    int cpus_per_task = 0;   // 0 = derived from binding
    std::string partition;   // Slurm partition / PBS queue
    std::string account;
    std::string time = "00:10:00";
    std::string mem;
    std::string output;
    std::string place;        // PBS place=
    std::string filesystems;  // PBS filesystems=
    RankStarter rank_starter = RankStarter::launcher;  // torchrun: one launcher task per node
    std::string qos;          // Slurm --qos
    std::string constraint;   // Slurm --constraint (node features)
    bool exclusive = false;   // nodes not shared with other jobs
    std::string reservation;  // Slurm --reservation / PBS reservation queue
    int gpus_per_task = 0;    // Slurm --gpus-per-task (replaces --gpus-per-node); 0 = unset
    std::string gpu_bind;     // Slurm --gpu-bind, e.g. "closest"
    EnvList env;              // exported by the job script before the launcher (Aurora: IPEX_FP32_MATH_MODE)
    EnvList prepend_path;     // NAME = absolute directory, put first on NAME by the job script
    bool core_dumps = true;   // false: the job script runs `ulimit -c 0` (Aurora's job)
    bool miopen_cache_per_rank = false;  // AMD: a fresh MIOpen cache per rank, removed when it exits
};

struct Collectives {
    CollectiveLib library = CollectiveLib::gloo;
    std::string network_plugin;   // e.g. aws-ofi-rccl; empty = none
    std::string visibility_var;   // ROCR_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES / ZE_AFFINITY_MASK
    int master_port_base = 29500;  // MASTER_PORT = base + job id % span unless overridden
    int master_port_span = 1000;
    EnvList env;                   // NCCL_*, FI_CXI_*, CCL_* ... exported on every rank
    VisibilityPolicy visibility = VisibilityPolicy::narrow;  // narrow needs visibility_var to narrow
    int ranks_per_device = 1;      // shared: ranks on each device (device = LOCAL_RANK / this)
    std::string network_plugin_path;    // directory holding the plugin library (absolute)
    bool network_plugin_in_image = false;  // that directory is inside the container image, not on the host
    std::vector<std::string> profiles;     // [[profiles]] applied, in order (after env), by name
    std::string network_plugin_version;    // the plugin's version (a stack's components entry overrides it)
    bool debug_switch = false;  // SITEGEN_NCCL_DEBUG=LEVEL in the job sets NCCL_DEBUG for the ranks
    std::string debug_subsys;   // NCCL_DEBUG_SUBSYS with the switch on (empty: the library's default)
    // The acceptance job fails a multi-node all_reduce whose bus bandwidth is under this
    // percentage of network_links * link_gbps; 0 = report only.
    int min_busbw_percent = 0;
};

struct Bind {
    std::string host;
    std::string container;  // defaults to host
    std::string options;    // "ro", "rw" or empty
};

struct Container {
    bool enabled = false;
    ContainerRuntime runtime = ContainerRuntime::singularity;
    std::string image_dir;   // where site images live (e.g. /appl/local/containers/sif-images)
    std::vector<Bind> binds;
    bool gpu_flag = false;   // run with the runtime's GPU flag for the vendor (--nv, --rocm)
    std::string view;        // uenv: the view(s) to load (--view=), e.g. "default"
};

struct Python {
    PythonLayout layout = PythonLayout::system;
    std::string version;       // major.minor, e.g. "3.12"
    std::string interpreter;   // e.g. /usr/bin/python3 (outside containers)
    std::string conda_root;    // conda installation (container: /opt/miniconda3)
    std::string conda_env;     // env name (container) or path (conda_env layout)
    std::string venv;          // venv path (container: /user-software/venv/pytorch)
    std::string environment_file;       // conda env file, relative to the site file that names it
    std::vector<std::string> channels;  // conda channels for `conda create` (conda_env layout)
    std::string environment;   // the environment file's bytes (read by load, not a key)
};

// One `pip install` of some of a stack's components, as the site installs them: from which
// wheel index, with which flags, build environment and build-time modules, and what checks
// the result ([[stacks.install]]; plan/install.cpp).
struct InstallStep {
    std::vector<std::string> packages;       // component names, installed together
    std::string index_url;                   // --index-url (instead of PyPI)
    std::string extra_index_url;             // --extra-index-url (besides PyPI)
    std::vector<std::string> pip_flags;      // e.g. --no-binary=mpi4py
    EnvList build_env;                       // NAME=value before pip; ${NAME} expands at install time
    std::vector<std::string> build_modules;  // modules the build needs (cmake), not the users
    std::string source;                      // the requirement instead of name==version (one package)
    std::vector<std::string> check;          // command words run after the install (sanity check)
    std::vector<std::string> check_expect;   // text the check's output must contain, each
};

struct Stack {
    std::string name;           // module name, e.g. PyTorch
    std::string version;        // e.g. 2.3.1
    std::string versionsuffix;  // e.g. -rocm-6.0.3-python-3.12-singularity-20240923
    std::string description;
    std::string homepage;
    std::vector<std::string> keywords;
    std::vector<std::string> docurls;
    std::string moduleclass = "devel";
    std::string family;
    std::vector<std::string> conflicts;
    std::vector<std::string> base_modules;  // extra modules this stack depends on
    bool is_default = false;
    std::string image;          // container image file name (container sites)
    std::string image_sha256;   // the image's SHA-256, 64 lowercase hex digits (easyconfig checksums)
    Python python;              // site python, overridden per stack
    EnvList components;         // package -> version, e.g. torch=2.3.1
    EnvList env;                // extra variables the module sets
    bool venv_extension = false;  // ship extend-venv-activate
    std::vector<InstallStep> install;  // pip installs with their own settings, in order
    std::string min_driver;     // oldest GPU driver version the image or wheels need; "" = no gate

    std::string module_version() const { return version + versionsuffix; }
    std::string module_full_name() const { return name + "/" + module_version(); }
};

// When a profile variable applies; every key left empty matches anything. Static conditions
// (library, plugin_version, stack, image, in_container) are decided per stack when planning;
// `nodes` is decided by the rank wrapper at run time.
struct ProfileWhen {
    std::string library;         // nccl | rccl | oneccl | gloo
    std::string plugin_version;  // ">=1.4", "<1.4", "=1.4.0" against the stack's plugin version
    std::string stack;           // glob on the module's full name (PyTorch/2.3.1-rocm-6.0.3)
    std::string image;           // glob on the stack's image
    std::string nodes;           // single | multi
    std::string in_container;    // yes | no
};

struct ProfileVar {
    std::string name;
    std::string value;
    std::string reason;  // one line: why; shown in the module help and by `sitegen explain`
    ProfileWhen when;
};

// A named set of collective and fabric variables ([[profiles]]); `extends` applies other
// profiles first, by name.
struct Profile {
    std::string name;
    std::string description;
    std::vector<std::string> extends;
    std::vector<ProfileVar> vars;
};

struct Site {
    SiteInfo site;
    Hardware hardware;
    Binding binding;
    Batch batch;
    Collectives collectives;
    Container container;
    Python python;
    std::vector<Stack> stacks;
    std::vector<Profile> profiles;  // every file's [[profiles]], in the order read

    // Where each loaded key came from, by dotted path: "hardware.nics",
    // "stacks.0.env.NCCL_DEBUG", "collectives.env.NCCL_SOCKET_IFNAME".
    Regions regions;
    std::vector<std::string> files;  // the site file and every file it extends

    // The region of a path, falling back to its nearest loaded parent, then the site file.
    SourceRegion where(const std::string& path) const;
};

// The place of `stack` in site.stacks, from its address; nullopt for a stack that is not one
// of the site's own (tests make such). O(1): callers run once per stack of a full build.
std::optional<size_t> stack_index(const Site& site, const Stack& stack);

// Indices into site.profiles in the order collectives.profiles applies them (each profile
// after those it extends, each once); unknown names and cycles are skipped (check reports them).
std::vector<size_t> profile_order(const Site& site);

}  // namespace sitegen
