// Rule engine and built-in rules: each rule passes a good site and reports a broken one with
// its exact message at the TOML location of the offending key.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "site/check.h"
#include "site/load.h"
#include "lua/rules.h"
#include "lua/supervisor.h"
#include "test_support.h"

using namespace sitegen;
namespace fs = std::filesystem;

namespace {

using sitegen::test::TempDir;

const std::string kFile = "sites/t/site.toml";

// Every key gets its own line, in the order given, so a wrong path shows as a wrong line.
void place(Site& s, const std::vector<std::string>& paths) {
    for (const auto& p : paths) {
        const int line = static_cast<int>(s.regions.size()) + 1;
        s.regions.set(p, {kFile, line, p.find('.') == std::string::npos ? 1 : 3});
    }
}

// A LUMI-like site that every built-in rule accepts.
Site good_site() {
    Site s;
    s.files = {kFile};
    s.site.name = "t";
    s.site.description = "test site";
    s.site.scheduler = Scheduler::slurm;
    s.site.launcher = Launcher::srun;
    s.site.install_prefix = "/appl/t";
    s.site.base_modules = {"LUMI/24.03"};
    auto& h = s.hardware;
    h.gpu_vendor = GpuVendor::amd;
    h.gpu_model = "MI250X";
    h.devices_per_node = 8;
    h.cores_per_node = 64;
    h.threads_per_core = 2;
    for (int ccd : {6, 7, 2, 3, 0, 1, 4, 5}) {
        std::vector<int> cores;
        for (int c = 8 * ccd; c < 8 * ccd + 8; ++c) cores.push_back(c);
        h.device_cores.push_back(cores);
    }
    h.reserved_cores = {0, 8, 16, 24, 32, 40, 48, 56};
    h.nics = {"hsn0", "hsn1", "hsn2", "hsn3"};
    h.interconnect = "slingshot-11";
    s.binding.style = BindingStyle::mask;
    s.collectives.library = CollectiveLib::rccl;
    s.collectives.network_plugin = "aws-ofi-rccl";
    s.collectives.visibility_var = "ROCR_VISIBLE_DEVICES";
    s.collectives.env = {{"NCCL_SOCKET_IFNAME", "hsn0,hsn1,hsn2,hsn3"}, {"NCCL_NET_GDR_LEVEL", "3"}};
    s.container.enabled = true;
    s.container.image_dir = "/appl/local/containers/sif-images";
    s.container.binds = {{"/pfs", "/pfs", ""}, {"/scratch", "/scratch", ""}, {"/appl", "/appl", "ro"}};
    s.python.layout = PythonLayout::container_venv;
    s.python.version = "3.12";
    Stack st;
    st.name = "PyTorch";
    st.version = "2.3.1";
    st.versionsuffix = "-rocm-6.0.3";
    st.description = "PyTorch";
    st.homepage = "https://pytorch.org/";
    st.image = "pytorch.sif";
    st.python = s.python;
    st.components = {{"torch", "2.3.1"}};
    st.env = {{"NCCL_NET_GDR_LEVEL", "3"}};
    s.stacks.push_back(st);
    place(s, {"site", "site.name", "site.scheduler", "site.launcher", "site.base_modules", "site.base_modules.0",
              "hardware", "hardware.gpu_vendor", "hardware.devices_per_node", "hardware.cores_per_node",
              "hardware.device_cores"});
    for (int i = 0; i < 8; ++i) place(s, {"hardware.device_cores." + std::to_string(i)});
    place(s, {"hardware.reserved_cores", "hardware.nics", "binding", "binding.style", "binding.cores_per_rank",
              "binding.core_offset", "collectives", "collectives.library", "collectives.visibility_var",
              "collectives.master_port_base", "collectives.master_port_span", "collectives.env.NCCL_SOCKET_IFNAME",
              "collectives.env.NCCL_NET_GDR_LEVEL", "container", "container.binds"});
    for (int i = 0; i < 4; ++i) {
        const std::string b = "container.binds." + std::to_string(i);
        place(s, {b, b + ".host", b + ".container"});
    }
    for (int i = 0; i < 3; ++i) {
        const std::string p = "stacks." + std::to_string(i);
        place(s, {p, p + ".name", p + ".version", p + ".versionsuffix", p + ".base_modules",
                  p + ".base_modules.0", p + ".env.NCCL_NET_GDR_LEVEL", p + ".env.NCCL_SOCKET_IFNAME",
                  p + ".env.NCCL_DEBUG"});
    }
    return s;
}

std::string location(const Site& s, const std::string& path) {
    const SourceRegion r = s.where(path);
    return r.file + ":" + std::to_string(r.line) + ":" + std::to_string(r.column);
}

std::string line_of(const Diagnostic& d) {
    static const char* names[] = {"error", "warning", "note"};
    return d.where.file + ":" + std::to_string(d.where.line) + ":" + std::to_string(d.where.column) + ": " +
           names[static_cast<int>(d.severity)] + ": " + d.message;
}

std::vector<std::string> run_files(const Site& s, const std::vector<std::string>& files, size_t groups = 0) {
    Diagnostics diags(1000);
    run_rule_files(s, files, diags, {}, groups);
    std::vector<std::string> out;
    for (const auto& d : diags.all()) out.push_back(line_of(d));
    return out;
}

// Findings of one built-in rule file.
std::vector<std::string> findings(const Site& s, const std::string& rule) {
    return run_files(s, {default_rules_dir() + "/" + rule + ".lua"});
}

// "file:line:col: error: message [rule r]" at the region of `path`.
std::string expect(const Site& s, const std::string& path, const std::string& rule, const std::string& message,
                   const std::string& severity = "error") {
    return location(s, path) + ": " + severity + ": " + message + " [rule " + rule + "]";
}

using Lines = std::vector<std::string>;

}  // namespace

TEST_CASE("every built-in rule accepts the good site", "[lua][rules]") {
    const Site s = good_site();
    Diagnostics diags;
    run_rules(s, {}, diags);
    CHECK(render_all(diags, {}).empty());
    const auto rules = list_rules({});
    CHECK(rules.size() == 11);
    for (const auto& r : rules) {
        INFO(r.name);
        CHECK_FALSE(r.description.empty());
        CHECK(r.file.find("rules/" + r.name + ".lua") != std::string::npos);
    }
}

TEST_CASE("rule gpu-masks: one mask per GPU, no overlap, inside the node, cores left after reserved", "[lua][rules]") {
    Site s = good_site();
    CHECK(findings(s, "gpu-masks").empty());

    s.hardware.device_cores.pop_back();
    CHECK(findings(s, "gpu-masks") ==
          Lines{expect(s, "hardware.device_cores", "gpu-masks", "7 CPU masks for 8 GPUs")});

    s = good_site();
    s.hardware.device_cores[1] = s.hardware.device_cores[0];
    CHECK(findings(s, "gpu-masks") ==
          Lines{expect(s, "hardware.device_cores.1", "gpu-masks", "GPU 1 shares cores 48-55 with GPU 0")});

    s = good_site();
    s.hardware.device_cores[7] = {60, 61, 62, 63, 64, 65};
    CHECK(findings(s, "gpu-masks") ==
          Lines{expect(s, "hardware.device_cores.7", "gpu-masks", "GPU 7 lists cores 64-65, outside the node's 64 cores (0-63)"),
                expect(s, "hardware.device_cores.7", "gpu-masks", "GPU 7 shares cores 60-63 with GPU 1")});

    s = good_site();
    s.hardware.reserved_cores = {48, 49, 50, 51, 52, 53, 54, 55};
    CHECK(findings(s, "gpu-masks") ==
          Lines{expect(s, "hardware.device_cores.0", "gpu-masks", "GPU 0 has no cores left after the reserved cores")});

    s = good_site();
    s.binding.core_offset = 2;
    s.binding.cores_per_rank = 6;
    const auto need = findings(s, "gpu-masks");
    CHECK(need.size() == 8);
    CHECK(need.at(3) == expect(s, "hardware.device_cores.3", "gpu-masks",
                               "GPU 3 has 7 usable cores but the binding needs 8 (core_offset 2 + cores_per_rank 6)"));

    s = good_site();  // CPU-only sites have nothing to check
    s.hardware.devices_per_node = 0;
    s.hardware.device_cores.clear();
    CHECK(findings(s, "gpu-masks").empty());
}

TEST_CASE("rule collective-vendor: rccl-amd, nccl-nvidia, oneccl-intel, gloo anywhere", "[lua][rules]") {
    Site s = good_site();
    CHECK(findings(s, "collective-vendor").empty());
    s.collectives.library = CollectiveLib::gloo;
    CHECK(findings(s, "collective-vendor").empty());
    s.collectives.library = CollectiveLib::nccl;
    CHECK(findings(s, "collective-vendor") ==
          Lines{expect(s, "collectives.library", "collective-vendor",
                       "collective library 'nccl' is for nvidia GPUs but gpu_vendor is 'amd' (use 'rccl' or 'gloo')")});
    s.hardware.gpu_vendor = GpuVendor::nvidia;
    CHECK(findings(s, "collective-vendor").empty());
    s.hardware.gpu_vendor = GpuVendor::none;
    s.collectives.library = CollectiveLib::oneccl;
    CHECK(findings(s, "collective-vendor") ==
          Lines{expect(s, "collectives.library", "collective-vendor",
                       "collective library 'oneccl' is for intel GPUs but gpu_vendor is 'none' (use 'gloo')")});
}

TEST_CASE("rule network-plugin: the plugin serves the collective library", "[lua][rules]") {
    Site s = good_site();  // aws-ofi-rccl with rccl
    CHECK(findings(s, "network-plugin").empty());
    s.collectives.library = CollectiveLib::nccl;
    CHECK(findings(s, "network-plugin") ==
          Lines{expect(s, "collectives.network_plugin", "network-plugin",
                       "network plugin 'aws-ofi-rccl' is for rccl, but the collective library is 'nccl'")});
    s.collectives.network_plugin = "aws-ofi-nccl";
    CHECK(findings(s, "network-plugin").empty());
    s.collectives.network_plugin = "my-own-plugin";  // unknown plugins: no opinion on the library
    CHECK(findings(s, "network-plugin").empty());
    s.collectives.library = CollectiveLib::gloo;
    CHECK(findings(s, "network-plugin") ==
          Lines{expect(s, "collectives.network_plugin", "network-plugin",
                       "network plugin 'my-own-plugin' is loaded only by NCCL or RCCL, but the collective library is 'gloo'",
                       "warning")});
    s.collectives.network_plugin = "";
    CHECK(findings(s, "network-plugin").empty());
}

TEST_CASE("rule visibility-var: the vendor's own variable", "[lua][rules]") {
    Site s = good_site();
    CHECK(findings(s, "visibility-var").empty());
    s.collectives.visibility_var = "HIP_VISIBLE_DEVICES";
    CHECK(findings(s, "visibility-var").empty());
    s.collectives.visibility_var = "CUDA_VISIBLE_DEVICES";
    CHECK(findings(s, "visibility-var") ==
          Lines{expect(s, "collectives.visibility_var", "visibility-var",
                       "visibility_var 'CUDA_VISIBLE_DEVICES' does not select amd GPUs "
                       "(use ROCR_VISIBLE_DEVICES or HIP_VISIBLE_DEVICES)")});
    s.hardware.gpu_vendor = GpuVendor::intel;
    s.collectives.visibility_var = "ZE_AFFINITY_MASK";
    CHECK(findings(s, "visibility-var").empty());
    s.hardware.gpu_vendor = GpuVendor::none;
    CHECK(findings(s, "visibility-var") ==
          Lines{expect(s, "collectives.visibility_var", "visibility-var",
                       "visibility_var 'ZE_AFFINITY_MASK' is set but the site has no GPUs (gpu_vendor 'none')")});
    s = good_site();
    s.collectives.visibility_var.clear();
    CHECK(findings(s, "visibility-var") ==
          Lines{expect(s, "collectives", "visibility-var",
                       "no visibility_var: every rank sees all 8 GPUs of its node "
                       "(set ROCR_VISIBLE_DEVICES or HIP_VISIBLE_DEVICES)", "warning")});
}

TEST_CASE("rule socket-ifname: only declared NICs, prefixes, '=' exact names and '^' exclusions", "[lua][rules]") {
    Site s = good_site();
    CHECK(findings(s, "socket-ifname").empty());
    for (const char* ok : {"hsn", "hsn0", "=hsn0,hsn3", "^lo,docker", "^=hsn0"}) {
        s.collectives.env[0].second = ok;
        INFO(ok);
        CHECK(findings(s, "socket-ifname").empty());
    }
    const std::string path = "collectives.env.NCCL_SOCKET_IFNAME";
    s.collectives.env[0].second = "eth0,hsn0,ib";
    CHECK(findings(s, "socket-ifname") ==
          Lines{expect(s, path, "socket-ifname",
                       "NCCL_SOCKET_IFNAME names 'eth0', which matches none of the site's NICs (hsn0, hsn1, hsn2, hsn3)"),
                expect(s, path, "socket-ifname",
                       "NCCL_SOCKET_IFNAME names 'ib', which matches none of the site's NICs (hsn0, hsn1, hsn2, hsn3)")});
    s.collectives.env[0].second = "=hsn";
    CHECK(findings(s, "socket-ifname") ==
          Lines{expect(s, path, "socket-ifname",
                       "NCCL_SOCKET_IFNAME names 'hsn', which is none of the site's NICs (hsn0, hsn1, hsn2, hsn3)")});
    s.collectives.env[0].second = "^hsn";
    CHECK(findings(s, "socket-ifname") ==
          Lines{expect(s, path, "socket-ifname",
                       "NCCL_SOCKET_IFNAME '^hsn' excludes every NIC the site declares (hsn0, hsn1, hsn2, hsn3)")});
    s = good_site();
    s.stacks[0].env.push_back({"NCCL_SOCKET_IFNAME", "eth"});
    CHECK(findings(s, "socket-ifname") ==
          Lines{expect(s, "stacks.0.env.NCCL_SOCKET_IFNAME", "socket-ifname",
                       "NCCL_SOCKET_IFNAME names 'eth', which matches none of the site's NICs (hsn0, hsn1, hsn2, hsn3)")});
    s = good_site();
    s.hardware.nics.clear();
    CHECK(findings(s, "socket-ifname") ==
          Lines{expect(s, path, "socket-ifname",
                       "NCCL_SOCKET_IFNAME names 'hsn0', which matches none of the site's NICs (hardware.nics is empty)"),
                expect(s, path, "socket-ifname",
                       "NCCL_SOCKET_IFNAME names 'hsn1', which matches none of the site's NICs (hardware.nics is empty)"),
                expect(s, path, "socket-ifname",
                       "NCCL_SOCKET_IFNAME names 'hsn2', which matches none of the site's NICs (hardware.nics is empty)"),
                expect(s, path, "socket-ifname",
                       "NCCL_SOCKET_IFNAME names 'hsn3', which matches none of the site's NICs (hardware.nics is empty)")});
}

TEST_CASE("rule container-binds: absolute paths, each container path once", "[lua][rules]") {
    Site s = good_site();
    CHECK(findings(s, "container-binds").empty());
    s.container.binds[1].host = "scratch";
    CHECK(findings(s, "container-binds") ==
          Lines{expect(s, "container.binds.1.host", "container-binds", "bind host path 'scratch' is not absolute")});
    s = good_site();
    s.container.binds.push_back({"/lus/pfs", "/pfs/", ""});
    CHECK(findings(s, "container-binds") ==
          Lines{expect(s, "container.binds.3", "container-binds",
                       "container path '/pfs' is bound twice (first by container.binds.0)")});
    s.container.enabled = false;  // binds of a site without containers are never used
    CHECK(findings(s, "container-binds").empty());
}

TEST_CASE("rule stack-names: valid and unique module names and easyconfig file names", "[lua][rules]") {
    Site s = good_site();
    CHECK(findings(s, "stack-names").empty());
    s.stacks[0].name = "Py Torch";
    CHECK(findings(s, "stack-names") ==
          Lines{expect(s, "stacks.0.name", "stack-names",
                       "stack name 'Py Torch' is not a valid module name "
                       "(a letter or digit, then letters, digits, '_', '.', '+', '-')")});
    s = good_site();
    s.stacks[0].versionsuffix = "/rocm";
    CHECK(findings(s, "stack-names") ==
          Lines{expect(s, "stacks.0.version", "stack-names",
                       "module version '2.3.1/rocm' is not a valid module file name "
                       "(a letter or digit, then letters, digits, '_', '.', '+', '-')")});
    s = good_site();
    s.stacks.push_back(s.stacks[0]);
    CHECK(findings(s, "stack-names") ==
          Lines{expect(s, "stacks.1", "stack-names", "stack 'PyTorch/2.3.1-rocm-6.0.3' is defined twice (first as stacks.0)")});
    s.stacks[1].name = "pytorch";
    CHECK(findings(s, "stack-names") ==
          Lines{expect(s, "stacks.1", "stack-names",
                       "stack 'pytorch/2.3.1-rocm-6.0.3' differs from 'PyTorch/2.3.1-rocm-6.0.3' only in case", "warning")});
    s = good_site();
    s.stacks[0].name = "PyTorch-GPU";
    s.stacks[0].version = "1";
    s.stacks[0].versionsuffix = "";
    s.stacks.push_back(s.stacks[0]);
    s.stacks[1].name = "PyTorch";
    s.stacks[1].version = "GPU-1";
    CHECK(findings(s, "stack-names") ==
          Lines{expect(s, "stacks.1", "stack-names",
                       "easyconfig file name 'PyTorch-GPU-1.eb' is also the one of stack 'PyTorch-GPU/1'")});
}

TEST_CASE("rule launcher-scheduler: srun with Slurm, mpiexec with PBS, flux with Flux", "[lua][rules]") {
    Site s = good_site();
    CHECK(findings(s, "launcher-scheduler").empty());
    s.site.launcher = Launcher::mpiexec;
    CHECK(findings(s, "launcher-scheduler") ==
          Lines{expect(s, "site.launcher", "launcher-scheduler",
                       "launcher 'mpiexec' does not go with scheduler 'slurm' (use 'srun')")});
    s.site.scheduler = Scheduler::pbs;
    CHECK(findings(s, "launcher-scheduler").empty());
    s.site.launcher = Launcher::srun;
    CHECK(findings(s, "launcher-scheduler") ==
          Lines{expect(s, "site.launcher", "launcher-scheduler",
                       "launcher 'srun' does not go with scheduler 'pbs' (use 'mpiexec')")});    s.site.scheduler = Scheduler::flux;
    CHECK(findings(s, "launcher-scheduler") ==
          Lines{expect(s, "site.launcher", "launcher-scheduler",
                       "launcher 'srun' does not go with scheduler 'flux' (use 'flux')")});
    s.site.launcher = Launcher::flux;
    CHECK(findings(s, "launcher-scheduler").empty());
}

TEST_CASE("rule ports: every master port within 1024..65535", "[lua][rules]") {
    Site s = good_site();
    CHECK(findings(s, "ports").empty());
    s.collectives.master_port_base = 64536;
    s.collectives.master_port_span = 1000;
    CHECK(findings(s, "ports").empty());  // 64536..65535
    s.collectives.master_port_span = 1001;
    CHECK(findings(s, "ports") ==
          Lines{expect(s, "collectives.master_port_span", "ports", "master ports 64536..65536 run past 65535")});
    s = good_site();
    s.collectives.master_port_base = 80;
    CHECK(findings(s, "ports") ==
          Lines{expect(s, "collectives.master_port_base", "ports",
                       "master_port_base 80 is a privileged port (use 1024..65535)")});
}

TEST_CASE("rule base-modules: name/version", "[lua][rules]") {
    Site s = good_site();
    CHECK(findings(s, "base-modules").empty());
    s.site.base_modules[0] = "LUMI 24.03";
    CHECK(findings(s, "base-modules") ==
          Lines{expect(s, "site.base_modules.0", "base-modules",
                       "base module 'LUMI 24.03' is not a module name such as 'LUMI/24.03'")});
    s = good_site();
    s.stacks[0].base_modules = {"craype-accel-amd-gfx90a"};
    CHECK(findings(s, "base-modules") ==
          Lines{expect(s, "stacks.0.base_modules.0", "base-modules",
                       "base module 'craype-accel-amd-gfx90a' has no version: write name/version so the stack "
                       "does not change with the site's default", "warning")});
    s.stacks[0].base_modules = {"rocm//6.0"};
    CHECK(findings(s, "base-modules").size() == 1);
}

TEST_CASE("rule env-conflicts: a stack does not contradict collectives.env", "[lua][rules]") {
    Site s = good_site();
    CHECK(findings(s, "env-conflicts").empty());  // the same value twice is fine
    s.stacks[0].env = {{"NCCL_DEBUG", "INFO"}, {"NCCL_NET_GDR_LEVEL", "PHB"}};
    CHECK(findings(s, "env-conflicts") ==
          Lines{expect(s, "stacks.0.env.NCCL_NET_GDR_LEVEL", "env-conflicts",
                       "NCCL_NET_GDR_LEVEL is 'PHB' here but '3' in collectives.env: the module can export only one")});
}

TEST_CASE("rules see every model field read-only, under its TOML key", "[lua][rules]") {
    Site s = good_site();
    s.site.module_use = {"/soft/modulefiles"};
    s.binding.affinity_env = {{"CCL_WORKER_AFFINITY", "next"}};
    s.batch.partition = "standard-g";
    s.stacks[0].is_default = true;
    TempDir dir("rules-test");
    const std::string file = dir.write("fields.lua", R"(-- reads every table of the model
local function expect(path, got, want)
  if got ~= want then error_at(path, ("%s is %s, expected %s"):format(path, tostring(got), tostring(want))) end
end
rule { name = "fields", check = function(site)
  expect("site.scheduler", site.site.scheduler, "slurm")
  expect("site.launcher", site.site.launcher, "srun")
  expect("site.module_use", site.site.module_use[1], "/soft/modulefiles")
  expect("hardware.gpu_vendor", site.hardware.gpu_vendor, "amd")
  expect("hardware.device_cores", site.hardware.device_cores[5][8], 7)
  expect("hardware.reserved_cores", #site.hardware.reserved_cores, 8)
  expect("hardware.threads_per_core", site.hardware.threads_per_core, 2)
  expect("binding.style", site.binding.style, "mask")
  expect("binding.affinity_env", site.binding.affinity_env.CCL_WORKER_AFFINITY, "next")
  expect("batch.partition", site.batch.partition, "standard-g")
  expect("batch.time", site.batch.time, "00:10:00")
  expect("collectives.library", site.collectives.library, "rccl")
  expect("collectives.env", site.collectives.env[2].name .. "=" .. site.collectives.env[2].value, "NCCL_NET_GDR_LEVEL=3")
  expect("collectives.env", site.collectives.env.NCCL_NET_GDR_LEVEL, "3")
  expect("collectives.master_port_base", site.collectives.master_port_base, 29500)
  expect("container.enabled", site.container.enabled, true)
  expect("container.runtime", site.container.runtime, "singularity")
  expect("container.binds", site.container.binds[3].options, "ro")
  expect("python.layout", site.python.layout, "container-venv")
  expect("stacks.0.default", site.stacks[1].default, true)
  expect("stacks.0.python", site.stacks[1].python.version, "3.12")
  expect("stacks.0.components", site.stacks[1].components.torch, "2.3.1")
  expect("stacks.0", site.stacks[1].module_full_name, "PyTorch/2.3.1-rocm-6.0.3")
  expect("files", site.files[1], "sites/t/site.toml")
  expect("hardware.nics", pathof(site.hardware.nics, 2), "hardware.nics.1")
  expect("hardware.nics", pathof(site.collectives.env[1]), "collectives.env.NCCL_SOCKET_IFNAME")
  expect("hardware.nics", declared("hardware.nics"), true)
  expect("hardware.nics", declared("hardware.interconnect"), false)
end }
)");
    CHECK(run_files(s, {file}) == Lines{});
}

TEST_CASE("the rule engine reports broken, hostile and runaway rules at their own file:line", "[lua][rules]") {
    const Site s = good_site();
    TempDir dir("rules-test");
    const std::string where = fs::path(dir.write("x", "")).parent_path().string();
    auto one = [&](const std::string& name, const std::string& text) { return run_files(s, {dir.write(name, text)}); };
    const auto file = [&](const std::string& name) { return where + "/" + name; };

    CHECK(one("write.lua", "-- writes\nrule { name = 'w', check = function(site)\n  site.hardware.nics = {}\nend }\n") ==
          Lines{file("write.lua") + ":3:0: error: rule failed: site table is read-only: hardware.nics [rule w]"});
    CHECK(one("meta.lua", "-- meta\nrule { name = 'm', check = function(site)\n  setmetatable(site.stacks[1], {})\nend }\n") ==
          Lines{file("meta.lua") + ":3:0: error: rule failed: site table is read-only: cannot set the metatable of stacks.0 [rule m]"});
    CHECK(one("io.lua", "-- io\nrule { name = 'io', check = function(site)\n  io.open('/etc/passwd')\nend }\n") ==
          Lines{file("io.lua") + ":3:0: error: rule failed: io.open is not available in the sandbox (no file access) [rule io]"});
    CHECK(one("table.lua", "-- table error\nrule { name = 't', check = function(site)\n\n  error({})\nend }\n") ==
          Lines{file("table.lua") + ":4:0: error: rule failed: error object is a table value [rule t]"});

    const auto start = std::chrono::steady_clock::now();
    CHECK(one("loop.lua", "-- runaway\nrule { name = 'loop', check = function(site)\n  while true do end\nend }\n") ==
          Lines{file("loop.lua") + ":3:0: error: rule failed: instruction limit exceeded: more than 20000000 Lua "
                                   "instructions (runaway loop?) [rule loop]"});
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));

    CHECK(one("nocomment.lua", "rule { name = 'n', check = function() end }\n") ==
          Lines{file("nocomment.lua") + ":1:1: error: a rule file starts with a one-line purpose comment: -- <what its rules check>"});
    CHECK(one("syntax.lua", "-- broken\nrule { name = 's' check = 1 }\n") ==
          Lines{file("syntax.lua") + ":2:0: error: rule file failed to load: '}' expected near 'check'"});
    CHECK(one("badname.lua", "-- bad name\nrule { name = 'Bad Name', check = function() end }\n") ==
          Lines{file("badname.lua") + ":2:0: error: rule file failed to load: rule: name must be lower-case letters, "
                                      "digits and '-' (e.g. 'gpu-masks'), got Bad Name"});
    CHECK(one("path.lua", "-- bad path\nrule { name = 'p', check = function(site)\n  error_at('hardwre.nics', 'x')\nend }\n") ==
          Lines{file("path.lua") + ":3:0: error: rule failed: error_at: 'hardwre.nics' is not a site path (it must start "
                                   "with one of the site's tables, e.g. 'hardware.') [rule p]"});
    CHECK(one("outside.lua", "-- too early\nerror_at('hardware', 'x')\n") ==
          Lines{file("outside.lua") + ":2:0: error: rule file failed to load: error_at can only be called while a rule's "
                                      "check function runs"});
    CHECK(one("empty.lua", "-- nothing\nlocal x = 1\n") ==
          Lines{file("empty.lua") + ":1:1: warning: rule file defines no rules (call rule{name = ..., check = function(site) ... end})"});
    CHECK(one("report.lua", "-- report\nrule { name = 'r', check = function(site)\n"
                            "  report{severity = 'warning', path = site.hardware.nics, message = 'hello'}\n"
                            "  report{severity = 'note', path = pathof(site.hardware.nics, 1), message = 'first'}\nend }\n") ==
          Lines{expect(s, "hardware.nics", "r", "hello", "warning"), expect(s, "hardware.nics.0", "r", "first", "note")});
}

TEST_CASE("rule files run sorted by file name across directories, and names are unique", "[lua][rules]") {
    const Site s = good_site();
    TempDir a("rules-test"), b("rules-test");
    a.write("20-second.lua", "-- second\nrule { name = 'second', check = function(site) error_at('site', 'second') end }\n");
    b.write("10-first.lua", "-- first\nrule { name = 'first', check = function(site) error_at('site', 'first') end }\n");
    b.write("30-again.lua", "-- again\nrule { name = 'first', check = function(site) end }\n");
    b.write("notes.txt", "not a rule");
    Diagnostics diags;
    const auto files = rule_files({a.path.string(), b.path.string(), "/nonexistent/rules"}, &diags);
    REQUIRE(files.size() == 3);
    CHECK(fs::path(files[0]).filename() == "10-first.lua");
    CHECK(fs::path(files[2]).filename() == "30-again.lua");
    CHECK(line_of(diags.all().at(0)) == "/nonexistent/rules:0:0: error: rules directory not found");
    const auto out = run_files(s, files);
    REQUIRE(out.size() == 3);
    CHECK(out[0] == expect(s, "site", "first", "first"));
    CHECK(out[1] == expect(s, "site", "second", "second"));
    CHECK(out[2] == (b.path / "30-again.lua").string() + ":2:0: error: rule 'first' is already defined in " +
                        (b.path / "10-first.lua").string());
    const auto listed = list_rules({a.path.string()});
    CHECK(listed.size() == 12);  // 11 built-in + first
    CHECK(std::any_of(listed.begin(), listed.end(), [](const RuleInfo& r) {
        return r.name == "second" && r.description == "second";
    }));
}

TEST_CASE("rule files in groups of children give the findings of one run over them in order", "[lua][rules]") {
    Site s = good_site();
    s.collectives.env.push_back({"NCCL_DEBUG", "INFO"});
    s.stacks.at(0).env.push_back({"NCCL_DEBUG", "WARN"});  // env-conflicts finds it
    TempDir dir("rules-test");
    std::vector<std::string> files = rule_files({default_rules_dir()});
    files.push_back(dir.write("a-syntax.lua", "-- broken\nrule { name = 's' check = 1 }\n"));
    files.push_back(dir.write("b-report.lua", "-- report\nrule { name = 'r', check = function(site)\n"
                                              "  warn_at(site.hardware.nics, 'hello')\nend }\n"));
    // Killed at its time limit: its group's next child goes on with the rule after it.
    files.push_back(dir.write("c-killed.lua", "-- killed\nrule { name = 'k', check = function(site)\n"
                                              "  local x = ('a'):rep(40):find(('a*'):rep(12) .. 'b')\nend }\n"
                                              "rule { name = 'k-after', check = function(site) warn_at('site', 'after') end }\n"));
    files.push_back(dir.write("d-empty.lua", "-- nothing\nlocal x = 1\n"));
    const Lines one = run_files(s, files, 1);
    for (const auto& l : one) UNSCOPED_INFO(l);
    REQUIRE(one.size() == 6);
    CHECK_THAT(one[0], Catch::Matchers::Contains("is 'WARN' here but 'INFO' in collectives.env"));
    CHECK_THAT(one[3], Catch::Matchers::Contains("time limit exceeded") && Catch::Matchers::EndsWith("[rule k]"));
    CHECK(one[4] == expect(s, "site", "k-after", "after", "warning"));
    CHECK_THAT(one[5], Catch::Matchers::Contains("rule file defines no rules"));
    for (size_t groups : {size_t{2}, size_t{3}, files.size()}) {
        INFO(groups << " groups");
        CHECK(run_files(s, files, groups) == one);
    }

    // A rule name defined again in a later file: one run reports the second where it is and
    // does not run it, whichever groups the two files fell in.
    files.push_back(dir.write("e-again.lua", "-- again\nrule { name = 'r', check = function(site) error_at('site', 'x') end }\n"));
    const Lines again = run_files(s, files, 1);
    REQUIRE(again.size() == 7);
    CHECK(again[6] == dir.path.string() + "/e-again.lua:2:0: error: rule 'r' is already defined in " +
                          dir.path.string() + "/b-report.lua");
    for (size_t groups : {size_t{2}, files.size()}) {
        INFO(groups << " groups");
        CHECK(run_files(s, files, groups) == again);
    }
}

TEST_CASE("a site's own rules directory is picked up next to its site.toml", "[lua][rules]") {
    TempDir dir("rules-test");
    dir.write("sites/x/rules/local.lua", "-- local policy\nrule { name = 'local-policy', check = function(site)\n"
                                         "  if site.batch.partition == '' then warn_at('batch', 'no partition') end\nend }\n");
    Site s = good_site();
    s.files = {(dir.path / "sites/x/site.toml").string()};
    s.regions.set("batch", {s.files[0], 7, 1});
    Diagnostics diags;
    run_rules(s, {}, diags);
    REQUIRE(diags.all().size() == 1);
    CHECK(line_of(diags.all()[0]) == s.files[0] + ":7:1: warning: no partition [rule local-policy]");
}

TEST_CASE("the seed sites pass the built-in rules", "[lua][rules]") {
    for (const auto& name : sitegen::test::seed_site_names()) {
        const Site site = sitegen::test::load_seed_site(name);
        Diagnostics diags;
        const auto start = std::chrono::steady_clock::now();
        run_rules(site, {}, diags);
        INFO(name << "\n" << render_all(diags, {}));
        CHECK(diags.error_count() == 0);
        CHECK(diags.warning_count() == (name == "frontier" ? 1u : 0u));
        CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
    }
}

TEST_CASE("rules scale to large sites: the site is shared, tables are built when read", "[lua][rules]") {
    Site s = good_site();
    const Stack stack = s.stacks[0];
    s.stacks.clear();
    for (int i = 0; i < 3000; ++i) {
        s.stacks.push_back(stack);
        s.stacks.back().version = "2.3." + std::to_string(i);
    }
    Diagnostics diags;
    run_rules(s, {}, diags);
    INFO(render_all(diags, {}));
    CHECK(diags.all().empty());
}

namespace {

struct Hostile {
    const char* what;
    const char* code;     // line 3 of the rule file, inside check()
    const char* message;  // part of the failure; "" = the rule ends without failing
};

// Rules that try to outrun the limits: handlers run with hooks off, error objects and close
// handlers that loop, callbacks from C, and single C calls that run for hours (patterns).
const Hostile kHostile[] = {
    {"xpcall handler loops", "xpcall(error, function() while true do end end)", "instruction limit exceeded"},
    {"xpcall body and handler loop", "xpcall(function() while true do end end, function() while true do end end)", "instruction limit exceeded"},
    {"nested xpcall handler loops", "xpcall(error, function() return xpcall(error, function() while true do end end) end)", "instruction limit exceeded"},
    {"pcall in a loop", "while true do pcall(function() while true do end end) end", "instruction limit exceeded"},
    // Ends by itself ("error in error handling") after 200 handlers each overflowing the
    // stack: about a second of work, so it may also meet the time limit first.
    {"handler recursing deeply", "xpcall(error, function(e) local function f() return 1 + f() end return f() end)", "?"},
    {"__tostring of the error object loops", "error(setmetatable({}, {__tostring = function() while true do end end}))", "its __tostring failed"},
    {"__close loops", "do local x <close> = setmetatable({}, {__close = function() while true do end end}) end", "instruction limit exceeded"},
    {"gsub callback loops", "string.gsub(('x'):rep(100), 'x', function() while true do end end)", "instruction limit exceeded"},
    {"sort comparator loops", "table.sort({3, 2, 1}, function() while true do end end)", "instruction limit exceeded"},
    {"coroutines", "coroutine.wrap(function() while true do end end)()", "attempt to index a nil value (global 'coroutine')"},
    {"string.match backtracking", "local x = ('a'):rep(40):match(('a*'):rep(12) .. 'b')", "time limit exceeded: ran longer than 500 ms"},
    {"string.find backtracking", "local x = ('a'):rep(40):find(('a*'):rep(12) .. 'b')", "time limit exceeded: ran longer than 500 ms"},
    {"string.gmatch backtracking", "for w in ('a'):rep(40):gmatch(('a*'):rep(12) .. 'b') do end", "time limit exceeded: ran longer than 500 ms"},
    {"string.gsub backtracking", "local x = ('a'):rep(40):gsub(('a*'):rep(12) .. 'b', '')", "time limit exceeded: ran longer than 500 ms"},
    {"plain find of a long needle", "local h, n = ('a'):rep(1 << 20), ('a'):rep(1 << 16) .. 'b' local x = h:find(n, 1, true)", "time limit exceeded: ran longer than 500 ms"},
    {"backtracking inside an xpcall handler", "xpcall(error, function() return ('a'):rep(40):match(('a*'):rep(12) .. 'b') end)", "time limit exceeded: ran longer than 500 ms"},
    {"backtracking in __tostring", "error(setmetatable({}, {__tostring = function() return ('a'):rep(40):match(('a*'):rep(12) .. 'b') end}))", "time limit exceeded: ran longer than 500 ms"},
};

std::string hostile_file(const Hostile& h) {
    return std::string("-- hostile: ") + h.what + "\nrule { name = 'bad', check = function(site)\n  " + h.code +
           "\nend }\nrule { name = 'after', check = function(site) warn_at('site', 'still runs') end }\n";
}

struct Isolation {
    LuaIsolation saved = lua_isolation();
    explicit Isolation(LuaIsolation i) { set_lua_isolation(i); }
    ~Isolation() { set_lua_isolation(saved); }
};

}  // namespace

TEST_CASE("hostile rules end within their time limit whatever they call, and the next rule still runs", "[lua][rules]") {
    const Site s = good_site();
    TempDir dir("rules-test");
    int n = 0;
    for (const Hostile& h : kHostile) {
        const std::string path = dir.write("h" + std::to_string(n++) + ".lua", hostile_file(h));
        const auto start = std::chrono::steady_clock::now();
        const Lines out = run_files(s, {path});
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        INFO(h.what << " took " << took << " s:\n" << [&] { std::string all; for (const auto& l : out) all += l + "\n"; return all; }());
        const std::string still = expect(s, "site", "after", "still runs", "warning");
        if (std::string(h.message) == "?" && out.size() == 1) {
            CHECK(out == Lines{still});
        } else {
            REQUIRE(out.size() == 2);
            CHECK(out[0].rfind(path + ":3:0: error: rule failed: ", 0) == 0);
            // Lua code stops on the instruction budget, or (on a very busy machine) the wall clock.
            const std::string want = std::string(h.message) == "instruction limit exceeded" || std::string(h.message) == "?"
                                         ? "limit exceeded" : h.message;
            CHECK_THAT(out[0], Catch::Matchers::Contains(want) && Catch::Matchers::EndsWith(" [rule bad]"));
            CHECK(out[1] == still);
        }
        // The time limit (0.5 s) plus a new process for the rules after a killed one.
        CHECK(took < 2.5);
    }
}

TEST_CASE("in process, the hook alone stops every hostile rule that runs Lua code", "[lua][rules]") {
    Isolation scope(LuaIsolation::in_process);
    const Site s = good_site();
    TempDir dir("rules-test");
    SandboxLimits deterministic;  // only the instruction budget stops them, however busy the machine
    deterministic.wall = std::chrono::hours(1);
    int n = 0;
    for (const Hostile& h : kHostile) {
        if (std::string(h.message).find("time limit") != std::string::npos) continue;  // stuck in C: needs the process
        const std::string path = dir.write("h" + std::to_string(n++) + ".lua", hostile_file(h));
        const auto start = std::chrono::steady_clock::now();
        Diagnostics diags(1000);
        run_rule_files(s, {path}, diags, deterministic);
        Lines out;
        for (const auto& d : diags.all()) out.push_back(line_of(d));
        INFO(h.what);
        REQUIRE(!out.empty());
        if (std::string(h.message) != "?") CHECK_THAT(out[0], Catch::Matchers::Contains(h.message));
        CHECK(out.back() == expect(s, "site", "after", "still runs", "warning"));
        CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
    }
}

TEST_CASE("a rule file stuck in C while loading fails at its line, and the other files run", "[lua][rules]") {
    const Site s = good_site();
    TempDir dir("rules-test");
    const std::string stuck = dir.write("10-stuck.lua", "-- stuck while loading\nlocal x = ('a'):rep(40):match(('a*'):rep(12) .. 'b')\n"
                                                        "rule { name = 'never', check = function(site) error_at('site', 'never') end }\n");
    const std::string next = dir.write("20-next.lua", "-- next\nrule { name = 'next', check = function(site) error_at('site', 'next') end }\n");
    const auto start = std::chrono::steady_clock::now();
    const Lines out = run_files(s, {stuck, next});
    CHECK(out == Lines{stuck + ":2:0: error: rule file failed to load: time limit exceeded: ran longer than 500 ms "
                               "(stopped in a library call, e.g. a backtracking pattern?)",
                       expect(s, "site", "next", "next")});
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2500));
    // `sitegen rules` lists what it can and says why not for the stuck file.
    const auto listed = list_rules({dir.str()});
    CHECK(std::count_if(listed.begin(), listed.end(), [](const RuleInfo& r) { return r.name == "next"; }) == 1);
    const auto bad = std::find_if(listed.begin(), listed.end(), [](const RuleInfo& r) { return r.name == "10-stuck"; });
    REQUIRE(bad != listed.end());
    CHECK(bad->description == "(cannot load: " + stuck + ":2: time limit exceeded: ran longer than 500 ms "
                                                          "(stopped in a library call, e.g. a backtracking pattern?))");
}

TEST_CASE("memory-limit failures are reported at the rule's file:line like every other failure", "[lua][rules]") {
    const Site s = good_site();
    TempDir dir("rules-test");
    SandboxLimits deterministic;  // filling 64 MiB takes a while on a busy machine: only memory may stop it
    deterministic.wall = std::chrono::hours(1);
    const auto run = [&](const std::string& file) {
        Diagnostics diags(1000);
        run_rule_files(s, {file}, diags, deterministic);
        Lines out;
        for (const auto& d : diags.all()) out.push_back(line_of(d));
        return out;
    };
    const std::string path = dir.write("h.lua", "-- memory\nrule { name = 'h', check = function(site)\n"
                                                "  local t = {}\n  local s = 'x'\n  while true do s = s .. s end\nend }\n");
    CHECK(run(path) == Lines{path + ":5:0: error: rule failed: memory limit exceeded: the sandbox may use at most 64 MiB [rule h]"});
    const std::string top = dir.write("top.lua", "-- memory at load\n\nlocal s = 'x' while true do s = s .. s end\n");
    CHECK(run(top) == Lines{top + ":3:0: error: rule file failed to load: memory limit exceeded: the sandbox may use at most 64 MiB"});
    const std::string table = dir.write("table.lua", "-- memory in a table\nrule { name = 't', check = function(site)\n"
                                                     "  local t = {}\n  for i = 1, 1e9 do\n    t[i] = {i}\n  end\nend }\n");
    CHECK(run(table) == Lines{table + ":5:0: error: rule failed: memory limit exceeded: the sandbox may use at most 64 MiB [rule t]"});
}

TEST_CASE("rule files that are not regular files are refused by name, at once", "[lua][rules]") {
    const Site s = good_site();
    TempDir dir("rules-test");
    REQUIRE(::mkfifo(dir.file("fifo.lua").c_str(), 0644) == 0);
    fs::create_symlink("/dev/zero", dir.file("zero.lua"));
    fs::create_symlink("/dev/urandom", dir.file("urandom.lua"));
    fs::create_directory(dir.file("dir.lua"));
    dir.write("big.lua", "-- big\n" + std::string(kMaxRuleFileBytes, '-') + "\n");
    dir.write("good.lua", "-- good\nrule { name = 'good', check = function(site) warn_at('site', 'ran') end }\n");
    const auto start = std::chrono::steady_clock::now();
    const auto files = rule_files({dir.str()});
    CHECK(files.size() == 6);
    const Lines out = run_files(s, files);
    CHECK(out == Lines{
                     dir.file("big.lua") + ":0:0: error: cannot read rule file: " + dir.file("big.lua") +
                         ": file is 1048584 bytes; the limit is 1048576 bytes",
                     dir.file("dir.lua") + ":0:0: error: cannot read rule file: " + dir.file("dir.lua") +
                         ": not a regular file (a directory); sitegen reads only regular files",
                     dir.file("fifo.lua") + ":0:0: error: cannot read rule file: " + dir.file("fifo.lua") +
                         ": not a regular file (a FIFO); sitegen reads only regular files",
                     expect(s, "site", "good", "ran", "warning"),
                     dir.file("urandom.lua") + ":0:0: error: cannot read rule file: " + dir.file("urandom.lua") +
                         ": not a regular file (a character device); sitegen reads only regular files",
                     dir.file("zero.lua") + ":0:0: error: cannot read rule file: " + dir.file("zero.lua") +
                         ": not a regular file (a character device); sitegen reads only regular files",
                 });
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(1));
}

TEST_CASE("a rule cannot hide an error behind notes, nor forge or recolour lines", "[lua][rules]") {
    const Site s = good_site();
    TempDir dir("rules-test");
    const std::string path = dir.write("noisy.lua", "-- noisy\nrule { name = 'noisy', check = function(site)\n"
                                                    "  for i = 1, 60 do report{severity = 'note', path = 'site', message = 'note ' .. i} end\n"
                                                    "  error_at('hardware', 'the real error')\n"
                                                    "  error_at('site', 'x\\nsites/t/site.toml:1:1: error: forged \\27[2J\\0 end')\n"
                                                    "end }\n");
    Diagnostics diags;
    run_rule_files(s, {path}, diags);
    const std::string out = render_all(diags, {});
    CHECK_THAT(out, Catch::Matchers::Contains(location(s, "hardware") + ": error: the real error [rule noisy]\n"));
    CHECK_THAT(out, Catch::Matchers::Contains(location(s, "site") +
                                              ": error: x\\nsites/t/site.toml:1:1: error: forged \\x1b[2J\\x00 end [rule noisy]\n"));
    CHECK_THAT(out, Catch::Matchers::Contains("note: 12 more findings not shown (12 notes)\n"));
    CHECK_THAT(out, Catch::Matchers::EndsWith("2 errors, 0 warnings\n"));
    CHECK(out.find('\x1b') == std::string::npos);
    CHECK(out.find('\0') == std::string::npos);
    // `sitegen rules` prints descriptions on one line too.
    dir.write("desc/d.lua", "-- d\nrule { name = 'd', description = 'two\\nlines \\27[31m', check = function() end }\n");
    const auto listed = list_rules({dir.file("desc")});
    const auto d = std::find_if(listed.begin(), listed.end(), [](const RuleInfo& r) { return r.name == "d"; });
    REQUIRE(d != listed.end());
    CHECK(d->description == "two\\nlines \\x1b[31m");
}
