// Reads a node's topology with the hwloc library and writes the [hardware] table from it.
#include "node/hwloc_topology.h"

#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <tuple>

#include "text/quote.h"

namespace sitegen {

namespace {

struct TopologyDeleter {
    void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

constexpr unsigned kVendorNvidia = 0x10de, kVendorAmd = 0x1002, kVendorIntel = 0x8086;
constexpr unsigned kVendorHpeCray = 0x17db;  // Cassini (Slingshot) NICs

std::string info(hwloc_obj_t obj, const char* name) {
    const char* v = hwloc_obj_get_info_by_name(obj, name);
    return v ? v : "";
}

std::string busid(hwloc_obj_t pci) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
                  pci->attr->pcidev.dev, pci->attr->pcidev.func);
    return buf;
}

// "Group0 L#3", "Package P#0", "Machine".
std::string describe(hwloc_obj_t obj) {
    char type[64];
    hwloc_obj_type_snprintf(type, sizeof type, obj, 0);
    std::string out = type;
    if (obj->type == HWLOC_OBJ_MACHINE) return out;
    if (obj->os_index != HWLOC_UNKNOWN_INDEX && obj->type != HWLOC_OBJ_GROUP)
        out += " P#" + std::to_string(obj->os_index);
    else
        out += " L#" + std::to_string(obj->logical_index);
    return out;
}

GpuVendor vendor_of(unsigned vendor_id) {
    switch (vendor_id) {
        case kVendorNvidia: return GpuVendor::nvidia;
        case kVendorAmd: return GpuVendor::amd;
        case kVendorIntel: return GpuVendor::intel;
    }
    return GpuVendor::none;
}

// The I/O children of an object (PCI devices, bridges, OS devices).
std::vector<hwloc_obj_t> io_children(hwloc_obj_t obj) {
    std::vector<hwloc_obj_t> out;
    for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling) out.push_back(c);
    return out;
}

// The runtime index an OS device name carries ("cuda1", "rsmi3", "nvml0", "ze2"), or -1.
int runtime_index(const std::string& name) {
    for (const char* prefix : {"cuda", "rsmi", "nvml", "ze"}) {
        const size_t n = std::strlen(prefix);
        if (name.size() <= n || name.compare(0, n, prefix) != 0) continue;
        if (name.size() - n > 6) continue;
        if (!std::all_of(name.begin() + static_cast<long>(n), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
            continue;
        return std::stoi(name.substr(n));
    }
    return -1;
}

struct Loader {
    hwloc_topology_t topo;
    NodeTopology& out;
    std::map<int, int> core_of_pu;  // PU os index -> core id

    std::vector<int> cores_in(hwloc_const_cpuset_t set) const {
        std::vector<int> cores;
        for (int c : out.core_ids) {
            auto it = core_of_pu.find(c);
            if (it != core_of_pu.end() && hwloc_bitmap_isset(set, static_cast<unsigned>(c))) cores.push_back(c);
        }
        return cores;
    }

    Locality locality_of(hwloc_obj_t io) const {
        Locality l;
        hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, io);
        if (!anc || !anc->cpuset) return l;
        l.cores = cores_in(anc->cpuset);
        l.object = describe(anc);
        const int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
        for (int i = 0; i < n; ++i) {
            hwloc_obj_t numa = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
            if (numa->cpuset && hwloc_bitmap_intersects(numa->cpuset, anc->cpuset) &&
                !hwloc_bitmap_iszero(numa->cpuset))
                l.numa.push_back(static_cast<int>(numa->os_index));
        }
        std::sort(l.numa.begin(), l.numa.end());
        return l;
    }

    void cpus() {
        out.packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
        out.pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
        const int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        // Without Core objects (some virtual machines) every PU is a core.
        const hwloc_obj_type_t core_type = ncores > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
        const int n = ncores > 0 ? ncores : out.pus;
        int threads = -1;
        for (int i = 0; i < n; ++i) {
            hwloc_obj_t core = hwloc_get_obj_by_type(topo, core_type, static_cast<unsigned>(i));
            if (!core->cpuset || hwloc_bitmap_iszero(core->cpuset)) continue;
            const int id = hwloc_bitmap_first(core->cpuset);
            out.core_ids.push_back(id);
            unsigned pu;
            hwloc_bitmap_foreach_begin(pu, core->cpuset) core_of_pu[static_cast<int>(pu)] = id;
            hwloc_bitmap_foreach_end();
            const int w = hwloc_bitmap_weight(core->cpuset);
            threads = threads == -1 ? w : (threads == w ? threads : 0);
        }
        std::sort(out.core_ids.begin(), out.core_ids.end());
        out.threads_per_core = threads < 0 ? 0 : threads;
        const int nnuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
        out.numa_nodes = nnuma;
        std::vector<std::pair<int, std::vector<int>>> numa;
        for (int i = 0; i < nnuma; ++i) {
            hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
            numa.emplace_back(static_cast<int>(node->os_index), node->cpuset ? cores_in(node->cpuset) : std::vector<int>{});
        }
        std::sort(numa.begin(), numa.end());
        for (auto& [os, cores] : numa) {
            out.numa_os_index.push_back(os);
            out.numa_cores.push_back(std::move(cores));
        }
    }

    void gpus() {
        struct Found {
            int index;  // runtime index, or a large number when unknown
            std::tuple<unsigned, unsigned, unsigned, unsigned> bus;
            std::vector<TopologyGpu> devices;  // one, or one per tile
        };
        std::vector<Found> found;
        for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci; pci = hwloc_get_next_pcidev(topo, pci)) {
            const auto& a = pci->attr->pcidev;
            const GpuVendor vendor = vendor_of(a.vendor_id);
            if ((a.class_id >> 8) != 0x03 || vendor == GpuVendor::none) continue;
            TopologyGpu gpu;
            gpu.vendor = vendor;
            gpu.pci_busid = busid(pci);
            gpu.vendor_id = a.vendor_id;
            gpu.device_id = a.device_id;
            gpu.class_id = a.class_id;
            gpu.model = info(pci, "PCIDevice");
            gpu.locality = locality_of(pci);
            int index = -1;
            hwloc_obj_t level_zero = nullptr;
            for (hwloc_obj_t os : io_children(pci)) {
                if (os->type != HWLOC_OBJ_OS_DEVICE || !os->name) continue;
                const int i = runtime_index(os->name);
                if (i < 0) continue;
                if (index < 0) {
                    index = i;
                    gpu.name = os->name;
                }
                for (const char* key : {"GPUModel", "LevelZeroDeviceName"})
                    if (!info(os, key).empty()) gpu.model = info(os, key);
                if (std::string(os->name).rfind("ze", 0) == 0) level_zero = os;
            }
            // An integrated VGA controller of Intel's is not a compute GPU; its PVC and Arc
            // cards are class 0x0380 or come with a Level Zero device.
            if (vendor == GpuVendor::intel && a.class_id == 0x0300 && !level_zero) continue;
            if (gpu.name.empty()) gpu.name = gpu.pci_busid;
            Found f{index < 0 ? 1 << 30 : index, {a.domain, a.bus, a.dev, a.func}, {}};
            // Level Zero subdevices (tiles): child OS devices, else the subdevice count.
            std::vector<std::string> tiles;
            if (level_zero) {
                for (hwloc_obj_t sub : io_children(level_zero))
                    if (sub->type == HWLOC_OBJ_OS_DEVICE && sub->name) tiles.push_back(sub->name);
                const std::string count = info(level_zero, "LevelZeroSubdevices");
                if (tiles.empty() && !count.empty() && count.size() < 4 &&
                    std::all_of(count.begin(), count.end(), [](char c) { return c >= '0' && c <= '9'; }))
                    for (int t = 0; t < std::stoi(count); ++t) tiles.push_back(gpu.name + "." + std::to_string(t));
            }
            if (tiles.size() > 1) {
                for (const auto& tile : tiles) {
                    TopologyGpu t = gpu;
                    t.name = tile;
                    f.devices.push_back(std::move(t));
                }
            } else {
                f.devices.push_back(std::move(gpu));
            }
            found.push_back(std::move(f));
        }
        std::stable_sort(found.begin(), found.end(),
                         [](const Found& x, const Found& y) { return std::tie(x.index, x.bus) < std::tie(y.index, y.bus); });
        for (auto& f : found)
            for (auto& d : f.devices) out.gpus.push_back(std::move(d));
    }

    void nics() {
        for (hwloc_obj_t pci = hwloc_get_next_pcidev(topo, nullptr); pci; pci = hwloc_get_next_pcidev(topo, pci)) {
            std::vector<hwloc_obj_t> nets;
            std::string rdma;
            for (hwloc_obj_t os : io_children(pci)) {
                if (os->type != HWLOC_OBJ_OS_DEVICE || !os->name) continue;
                if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) nets.push_back(os);
                if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) rdma = os->name;
            }
            const auto& a = pci->attr->pcidev;
            for (hwloc_obj_t os : nets) {
                TopologyNic nic;
                nic.name = os->name;
                nic.pci_busid = busid(pci);
                nic.vendor_id = a.vendor_id;
                nic.device_id = a.device_id;
                nic.class_id = a.class_id;
                nic.link_gbytes = a.linkspeed;
                nic.model = info(pci, "PCIDevice");
                nic.locality = locality_of(pci);
                char speed[32];
                std::snprintf(speed, sizeof speed, "%.2f GB/s", static_cast<double>(a.linkspeed));
                if (a.vendor_id == kVendorHpeCray) {
                    nic.high_speed = true;
                    nic.why = "HPE Slingshot (Cassini)";
                } else if (a.class_id == 0x0207) {
                    nic.high_speed = true;
                    nic.why = "InfiniBand";
                } else if (!rdma.empty()) {
                    nic.high_speed = true;
                    nic.why = "RDMA device " + rdma;
                } else if (a.linkspeed >= 10.0f) {
                    nic.high_speed = true;
                    nic.why = std::string("PCI link ") + speed;
                } else {
                    // hwloc reads 0 where the link reports no speed (a virtio NIC in a VM).
                    nic.why = (a.linkspeed > 0.0f ? std::string("PCI link ") + speed : std::string("PCI link speed unknown")) +
                              ", no RDMA device: not a high-speed NIC";
                }
                out.nics.push_back(std::move(nic));
            }
        }
        std::stable_sort(out.nics.begin(), out.nics.end(),
                         [](const TopologyNic& x, const TopologyNic& y) { return x.pci_busid < y.pci_busid; });
    }
};

// Text for a TOML comment: printable ASCII only, one line, at most 100 bytes.
std::string comment_text(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (out.size() >= 100) break;
        out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
    }
    return out;
}

// A TOML basic string whose value is exactly `s` (invalid UTF-8 becomes '?').
std::string toml_string(const std::string& s) {
    std::string text = s;
    if (!is_valid_utf8_without_nul(text))
        for (auto& c : text)
            if (static_cast<unsigned char>(c) >= 0x80 || c == '\0') c = '?';
    std::string out = "\"";
    for (unsigned char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

std::string near(const Locality& l) {
    std::string s = "near cores " + (l.cores.empty() ? std::string("(none)") : format_core_ranges(l.cores));
    if (!l.numa.empty()) {
        s += l.numa.size() == 1 ? " (NUMA node " : " (NUMA nodes ";
        for (size_t i = 0; i < l.numa.size(); ++i) s += (i ? "," : "") + std::to_string(l.numa[i]);
        s += ")";
    }
    return s + ", under " + l.object;
}

std::string hex4(unsigned v) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%04x", v);
    return buf;
}

}  // namespace

bool load_hwloc_topology(const std::string& xml_path, NodeTopology& out, std::string& error) {
    out = NodeTopology{};
    if (!xml_path.empty()) {
        std::ifstream probe(xml_path, std::ios::binary);
        if (!probe) {
            error = "cannot read '" + xml_path + "': " + std::strerror(errno);
            return false;
        }
    }
    hwloc_topology_t raw = nullptr;
    if (hwloc_topology_init(&raw) != 0) {
        error = std::string("hwloc_topology_init failed: ") + std::strerror(errno);
        return false;
    }
    TopologyPtr topo(raw);
    // GPUs and NICs are I/O objects, which hwloc drops unless asked to keep them.
    hwloc_topology_set_io_types_filter(raw, xml_path.empty() ? HWLOC_TYPE_FILTER_KEEP_IMPORTANT
                                                             : HWLOC_TYPE_FILTER_KEEP_ALL);
    if (!xml_path.empty() && hwloc_topology_set_xml(raw, xml_path.c_str()) != 0) {
        error = "hwloc cannot read '" + xml_path + "' as XML: " + std::strerror(errno);
        return false;
    }
    if (hwloc_topology_load(raw) != 0) {
        error = (xml_path.empty() ? std::string("hwloc cannot read this node's topology")
                                  : "hwloc cannot load '" + xml_path + "' (is it `lstopo --of xml` output?)") +
                ": " + std::strerror(errno);
        return false;
    }
    out.source = xml_path.empty() ? "this node" : xml_path;
    hwloc_obj_t root = hwloc_get_root_obj(raw);
    out.hostname = info(root, "HostName");
    out.hwloc_version = HWLOC_VERSION;
    out.written_by = info(root, "hwlocVersion");
    Loader l{raw, out, {}};
    l.cpus();
    if (out.core_ids.empty()) {
        error = "'" + out.source + "' describes no cores";
        return false;
    }
    l.gpus();
    l.nics();
    return true;
}

std::vector<std::vector<int>> suggested_device_cores(const NodeTopology& topo) {
    std::vector<std::vector<int>> out;
    for (size_t i = 0; i < topo.gpus.size(); ++i) {
        const auto& mine = topo.gpus[i].locality.cores;
        size_t position = 0, sharing = 0;
        for (size_t j = 0; j < topo.gpus.size(); ++j) {
            if (topo.gpus[j].locality.cores != mine) continue;
            if (j < i) ++position;
            ++sharing;
        }
        const size_t per = mine.size() / sharing;
        if (per == 0) {
            out.push_back(mine);
            continue;
        }
        out.emplace_back(mine.begin() + static_cast<long>(position * per),
                         mine.begin() + static_cast<long>((position + 1) * per));
    }
    return out;
}

std::vector<int> suggested_device_numa(const NodeTopology& topo) {
    std::vector<int> out;
    const auto cores = suggested_device_cores(topo);
    for (const auto& mine : cores) {
        int best = -1;
        size_t best_count = 0;
        for (size_t n = 0; n < topo.numa_cores.size() && n < topo.numa_os_index.size(); ++n) {
            size_t count = 0;
            for (int c : mine)
                if (std::find(topo.numa_cores[n].begin(), topo.numa_cores[n].end(), c) != topo.numa_cores[n].end()) ++count;
            const int os = topo.numa_os_index[n];
            if (count > best_count || (count > 0 && count == best_count && os < best)) best = os, best_count = count;
        }
        out.push_back(best);
    }
    return out;
}

std::string format_core_ranges(const std::vector<int>& cores) {
    std::vector<int> sorted = cores;
    std::sort(sorted.begin(), sorted.end());
    std::string out;
    for (size_t i = 0; i < sorted.size();) {
        size_t j = i;
        while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
        if (!out.empty()) out += ',';
        out += std::to_string(sorted[i]);
        if (j > i) out += "-" + std::to_string(sorted[j]);
        i = j + 1;
    }
    return out;
}

GpuVendor topology_gpu_vendor(const NodeTopology& topo) {
    return topo.gpus.empty() ? GpuVendor::none : topo.gpus.front().vendor;
}

std::string gpu_names(const NodeTopology& topo) {
    if (topo.gpus.empty()) return "";
    if (topo.gpus.size() == 1) return topo.gpus.front().name;
    // "rsmi0-rsmi7" when the names are one prefix with the indexes 0..n-1 in order.
    const std::string& first = topo.gpus.front().name;
    const std::string prefix = first.substr(0, first.find_first_of("0123456789"));
    bool counting = !prefix.empty();
    for (size_t i = 0; counting && i < topo.gpus.size(); ++i) counting = topo.gpus[i].name == prefix + std::to_string(i);
    if (counting) return first + "-" + topo.gpus.back().name;
    std::string out;
    for (const auto& g : topo.gpus) out += (out.empty() ? "" : ", ") + g.name;
    return out;
}

std::string hardware_toml(const NodeTopology& topo) {
    std::string s;
    s += "# [hardware] of " + comment_text(topo.hostname.empty() ? std::string("a node") : topo.hostname) + " from " +
         comment_text(topo.source) +
         (topo.written_by.empty() ? std::string("") : " (written by hwloc " + comment_text(topo.written_by) + ")") +
         ",\n# read with hwloc " + topo.hwloc_version + " by `sitegen topology import`.\n";
    s += "# Which cores to keep for the OS (reserved_cores) and the interconnect's name stay site\n"
         "# decisions; `sitegen doctor` checks the site file against the node.\n";
    s += "[hardware]\n";
    const GpuVendor vendor = topology_gpu_vendor(topo);
    const auto& gpus = topo.gpus;
    if (gpus.empty()) {
        s += "gpu_vendor = \"none\"  # no GPU (PCI display controller of NVIDIA, AMD or Intel)\n";
    } else {
        s += "gpu_vendor = " + toml_string(to_string(vendor)) + "  # PCI vendor 0x" + hex4(gpus.front().vendor_id) + "\n";
        if (!gpus.front().model.empty())
            s += "gpu_model = " + toml_string(gpus.front().model) + "  # hwloc's GPU model (PCI 0x" +
                 hex4(gpus.front().vendor_id) + ":0x" + hex4(gpus.front().device_id) + ")\n";
    }
    std::map<std::string, int> per_pci;
    for (const auto& g : gpus) ++per_pci[g.pci_busid];
    std::string counted = std::to_string(gpus.size()) + " GPU";
    if (!gpus.empty() && per_pci.size() != gpus.size())
        counted = std::to_string(per_pci.size()) + " GPU PCI devices x " + std::to_string(gpus.size() / per_pci.size()) +
                  " Level Zero subdevices (tiles), as the scheduler and runtime count them";
    else if (!gpus.empty())
        counted += std::string(gpus.size() == 1 ? "" : "s") + " (" + comment_text(gpu_names(topo)) + ")";
    else
        counted = "no GPUs";
    s += "devices_per_node = " + std::to_string(gpus.size()) + "  # " + counted + "\n";
    s += "cores_per_node = " + std::to_string(topo.cores()) + "  # Core objects in " + std::to_string(topo.packages) +
         (topo.packages == 1 ? " package, " : " packages, ") + std::to_string(topo.numa_nodes) +
         (topo.numa_nodes == 1 ? " NUMA node" : " NUMA nodes") + "\n";
    if (topo.threads_per_core > 0)
        s += "threads_per_core = " + std::to_string(topo.threads_per_core) + "  # " + std::to_string(topo.pus) +
             " PUs / " + std::to_string(topo.cores()) + " cores\n";
    else
        s += "# threads_per_core: cores have different numbers of PUs (" + std::to_string(topo.pus) + " PUs, " +
             std::to_string(topo.cores()) + " cores); set it by hand\n";
    if (!gpus.empty()) {
        s += "# Each device's nearest cores: the cores of the object its PCI device hangs off (its\n"
             "# locality); devices sharing one locality split it evenly, in device order.\n";
        s += "device_cores = [\n";
        const auto suggested = suggested_device_cores(topo);
        for (size_t i = 0; i < gpus.size(); ++i) {
            size_t position = 0, sharing = 0;
            for (size_t j = 0; j < gpus.size(); ++j) {
                if (gpus[j].locality.cores != gpus[i].locality.cores) continue;
                if (j < i) ++position;
                ++sharing;
            }
            std::string share = sharing > 1 ? ", part " + std::to_string(position + 1) + " of " + std::to_string(sharing) : "";
            // Without an OS device (no CUDA/NVML/ROCm plugin in hwloc) the name is the PCI address.
            const std::string name = gpus[i].name == gpus[i].pci_busid ? "" : comment_text(gpus[i].name) + ", ";
            s += "  " + toml_string(format_core_ranges(suggested[i])) + ",  # device " + std::to_string(i) + ": " + name +
                 "PCI " + gpus[i].pci_busid + ", " + comment_text(near(gpus[i].locality)) + share + "\n";
        }
        s += "]\n";
        const auto numa = suggested_device_numa(topo);
        if (std::find(numa.begin(), numa.end(), -1) == numa.end()) {
            s += "# Each device's NUMA node (binding style \"numa\"): the one holding its nearest cores.\n";
            s += "device_numa = [";
            for (size_t i = 0; i < numa.size(); ++i) s += (i ? ", " : "") + std::to_string(numa[i]);
            s += "]\n";
        } else {
            s += "# device_numa: hwloc lists no NUMA node holding some device's cores; set it by hand\n";
        }
    }
    std::vector<const TopologyNic*> fast, slow;
    for (const auto& n : topo.nics) (n.high_speed ? fast : slow).push_back(&n);
    if (!fast.empty()) {
        s += "# High-speed NICs (Slingshot, InfiniBand, RDMA-capable or a PCI link of >= 10 GB/s):\n";
        s += "nics = [\n";
        for (const auto* n : fast)
            s += "  " + toml_string(n->name) + ",  # PCI " + n->pci_busid + " (" + comment_text(n->why) + "), " +
                 comment_text(near(n->locality)) + "\n";
        s += "]\n";
    } else {
        s += "# nics: no high-speed NIC (Slingshot, InfiniBand, RDMA-capable or a PCI link of >= 10 GB/s)\n";
    }
    for (const auto* n : slow)
        s += "# not in nics: " + comment_text(n->name) + " (PCI " + n->pci_busid + ", " + comment_text(n->why) + ")\n";
    s += "# reserved_cores: a site decision (e.g. the first core of each L3 domain for the OS);\n"
         "# `sitegen doctor` checks each is a core of this node.\n";
    return s;
}

}  // namespace sitegen
