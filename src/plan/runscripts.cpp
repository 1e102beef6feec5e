// plan: per stack, the rank wrapper, get-master and the scheduler's batch script (plus the
// container helpers LUMI ships). Site values enter scripts only through bash_word /
// bash_double_quoted, and batch directives refuse values that would break a line.
#include "plan/runscripts.h"

#include <set>
#include <stdexcept>

#include "node/hostlist.h"
#include "node/topology.h"
#include "plan/env_profile.h"
#include "plan/hook_additions.h"
#include "plan/paths.h"
#include "plan/traits.h"
#include "text/quote.h"

namespace sitegen {

namespace {

// Variables given by name to a runtime that starts from the image's environment: the
// scheduler's (the rank wrapper reads them), the user's MASTER_* / SITEGEN_* choices, the
// device-visibility variable and the module's env. Without prefix globs (enroot) only the
// names, and SITEGEN_CONTAINER=1, which start-shell's inside test reads.
std::vector<std::string> passed_variables(const Site& site, const Stack& stack, bool globs) {
    std::vector<std::string> out;
    if (globs) {
        switch (site.site.scheduler) {
            case Scheduler::slurm: out = {"SLURM_*"}; break;
            case Scheduler::pbs: out = {"PBS_*", "PALS_*", "PMI_*"}; break;
            case Scheduler::flux: out = {"FLUX_*"}; break;
        }
        out.insert(out.end(), {"MASTER_*", "SITEGEN_*"});
    } else {
        out = {"MASTER_ADDR", "MASTER_PORT", "SITEGEN_CONTAINER=1"};
    }
    std::set<std::string> names;
    if (!site.collectives.visibility_var.empty()) names.insert(site.collectives.visibility_var);
    for (const EnvSetting& e : resolve_env(site, stack)) names.insert(e.name);  // collectives, profiles, stack env
    out.insert(out.end(), names.begin(), names.end());
    return out;
}

// Bash that stops unless the working directory can be written into a bind list.
std::string workdir_guard(const std::string& script) {
    return "# The working directory is mounted at its own path; ':' or ',' would split the bind.\n"
           "[[ $PWD != *[,:]* ]] || { echo \"" + script + ": cannot mount the working directory $PWD (':' or ',' in its path)\" >&2; exit 2; }\n";
}

// How a script starts `program` (bash words) in the stack's image by a command: the setup
// lines, then the command. Runtimes that read no bind variable get the module's
// CONTAINER_BINDS as flags.
struct ContainerCommand {
    std::string setup;
    std::string command;
};

ContainerCommand container_command(const Site& site, const Stack& stack, const std::string& program,
                                   const std::string& script) {
    const RuntimeTraits& rt = traits(site.container.runtime);
    ContainerCommand c;
    c.command = rt.command;
    if (*rt.exec) c.command += std::string(" ") + rt.exec;
    if (const std::string flag = gpu_flag(site); !flag.empty()) c.command += " " + flag;
    if (rt.view_flag) c.command += std::string(" ") + rt.view_flag + bash_word(site.container.view);
    if (rt.env_flag)
        for (const auto& name : passed_variables(site, stack, rt.env_prefix_glob))
            c.command += std::string(" ") + rt.env_flag + " " + bash_word(name);
    if (!rt.env_prefix && !rt.host_filesystem) {
        c.setup = std::string("# ") + rt.command + " reads no bind variable: the module's CONTAINER_BINDS become " +
                  rt.bind_flag + " flags.\n"
                  "bind_flags=()\n"
                  "IFS=, read -ra container_binds <<<\"${CONTAINER_BINDS:-}\"\n";
        if (rt.bind_fstab)
            // enroot's --mount takes an fstab entry with ':' between its fields.
            c.setup += std::string("for bind in \"${container_binds[@]}\"; do\n"
                                   "  IFS=: read -r source target options <<<\"$bind\"\n"
                                   "  bind_flags+=(") + rt.bind_flag +
                       " \"$source:${target:-$source}:none:x-create=auto,rbind${options:+,$options}\")\n"
                       "done\n";
        else
            c.setup += std::string("for bind in \"${container_binds[@]}\"; do bind_flags+=(") + rt.bind_flag +
                       " \"$bind\"); done\n";
        c.command += " \"${bind_flags[@]}\"";
    }
    if (rt.workdir_flag) {
        c.setup += workdir_guard(script);
        c.command += std::string(" ") + rt.bind_flag + " \"$PWD:$PWD\" " + rt.workdir_flag + "\"$PWD\"";
    }
    c.command += " \"$SIF" + stack_ident(stack.name) + "\"";
    if (*rt.before_program) c.command += std::string(" ") + rt.before_program;
    c.command += " " + program;
    return c;
}

// Where the ranks find the wrapper: /runscripts, which the module binds, or the host path
// where the runtime shows the host's files as they are.
std::string wrapper_path(const Site& site, const std::string& wrapper) {
    return traits(site.container.runtime).host_filesystem ? "\"$RUNSCRIPTS/" + wrapper + "\"" : "/runscripts/" + wrapper;
}

// A job step entered by srun flags (pyxis, uenv): the setup lines and the flags. The
// step's environment marks it as inside (start-shell's test where the runtime sets none).
ContainerCommand launcher_entry(const Site& site, const Stack& stack, const std::string& script) {
    const RuntimeTraits& rt = traits(site.container.runtime);
    ContainerCommand c;
    c.command = std::string(rt.image_launcher_flag) + "\"$SIF" + stack_ident(stack.name) + "\"";
    if (rt.view_flag) c.command += std::string(" ") + rt.view_flag + bash_word(site.container.view);
    if (rt.mounts_launcher_flag)
        c.command += std::string(" ") + rt.mounts_launcher_flag + "\"$CONTAINER_BINDS" +
                     (rt.workdir_launcher_flag ? ",$PWD:$PWD" : "") + "\"";
    if (rt.workdir_launcher_flag) {
        c.setup = workdir_guard(script);
        c.command += std::string(" ") + rt.workdir_launcher_flag + "\"$PWD\"";
    }
    return c;
}

std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// Python the wrapper execs: the interpreter the site names, else whatever the stack's
// environment puts first on PATH.
std::string python_command(const Stack& stack) {
    // The venv's python (activated by venv_activation): the interpreter made it.
    if (stack.python.layout == PythonLayout::container_system_venv) return "python3";
    if (!stack.python.interpreter.empty()) return bash_word(stack.python.interpreter);
    return stack.python.layout == PythonLayout::container_system ? "python3" : "python";
}

// The stack activates a conda environment and venv inside its image (LUMI's layout).
bool conda_venv_in_container(const Site& site, const Stack& stack) {
    return runs_in_container(site, stack) && traits(stack.python.layout).conda_venv;
}

// `name` when it is a valid variable name; anything else would be bash code, not a name.
const std::string& var_name(const std::string& name) {
    if (!is_valid_var_name(name)) throw std::invalid_argument("not a valid environment variable name: " + name);
    return name;
}

// The site's value unless the user already chose one. (Not "${NAME-value}": inside it bash
// also parses } and quotes, so a value could end the expansion early.)
std::string export_default(const std::string& name, const std::string& value) {
    var_name(name);
    return "[[ -n ${" + name + "+x} ]] || " + name + "=" + bash_word(value) + "\nexport " + name + "\n";
}

// The resolved collective environment (plan/env_profile.h) but the stack's env, which the
// module sets: settings for any node count, then the node-count ones under `multi_node`, a
// bash test true when the job's ranks span several nodes.
std::string collective_exports(const Site& site, const Stack& stack, const std::string& multi_node) {
    std::string out, single, multi;
    for (const EnvSetting& e : resolve_env(site, stack)) {
        if (e.from_stack) continue;
        switch (e.nodes) {
            case NodeScope::any: out += export_default(e.name, e.value); break;
            case NodeScope::single: single += export_default(e.name, e.value); break;
            case NodeScope::multi: multi += export_default(e.name, e.value); break;
        }
    }
    if (single.empty() && multi.empty()) return out;
    auto indent = [](const std::string& text) {
        std::string o;
        size_t start = 0;
        while (start < text.size()) {
            const size_t nl = text.find('\n', start);
            o += "  " + text.substr(start, nl - start + 1);
            start = nl + 1;
        }
        return o;
    };
    out += "# Profile settings for the run's node count (sitegen explain shows them with their reasons).\n"
           "if " + multi_node + "; then\n" + (multi.empty() ? "  :\n" : indent(multi));
    if (!single.empty()) out += "else\n" + indent(single);
    return out + "fi\n";
}

// Device visibility: one device per rank. The scheduler's choice stands when it bound exactly
// one device; when it left several (e.g. "4,5,6,7" for half a node) the rank takes its entry
// of that list (ranks share round-robin if there are more ranks than entries).
// Bash that sets `var` to device `index` (a bash variable's name), or to that entry of the
// scheduler's list when it left several; one it bound alone stands.
std::string pick_device(const std::string& var, const std::string& index) {
    return "if [[ -z ${" + var + ":-} ]]; then\n"
           "  export " + var + "=\"$" + index + "\"\n"
           "elif [[ ${" + var + "} == *,* ]]; then\n"
           "  IFS=, read -ra visible_devices <<<\"${" + var + "}\"\n"
           "  export " + var + "=\"${visible_devices[" + index + " % ${#visible_devices[@]}]}\"\n"
           "fi\n";
}

std::string narrow_block(const std::string& var) {
    return "# One device per rank, unless the scheduler already bound exactly one.\n" + pick_device(var, "LOCAL_RANK");
}

// Several ranks per device: local ranks d*k .. d*k+k-1 see device d (k = ranks_per_device),
// taken from the scheduler's list as above; then what the vendor needs to share a device.
std::string shared_block(const Site& site, const std::string& var) {
    const int k = ranks_per_device(site);
    const std::string device = "$((10#$LOCAL_RANK / " + std::to_string(k) + "))";
    std::string s = "# " + std::to_string(k) + " ranks per device: local rank r sees device r / " + std::to_string(k) +
                    ", unless the scheduler\n# already bound exactly one.\n"
                    "device_index=" + device + "\n" + pick_device(var, "device_index");
    switch (site.hardware.gpu_vendor) {
        case GpuVendor::intel: {
            // Every tile split into k compute command streamers, one per rank: the ALCF form
            // "0:4,1:4,...,11:4" (docs.alcf.anl.gov/aurora/data-science/frameworks/pytorch/).
            std::string ccs;
            for (int d = 0; d < site.hardware.devices_per_node; ++d)
                ccs += (d ? "," : "") + std::to_string(d) + ":" + std::to_string(k);
            s += "# Each tile split into " + std::to_string(k) + " compute command streamers (CCS), one per rank.\n" +
                 export_default("ZEX_NUMBER_OF_CCS", ccs);
            break;
        }
        case GpuVendor::nvidia:
            // MPS clients find the node's control daemon through these directories, which must be
            // the daemon's (docs.nvidia.com/deploy/mps/, "Environment Variables"); NVIDIA's defaults.
            s += "# MPS: the ranks of a GPU share it through the node's MPS control daemon, which the site\n"
                 "# starts (nvidia-cuda-mps-control -d, seeing all GPUs) with these directories.\n"
                 "export CUDA_MPS_PIPE_DIRECTORY=\"${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}\"\n"
                 "export CUDA_MPS_LOG_DIRECTORY=\"${CUDA_MPS_LOG_DIRECTORY:-/var/log/nvidia-mps}\"\n"
                 "if [[ $LOCAL_RANK == 0 && ! -d $CUDA_MPS_PIPE_DIRECTORY ]]; then\n"
                 "  printf '%s\\n' \"no MPS control daemon directory $CUDA_MPS_PIPE_DIRECTORY: the ranks of each GPU time-share it\" >&2\n"
                 "fi\n";
            break;
        case GpuVendor::amd:   // ROCm runs several processes on one GCD as it is
        case GpuVendor::none:  // check refuses sharing without devices
            break;
    }
    return s;
}

std::string visibility_block(const Site& site) {
    const std::string& var = site.collectives.visibility_var;
    if (site.hardware.devices_per_node == 0) return "";
    switch (site.collectives.visibility) {
        case VisibilityPolicy::narrow: return var.empty() ? "" : narrow_block(var_name(var));
        case VisibilityPolicy::all:
            return "# Every rank sees all devices of its node (visibility = all): the program picks its own,\n"
                   "# device LOCAL_RANK (the launcher's MPI_LOCALRANKID / PALS_LOCAL_RANKID are left as they are).\n";
        case VisibilityPolicy::shared: return var.empty() ? "" : shared_block(site, var_name(var));
    }
    return "";
}

// binding.style = numa under mpiexec: the rank runs under numactl on its device's NUMA node
// (Slurm binds with --cpu-bind=map_ldom instead).
bool numactl_binding(const Site& site) {
    return site.binding.style == BindingStyle::numa && site.site.scheduler == Scheduler::pbs &&
           !site.hardware.device_numa.empty();
}

std::string numactl_block(const Site& site) {
    if (!numactl_binding(site)) return "";
    std::string nodes;
    for (int n : site.hardware.device_numa) nodes += (nodes.empty() ? "" : " ") + std::to_string(n);
    const int k = ranks_per_device(site);
    return "# NUMA binding: the rank's cores and memory on the NUMA node of its device (hardware.device_numa).\n"
           "numa_nodes=(" + nodes + ")\n"
           "numa_index=$((10#$LOCAL_RANK" + (k > 1 ? " / " + std::to_string(k) : std::string()) + "))\n"
           "((numa_index < ${#numa_nodes[@]})) || die \"local rank $LOCAL_RANK has no device: ${#numa_nodes[@]} devices per node\"\n"
           "numa_node=${numa_nodes[numa_index]}\n"
           "command -v numactl >/dev/null || die \"numactl not found: binding style numa runs each rank under numactl\"\n";
}

// In a container the plugin's directory (bound from the host, or built into the image) goes
// first on LD_LIBRARY_PATH here, keeping the image's value; on bare metal the module did it.
std::string network_plugin_block(const Site& site, const Stack& stack) {
    const Collectives& c = site.collectives;
    if (c.network_plugin_path.empty() || !runs_in_container(site, stack)) return "";
    return std::string("# The network plugin's library directory (") +
           (c.network_plugin_in_image ? "in the image" : "bound from the host") + "), before the image's libraries.\n"
           "export LD_LIBRARY_PATH=" + bash_word(c.network_plugin_path) + "\"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\"\n";
}

std::string miopen_rank_block(const std::string& job);

std::string miopen_block(const Site& site, const std::string& job, const std::string& node) {
    if (site.hardware.gpu_vendor != GpuVendor::amd) return "";
    if (site.batch.miopen_cache_per_rank) return miopen_rank_block(job);
    return "# MIOpen's cache cannot live on Lustre: one directory per user, job and node in the\n"
           "# node-local /tmp. Every rank creates it (mkdir -p is race-free); nothing is removed.\n"
           "export MIOPEN_USER_DB_PATH=\"${MIOPEN_USER_DB_PATH:-/tmp/${USER:-$UID}-miopen-" +
           job + "-" + node + "}\"\n"
           "export MIOPEN_CUSTOM_CACHE_DIR=\"${MIOPEN_CUSTOM_CACHE_DIR:-$MIOPEN_USER_DB_PATH}\"\n"
           "mkdir -p -- \"$MIOPEN_USER_DB_PATH\" \"$MIOPEN_CUSTOM_CACHE_DIR\"\n";
}

// batch.miopen_cache_per_rank: a directory only this rank uses, made by mktemp -d (fresh, mode
// 700, named by job and rank plus a random suffix, so a requeued job or a second step cannot
// meet an old one) and removed by this rank's EXIT trap, which is why the program then runs as
// a child rather than by exec. Only the directory mktemp printed is removed, never a path the
// user set. TERM and INT end the wrapper through exit, so the trap runs for them too.
std::string miopen_rank_block(const std::string& job) {
    return "# MIOpen's cache cannot live on Lustre: a fresh directory per rank in the node-local\n"
           "# /tmp, removed when this rank exits (a MIOPEN_USER_DB_PATH set by the user is kept).\n"
           "miopen_dir=\n"
           "if [[ -z ${MIOPEN_USER_DB_PATH:-} ]]; then\n"
           "  miopen_dir=$(mktemp -d \"/tmp/miopen-$UID-" + job + "-$RANK.XXXXXX\") || die \"cannot create a MIOpen cache directory in /tmp\"\n"
           "  trap 'rm -rf -- \"$miopen_dir\"' EXIT\n"
           "  trap 'exit 143' TERM\n"
           "  trap 'exit 130' INT\n"
           "  export MIOPEN_USER_DB_PATH=\"$miopen_dir\"\n"
           "fi\n"
           "export MIOPEN_CUSTOM_CACHE_DIR=\"${MIOPEN_CUSTOM_CACHE_DIR:-$MIOPEN_USER_DB_PATH}\"\n"
           "mkdir -p -- \"$MIOPEN_USER_DB_PATH\" \"$MIOPEN_CUSTOM_CACHE_DIR\"\n";
}

// How the wrapper starts the program: exec, unless a per-rank MIOpen cache must be removed
// by the wrapper's EXIT trap after the program ends (set -e passes its exit status on).
std::string program_start(const Site& site) {
    return site.hardware.gpu_vendor == GpuVendor::amd && site.batch.miopen_cache_per_rank ? "" : "exec ";
}

// collectives.debug_switch: SITEGEN_NCCL_DEBUG in the job's environment (sbatch passes it to
// the job, srun to the ranks) turns on NCCL's log in the ranks only; the job's own shell and
// the module stay quiet. The level is checked: it is written into the ranks' environment.
std::string nccl_debug_block(const Site& site) {
    const Collectives& c = site.collectives;
    if (!c.debug_switch) return "";
    std::string s =
        "# SITEGEN_NCCL_DEBUG=LEVEL in the job's environment: NCCL_DEBUG for the ranks (INFO shows\n"
        "# whether the network plugin is used: NET/OFI lines); off when unset.\n"
        "if [[ -n ${SITEGEN_NCCL_DEBUG:-} ]]; then\n"
        "  [[ $SITEGEN_NCCL_DEBUG =~ ^(VERSION|WARN|INFO|TRACE)$ ]] || die \"SITEGEN_NCCL_DEBUG must be VERSION, WARN, INFO or TRACE, not $SITEGEN_NCCL_DEBUG\"\n"
        "  export NCCL_DEBUG=\"$SITEGEN_NCCL_DEBUG\"\n";
    if (!c.debug_subsys.empty())
        s += "  [[ -n ${NCCL_DEBUG_SUBSYS+x} ]] || NCCL_DEBUG_SUBSYS=" + bash_word(c.debug_subsys) + "\n"
             "  export NCCL_DEBUG_SUBSYS\n";
    return s + "fi\n";
}

// The job script's note on the switch, after its usage line.
std::string nccl_debug_usage(const Site& site, const std::string& submit) {
    const Collectives& c = site.collectives;
    if (!c.debug_switch) return "";
    return "# SITEGEN_NCCL_DEBUG=INFO " + submit + " ...: NCCL_DEBUG=INFO" +
           (c.debug_subsys.empty() ? std::string() : " NCCL_DEBUG_SUBSYS=" + c.debug_subsys) +
           " in the ranks only\n# (to see that the network plugin is used); off when unset.\n";
}

std::string affinity_report(const Site& site) {
    const std::string& var = site.collectives.visibility_var;
    return "if [[ ${SITEGEN_REPORT_AFFINITY:-0} == 1 ]]; then\n"
           "  cpus=unknown\n"
           "  while read -r key value; do\n"
           "    if [[ $key == Cpus_allowed_list: ]]; then cpus=$value; fi\n"
           "  done </proc/$$/status\n"
           "  printf 'rank %s (local %s) on %s: cpus %s, device %s\\n' \"$RANK\" \"$LOCAL_RANK\" \"${HOSTNAME:-?}\" \"$cpus\" " +
           (var.empty() ? std::string("none") : "\"${" + var_name(var) + ":-all}\"") + " >&2\n"
           "fi\n";
}

std::string container_activation() {
    return "# Inside the container: activate conda + venv unless the module already did (it passes\n"
           "# the equivalent variables in); conda's scripts are not written for set -u.\n"
           "if [[ -z ${VIRTUAL_ENV:-} && -r /runscripts/init-conda-venv ]]; then\n"
           "  set +u\n"
           "  # shellcheck source=/dev/null\n"
           "  source /runscripts/init-conda-venv\n"
           "  set -u\n"
           "fi\n";
}

// Inside the container: the stack's venv over the image's python, activated as its
// bin/activate does (VIRTUAL_ENV, its bin first, no PYTHONHOME), so every runtime gets it,
// including those that pass no module variables in.
std::string venv_activation(const Site& site, const Stack& stack) {
    if (!runs_in_container(site, stack) || stack.python.layout != PythonLayout::container_system_venv) return "";
    return "# Inside the container: the stack's venv over the image's python.\n"
           "export VIRTUAL_ENV=" + bash_word(stack.python.venv) + "\n"
           "export PATH=\"$VIRTUAL_ENV/bin:$PATH\"\n"
           "unset PYTHONHOME\n";
}

std::string header(const std::string& file, const Stack& stack, const std::string& purpose) {
    return "#!/usr/bin/env bash\n# " + file + " (" + stack.module_full_name() + "): " + purpose +
           "\n# Generated by sitegen; do not edit, change the site definition and regenerate.\n"
           "set -euo pipefail\n";
}

// Bash that dies unless each named variable holds a decimal number: they come from the
// scheduler's environment and enter $((...)), where bash would evaluate any expression.
std::string require_numbers(const std::string& vars, const std::string& how) {
    return "for v in " + vars + "; do\n"
           "  [[ -n ${!v:-} ]] || die \"$v is not set: " + how + "\"\n"
           "  [[ ${!v} =~ ^[0-9]{1,18}$ ]] || die \"$v is not a number: ${!v}\"\n"
           "done\n";
}

// MASTER_PORT = base + job % span: jobs sharing a node get different ports. Further steps
// of one job move by ~0.618 span, far from the ports of jobs with nearby ids.
std::string master_port_line(const Collectives& c, const std::string& job, const std::string& step) {
    const int span = c.master_port_span > 0 ? c.master_port_span : 1;
    const int stride = span * 618 / 1000;
    std::string sum = "10#" + job;
    if (!step.empty() && stride > 0) sum = "10#" + job + " % " + std::to_string(span) + " + 10#" + step + " % " + std::to_string(span) + " * " + std::to_string(stride);
    return "# Port: " + std::to_string(c.master_port_base) + " + job id % " + std::to_string(span) +
           (step.empty() || stride == 0 ? std::string(" (concurrent jobs on a node differ)")
                                        : " (concurrent jobs on a node differ), each further\n# step of the job shifted by " +
                                              std::to_string(stride)) +
           "; a MASTER_PORT set by the user wins.\n"
           "export MASTER_PORT=\"${MASTER_PORT:-$((" + std::to_string(c.master_port_base) + " + (" + sum + ") % " +
           std::to_string(span) + "))}\"\n";
}

// The sizes and ranks the launcher gave (all checked to be numbers by then): a world of
// no ranks or a rank outside its world is a launch error, not a job to start.
std::string rank_checks() {
    return "((10#$WORLD_SIZE > 0 && 10#$LOCAL_WORLD_SIZE > 0)) || die \"no ranks: WORLD_SIZE=$WORLD_SIZE LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE\"\n"
           "((10#$LOCAL_WORLD_SIZE <= 10#$WORLD_SIZE)) || die \"$LOCAL_WORLD_SIZE ranks on this node but $WORLD_SIZE in all\"\n"
           "((10#$RANK < 10#$WORLD_SIZE)) || die \"rank $RANK is outside the world of $WORLD_SIZE ranks\"\n"
           "((10#$LOCAL_RANK < 10#$LOCAL_WORLD_SIZE)) || die \"local rank $LOCAL_RANK is outside the $LOCAL_WORLD_SIZE ranks on this node\"\n";
}

// What every scheduler's wrapper does once ranks and master are known: port, device,
// caches, collective env, affinity report, container activation, then exec the program.
std::string torchrun_tail(const Site& site, const Stack& stack, const std::string& job,
                          const std::string& step, const std::string& node);

std::string rank_wrapper_tail(const Site& site, const Stack& stack, const std::string& job,
                              const std::string& step, const std::string& node) {
    if (traits(site.batch.rank_starter).one_task_per_node) return torchrun_tail(site, stack, job, step, node);
    std::string s = rank_checks() + master_port_line(site.collectives, job, step);
    s += visibility_block(site);
    s += miopen_block(site, job, node);
    s += collective_exports(site, stack, "((10#$WORLD_SIZE > 10#$LOCAL_WORLD_SIZE))");
    s += nccl_debug_block(site);
    s += network_plugin_block(site, stack);
    s += affinity_report(site);
    if (conda_venv_in_container(site, stack)) s += container_activation();
    s += venv_activation(site, stack);
    s += numactl_block(site);
    const std::string numactl =
        numactl_binding(site) ? "numactl --cpunodebind=\"$numa_node\" --membind=\"$numa_node\" " : "";
    return s + program_start(site) + numactl + python_command(stack) + " \"$@\"\n";
}

int tasks_per_node(const Site& site);

// torchrun as the rank starter: this wrapper runs once per node (the launcher's task), with
// RANK = the node's index and WORLD_SIZE = the nodes; torchrun then starts the node's ranks
// and sets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT for
// them itself (https://pytorch.org/docs/stable/elastic/run.html), so they are unset here. The
// rendezvous (c10d) is at the master's MASTER_PORT; the job id names it. The underscore
// spellings of the options are the ones torch 1.x and 2.x both accept.
std::string torchrun_tail(const Site& site, const Stack& stack, const std::string& job,
                          const std::string& step, const std::string& node) {
    std::string s = rank_checks();
    s += "((10#$LOCAL_WORLD_SIZE == 1)) || die \"torchrun starts the ranks: launch one task per node, not $LOCAL_WORLD_SIZE\"\n";
    s += master_port_line(site.collectives, job, step);
    s += miopen_block(site, job, node);
    s += collective_exports(site, stack, "((10#$WORLD_SIZE > 1))");  // WORLD_SIZE counts nodes here
    s += nccl_debug_block(site);
    if (conda_venv_in_container(site, stack)) s += container_activation();
    s += venv_activation(site, stack);
    s += "nnodes=$((10#$WORLD_SIZE))\n"
         "unset RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE\n";
    return s + program_start(site) + python_command(stack) + " -m torch.distributed.run --nnodes=\"$nnodes\" --nproc_per_node=" +
           std::to_string(tasks_per_node(site)) +
           " --rdzv_backend=c10d --rdzv_endpoint=\"$MASTER_ADDR:$MASTER_PORT\" --rdzv_id=\"" + job + "\" \"$@\"\n";
}

std::string slurm_wrapper(const Site& site, const Stack& stack, const std::string& name) {
    std::string s = header(name, stack, "per-rank wrapper for srun: sets the torch.distributed\n# environment from Slurm's, then execs python with all its arguments.");
    s += "die() { printf '" + name + ": %s\\n' \"$*\" >&2; exit 2; }\n";
    s += require_numbers("SLURM_JOB_ID SLURM_PROCID SLURM_NTASKS SLURM_LOCALID",
                         "run this through srun inside a Slurm job");
    s += "step_id=${SLURM_STEP_ID:-0}\n"
         "[[ $step_id =~ ^[0-9]{1,18}$ ]] || die \"SLURM_STEP_ID is not a number: $step_id\"\n"
         "# srun always sets SLURM_NODEID; only a one-node step can be told its node without it.\n"
         "node_id=${SLURM_NODEID:-}\n"
         "if [[ -z $node_id && ${SLURM_STEP_TASKS_PER_NODE:-${SLURM_TASKS_PER_NODE:-}} =~ ^[0-9]+$ ]]; then node_id=0; fi\n"
         "[[ -n $node_id ]] || die \"SLURM_NODEID is not set: run this through srun inside a Slurm job\"\n"
         "[[ $node_id =~ ^[0-9]{1,9}$ ]] || die \"SLURM_NODEID is not a number: $node_id\"\n";
    s += bash_first_host_function();
    s += "# Sets local_tasks to the tasks on this node, from SLURM_STEP_TASKS_PER_NODE such as\n"
         "# \"8(x3),4\" (one entry per node of the step, in SLURM_NODEID order).\n"
         "count_local_tasks() {\n"
         "  local spec=${SLURM_STEP_TASKS_PER_NODE:-${SLURM_TASKS_PER_NODE:-}} node=$((10#$node_id)) item count reps\n"
         "  local -a items\n"
         "  IFS=, read -ra items <<<\"$spec\"\n"
         "  for item in \"${items[@]}\"; do\n"
         "    if [[ $item =~ ^([0-9]{1,9})\\(x([0-9]{1,9})\\)$ ]]; then count=${BASH_REMATCH[1]} reps=$((10#${BASH_REMATCH[2]}))\n"
         "    elif [[ $item =~ ^[0-9]{1,9}$ ]]; then count=$item reps=1\n"
         "    else return 1; fi\n"
         "    if ((node < reps)); then local_tasks=$((10#$count)); return 0; fi\n"
         "    node=$((node - reps))\n"
         "  done\n"
         "  return 1\n"
         "}\n\n";
    s += "export RANK=\"$SLURM_PROCID\" WORLD_SIZE=\"$SLURM_NTASKS\" LOCAL_RANK=\"$SLURM_LOCALID\"\n";
    s += "count_local_tasks || die \"cannot tell the tasks on this node from SLURM_STEP_TASKS_PER_NODE=${SLURM_STEP_TASKS_PER_NODE:-}\"\n"
         "export LOCAL_WORLD_SIZE=\"$local_tasks\"\n";
    s += "# Master: first host of this step's nodes (the job's when the step's is unknown).\n"
         "if [[ -z ${MASTER_ADDR:-} ]]; then\n"
         "  nodelist=${SLURM_STEP_NODELIST:-${SLURM_JOB_NODELIST:-}}\n"
         "  [[ -n $nodelist ]] || die \"neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST is set\"\n"
         "  MASTER_ADDR=$(sitegen_first_host \"$nodelist\") || die \"cannot find the first host of $nodelist\"\n"
         "fi\n"
         "export MASTER_ADDR\n";
    return s + rank_wrapper_tail(site, stack, "$SLURM_JOB_ID", "$step_id", "$node_id");
}

std::string pbs_wrapper(const Site& site, const Stack& stack, const std::string& name) {
    std::string s = header(name, stack, "per-rank wrapper for mpiexec under PBS Pro/PALS: sets the\n# torch.distributed environment, then execs python with all its arguments.");
    s += "die() { printf '" + name + ": %s\\n' \"$*\" >&2; exit 2; }\n";
    s += "for v in PBS_JOBID PBS_NODEFILE; do\n"
         "  [[ -n ${!v:-} ]] || die \"$v is not set: run this through mpiexec inside a PBS job\"\n"
         "done\n";
    s += require_numbers("PALS_RANKID PALS_LOCAL_RANKID", "run this through mpiexec (PALS) inside a PBS job");
    s += "[[ -r $PBS_NODEFILE ]] || die \"cannot read PBS_NODEFILE $PBS_NODEFILE\"\n";
    s += "job_number=${PBS_JOBID%%[!0-9]*}\n"
         "[[ $job_number =~ ^[0-9]{1,18}$ ]] || die \"PBS_JOBID does not start with a job number: $PBS_JOBID\"\n";
    s += "export RANK=\"$PALS_RANKID\" LOCAL_RANK=\"$PALS_LOCAL_RANKID\"\n";
    s += "# Ranks per node: from the launcher, else the generated job script's SITEGEN_RANKS_PER_NODE.\n"
         "LOCAL_WORLD_SIZE=${PALS_LOCAL_SIZE:-${PMI_LOCAL_SIZE:-${SITEGEN_RANKS_PER_NODE:-}}}\n"
         "[[ $LOCAL_WORLD_SIZE =~ ^[0-9]{1,9}$ ]] || die \"ranks per node unknown (PALS_LOCAL_SIZE, PMI_LOCAL_SIZE or SITEGEN_RANKS_PER_NODE): '$LOCAL_WORLD_SIZE'\"\n"
         "# All ranks: from the launcher, else nodes in PBS_NODEFILE x ranks per node.\n"
         "WORLD_SIZE=${PMI_SIZE:-${SITEGEN_NRANKS:-}}\n"
         "if [[ -z $WORLD_SIZE ]]; then\n"
         "  declare -A seen_hosts=()\n"
         "  while read -r host; do\n"
         "    if [[ -n $host ]]; then seen_hosts[$host]=1; fi\n"
         "  done <\"$PBS_NODEFILE\"\n"
         "  WORLD_SIZE=$((${#seen_hosts[@]} * 10#$LOCAL_WORLD_SIZE))\n"
         "fi\n"
         "[[ $WORLD_SIZE =~ ^[0-9]{1,9}$ ]] || die \"world size is not a number: $WORLD_SIZE\"\n"
         "export WORLD_SIZE LOCAL_WORLD_SIZE\n";
    s += "# Master: the first host PBS gave the job.\n"
         "if [[ -z ${MASTER_ADDR:-} ]]; then read -r MASTER_ADDR <\"$PBS_NODEFILE\" || true; fi\n"
         "[[ -n ${MASTER_ADDR:-} ]] || die \"PBS_NODEFILE $PBS_NODEFILE is empty\"\n"
         "export MASTER_ADDR\n";
    return s + rank_wrapper_tail(site, stack, "$job_number", "", "${PALS_NODEID:-0}");
}

// Flux: the flux-shell's task environment (FLUX_TASK_RANK, FLUX_TASK_LOCAL_ID, FLUX_JOB_SIZE,
// FLUX_JOB_NNODES, FLUX_JOB_ID; flux-run(1) "ENVIRONMENT",
// https://flux-framework.readthedocs.io/projects/flux-core/en/latest/man1/flux-run.html).
// FLUX_JOB_ID is in F58 form ("ƒ" or "f", then base58 digits; flux-core src/shell/shell.c),
// so the port takes the decimal id from `flux job id --to=dec` (flux-job(1)), else decodes it
// here; only its last 15 digits are used, which bash arithmetic holds.
std::string flux_wrapper(const Site& site, const Stack& stack, const std::string& name) {
    std::string s = header(name, stack, "per-rank wrapper for flux run: sets the torch.distributed\n# environment from the Flux job shell's, then execs python with all its arguments.");
    s += "die() { printf '" + name + ": %s\\n' \"$*\" >&2; exit 2; }\n";
    s += require_numbers("FLUX_TASK_RANK FLUX_TASK_LOCAL_ID FLUX_JOB_SIZE FLUX_JOB_NNODES",
                         "run this through flux run inside a Flux job");
    s += "[[ -n ${FLUX_JOB_ID:-} ]] || die \"FLUX_JOB_ID is not set: run this through flux run inside a Flux job\"\n";
    s += "# Sets job_number to the last 15 decimal digits of FLUX_JOB_ID (decimal, or F58: the prefix\n"
         "# U+0192 or 'f', then base58 digits), from `flux job id --to=dec` or decoded here.\n"
         "flux_job_number() {\n"
         "  local id=$FLUX_JOB_ID dec='' digits=123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz rest i before n=0\n"
         "  if [[ $id =~ ^[0-9]{1,20}$ ]]; then\n"
         "    dec=$id\n"
         "  elif command -v flux >/dev/null 2>&1; then\n"
         "    dec=$(flux job id --to=dec \"$id\" 2>/dev/null) || dec=''\n"
         "  fi\n"
         "  if [[ $dec =~ ^[0-9]{1,20}$ ]]; then\n"
         "    if ((${#dec} > 15)); then dec=${dec: -15}; fi\n"
         "    job_number=$((10#$dec))\n"
         "    return 0\n"
         "  fi\n"
         "  rest=${id#$'\\xc6\\x92'}\n"
         "  [[ $rest != \"$id\" ]] || rest=${id#f}\n"
         "  [[ $rest != \"$id\" && $rest =~ ^[1-9A-HJ-NP-Za-km-z]{1,12}$ ]] || return 1\n"
         "  for ((i = 0; i < ${#rest}; i++)); do\n"
         "    before=${digits%%\"${rest:i:1}\"*}\n"
         "    n=$(((n * 58 + ${#before}) % 1000000000000000))\n"
         "  done\n"
         "  job_number=$n\n"
         "}\n";
    s += "flux_job_number || die \"FLUX_JOB_ID is neither a decimal nor an F58 job id: $FLUX_JOB_ID\"\n";
    s += "export RANK=\"$FLUX_TASK_RANK\" WORLD_SIZE=\"$FLUX_JOB_SIZE\" LOCAL_RANK=\"$FLUX_TASK_LOCAL_ID\"\n";
    s += "# flux run -N -n spreads the tasks evenly, in blocks of consecutive ranks per node.\n"
         "((10#$FLUX_JOB_NNODES > 0 && 10#$FLUX_JOB_SIZE % 10#$FLUX_JOB_NNODES == 0)) ||\n"
         "  die \"$FLUX_JOB_SIZE tasks do not spread evenly over $FLUX_JOB_NNODES nodes\"\n"
         "export LOCAL_WORLD_SIZE=$((10#$FLUX_JOB_SIZE / 10#$FLUX_JOB_NNODES))\n";
    s += "# Master: the first host of this job (flux-hostlist(1): `local` is the job of FLUX_JOB_ID).\n"
         "if [[ -z ${MASTER_ADDR:-} ]]; then\n"
         "  command -v flux >/dev/null 2>&1 || die \"flux is not on PATH: cannot find the first host of job $FLUX_JOB_ID\"\n"
         "  MASTER_ADDR=$(flux hostlist --nth=0 local) || die \"cannot find the first host of job $FLUX_JOB_ID (flux hostlist)\"\n"
         "  [[ -n $MASTER_ADDR ]] || die \"flux hostlist gave no first host of job $FLUX_JOB_ID\"\n"
         "fi\n"
         "export MASTER_ADDR\n";
    // The node's index, from the block layout of the tasks.
    return s + rank_wrapper_tail(site, stack, "$job_number", "", "$((10#$FLUX_TASK_RANK / LOCAL_WORLD_SIZE))");
}

std::string get_master(const Stack& stack) {
    std::string s = header("get-master", stack, "prints the first host of a Slurm hostlist (default: this\n# step's nodes). Prefers scontrol; falls back to a pure-bash expansion.");
    s += bash_first_host_function();
    s += "nodelist=${1:-${SLURM_STEP_NODELIST:-${SLURM_JOB_NODELIST:-}}}\n"
         "if [[ -z $nodelist ]]; then\n"
         "  echo 'get-master: give a hostlist, or run inside a Slurm job' >&2\n"
         "  exit 2\n"
         "fi\n"
         "if command -v scontrol >/dev/null 2>&1; then\n"
         "  host=$(scontrol show hostnames \"$nodelist\" 2>/dev/null | head -n 1) || host=\n"
         "  if [[ -n $host ]]; then\n"
         "    printf '%s\\n' \"$host\"\n"
         "    exit 0\n"
         "  fi\n"
         "fi\n"
         "sitegen_first_host \"$nodelist\"\n";
    return s;
}

// Why `value` cannot be written into a batch directive, or "" when it can. sbatch and qsub
// split directive lines at blanks, read quotes and backslashes as quoting and '#' as a
// comment, and a line break ends the directive; in a PBS -l resource ',' starts another.
std::string directive_problem(const std::string& value, bool resource) {
    for (unsigned char c : value) {
        if (c < 0x20 || c == 0x7f) return "a line break or control character would end the directive";
        if (c == ' ') return "a blank would split it into separate options";
        if (c == '"' || c == '\'' || c == '\\') return "quotes and backslashes are parsed as quoting";
        if (c == '#') return "'#' would start a comment";
        if (resource && c == ',') return "',' would start another resource";
    }
    return "";
}

std::string checked_directive(const std::string& prefix, const std::string& what, const std::string& value,
                              bool resource) {
    if (auto why = directive_problem(value, resource); !why.empty())
        throw std::invalid_argument(what + " cannot be written into a batch directive: " + why);
    return prefix + value + "\n";
}

// The directives for the site's [batch] values (checks should have refused bad ones).
std::string batch_value_directives(const Site& site) {
    std::string s;
    for (const auto& f : traits(site.site.scheduler).directives) {
        const auto value = directive_text(site.batch, f);
        if (!value) continue;
        const std::string written = f.convert ? f.convert(*value) : *value;
        if (f.convert && written.empty())
            throw std::invalid_argument(std::string("batch.") + f.key + " '" + *value + "' cannot be written into a " +
                                        traits(site.site.scheduler).directive + " directive");
        s += checked_directive(f.prefix, std::string("batch.") + f.key, written, f.resource);
    }
    return s;
}

std::string module_lines(const Site& site, const Stack& stack, const PlanOptions& options) {
    std::string s = "module use " + bash_word(modulepath_of(options.prefix)) + "\n";
    for (const auto& p : site.site.module_use)
        if (p != modulepath_of(options.prefix)) s += "module use " + bash_word(p) + "\n";
    for (const auto& m : site.site.base_modules) s += "module load " + bash_word(m) + "\n";
    for (const auto& m : stack.base_modules) s += "module load " + bash_word(m) + "\n";
    s += "module load " + bash_word(stack.module_full_name()) + "\n";
    s += job_prologue_lines(site, stack, options);  // the site's hooks (plan/hook_additions.h)
    return s;
}

int tasks_per_node(const Site& site) {
    if (site.batch.tasks_per_node > 0) return site.batch.tasks_per_node;
    return site.hardware.devices_per_node > 0 ? site.hardware.devices_per_node * ranks_per_device(site) : 1;
}

// Tasks (and CPUs per task) the launcher starts on a node: one per rank, or under torchrun
// one per node holding all of the node's ranks.
int launcher_tasks_per_node(const Site& site) {
    return traits(site.batch.rank_starter).one_task_per_node ? 1 : tasks_per_node(site);
}

int cpus_per_task(const Site& site);
int launcher_cpus_per_task(const Site& site) {
    return traits(site.batch.rank_starter).one_task_per_node ? cpus_per_task(site) * tasks_per_node(site)
                                                             : cpus_per_task(site);
}

// What the job script's comment says starts the ranks.
std::string ranks_started_by(const Site& site, const std::string& launcher, const std::string& per_rank) {
    if (!traits(site.batch.rank_starter).one_task_per_node) return per_rank;
    return launcher + " starts one task per node, which runs torchrun with the node's " +
           std::to_string(tasks_per_node(site)) + " ranks.\n";
}

std::optional<std::vector<std::vector<int>>> binding_ranks(const Site& site) {
    if (site.binding.style == BindingStyle::none || !traits(site.batch.rank_starter).per_rank_binding)
        return std::nullopt;
    std::string error;
    return rank_cores(site.hardware, site.binding, ranks_per_device(site), error);
}

int cpus_per_task(const Site& site) {
    if (site.batch.cpus_per_task > 0) return site.batch.cpus_per_task;
    if (auto ranks = binding_ranks(site); ranks && !ranks->empty()) return static_cast<int>(ranks->front().size());
    return 1;
}

// [batch] env, prepend_path and core_dumps: what a seed's job script sets itself (Aurora's:
// IPEX_FP32_MATH_MODE, oneCCL's lib/ and include/ first on the paths, `ulimit -c 0`), after the
// modules and before the launcher, so every rank inherits it. Values are single bash words.
std::string job_environment_lines(const Site& site) {
    const Batch& b = site.batch;
    if (b.env.empty() && b.prepend_path.empty() && b.core_dumps) return "";
    std::string s = "# The site's job environment ([batch] env, prepend_path, core_dumps).\n";
    for (const auto& [name, value] : b.env) s += "export " + var_name(name) + "=" + bash_word(value) + "\n";
    for (const auto& [name, dir] : b.prepend_path)
        s += "export " + var_name(name) + "=" + bash_word(dir) + "\"${" + name + ":+:$" + name + "}\"\n";
    if (!b.core_dumps) s += "ulimit -c 0\n";
    return s;
}

// The master for the whole Slurm job, before srun: the program's arguments and every rank (the
// wrapper keeps a MASTER_ADDR/MASTER_PORT already set) then see the same values. Frontier's seed
// passes them as arguments (pytorch_ddp.py --master_addr=$MASTER_ADDR --master_port=...): written
// on the job's srun line they expand here; passed to this script quoted ('$MASTER_ADDR'), the
// literal words $MASTER_ADDR and $MASTER_PORT in its arguments are replaced by the values
// (a plain string replacement: nothing else in the arguments is expanded or run).
std::string slurm_job_master(const Site& site) {
    std::string body = "MASTER_ADDR=${MASTER_ADDR:-$(\"$RUNSCRIPTS/get-master\" \"${SLURM_JOB_NODELIST:-}\")}\n"
                       "export MASTER_ADDR\n" +
                       master_port_line(site.collectives, "$SLURM_JOB_ID", "") +
                       "# shellcheck disable=SC2016  # the literal words, not their values\n"
                       "set -- \"${@//'$MASTER_ADDR'/\"$MASTER_ADDR\"}\"\n"
                       "# shellcheck disable=SC2016\n"
                       "set -- \"${@//'$MASTER_PORT'/\"$MASTER_PORT\"}\"\n";
    std::string indented;
    for (size_t at = 0; at < body.size();) {
        const size_t nl = body.find('\n', at);
        indented += "  " + body.substr(at, nl + 1 - at);
        at = nl + 1;
    }
    // Outside sbatch/salloc (no job id) the rank wrapper picks them as before.
    return "# One master for the job (arguments and ranks alike), unless run outside a Slurm job.\n"
           "if [[ ${SLURM_JOB_ID:-} =~ ^[0-9]{1,18}$ ]]; then\n" + indented + "fi\n";
}

std::string slurm_job(const Site& site, const Stack& stack, const PlanOptions& options,
                      const std::string& wrapper) {
    const auto& b = site.batch;
    const int gpus = b.gpus_per_node > 0 ? b.gpus_per_node : site.hardware.devices_per_node;
    std::string s = "#!/bin/bash -l\n";
    s += checked_directive("#SBATCH --job-name=", "the stack name", lower(stack.name), false);
    s += "#SBATCH --nodes=" + std::to_string(b.nodes) + "\n";
    s += "#SBATCH --ntasks-per-node=" + std::to_string(launcher_tasks_per_node(site)) + "\n";
    s += "#SBATCH --cpus-per-task=" + std::to_string(launcher_cpus_per_task(site)) + "\n";
    // --gpus-per-task (a [batch] directive) requests the GPUs per node itself.
    if (gpus > 0 && b.gpus_per_task == 0) s += "#SBATCH --gpus-per-node=" + std::to_string(gpus) + "\n";
    s += batch_value_directives(site);
    if (const std::string dir = batch_output_directory(site); !dir.empty())
        s += "# " + stack.module_full_name() + " on " + site.site.name +
             ": $RUNSCRIPTS/submit $RUNSCRIPTS/job.slurm SCRIPT.py [ARGS...]\n"
             "# (submit is sbatch after creating " + dir + "/, which Slurm needs before the job starts.)\n";
    else
        s += "# " + stack.module_full_name() + " on " + site.site.name + ": sbatch job.slurm SCRIPT.py [ARGS...]\n";
    s += nccl_debug_usage(site, "sbatch job.slurm");
    s += "# Generated by sitegen; " +
         ranks_started_by(site, "srun", "one rank per " + std::string(gpus > 0 ? "GPU" : "task") +
                                            ", launched by srun (not torchrun: srun maps the tasks).\n");
    s += "set -euo pipefail\n";
    s += "if [[ $# -eq 0 ]]; then\n  echo 'usage: sbatch job.slurm SCRIPT.py [ARGS...]' >&2\n  exit 2\nfi\n";
    s += module_lines(site, stack, options);
    s += "# sbatch --export=NONE starts this script without the caller's environment and sets\n"
         "# SLURM_EXPORT_ENV=NONE, which srun inherits: the ranks would lose the modules loaded above.\n"
         "# ALL gives the job steps this script's environment (https://slurm.schedmd.com/sbatch.html#OPT_export).\n"
         "export SLURM_EXPORT_ENV=ALL\n";
    s += job_environment_lines(site);
    s += slurm_job_master(site);
    std::string launch = "srun";
    if (auto ranks = binding_ranks(site); ranks && site.binding.style == BindingStyle::mask) {
        s += "# One CPU mask per local rank, computed from the node topology.\n";
        s += "CPU_MASKS=" + bash_word(slurm_mask_list(*ranks)) + "\n";
        launch += " --cpu-bind=mask_cpu:\"$CPU_MASKS\"";
    }
    if (site.binding.style == BindingStyle::numa && !site.hardware.device_numa.empty()) {
        // srun: one NUMA locality domain per local rank, for its cores and its memory
        // (https://slurm.schedmd.com/srun.html, --cpu-bind=map_ldom, --mem-bind=map_mem).
        s += "# The NUMA node of each local rank's device, computed from the node topology.\n";
        s += "NUMA_DOMAINS=" + bash_word(numa_domain_list(site.hardware, ranks_per_device(site))) + "\n";
        launch += " --cpu-bind=map_ldom:\"$NUMA_DOMAINS\" --mem-bind=map_mem:\"$NUMA_DOMAINS\"";
    }
    if (runs_in_container(site, stack) &&
        traits(site.container.runtime).job_entry == RuntimeEntry::launcher_flags) {
        const ContainerCommand c = launcher_entry(site, stack, "job.slurm");
        s += c.setup + "SITEGEN_CONTAINER=1 " + launch + " " + c.command + " " + wrapper_path(site, wrapper) + " \"$@\"\n";
    } else if (runs_in_container(site, stack)) {
        // The module's bind list mounts $RUNSCRIPTS at /runscripts.
        const ContainerCommand c =
            container_command(site, stack, wrapper_path(site, wrapper) + " \"$@\"", "job.slurm");
        s += c.setup + launch + " " + c.command + "\n";
    } else
        s += launch + " \"$RUNSCRIPTS/" + wrapper + "\" \"$@\"\n";
    return s;
}

std::string pbs_job(const Site& site, const Stack& stack, const PlanOptions& options,
                    const std::string& wrapper) {
    const auto& b = site.batch;
    const int ppn = launcher_tasks_per_node(site);
    std::string s = "#!/bin/bash -l\n";
    s += checked_directive("#PBS -N ", "the stack name", lower(stack.name), false);
    s += "#PBS -l select=" + std::to_string(b.nodes) + "\n";
    s += batch_value_directives(site);
    s += "#PBS -j oe\n";
    s += "# " + stack.module_full_name() + " on " + site.site.name + ": qsub -v PROGRAM='train.py --epochs 1' job.pbs\n"
         "# (PROGRAM is split at blanks), or in an interactive job: bash job.pbs SCRIPT.py [ARGS...].\n"
         "# Generated by sitegen; " + ranks_started_by(site, "mpiexec", "one rank per device, launched by mpiexec.\n");
    s += "set -euo pipefail\n";
    s += "if [[ $# -eq 0 ]]; then\n"
         "  : \"${PROGRAM:?set PROGRAM to the python script and its arguments, e.g. qsub -v PROGRAM='train.py --epochs 1' job.pbs}\"\n"
         "  read -ra program <<<\"$PROGRAM\"\n"
         "  set -- \"${program[@]}\"\n"
         "fi\n";
    s += module_lines(site, stack, options);
    s += "cd \"${PBS_O_WORKDIR:-.}\"\n";
    s += job_environment_lines(site);
    s += "# PBS lists a node once per MPI slot; count each node once.\n";
    s += "NNODES=$(sort -u \"$PBS_NODEFILE\" | wc -l)\n";
    s += "export SITEGEN_RANKS_PER_NODE=" + std::to_string(ppn) + "\n";
    s += "export SITEGEN_NRANKS=$((NNODES * SITEGEN_RANKS_PER_NODE))\n";
    std::string bind;
    if (auto ranks = binding_ranks(site); ranks && site.binding.style == BindingStyle::list) {
        s += "# CPU binding computed from the node topology.\n";
        s += "CPU_BIND=" + bash_word(pals_cpu_bind_list(*ranks, site.binding.verbose)) + "\n";
        for (const auto& [var, pick] : site.binding.affinity_env)
            s += "export " + var_name(var) + "=" + bash_word(affinity_list(*ranks, pick)) + "\n";
        bind = " --cpu-bind \"$CPU_BIND\"";
    }
    const std::string launch = "mpiexec -np \"$SITEGEN_NRANKS\" -ppn \"$SITEGEN_RANKS_PER_NODE\"" + bind;
    if (runs_in_container(site, stack)) {
        const ContainerCommand c =
            container_command(site, stack, wrapper_path(site, wrapper) + " \"$@\"", "job.pbs");
        s += c.setup + launch + " " + c.command + "\n";
    } else {
        s += launch + " \"$RUNSCRIPTS/" + wrapper + "\" \"$@\"\n";
    }
    return s;
}

// flux-shell's cpu-affinity=map:LIST: one entry per local task, joined by ';', each a hwloc
// bitmask ("0xf") or list ("0-3,8-11"); the same cores as the Slurm masks and PALS lists.
std::string flux_mask_map(const std::vector<std::vector<int>>& ranks) {
    std::string map = slurm_mask_list(ranks);
    for (char& c : map)
        if (c == ',') c = ';';
    return map;
}
std::string flux_list_map(const std::vector<std::vector<int>>& ranks) {
    std::string map = pals_cpu_bind_list(ranks, false).substr(5);  // after "list:"
    for (char& c : map)
        if (c == ':') c = ';';
    return map;
}

// The Flux batch script (flux-batch(1)): whole nodes, then `flux run` with one task per rank
// (per-task form: -n tasks, -c cores and -g GPUs each; flux-run(1)). Binding through the job
// shell's options (flux-shell-options(7),
// https://flux-framework.readthedocs.io/projects/flux-core/en/latest/man7/flux-shell-options.html):
// cpu-affinity=map:LIST gives local task i the i-th entry of the site's binding; without one,
// per-task divides the allocated cores among the tasks. gpu-affinity=per-task sets one
// CUDA_VISIBLE_DEVICES per task, so it is asked for only when that is the site's visibility
// variable; otherwise the wrapper narrows with its own (HIP would also read a CUDA_VISIBLE_DEVICES
// set by Flux, narrowing twice), so Flux's is turned off.
std::string flux_job(const Site& site, const Stack& stack, const PlanOptions& options,
                     const std::string& wrapper) {
    const auto& b = site.batch;
    const int gpus = b.gpus_per_node > 0 ? b.gpus_per_node : site.hardware.devices_per_node;
    const int ppn = launcher_tasks_per_node(site);
    const SchedulerTraits& t = traits(Scheduler::flux);
    std::string s = "#!/bin/bash -l\n";
    s += checked_directive(t.job_name, "the stack name", lower(stack.name), false);
    s += "# flux: -N " + std::to_string(b.nodes) + "\n";
    s += "# flux: --exclusive\n";
    s += batch_value_directives(site);
    s += "# " + stack.module_full_name() + " on " + site.site.name + ": flux batch job.flux SCRIPT.py [ARGS...]\n"
         "# (or bash job.flux SCRIPT.py [ARGS...] inside flux alloc). Generated by sitegen; " +
         ranks_started_by(site, "flux run", "one rank per " + std::string(gpus > 0 ? "GPU" : "task") + ", launched by flux run.\n");
    s += "set -euo pipefail\n";
    s += "if [[ $# -eq 0 ]]; then\n  echo 'usage: flux batch job.flux SCRIPT.py [ARGS...]' >&2\n  exit 2\nfi\n";
    s += module_lines(site, stack, options);
    s += job_environment_lines(site);
    s += "# The nodes of this batch job (its Flux instance).\n"
         "NNODES=$(flux hostlist --count instance)\n"
         "[[ $NNODES =~ ^[1-9][0-9]{0,8}$ ]] || { echo \"job.flux: cannot count the nodes of this Flux instance: '$NNODES'\" >&2; exit 2; }\n";
    std::string launch = "flux run -N \"$NNODES\" -n \"$((NNODES * " + std::to_string(ppn) + "))\" -c " +
                         std::to_string(launcher_cpus_per_task(site));
    const int gpus_per_task = gpus / ppn;
    if (gpus_per_task > 0) launch += " -g " + std::to_string(gpus_per_task);
    if (auto ranks = binding_ranks(site)) {
        s += "# The cores of each local rank, computed from the node topology.\n";
        s += "CPU_MAP=" + bash_word(site.binding.style == BindingStyle::mask ? flux_mask_map(*ranks) : flux_list_map(*ranks)) + "\n";
        launch += " -o cpu-affinity=map:\"$CPU_MAP\"";
    } else {
        launch += " -o cpu-affinity=per-task";
    }
    if (gpus > 0) {
        const bool flux_narrows = traits(site.batch.rank_starter).per_rank_binding &&
                                  site.collectives.visibility_var == "CUDA_VISIBLE_DEVICES" && gpus_per_task == 1;
        launch += flux_narrows ? " -o gpu-affinity=per-task" : " -o gpu-affinity=off";
    }
    if (runs_in_container(site, stack)) {
        const ContainerCommand c = container_command(site, stack, wrapper_path(site, wrapper) + " \"$@\"", "job.flux");
        s += c.setup + launch + " " + c.command + "\n";
    } else {
        s += launch + " \"$RUNSCRIPTS/" + wrapper + "\" \"$@\"\n";
    }
    return s;
}

// submit: sbatch with the caller's arguments, after creating the directory of the [batch]
// output pattern. Slurm opens --output before the script runs, so the job cannot create it;
// a relative directory is created where sbatch runs (the job's working directory).
std::string submit_script(const Site& site, const Stack& stack) {
    const std::string dir = batch_output_directory(site);
    const char* submit = traits(site.site.scheduler).submit;
    std::string s = header("submit", stack, std::string(submit) + " with the same arguments, after creating " + dir +
                                                "/ for the job's output\n# (" + site.batch.output +
                                                "): Slurm opens it before the job starts. Relative to\n# the directory "
                                                "you submit from; with --chdir, create it there yourself.");
    s += "if [[ $# -eq 0 ]]; then\n"
         "  echo \"usage: submit [" + std::string(submit) + " OPTIONS...] JOB-SCRIPT [ARGS...], e.g. submit "
         "$(dirname \"${BASH_SOURCE[0]}\")/" + traits(site.site.scheduler).job_file + " train.py\" >&2\n"
         "  exit 2\n"
         "fi\n"
         "mkdir -p -- " + bash_word(dir) + "\n"
         "exec " + submit + " \"$@\"\n";
    return s;
}

// make-squashfs / unmake-squashfs (as LUMI's recipes ship them): pack the user-software
// tree the module binds at /user-software into one SquashFS file (many small files are slow
// on Lustre), or unpack it again to add packages. They find the stack from their own path.
std::string squashfs_script(const Site& site, const Stack& stack, bool make) {
    const std::string name = make ? "make-squashfs" : "unmake-squashfs";
    std::string s = header(name, stack, make ? "pack $CONTAINERROOT/user-software into user-software.squashfs,\n# which the module then mounts read-only at /user-software."
                                             : "unpack user-software.squashfs into $CONTAINERROOT/user-software\n# so that packages can be added again.");
    s += std::string("if [[ ") + traits(site.container.runtime).inside_test + " ]]; then\n"
         "  echo '" + name + ": run this outside the container' >&2\n"
         "  exit 1\n"
         "fi\n"
         "root=$(cd \"$(dirname \"${BASH_SOURCE[0]}\")/..\" && pwd)\n"
         "cd \"$root\"\n";
    if (make)
        s += "[[ -d user-software ]] || { echo \"make-squashfs: $root/user-software does not exist: nothing to pack\" >&2; exit 2; }\n"
             "[[ ! -e user-software.squashfs ]] || { echo \"make-squashfs: $root/user-software.squashfs exists; remove it first to rebuild it\" >&2; exit 3; }\n"
             "command -v mksquashfs >/dev/null || { echo 'make-squashfs: mksquashfs not found (squashfs-tools)' >&2; exit 4; }\n"
             "mksquashfs user-software user-software.squashfs -processors 1 -no-progress\n"
             "echo \"Created $root/user-software.squashfs. Reload the module to mount it read-only at\"\n"
             "echo \"/user-software; you may then remove $root/user-software.\"\n";
    else
        s += "[[ -f user-software.squashfs ]] || { echo \"unmake-squashfs: $root/user-software.squashfs does not exist\" >&2; exit 2; }\n"
             "[[ ! -e user-software ]] || { echo \"unmake-squashfs: $root/user-software exists; remove it first to unpack again\" >&2; exit 3; }\n"
             "command -v unsquashfs >/dev/null || { echo 'unmake-squashfs: unsquashfs not found (squashfs-tools)' >&2; exit 4; }\n"
             "unsquashfs -d user-software user-software.squashfs\n"
             "echo \"Created $root/user-software. Reload the module to mount it writable at /user-software;\"\n"
             "echo \"you may then remove $root/user-software.squashfs.\"\n";
    return s;
}

std::string start_shell(const Site& site, const Stack& stack) {
    std::string s = header("start-shell", stack, conda_venv_in_container(site, stack)
                                                     ? "a bash shell (or bash arguments, e.g. -c CMD) in the\n# container with the conda environment and venv active."
                                                 : traits(site.container.runtime).host_filesystem
                                                     ? "a bash shell (or bash arguments, e.g. -c CMD) with the\n# stack's image mounted and its view loaded."
                                                     : "a bash shell (or bash arguments, e.g. -c CMD) in the\n# container with the module's binds.");
    const ContainerCommand c = container_command(site, stack, "bash \"$@\"", "start-shell");
    s += std::string("if [[ ") + traits(site.container.runtime).inside_test + " ]]; then\n"
         "  exec bash \"$@\"\n"
         "fi\n"
         ": \"${SIF" + stack_ident(stack.name) + ":?load the " + stack.module_full_name() + " module first}\"\n" +
         c.setup + "exec " + c.command + "\n";
    return s;
}

std::string init_conda_venv(const Stack& stack) {
    const Python& py = stack.python;
    return "# init-conda-venv (" + stack.module_full_name() + "): source inside the container to activate\n"
           "# the conda environment and, on top of it, the venv in /user-software.\n"
           "# shellcheck shell=bash disable=SC1091\n"
           "source " + bash_word(py.conda_root + "/bin/activate") + " " + bash_word(py.conda_env) + "\n"
           "source " + bash_word(py.venv + "/bin/activate") + "\n";
}

std::string python_simple(const Stack& stack) {
    std::string s = header("conda-python-simple", stack, "python in the container's conda + venv environment.");
    s += container_activation();
    s += "exec python \"$@\"\n";
    return s;
}

}  // namespace

void check_runscript_values(const Site& site, Diagnostics& diags) {
    for (const auto& f : traits(site.site.scheduler).directives) {
        const std::string value = directive_text(site.batch, f).value_or("");
        const std::string path = std::string("batch.") + f.key;
        if (auto why = directive_problem(value, f.resource); !why.empty())
            diags.error(site.where(path), "'" + path + "' cannot be written into a " +
                                              traits(site.site.scheduler).directive +
                                              " directive: " + why);
        else if (f.convert && !value.empty() && f.convert(value).empty())
            diags.error(site.where(path), "'" + path + "' is '" + value + "', which " +
                                              traits(site.site.scheduler).submit + " cannot take",
                        "a time as [[D-]HH:]MM:SS, MM:SS or minutes, e.g. \"01:30:00\"");
    }
}

std::string batch_output_directory(const Site& site) {
    switch (site.site.scheduler) {
        case Scheduler::slurm: break;
        case Scheduler::flux: break;     // --output is opened by the job shell, before the program
        case Scheduler::pbs: return "";  // [batch] output is not a PBS directive
    }
    const std::string& out = site.batch.output;
    const auto slash = out.rfind('/');
    if (slash == std::string::npos) return "";
    return slash == 0 ? "" : out.substr(0, slash);  // "/x.out": the root exists
}

std::string rank_wrapper_name(const Site& site, const Stack& stack) {
    return conda_venv_in_container(site, stack) ? "conda-python-distributed" : "python-distributed";
}

void plan_runscripts(const Site& site, const Stack& stack, const PlanOptions& options,
                     std::vector<PlannedFile>& files) {
    auto add = [&](const std::string& rel, std::string text, bool exec) {
        files.push_back({rel, std::move(text), exec});
    };
    const std::string wrapper = rank_wrapper_name(site, stack);
    const std::string job = std::string("runscripts/") + traits(site.site.scheduler).job_file;
    switch (site.site.scheduler) {
        case Scheduler::slurm:
            add("runscripts/" + wrapper, slurm_wrapper(site, stack, wrapper), true);
            add("runscripts/get-master", get_master(stack), true);
            add(job, slurm_job(site, stack, options, wrapper), true);
            if (!batch_output_directory(site).empty()) add("runscripts/submit", submit_script(site, stack), true);
            break;
        case Scheduler::pbs:
            add("runscripts/" + wrapper, pbs_wrapper(site, stack, wrapper), true);
            add(job, pbs_job(site, stack, options, wrapper), true);
            break;
        case Scheduler::flux:
            add("runscripts/" + wrapper, flux_wrapper(site, stack, wrapper), true);
            add(job, flux_job(site, stack, options, wrapper), true);
            if (!batch_output_directory(site).empty()) add("runscripts/submit", submit_script(site, stack), true);
            break;
    }
    if (conda_venv_in_container(site, stack)) {
        add("runscripts/init-conda-venv", init_conda_venv(stack), false);
        add("runscripts/conda-python-simple", python_simple(stack), true);
    }
    if (runs_in_container(site, stack)) {
        add("bin/start-shell", start_shell(site, stack), true);
        // Packing user-software only helps where the runtime mounts a SquashFS file.
        if (traits(site.container.runtime).squashfs_binds) {
            add("bin/make-squashfs", squashfs_script(site, stack, true), true);
            add("bin/unmake-squashfs", squashfs_script(site, stack, false), true);
        }
    }
}

}  // namespace sitegen
