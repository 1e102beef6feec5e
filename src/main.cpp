// sitegen's command line: parse arguments, run one pipeline command, print, exit.
#include <iostream>

#include <CLI/CLI.hpp>

#include "pipeline.h"
#include "lua/site_view.h"
#include "out/trace.h"
#include "site/schema.h"

int main(int argc, char** argv) {
    using namespace sitegen;
    prime_statics();  // (before any thread: see pipeline.h)
    CLI::App app{"sitegen " SITEGEN_VERSION
                 ": compile declarative HPC site descriptions (sites/<name>/site.toml) into Lmod or "
                 "Environment Modules modulefiles, EasyBuild easyconfigs, venv-activate extensions and runscripts "
                 "for PyTorch stacks.\n\nExit codes: 0 ok, 1 errors in site definitions, 2 usage, "
                 "3 I/O or output-tree errors (nothing is written unless the whole build succeeds)."};
    app.set_version_flag("--version", "sitegen " SITEGEN_VERSION);
    app.require_subcommand(1);
    app.fallthrough();

    Request request;
    app.add_option("--sites-dir", request.sites_dir, "Directory holding <site>/site.toml")
        ->capture_default_str();
    app.add_option("--out-dir", request.out_dir,
                   "Where modules-out/<site>/ and easyconfigs-out/<site>/ are written")
        ->capture_default_str();

    auto* build = app.add_subcommand("build", "Check, generate and publish the named sites' outputs (with what the sites' Lua hooks, "
                                     "sites/<name>/hooks/*.lua, add)");
    build->add_option("sites", request.sites, "Site names (directories under --sites-dir)");
    build->add_flag("--all", request.all, "Build every site");
    build->add_option("--prefix", request.prefix,
                      "Install prefix written into outputs (default: each site's install_prefix)");
    build->add_flag("--dry-run", request.dry_run, "Print what would change; write nothing");
    build->add_flag("--force", request.force, "Overwrite outputs that were edited by hand");

    auto* check = app.add_subcommand("check", "Check the named sites (schema, Lua rules, and the sites' hooks run); write nothing");
    check->add_option("sites", request.sites, "Site names");
    check->add_flag("--all", request.all, "Check every site");

    auto* list = app.add_subcommand("list", "List the sites under --sites-dir");
    auto* rules = app.add_subcommand("rules", "List the active Lua rules (built-in and --rules DIR) with a description");
    for (auto* sub : {build, check, rules})
        sub->add_option("--rules", request.rule_dirs, "Also run the *.lua rules in DIR (repeatable)");
    auto* schema = app.add_subcommand("schema", "Print the site-file reference (docs/site-schema.md)");
    bool lua_view = false;
    schema->add_flag("--lua-view", lua_view,
                     "Print instead the table of the site as Lua rules see it (docs/rules.md)");

    std::string xml_file;
    auto* topology = app.add_subcommand("topology", "Read node topologies (hwloc)");
    topology->require_subcommand(1);
    auto* import = topology->add_subcommand(
        "import", "Print the [hardware] table of a node from its hwloc XML (lstopo --of xml > node.xml)");
    import->add_option("file", xml_file, "hwloc XML file of the node")->required();

    DoctorRequest doctor_request;
    std::string doctor_site;
    auto* doctor = app.add_subcommand(
        "doctor", "Compare a node with a site file: cores, GPUs and their cores, NICs, bind paths, images, base "
                  "modules, python, the GPU driver against stacks' min_driver; run it on a compute node (or off-node "
                  "with --topology and --root)");
    doctor->add_option("site", doctor_site, "Site name")->required();
    doctor->add_option("--topology", doctor_request.topology,
                       "The node's hwloc XML (lstopo --of xml) instead of this machine's topology");
    doctor->add_option("--root", doctor_request.root,
                       "Check the node's paths under DIR (a copy or mount of its file system); the python is then "
                       "not run")
        ->capture_default_str();
    doctor->add_option("--prefix", request.prefix, "Install prefix the stacks are deployed at (default: the site's)");

    std::string explain_site, explain_stack, explain_var;
    auto* explain = app.add_subcommand(
        "explain", "Print the collective environment a rank of STACK gets (module and rank wrapper, run-time "
                   "conditions included), each setting with the file:line, profile and conditions that set it "
                   "(docs/profiles.md); exit 1 when VAR is set by nothing");
    explain->add_option("site", explain_site, "Site name")->required();
    explain->add_option("stack", explain_stack, "The stack's module name (PyTorch/2.3.1-rocm-6.0.3), or its name when unique")
        ->required();
    explain->add_option("var", explain_var, "Only this variable, with the settings it overrides");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);
        return code == 0 ? kExitOk : kExitUsage;
    }

    Result result;
    auto fs = make_disk_fs();
    if (*build) {
        request.leave_working_set = true;  // freed by the exit just after
        result = run_build(*fs, request);
    }
    else if (*check) result = run_check(*fs, request);
    else if (*list) result = run_list(*fs, request);
    else if (*rules) result = run_rules_list(request);
    else if (*schema) result.out = lua_view ? site_view_reference() : schema_markdown();
    else if (*import) result = run_topology_import(xml_file);
    else if (*explain) {
        request.sites = {explain_site};
        result = run_explain(*fs, request, explain_stack, explain_var);
    } else if (*doctor) {
        request.sites = {doctor_site};
        result = run_doctor(*fs, request, doctor_request);
    }
    std::cerr << result.err;
    std::cout << result.out;
    if (std::string error; !write_trace(*fs, error)) {
        std::cerr << "sitegen: warning: cannot write the trace SITEGEN_TRACE names: " << error << "\n";
        if (result.exit_code == kExitOk) result.exit_code = kExitIo;
    }
    return result.exit_code;
}
