// Runs the pipeline stages in order for each requested site and renders the outcome.
#include "pipeline.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "site/check.h"
#include "site/diagnostics.h"
#include "site/load.h"
#include "out/publish.h"
#include "plan/stack_plan.h"
#include "render/renderers.h"
#include "lua/hooks.h"
#include "lua/rules.h"
#include "lua/selfcheck.h"
#include "node/doctor.h"
#include "node/hwloc_topology.h"
#include "plan/paths.h"
#include "plan/traits.h"
#include "site/suggest.h"

namespace sitegen {

namespace {

SourceReader reader_for(FileSystem& fs) {
    return [&fs](const std::string& path, std::string& text) {
        std::string error;
        return fs.read(path, text, error);
    };
}

// Resolves the requested names against sites_dir; unknown names are usage errors.
bool resolve_sites(FileSystem& fs, const Request& request, std::vector<std::string>& names,
                   Result& result) {
    const auto known = list_sites(fs, request.sites_dir);
    if (request.all) {
        names = known;
        if (names.empty()) {
            result.err += "sitegen: error: no sites in '" + request.sites_dir + "'\n";
            result.exit_code = kExitUsage;
            return false;
        }
        return true;
    }
    if (request.sites.empty()) {
        result.err += "sitegen: error: name at least one site, or use --all\n";
        result.exit_code = kExitUsage;
        return false;
    }
    for (const auto& name : request.sites) {
        if (std::find(known.begin(), known.end(), name) == known.end()) {
            std::string hint = did_you_mean(name, known);
            result.err += "sitegen: error: no site '" + name + "' in '" + request.sites_dir + "'" +
                          (hint.empty() ? "" : "; " + hint) + "\n";
            result.exit_code = kExitUsage;
            return false;
        }
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
    return true;
}

struct Loaded {
    std::string name;
    Site site;
    std::vector<HookAdditions> hooks;  // what the site's Lua hooks add, per stack (run once)
};

// Load + check every site; all findings of all sites are reported in one run.
bool load_and_check(FileSystem& fs, const Request& request, std::vector<Loaded>& sites,
                    Diagnostics& diags) {
    std::vector<std::string> names;
    for (const auto& name : request.sites) names.push_back(name);
    for (const auto& name : names) {
        Loaded l{name, {}};
        size_t before = diags.error_count();
        if (load_site(fs, request.sites_dir, name, l.site, diags) || diags.error_count() == before) {
            check_site(l.site, name, diags);
            // Lua rules read a schema-valid site; on a broken one they would only add noise.
            if (diags.error_count() == before) run_rules(l.site, request.rule_dirs, diags);
            // Hooks add to the plan of a site that passed every check (so check reports them too).
            if (diags.error_count() == before) l.hooks = run_hooks(l.site, diags);
        }
        sites.push_back(std::move(l));
    }
    return !diags.has_errors();
}

// Resolves the requested site names (usage errors go to `result`), then loads and checks
// them into `sites` and `diags`. False only when a name could not be resolved.
bool resolve_and_check(FileSystem& fs, const Request& request, std::vector<Loaded>& sites, Diagnostics& diags,
                       Result& result) {
    Request resolved = request;
    resolved.sites.clear();
    if (!resolve_sites(fs, request, resolved.sites, result)) return false;
    load_and_check(fs, resolved, sites, diags);
    return true;
}

std::string plural(size_t n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string plural(size_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

}  // namespace

OutputList emit_all(const Site& site, const PlanOptions& options) {
    OutputList all;
    // One stack at a time: its plan is computed once, rendered by every format, then
    // dropped, so memory holds the outputs and a single plan, not every plan besides.
    for (const Stack& stack : site.stacks) {
        const SitePlan plan{&site, options, {plan_stack(site, stack, options)}};
        for (const Renderer& renderer : renderers()) {
            OutputList part = renderer.render(plan);
            all.insert(all.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
        }
    }
    std::stable_sort(all.begin(), all.end(),
                     [](const OutputFile& a, const OutputFile& b) { return a.path < b.path; });
    return all;
}

Result run_check(FileSystem& fs, const Request& request) {
    Result result;
    Diagnostics diags;
    std::vector<Loaded> sites;
    if (!resolve_and_check(fs, request, sites, diags, result)) return result;
    result.err += render_all(diags, reader_for(fs));
    if (diags.has_errors()) { result.exit_code = kExitSiteErrors; return result; }
    result.out += "sitegen: " + plural(sites.size(), "site") + " checked, no errors\n";
    return result;
}

Result run_build(FileSystem& fs, const Request& request) {
    Result result;
    if (request.prefix) {
        const std::string& p = *request.prefix;
        bool bad = p.empty() || p[0] != '/' || p.find_first_of(":,") != std::string::npos;
        for (unsigned char c : p) bad = bad || c < 0x20 || c == 0x7f;
        if (bad) {
            result.err += "sitegen: error: --prefix must be an absolute path without ':', ',' or control characters\n";
            result.exit_code = kExitUsage;
            return result;
        }
    }
    Diagnostics diags;
    std::vector<Loaded> sites;
    if (!resolve_and_check(fs, request, sites, diags, result)) return result;

    OutputList files;
    std::vector<std::string> roots;
    if (!diags.has_errors()) {
        for (const auto& l : sites) {
            PlanOptions options;
            options.prefix = request.prefix ? *request.prefix : l.site.site.install_prefix;
            options.hooks = l.hooks;
            OutputList part;
            try {
                part = emit_all(l.site, options);
            } catch (const std::exception& e) {
                // Checks should have refused the input; never crash or write half a tree.
                diags.error(l.site.where(""), std::string("internal error while generating outputs: ") + e.what(),
                            "please report this with the site file");
                continue;
            }
            // Two outputs at one path would silently lose one: refuse instead.
            for (size_t i = 1; i < part.size(); ++i)
                if (part[i].path == part[i - 1].path)
                    diags.error(l.site.where("stacks"), "two outputs would be written to '" + part[i].path +
                                                            "' (stacks with the same name and version?)");
            // Nothing reaches the tree that the Lmod recorder rejects (load and unload mode).
            self_check_modulefiles(part, diags);
            roots.push_back(modules_root(l.site));
            roots.push_back(easyconfigs_root(l.site));
            files.insert(files.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
        }
    }
    if (diags.has_errors()) {
        result.err += render_all(diags, reader_for(fs));
        result.err += "sitegen: nothing written\n";
        result.exit_code = kExitSiteErrors;
        return result;
    }

    PublishOptions popts{request.out_dir, request.dry_run, request.force};
    PublishReport report;
    bool ok = publish(fs, roots, files, popts, report, diags);
    result.err += render_all(diags, reader_for(fs));
    if (!ok) {
        result.err += "sitegen: nothing written\n";
        result.exit_code = kExitIo;  // refused (hand edits) or failed writing
        return result;
    }
    if (request.dry_run) {
        for (const auto& p : report.added) result.out += "add     " + p + "\n";
        for (const auto& p : report.changed) result.out += "change  " + p + "\n";
        for (const auto& p : report.removed) result.out += "remove  " + p + "\n";
    }
    std::string names;
    for (const auto& l : sites) names += (names.empty() ? "" : ", ") + l.name;
    result.out += std::string("sitegen: ") + (request.dry_run ? "would write " : "wrote ") + names + ": " +
                  plural(files.size(), "file") + " (" + std::to_string(report.added.size()) + " added, " +
                  std::to_string(report.changed.size()) + " changed, " +
                  std::to_string(report.removed.size()) + " removed, " +
                  std::to_string(report.unchanged) + " unchanged)\n";
    return result;
}

Result run_topology_import(const std::string& xml_path) {
    Result result;
    NodeTopology topo;
    std::string error;
    if (!load_hwloc_topology(xml_path, topo, error)) {
        result.err += "sitegen: error: " + error + "\n";
        result.exit_code = kExitIo;
        return result;
    }
    result.out = hardware_toml(topo);
    return result;
}

Result run_doctor(FileSystem& fs, const Request& request, const DoctorRequest& doctor_request) {
    Result result;
    if (request.sites.size() != 1) {
        result.err += "sitegen: error: doctor checks one site\n";
        result.exit_code = kExitUsage;
        return result;
    }
    std::error_code ec;
    const std::string& root = doctor_request.root;
    if (root.empty() || root[0] != '/' || !std::filesystem::is_directory(root, ec)) {
        result.err += "sitegen: error: --root must be an existing directory given as an absolute path: '" + root + "'\n";
        result.exit_code = kExitUsage;
        return result;
    }
    Diagnostics diags;
    std::vector<Loaded> sites;
    if (!resolve_and_check(fs, request, sites, diags, result)) return result;
    if (diags.has_errors()) {
        result.err += render_all(diags, reader_for(fs));
        result.exit_code = kExitSiteErrors;
        return result;
    }
    const Site& site = sites.front().site;
    NodeTopology topo;
    std::string error;
    if (!load_hwloc_topology(doctor_request.topology, topo, error)) {
        result.err += "sitegen: error: " + error + "\n";
        result.exit_code = kExitIo;
        return result;
    }
    const std::string prefix = request.prefix ? *request.prefix : site.site.install_prefix;
    DoctorOptions options;
    for (const Stack& stack : site.stacks) {
        // Whether `image` is a file to find, from the runtime's and the layout's traits.
        const StackImage image = !runs_in_container(site, stack)                   ? StackImage::none
                                 : traits(site.container.runtime).image_is_name ? StackImage::named
                                                                                 : StackImage::file;
        options.stacks.push_back({stack_install_dir(prefix, stack),
                                  modulepath_of(prefix) + "/" + stack.name + "/" + stack.module_version() + ".lua",
                                  image});
    }
    // Lmod searches what users `module use` (the site's paths, the stacks' tree), then the
    // MODULEPATH of this environment (the node's own, when run on the node).
    auto add_dir = [&](const std::string& dir) {
        if (!dir.empty() && std::find(options.modulepath.begin(), options.modulepath.end(), dir) == options.modulepath.end())
            options.modulepath.push_back(dir);
    };
    for (const auto& dir : site.site.module_use) add_dir(dir);
    add_dir(modulepath_of(prefix));
    if (const char* env = std::getenv("MODULEPATH")) {
        std::string list = env;
        size_t start = 0;
        while (start <= list.size()) {
            const size_t colon = list.find(':', start);
            add_dir(list.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
            if (colon == std::string::npos) break;
            start = colon + 1;
        }
    }
    options.lmod = find_lmod();
    options.run_programs = root == "/";
    auto probe = make_node_probe(root);
    std::vector<std::string> checked;
    doctor(site, topo, options, *probe, diags, checked);
    result.err += render_all(diags, reader_for(fs));
    const std::string what = site.site.name + " against " + (doctor_request.topology.empty() ? std::string("this node")
                                                                                             : doctor_request.topology) +
                             (root == "/" ? "" : " (files under " + root + ")");
    if (diags.has_errors()) {
        result.err += "sitegen doctor: " + what + ": " + plural(diags.error_count(), "mismatch", "mismatches") + "\n";
        result.exit_code = kExitSiteErrors;
        return result;
    }
    result.out += "sitegen doctor: " + what + ": no mismatches\n";
    for (const auto& line : checked) result.out += "  checked " + line + "\n";
    return result;
}

Result run_rules_list(const Request& request) {
    Result result;
    for (const auto& r : list_rules(request.rule_dirs))
        result.out += r.name + "\t" + r.description + "\t(" + r.file + ")\n";
    return result;
}

Result run_list(FileSystem& fs, const Request& request) {
    Result result;
    for (const auto& name : list_sites(fs, request.sites_dir)) {
        Site site;
        Diagnostics diags;
        load_site(fs, request.sites_dir, name, site, diags);
        result.out += name + (site.site.description.empty() ? "" : "\t" + site.site.description) + "\n";
    }
    return result;
}

}  // namespace sitegen
