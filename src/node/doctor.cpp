// The node checks of `sitegen doctor`, one function per area, each finding at its TOML key.
#include "node/doctor.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

extern char** environ;

namespace sitegen {

namespace {

class DiskProbe : public NodeProbe {
public:
    explicit DiskProbe(std::string root) : root_(std::move(root)) {}
    std::string root() const override { return root_; }
    bool exists(const std::string& path) override {
        struct stat st;
        return ::stat(on_disk(path).c_str(), &st) == 0;
    }
    bool is_dir(const std::string& path) override {
        struct stat st;
        return ::stat(on_disk(path).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    }
    bool executable(const std::string& path) override {
        struct stat st;
        const std::string p = on_disk(path);
        return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
    }
    bool read_text(const std::string& path, std::string& text) override {
        std::ifstream in(on_disk(path), std::ios::binary);
        if (!in) return false;
        text.assign(65536, '\0');
        in.read(text.data(), static_cast<std::streamsize>(text.size()));
        text.resize(static_cast<size_t>(in.gcount()));
        return !in.bad();
    }
    int run(const std::vector<std::string>& argv, const std::vector<std::string>& env, std::string& output) override {
        output.clear();
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) {
            output = std::string("pipe: ") + std::strerror(errno);
            return -1;
        }
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
        posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
        std::vector<char*> args, envp;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
        envp.push_back(nullptr);
        pid_t pid = 0;
        const int rc = ::posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), envp.data());
        posix_spawn_file_actions_destroy(&actions);
        ::close(fds[1]);
        if (rc != 0) {
            ::close(fds[0]);
            output = "cannot run " + argv[0] + ": " + std::strerror(rc);
            return -1;
        }
        char buf[4096];
        for (;;) {
            const ssize_t n = ::read(fds[0], buf, sizeof buf);
            if (n > 0) {
                if (output.size() < (1u << 20)) output.append(buf, static_cast<size_t>(n));
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            break;
        }
        ::close(fds[0]);
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (WIFEXITED(status)) return WEXITSTATUS(status);
        output += "\n(killed by signal " + std::to_string(WTERMSIG(status)) + ")";
        return -1;
    }

private:
    std::string on_disk(const std::string& path) const {
        if (root_ == "/" || root_.empty()) return path;
        return root_ + (path.empty() || path[0] != '/' ? "/" : "") + path;
    }
    std::string root_;
};

std::string plural(size_t n, const std::string& word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string plural(size_t n, const std::string& one, const std::string& many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
    return s;
}

std::string last_line(const std::string& output) {
    const std::string t = trim(output);
    const size_t nl = t.rfind('\n');
    return nl == std::string::npos ? t : t.substr(nl + 1);
}

// The last few lines of a program's output, for a note.
std::string tail(const std::string& output) {
    std::string t = trim(output);
    size_t start = t.size();
    for (int lines = 0; start > 0 && lines < 3; --start)
        if (t[start - 1] == '\n') ++lines;
    t = t.substr(start);
    if (t.size() > 400) t = "..." + t.substr(t.size() - 400);
    return t;
}

// The first run of digits and dots that holds a dot ("535.104.05" in NVIDIA's version line).
std::string driver_version(const std::string& text) {
    for (size_t i = 0; i < text.size(); ++i) {
        if (!std::isdigit(static_cast<unsigned char>(text[i]))) continue;
        size_t j = i;
        while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.')) ++j;
        std::string run = text.substr(i, j - i);
        while (!run.empty() && run.back() == '.') run.pop_back();
        if (run.find('.') != std::string::npos) return run;
        i = j;
    }
    return "";
}

// Number by number, missing trailing numbers 0 ("535.104.05" < "535.129.3").
bool version_older(const std::string& version, const std::string& minimum) {
    auto numbers = [](const std::string& v) {
        std::vector<unsigned long long> out;
        std::string n;
        for (char c : v + ".") {
            if (std::isdigit(static_cast<unsigned char>(c))) n += c;
            else if (!n.empty()) out.push_back(std::stoull(n.substr(0, 18))), n.clear();
        }
        return out;
    };
    auto a = numbers(version), b = numbers(minimum);
    a.resize(std::max(a.size(), b.size()));
    b.resize(a.size());
    return a < b;
}

bool is_subset(const std::vector<int>& small, const std::vector<int>& big) {
    return std::all_of(small.begin(), small.end(),
                       [&](int c) { return std::find(big.begin(), big.end(), c) != big.end(); });
}

std::string near_text(const Locality& l) {
    std::string s = "cores " + format_core_ranges(l.cores);
    if (!l.numa.empty()) {
        s += l.numa.size() == 1 ? " (NUMA node " : " (NUMA nodes ";
        for (size_t i = 0; i < l.numa.size(); ++i) s += (i ? "," : "") + std::to_string(l.numa[i]);
        s += ")";
    }
    return s + ", under " + l.object;
}

struct Doctor {
    const Site& site;
    const NodeTopology& topo;
    const DoctorOptions& options;
    NodeProbe& probe;
    Diagnostics& diags;
    std::vector<std::string>& checked;

    std::string node() const { return topo.source == "this node" ? topo.source : "the node of " + topo.source; }

    std::string on_node(const std::string& path) const {
        return probe.root() == "/" ? path : path + " (under " + probe.root() + ")";
    }

    void hardware() {
        const Hardware& hw = site.hardware;
        const std::string where_from = std::to_string(topo.packages) + (topo.packages == 1 ? " package, " : " packages, ") +
                                       plural(static_cast<size_t>(topo.numa_nodes), "NUMA node") + " (" + topo.source + ")";
        if (hw.cores_per_node != topo.cores())
            diags.error(site.where("hardware.cores_per_node"),
                        "'cores_per_node' is " + std::to_string(hw.cores_per_node) + " but " + node() + " has " +
                            plural(static_cast<size_t>(topo.cores()), "core"),
                        "hwloc: " + plural(static_cast<size_t>(topo.cores()), "core") + " (" +
                            format_core_ranges(topo.core_ids) + ") in " + where_from);
        if (topo.threads_per_core > 0 && hw.threads_per_core != topo.threads_per_core)
            diags.error(site.where("hardware.threads_per_core"),
                        "'threads_per_core' is " + std::to_string(hw.threads_per_core) + " but " + node() + " has " +
                            std::to_string(topo.threads_per_core) + " hardware threads per core",
                        "hwloc: " + std::to_string(topo.pus) + " PUs on " + plural(static_cast<size_t>(topo.cores()), "core"));
        const size_t ngpus = topo.gpus.size();
        std::string found = ngpus == 0 ? std::string("hwloc finds no GPU (a PCI display controller of NVIDIA, AMD or Intel)")
                                       : "hwloc finds " + plural(ngpus, to_string(topology_gpu_vendor(topo)) + " GPU") +
                                             ": " + gpu_names(topo);
        if (hw.devices_per_node != static_cast<int>(ngpus))
            diags.error(site.where("hardware.devices_per_node"),
                        "'devices_per_node' is " + std::to_string(hw.devices_per_node) + " but " + node() + " has " +
                            plural(ngpus, "GPU"),
                        found);
        if (ngpus > 0 && hw.gpu_vendor != topology_gpu_vendor(topo))
            diags.error(site.where("hardware.gpu_vendor"),
                        "'gpu_vendor' is '" + to_string(hw.gpu_vendor) + "' but the GPUs of " + node() + " are " +
                            to_string(topology_gpu_vendor(topo)) + "'s",
                        found);
        // Each device's cores must lie in its locality (the site may choose a part of it).
        size_t compared = 0;
        if (hw.device_cores.size() == ngpus) {
            const auto suggested = suggested_device_cores(topo);
            for (size_t i = 0; i < ngpus; ++i) {
                const auto& gpu = topo.gpus[i];
                ++compared;
                if (is_subset(hw.device_cores[i], gpu.locality.cores)) continue;
                diags.error(site.where("hardware.device_cores." + std::to_string(i)),
                            "device " + std::to_string(i) + " is listed with cores " + format_core_ranges(hw.device_cores[i]) +
                                ", but on " + node() + " it is near " + format_core_ranges(gpu.locality.cores),
                            "hwloc: device " + std::to_string(i) + " is " + gpu.name + " (PCI " + gpu.pci_busid + "), near " +
                                near_text(gpu.locality) + "; `sitegen topology import` suggests \"" +
                                format_core_ranges(suggested[i]) + "\"");
            }
        }
        // Each device's NUMA node (binding style numa) must be the one import suggests.
        if (hw.device_numa.size() == ngpus) {
            const auto numa = suggested_device_numa(topo);
            for (size_t i = 0; i < ngpus; ++i)
                if (numa[i] >= 0 && hw.device_numa[i] != numa[i])
                    diags.error(site.where("hardware.device_numa." + std::to_string(i)),
                                "device " + std::to_string(i) + " is listed on NUMA node " + std::to_string(hw.device_numa[i]) +
                                    ", but on " + node() + " its nearest cores are on NUMA node " + std::to_string(numa[i]),
                                "`sitegen topology import` suggests device_numa[" + std::to_string(i) + "] = " +
                                    std::to_string(numa[i]));
        }
        size_t reserved_ok = 0;
        for (size_t i = 0; i < hw.reserved_cores.size(); ++i) {
            const int c = hw.reserved_cores[i];
            if (std::find(topo.core_ids.begin(), topo.core_ids.end(), c) != topo.core_ids.end()) {
                ++reserved_ok;
                continue;
            }
            diags.error(site.where("hardware.reserved_cores." + std::to_string(i)),
                        "reserved core " + std::to_string(c) + " is not a core of " + node(),
                        "hwloc: cores " + format_core_ranges(topo.core_ids) +
                            " (a core's id is the OS index of its first hardware thread)");
        }
        std::string line = "hardware: " + plural(static_cast<size_t>(topo.cores()), "core") + " x " +
                           plural(static_cast<size_t>(topo.threads_per_core), "thread") + ", " + plural(ngpus, "GPU");
        if (compared > 0) line += " and their nearest cores";
        if (!hw.reserved_cores.empty()) line += ", " + plural(hw.reserved_cores.size(), "reserved core");
        checked.push_back(line);
    }

    // Loopback is on every Linux node, and hwloc lists PCI interfaces only.
    bool interface_exists(const std::string& name) {
        if (name == "lo") return true;
        for (const auto& n : topo.nics)
            if (n.name == name) return true;
        return probe.exists("/sys/class/net/" + name);
    }

    // NCCL/Gloo socket interface lists: "hsn0,hsn1", "^docker,lo" (exclusions), "=eth0"
    // (exact), otherwise each item is a prefix of interface names.
    bool interface_prefix_exists(const std::string& prefix) {
        if (std::string("lo").rfind(prefix, 0) == 0) return true;
        for (const auto& n : topo.nics)
            if (n.name.rfind(prefix, 0) == 0) return true;
        if (probe.is_dir("/sys/class/net")) {
            std::error_code ec;
            const std::string dir = probe.root() == "/" ? "/sys/class/net" : probe.root() + "/sys/class/net";
            for (const auto& e : std::filesystem::directory_iterator(dir, ec))
                if (e.path().filename().string().rfind(prefix, 0) == 0) return true;
        }
        return false;
    }

    void check_ifname_list(const std::string& path, const std::string& var, const std::string& value) {
        if (value.empty() || value[0] == '^') return;
        const bool exact = value[0] == '=';
        const std::string list = exact ? value.substr(1) : value;
        size_t start = 0;
        while (start <= list.size()) {
            size_t comma = list.find(',', start);
            const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
            if (!item.empty() && !(exact ? interface_exists(item) : interface_prefix_exists(item)))
                diags.error(site.where(path),
                            var + " names network interface '" + item + "', which " + node() + " does not have",
                            "hwloc's NICs: " + nic_list() + (probe.root() == "/" ? "; nor is it in /sys/class/net" : ""));
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
    }

    std::string nic_list() const {
        std::string s;
        for (const auto& n : topo.nics) s += (s.empty() ? "" : ", ") + n.name;
        return s.empty() ? "none" : s;
    }

    void network() {
        const Hardware& hw = site.hardware;
        for (size_t i = 0; i < hw.nics.size(); ++i)
            if (!interface_exists(hw.nics[i]))
                diags.error(site.where("hardware.nics." + std::to_string(i)),
                            "NIC '" + hw.nics[i] + "' does not exist on " + node(),
                            "hwloc's NICs: " + nic_list() + (probe.root() == "/" ? "; nor is it in /sys/class/net" : ""));
        size_t lists = 0;
        auto socket_list = [](const std::string& name) {
            return name == "NCCL_SOCKET_IFNAME" || name == "GLOO_SOCKET_IFNAME" || name == "TP_SOCKET_IFNAME";
        };
        auto scan = [&](const EnvList& env, const std::string& prefix) {
            for (const auto& [k, v] : env)
                if (socket_list(k)) {
                    ++lists;
                    check_ifname_list(prefix + k, k, v);
                }
        };
        scan(site.collectives.env, "collectives.env.");
        // The profiles the site selects, and those they extend.
        for (size_t p : profile_order(site)) {
            const Profile& profile = site.profiles[p];
            for (size_t v = 0; v < profile.vars.size(); ++v) {
                const ProfileVar& var = profile.vars[v];
                if (socket_list(var.name)) {
                    ++lists;
                    check_ifname_list("profiles." + std::to_string(p) + ".vars." + std::to_string(v) + ".value", var.name,
                                      var.value);
                }
            }
        }
        for (size_t s = 0; s < site.stacks.size(); ++s) scan(site.stacks[s].env, "stacks." + std::to_string(s) + ".env.");
        checked.push_back("network: " + plural(hw.nics.size(), "NIC") + ", " + plural(lists, "socket interface list"));
    }

    void container() {
        if (!site.container.enabled) return;
        const auto& c = site.container;
        for (size_t i = 0; i < c.binds.size(); ++i)
            if (!probe.exists(c.binds[i].host))
                diags.error(site.where("container.binds." + std::to_string(i) + ".host"),
                            "bind path '" + c.binds[i].host + "' does not exist on " + node(),
                            "checked " + on_node(c.binds[i].host) + "; the container runtime refuses to bind a missing path");
        size_t images = 0, named = 0;
        for (size_t s = 0; s < site.stacks.size(); ++s) {
            const Stack& stack = site.stacks[s];
            if (stack.image.empty()) continue;
            switch (options.stacks.size() > s ? options.stacks[s].image : StackImage::by_layout) {
                case StackImage::by_layout:
                    if (stack.python.layout != PythonLayout::container_venv) continue;
                    break;
                case StackImage::none: continue;
                case StackImage::file: break;
                case StackImage::named: ++named; continue;  // in the runtime's store, not a file
            }
            ++images;
            const std::string in_stack = options.stacks.size() > s ? options.stacks[s].install_dir + "/" + stack.image : "";
            const std::string in_dir = c.image_dir + "/" + stack.image;
            if ((!in_stack.empty() && probe.exists(in_stack)) || probe.exists(in_dir)) continue;
            diags.error(site.where("stacks." + std::to_string(s) + ".image"),
                        "image '" + stack.image + "' of stack '" + stack.module_full_name() + "' is missing on " + node(),
                        "the module looks for it in " + on_node(in_stack.empty() ? in_dir : in_stack + " and " + in_dir));
        }
        checked.push_back("container: " + plural(c.binds.size(), "bind path") + ", " + plural(images, "image") +
                          (named ? ", " + plural(named, "named image") + " (the runtime's own, not files: not checked)" : ""));
    }

    // The network plugin's library in its host directory, under a name NCCL/RCCL load: the
    // default libnccl-net.so / librccl-net.so or its -ofi variant (NCCL_NET_PLUGIN=ofi):
    // https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-net-plugin
    void network_plugin() {
        const Collectives& c = site.collectives;
        if (c.network_plugin_path.empty()) return;
        if (c.network_plugin_in_image) {
            checked.push_back("network plugin: in the image (not checked)");
            return;
        }
        std::vector<std::string> names = {"libnccl-net.so", "libnccl-net-ofi.so"};
        if (c.library == CollectiveLib::rccl) names.insert(names.begin(), {"librccl-net.so", "librccl-net-ofi.so"});
        std::string tried;
        for (const auto& n : names) {
            if (probe.exists(c.network_plugin_path + "/" + n)) {
                checked.push_back("network plugin: " + c.network_plugin_path + "/" + n);
                return;
            }
            tried += (tried.empty() ? "" : ", ") + n;
        }
        diags.error(site.where("collectives.network_plugin_path"),
                    "network plugin directory '" + c.network_plugin_path + "' holds no plugin library on " + node(),
                    "looked in " + on_node(c.network_plugin_path) + " for " + tried);
        checked.push_back("network plugin: missing");
    }

    void modules() {
        std::vector<std::pair<std::string, std::string>> wanted;  // path, module
        for (size_t i = 0; i < site.site.base_modules.size(); ++i)
            wanted.emplace_back("site.base_modules." + std::to_string(i), site.site.base_modules[i]);
        for (size_t s = 0; s < site.stacks.size(); ++s)
            for (size_t i = 0; i < site.stacks[s].base_modules.size(); ++i)
                wanted.emplace_back("stacks." + std::to_string(s) + ".base_modules." + std::to_string(i),
                                    site.stacks[s].base_modules[i]);
        if (wanted.empty()) return;
        if (options.lmod.empty()) {
            diags.error(site.where(wanted.front().first), "cannot check the base modules: Lmod is not installed here",
                        "neither $LMOD_CMD nor /usr/share/lmod/lmod/libexec/lmod is an executable");
            return;
        }
        std::string modulepath;
        for (const auto& dir : options.modulepath) {
            const std::string d = probe.root() == "/" ? dir : probe.root() + dir;
            modulepath += (modulepath.empty() ? "" : ":") + d;
        }
        const char* home = std::getenv("HOME");
        const std::vector<std::string> env = {"PATH=/usr/bin:/bin", "MODULEPATH=" + modulepath,
                                              std::string("HOME=") + (home ? home : "/tmp"), "LMOD_REDIRECT=no"};
        std::map<std::string, std::pair<int, std::string>> seen;
        for (const auto& [path, module] : wanted) {
            auto it = seen.find(module);
            if (it == seen.end()) {
                std::string output;
                const int rc = probe.run({options.lmod, "bash", "is-avail", module}, env, output);
                it = seen.emplace(module, std::make_pair(rc, output)).first;
            }
            const auto& [rc, output] = it->second;
            if (rc == 0) continue;
            // `lmod bash is-avail NAME` exits 0 when NAME is available, else prints "false".
            if (rc < 0 || last_line(output) != "false")
                diags.error(site.where(path), "cannot ask Lmod for base module '" + module + "'",
                            options.lmod + " bash is-avail " + module + ": exit " + std::to_string(rc) + ": " + tail(output));
            else
                diags.error(site.where(path), "base module '" + module + "' is not available: Lmod cannot find it",
                            "MODULEPATH=" + (modulepath.empty() ? std::string("(empty)") : modulepath));
        }
        checked.push_back("modules: " + plural(seen.size(), "base module") + " (Lmod, " +
                          plural(options.modulepath.size(), "module directory", "module directories") + ")");
    }

    // The interpreter a stack runs outside a container: the one the site names, else the
    // conda env's (frameworks module, conda env) when it is a path.
    void python() {
        std::set<std::string> done;
        for (size_t s = 0; s < site.stacks.size(); ++s) {
            const Stack& stack = site.stacks[s];
            const Python& py = stack.python;
            // Interpreters inside an image are not the host's to check.
            if (py.layout == PythonLayout::container_venv || py.layout == PythonLayout::container_system_venv) continue;
            const std::string sp = "stacks." + std::to_string(s) + ".python.";
            std::string exe, path;
            if (!py.interpreter.empty()) {
                exe = py.interpreter;
                path = site.regions.count(sp + "interpreter") ? sp + "interpreter" : "python.interpreter";
            } else if (!py.conda_env.empty() && py.conda_env[0] == '/') {
                exe = py.conda_env + "/bin/python";
                path = site.regions.count(sp + "conda_env") ? sp + "conda_env" : "python.conda_env";
            } else {
                continue;  // python comes from the base modules or the PATH
            }
            if (!done.insert(exe).second) continue;
            if (!probe.executable(exe)) {
                diags.error(site.where(path), "the python of stack '" + stack.module_full_name() + "', " + exe +
                                                  ", is not an executable file on " + node(),
                            "checked " + on_node(exe));
                continue;
            }
            if (!options.run_programs) {
                checked.push_back("python: " + exe + " exists (not run: --root is another file system)");
                continue;
            }
            std::string output;
            const int rc = probe.run({exe, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"},
                                     {"PATH=/usr/bin:/bin"}, output);
            const std::string version = trim(output);
            const std::string want = py.version;
            const bool match = rc == 0 && (version == want || version.rfind(want + ".", 0) == 0);
            if (rc != 0)
                diags.error(site.where(path), "the python of stack '" + stack.module_full_name() + "', " + exe + ", does not run",
                            "exit " + std::to_string(rc) + ": " + tail(output));
            else if (!match)
                diags.error(site.where(site.regions.count(sp + "version") ? sp + "version" : "python.version"),
                            "python version is '" + want + "' but " + exe + " on " + node() + " is " + version);
            else
                checked.push_back("python: " + exe + " " + version);
        }
    }

    // Each stack's min_driver against the node's GPU driver, as its module's gate compares them
    // when loaded (plan/module.cpp): the first run of digits and dots with a dot in the file.
    void driver() {
        std::vector<size_t> gated;
        for (size_t s = 0; s < site.stacks.size(); ++s)
            if (!site.stacks[s].min_driver.empty()) gated.push_back(s);
        if (gated.empty() || options.driver_version_file.empty()) return;
        const std::string& file = options.driver_version_file;
        std::string text;
        if (!probe.read_text(file, text)) {
            checked.push_back("driver: " + on_node(file) + " not found (no " + options.driver + " on this node): " +
                              plural(gated.size(), "stack minimum") + " not checked");
            return;
        }
        const std::string found = driver_version(text);
        if (found.empty()) {
            diags.error(site.where("stacks." + std::to_string(gated.front()) + ".min_driver"),
                        "cannot check the GPU driver: " + on_node(file) + " holds no version");
            return;
        }
        size_t older_than = 0;
        for (size_t s : gated) {
            const Stack& stack = site.stacks[s];
            if (!version_older(found, stack.min_driver)) continue;
            ++older_than;
            diags.error(site.where("stacks." + std::to_string(s) + ".min_driver"),
                        "stack '" + stack.module_full_name() + "' needs the " + options.driver + " " + stack.min_driver +
                            " or newer, but " + node() + " has " + found + ", read from " + on_node(file) + ": its module " +
                            (site.hardware.driver_gate == DriverGate::warn ? "warns" : "refuses to load") + " here",
                        "update the node's driver, or lower min_driver if the stack works with " + found);
        }
        checked.push_back("driver: " + options.driver + " " + found + ", " +
                          std::to_string(gated.size() - older_than) + " of " + plural(gated.size(), "stack minimum") + " met");
    }

    void deployed() {
        size_t present = 0;
        for (size_t s = 0; s < site.stacks.size() && s < options.stacks.size(); ++s) {
            const auto& d = options.stacks[s];
            const std::string path = "stacks." + std::to_string(s);
            if (!probe.is_dir(d.install_dir)) {
                diags.warning(site.where(path), "stack '" + site.stacks[s].module_full_name() + "' is not deployed on " +
                                                    node() + ": " + on_node(d.install_dir) + " does not exist",
                              "sitegen build " + site.site.name + ", then copy modules-out/" + site.site.name +
                                  "/ to the install prefix");
                continue;
            }
            if (!probe.exists(d.modulefile)) {
                diags.warning(site.where(path), "stack '" + site.stacks[s].module_full_name() + "' has no modulefile on " +
                                                    node() + ": " + on_node(d.modulefile) + " does not exist");
                continue;
            }
            ++present;
        }
        checked.push_back("stacks: " + std::to_string(present) + " of " + std::to_string(site.stacks.size()) + " deployed");
    }
};

}  // namespace

std::unique_ptr<NodeProbe> make_node_probe(const std::string& root) { return std::make_unique<DiskProbe>(root); }

std::string find_lmod() {
    const char* from_env = std::getenv("LMOD_CMD");
    for (const char* candidate : {from_env, static_cast<const char*>("/usr/share/lmod/lmod/libexec/lmod")}) {
        if (!candidate || candidate[0] != '/') continue;
        struct stat st;
        if (::stat(candidate, &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate, X_OK) == 0) return candidate;
    }
    return "";
}

void doctor(const Site& site, const NodeTopology& topo, const DoctorOptions& options, NodeProbe& probe,
            Diagnostics& diags, std::vector<std::string>& checked) {
    Doctor d{site, topo, options, probe, diags, checked};
    d.hardware();
    d.network();
    d.container();
    d.network_plugin();
    d.modules();
    d.python();
    d.driver();
    d.deployed();
}

}  // namespace sitegen
