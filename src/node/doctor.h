// `sitegen doctor`: compares a node (its hwloc topology, its file system, its Lmod and its
// python) with a site file and reports every mismatch at the TOML location it contradicts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "node/hwloc_topology.h"
#include "site/diagnostics.h"
#include "site/model.h"

namespace sitegen {

// The node's file system and programs. Paths are as the node sees them ("/opt/cray"); the
// probe applies its root.
class NodeProbe {
public:
    virtual ~NodeProbe() = default;
    virtual std::string root() const = 0;  // "/" on the node itself
    virtual bool exists(const std::string& path) = 0;
    virtual bool is_dir(const std::string& path) = 0;
    virtual bool executable(const std::string& path) = 0;
    // Runs argv[0] (an absolute path, not searched) with exactly `env`; `output` gets stdout and
    // stderr. Returns the exit status, or -1 (and a reason in `output`) if it did not run.
    virtual int run(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                    std::string& output) = 0;
    // A small text file's contents (at most 64 KiB); false when it cannot be read.
    virtual bool read_text(const std::string& path, std::string& text) {
        (void)path, (void)text;
        return false;
    }
};

// The real probe: files under `root` ("/" = this node), programs by posix_spawn.
std::unique_ptr<NodeProbe> make_node_probe(const std::string& root);

// What a stack's `image` is on the node. node/ cannot read plan/'s traits, so the caller says:
// a file the module looks for (in the install dir, then image_dir), a name the runtime keeps
// in its own store (podman-hpc's migrated images, uenv labels), or nothing (python outside a
// container). by_layout: a file when the layout is container-venv (callers without traits).
enum class StackImage { by_layout, none, file, named };

// Where one stack lives once deployed (computed by the caller from the plan's paths).
struct DeployedStack {
    std::string install_dir;  // <prefix>/software/<name>/<version>
    std::string modulefile;   // <prefix>/modulefiles/<name>/<version>.lua
    StackImage image = StackImage::by_layout;
};

struct DoctorOptions {
    std::vector<DeployedStack> stacks;    // one per site.stacks, same order
    std::vector<std::string> modulepath;  // directories Lmod searches (node paths), in order
    std::string lmod;                     // Lmod's `lmod` command; "" = not installed
    bool run_programs = true;             // run the node's python (only when root is "/")
    // The GPU driver's version file (plan/traits.h: driver_traits); "" = no GPU driver to check.
    std::string driver_version_file;
    std::string driver;                   // how findings name the driver
};

// Lmod's command: $LMOD_CMD when set and executable, else Debian's
// /usr/share/lmod/lmod/libexec/lmod when it exists, else "".
std::string find_lmod();

// Every check of the node against the site. Findings are errors at the site's locations
// (hardware.cores_per_node, hardware.device_cores.3, container.binds.2.host, ...), a stack
// that is not deployed on the node is a warning. `checked` gets one line per area checked.
void doctor(const Site& site, const NodeTopology& topo, const DoctorOptions& options, NodeProbe& probe,
            Diagnostics& diags, std::vector<std::string>& checked);

}  // namespace sitegen
