// The Tcl statements of a module's operations, evaluated by the real tclsh with stand-in
// setenv/prepend-path/module-info procs: the variables a LUMI-like container stack sets in
// each image/bind case (expected values written by hand, as lmod_lua_test has them for the
// Lua writer), the load error, and hostile site values that stay data.
#include <catch2/catch.hpp>

#include <filesystem>

#include "plan/stack_plan.h"
#include "render/tcl_statements.h"
#include "test_support.h"
#include "text/quote.h"
#include "text/tcl_writer.h"

using namespace sitegen;
using namespace sitegen::test;

namespace {

using Lines = std::vector<std::string>;

Site container_site(const std::string& image_dir) {
    Site site;
    site.site.name = "t";
    site.site.install_prefix = "/opt/t";
    site.container.enabled = true;
    site.container.runtime = ContainerRuntime::singularity;
    site.container.image_dir = image_dir;
    site.container.binds = {{"/scratch", "/scratch", ""}, {"/opt/v", "/vendor", "ro"}};
    site.python.layout = PythonLayout::container_venv;
    site.python.version = "3.12";
    site.python.conda_root = "/opt/conda";
    site.python.conda_env = "torch";
    site.python.venv = "/user-software/venv/torch";
    Stack s;
    s.name = "Torch-Box";
    s.version = "2.4.0";
    s.versionsuffix = "-rocm";
    s.description = "d";
    s.homepage = "https://example.org/";
    s.image = "t.sif";
    s.python = site.python;
    site.stacks = {s};
    return site;
}

// Output lines of tclsh evaluating the module's operations with `root` set, in `mode`;
// "ERROR: message" when the module raises an error.
Lines evaluate(const ModulePlan& module, const std::string& root, const std::string& mode, const TempDir& dir,
               const std::string& env = "") {
    TclStatements body;
    for (const auto& op : module.ops) body.op(op);
    const std::string script =
        "proc module-info {what args} {\n"
        "    if {[llength $args]} { return [expr {$::mode eq [lindex $args 0]}] }\n"
        "    return $::mode\n"
        "}\n"
        "proc setenv {name value} { puts \"setenv $name=$value\" }\n"
        "proc prepend-path {name value} { puts \"prepend_path $name=$value\" }\n"
        "set mode " + tcl_string(mode) + "\n"
        "set root " + tcl_string(root) + "\n"
        "if {[catch {\n" + body.text() + "} message]} { puts \"ERROR: $message\" }\n";
    write_file(dir.file("module.tcl"), script);
    const std::string out_file = dir.file("out.txt");
    REQUIRE(run("cd " + bash_word(dir.str()) + " && " + env + " LC_ALL=C.UTF-8 tclsh " + bash_word(dir.file("module.tcl")) + " > " + bash_word(out_file)) == 0);
    Lines lines;
    std::string text = read_file(out_file), line;
    for (char c : text) {
        if (c == '\n') { lines.push_back(line); line.clear(); } else line += c;
    }
    return lines;
}

}  // namespace

TEST_CASE("tclsh evaluates a container module's operations to the same variables as the Lua writer's", "[tcl][modulefile]") {
    require_tool("tclsh");
    TempDir dir("tclmod");
    const std::string images = dir.file("images"), root = dir.file("root");
    std::filesystem::create_directories(images);
    std::filesystem::create_directories(root);
    const Site site = container_site(images);
    const ModulePlan module = plan_site(site, PlanOptions{"/opt/t"}).stacks[0].module;
    const Lines inside = {
        "setenv SINGULARITYENV_CONDA_DEFAULT_ENV=torch",
        "setenv SINGULARITYENV_CONDA_EXE=/opt/conda/bin/conda",
        "setenv SINGULARITYENV_CONDA_PREFIX=/opt/conda/envs/torch",
        "setenv SINGULARITYENV_PREPEND_PATH=/runscripts:/user-software/venv/torch/bin:/opt/conda/envs/torch/bin:/opt/conda/condabin",
        "setenv SINGULARITYENV_VIRTUAL_ENV=/user-software/venv/torch",
        "setenv SINGULARITYENV_WITH_CONDA_VENV=source /runscripts/init-conda-venv",
        "setenv SINGULARITYENV_WITH_VENV=source /user-software/venv/torch/bin/activate",
        "prepend_path PATH=" + root + "/bin",
        "setenv RUNSCRIPTS=" + root + "/runscripts",
    };
    auto expected = [&](const std::string& sif, const std::string& user_software_bind) {
        Lines out = {"setenv SIF=" + sif, "setenv SIFTORCHBOX=" + sif, "setenv CONTAINERROOT=" + root,
                     "setenv RUNSCRIPTSTORCHBOX=" + root + "/runscripts",
                     "setenv SINGULARITY_BIND=/scratch,/opt/v:/vendor:ro," + root + "/runscripts:/runscripts" +
                         user_software_bind};
        out.insert(out.end(), inside.begin(), inside.end());
        return out;
    };
    SECTION("installed image and a packed user-software.squashfs") {
        write_file(root + "/t.sif", "x");
        write_file(root + "/user-software.squashfs", "x");
        CHECK(evaluate(module, root, "load", dir) ==
              expected(root + "/t.sif", "," + root + "/user-software.squashfs:/user-software:image-src=/"));
    }
    SECTION("the site's image and a user-software directory") {
        write_file(images + "/t.sif", "x");
        std::filesystem::create_directories(root + "/user-software");
        CHECK(evaluate(module, root, "load", dir) == expected(images + "/t.sif", "," + root + "/user-software:/user-software"));
    }
    SECTION("no image anywhere: an error on a user's load, none on EasyBuild's test load or on unload") {
        CHECK(evaluate(module, root, "load", dir) ==
              Lines{"ERROR: container image t.sif not found in " + root + " nor in " + images +
                    "; reinstall the module or ask your support team"});
        CHECK(evaluate(module, root, "load", dir, "___EASYBUILD___=EasyBuild") == expected(images + "/t.sif", ""));
        CHECK(evaluate(module, root, "load", dir, "___EASYBUILD___=other").at(0).starts_with("ERROR: container image"));
        CHECK(evaluate(module, root, "unload", dir) == expected(images + "/t.sif", ""));
    }
}

TEST_CASE("hostile site values stay data in Tcl statements", "[tcl][modulefile]") {
    require_tool("tclsh");
    TempDir dir("tclmod");
    // Commands in values would run in `dir` (tclsh runs there): MARKER must never appear.
    const std::string marker = "MARKER";
    const std::string images = dir.file("im[exec touch " + marker + "]$x{"), root = dir.file("root");
    std::filesystem::create_directories(images);
    std::filesystem::create_directories(root);
    Site site = container_site(images);
    const std::string bind = "/b\"; exec touch " + marker + "; set x \"}{\\";
    site.container.binds = {{bind, bind, ""}};
    site.stacks[0].image = "t[exec touch " + marker + "].sif";
    site.stacks[0].env = {{"HOSTILE", "[exec touch " + marker + "] $::env(HOME) ${root} \\ \"\n}{"}};
    write_file(images + "/" + site.stacks[0].image, "x");
    const ModulePlan module = plan_site(site, PlanOptions{"/opt/t"}).stacks[0].module;
    const Lines out = evaluate(module, root, "load", dir);
    CHECK_FALSE(std::filesystem::exists(dir.file(marker)));
    const std::string sif = images + "/" + site.stacks[0].image;
    CHECK(std::find(out.begin(), out.end(), "setenv SIF=" + sif) != out.end());
    CHECK(std::find(out.begin(), out.end(), "setenv SINGULARITY_BIND=" + bind + "," + root + "/runscripts:/runscripts") !=
          out.end());
    // The value's newline ends the recorded line: compare its two halves.
    const std::string value = site.stacks[0].env[0].second;
    auto it = std::find(out.begin(), out.end(), "setenv HOSTILE=" + value.substr(0, value.find('\n')));
    REQUIRE(it != out.end());
    REQUIRE(it + 1 != out.end());
    CHECK(*(it + 1) == value.substr(value.find('\n') + 1));
}

TEST_CASE("tclsh runs the driver gate: older refused with the message, newer and missing load", "[tcl][modulefile][driver]") {
    require_tool("tclsh");
    TempDir dir("tclgate");
    const std::string root = dir.file("root"), images = dir.file("images");
    std::filesystem::create_directories(images);
    Site site = container_site(images);
    write_file(images + "/t.sif", "x");
    site.hardware.gpu_vendor = GpuVendor::amd;
    site.stacks[0].min_driver = "6.7.0";
    const std::string drv = dir.file("version");
    const std::string env = "SITEGEN_DRIVER_VERSION_FILE=" + bash_word(drv);
    auto load = [&](const Site& s) { return evaluate(plan_site(s, PlanOptions{"/opt/t"}).stacks[0].module, root, "load", dir, env); };
    write_file(drv, "6.3.6\n");
    CHECK(load(site) == Lines{"ERROR: Torch-Box/2.4.0-rocm needs the AMD GPU driver (amdgpu) 6.7.0 or newer; this node has 6.3.6 (" +
                              drv + "). Use it on nodes with a newer driver, or load a Torch-Box version built for an older one "
                              "(module avail Torch-Box); your support team knows which nodes have which driver."});
    for (const char* newer : {"6.7.0\n", "6.10.05\n", "7\n"}) {
        write_file(drv, newer);
        const Lines out = load(site);
        INFO(newer);
        CHECK(out.size() > 3);
        CHECK(out.front() == "setenv SIF=" + images + "/t.sif");
    }
    std::filesystem::remove(drv);
    CHECK(load(site).front() == "setenv SIF=" + images + "/t.sif");
    // Unload never checks; a hostile minimum stays data (check refuses it; the writer quotes it).
    write_file(drv, "6.3.6\n");
    CHECK(evaluate(plan_site(site, PlanOptions{"/opt/t"}).stacks[0].module, root, "unload", dir, env).front() ==
          "setenv SIF=" + images + "/t.sif");
    site.stacks[0].min_driver = "9[exec touch MARKER]$x\"";
    const Lines out = load(site);
    CHECK_FALSE(std::filesystem::exists(dir.file("MARKER")));
    REQUIRE_FALSE(out.empty());
    CAPTURE(out.front());
    // Tcl's `package vcompare` rejects the literal as a version: the load fails, nothing runs.
    CHECK(out.front() == "ERROR: expected version number but got \"9[exec touch MARKER]$x\"\"");
}
