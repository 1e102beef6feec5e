// A node's topology as hwloc sees it (from `lstopo --of xml` output or the live machine):
// cores, hardware threads, NUMA nodes, GPUs and NICs with the cores nearest to them, and the
// [hardware] table `sitegen topology import` prints from it.
#pragma once

#include <string>
#include <vector>

#include "site/model.h"

namespace sitegen {

// Where a PCI device sits: the cores of the nearest non-I/O object it hangs off.
struct Locality {
    std::vector<int> cores;  // core ids (a core's id is the OS index of its first PU)
    std::string object;      // "Group0 L#3", "Package P#0", "Machine"
    std::vector<int> numa;   // OS indexes of the NUMA nodes whose cores overlap these
};

// One GPU as the scheduler and the runtime count them (a Level Zero subdevice, i.e. a tile,
// counts as one), in runtime order: by the runtime's own index (cuda0, rsmi3, ze2) where hwloc
// names one, else in PCI bus order.
struct TopologyGpu {
    GpuVendor vendor = GpuVendor::none;
    std::string name;       // "rsmi0", "cuda1", "ze0.1"; the PCI bus id when no OS device names it
    std::string pci_busid;  // "0000:c1:00.0"
    unsigned vendor_id = 0, device_id = 0, class_id = 0;
    std::string model;  // GPUModel / LevelZeroDeviceName / PCIDevice, or ""
    Locality locality;
};

// One network interface of a PCI device (hwloc network OS device).
struct TopologyNic {
    std::string name;  // "hsn0", "ib0", "eth0"
    std::string pci_busid;
    unsigned vendor_id = 0, device_id = 0, class_id = 0;
    double link_gbytes = 0;  // PCI link speed in GB/s as hwloc reports it
    std::string model;       // PCIDevice, or ""
    bool high_speed = false;
    std::string why;  // why it counts as high-speed, or why not
    Locality locality;
};

struct NodeTopology {
    std::string source;  // the XML file, or "this node"
    std::string hostname;
    std::string hwloc_version;  // of the library that read it
    std::string written_by;     // the hwloc version that wrote the XML (its hwlocVersion info)
    int packages = 0;
    int numa_nodes = 0;
    int pus = 0;
    std::vector<int> core_ids;                // sorted
    std::vector<std::vector<int>> numa_cores;  // per NUMA node in OS-index order
    std::vector<int> numa_os_index;            // the same order
    int threads_per_core = 0;                 // PUs per core; 0 when cores differ
    std::vector<TopologyGpu> gpus;
    std::vector<TopologyNic> nics;  // every network interface hwloc lists, in PCI bus order

    int cores() const { return static_cast<int>(core_ids.size()); }
};

// Loads an hwloc XML file (`lstopo --of xml`), or the machine this runs on when `xml_path` is
// empty. False and `error` when hwloc cannot read it.
bool load_hwloc_topology(const std::string& xml_path, NodeTopology& out, std::string& error);

// The cores nearest each GPU: its locality; GPUs that share one locality split it evenly in
// device order (k GPUs on n cores get n/k consecutive cores each, the remainder unassigned).
std::vector<std::vector<int>> suggested_device_cores(const NodeTopology& topo);

// The NUMA node (OS index) of each GPU: the one holding most of its suggested cores (the lowest
// OS index on a tie, e.g. DDR before HBM nodes of one socket); -1 when hwloc lists no NUMA cores.
std::vector<int> suggested_device_numa(const NodeTopology& topo);

// "0-7,16,18-19": sorted core ids as ranges (the site's device_cores syntax).
std::string format_core_ranges(const std::vector<int>& cores);

// The GPU vendor of the node's GPUs (none without GPUs; the first GPU's when they differ).
GpuVendor topology_gpu_vendor(const NodeTopology& topo);

// The GPUs' names, "rsmi0-rsmi7" when they share a prefix and count up, or "" without GPUs.
std::string gpu_names(const NodeTopology& topo);

// The [hardware] table for a site file, every value with a comment saying where it came from.
std::string hardware_toml(const NodeTopology& topo);

}  // namespace sitegen
