// emit: an EasyBuild easyconfig per stack, in EasyBuild's own naming and repository layout.
// The scripts sitegen generates are written by postinstallcmds byte for byte (quoted
// heredocs, %-escaped for EasyBuild's templating); dependencies, modextravars and
// modluafooter make the module EasyBuild generates set what sitegen's own modulefile sets.
//
// Easyblocks: container stacks use MakeCp like LUMI's own recipes (copy the image, write
// the scripts, create the venv in the image). Everything else uses Bundle with no
// components, the install done by postinstallcmds, because the layouts the modulefile
// describes are not what the specialised easyblocks build: PythonBundle installs with
// `pip install --prefix=<installdir>` into lib/pythonX.Y/site-packages and fails without an
// EasyBuild-built Python ("Python not included as dependency!"), while Cirrus uses pip
// --user under PYTHONUSERBASE=<root>/python/<version> over the site's python module; Conda
// makes <installdir> itself the environment (the module uses <root>/conda-env) and needs an
// EasyBuild-built conda (EBROOTMINIFORGE3...), while Frontier's miniforge3 is the site's.
#include "render/emit_easyconfig.h"

#include <cctype>
#include <map>
#include <set>
#include <stdexcept>

#include "render/emit_modulefile.h"
#include "render/emit_runscripts.h"
#include "render/emit_venv_extension.h"
#include "plan/layout.h"
#include "text/python_writer.h"
#include "text/quote.h"
#include "out/sha256.h"

namespace sitegen {

namespace {

constexpr const char* kInstallDir = "%(installdir)s";

// A command on a file of the install dir: PREFIX "%(installdir)s/REL" SUFFIX, bash-quoted.
std::string on_installed_file(const std::string& prefix, const std::string& rel, const std::string& suffix = "") {
    return easybuild_template(prefix + "\"" + kInstallDir + "/", bash_double_quoted(rel) + "\"" + suffix);
}

std::string letter_dir(const std::string& name) {
    return std::string(1, static_cast<char>(std::tolower(static_cast<unsigned char>(name.at(0)))));
}

std::string parent_dir(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

// The site's modules (PrgEnv-gnu, rocm, python/3.12.1-gpu, LUMI/24.03) are not built by
// EasyBuild: EXTERNAL_MODULE dependencies make `eb` load them for the build and write
// depends_on() for them in the generated module, exactly like sitegen's modulefile.
std::vector<std::string> base_modules(const Site& site, const Stack& stack) {
    std::vector<std::string> all = site.site.base_modules;
    all.insert(all.end(), stack.base_modules.begin(), stack.base_modules.end());
    return all;
}

// One `pip install` of some components: environment, options and requirements.
struct PipInstall {
    std::string env;      // NAME=value words before the command
    std::string options;  // after --no-cache-dir
    std::vector<std::string> requirements;
};

// The version of a base module NAME/VERSION, "" when the stack has none.
std::string base_module_version(const Site& site, const Stack& stack, const std::string& name) {
    for (const auto& m : base_modules(site, stack))
        if (m.rfind(name + "/", 0) == 0) return m.substr(name.size() + 1);
    return "";
}

// The components in install order, grouped the way the seeds install them: PyTorch's own
// wheels first (on AMD from PyTorch's ROCm index for the stack's rocm module, as OLCF's
// `--index-url https://download.pytorch.org/whl/rocm6.0`; PyPI's default wheels are CUDA
// builds), then the rest from PyPI, then mpi4py built from source against Cray MPICH
// with the PE's compiler wrapper when the stack sits on a Cray PE (PrgEnv-*), as OLCF's
// `MPICC="cc -shared" pip install --no-binary=mpi4py`.
std::vector<PipInstall> pip_installs(const Site& site, const Stack& stack) {
    const std::string rocm = base_module_version(site, stack, "rocm");
    const bool torch_index = site.hardware.gpu_vendor == GpuVendor::amd && !rocm.empty();
    bool cray_pe = false;
    for (const auto& m : base_modules(site, stack)) cray_pe = cray_pe || m.rfind("PrgEnv-", 0) == 0;
    PipInstall torch{"", torch_index ? " --index-url " + bash_word("https://download.pytorch.org/whl/rocm" +
                                                                   python_major_minor(rocm)) : "", {}};
    PipInstall plain, mpi4py{"MPICC=" + bash_word("cc -shared") + " ", " --no-binary=mpi4py", {}};
    for (const auto& [name, version] : stack.components) {
        const std::string req = bash_word(version.empty() ? name : name + "==" + version);
        if (torch_index && (name == "torch" || name == "torchvision" || name == "torchaudio"))
            torch.requirements.push_back(req);
        else if (cray_pe && name == "mpi4py")
            mpi4py.requirements.push_back(req);
        else
            plain.requirements.push_back(req);
    }
    std::vector<PipInstall> out;
    for (auto* group : {&torch, &plain, &mpi4py})
        if (!group->requirements.empty()) out.push_back(std::move(*group));
    return out;
}

// `pip install` commands run by the Python that `python_templated` + `python_literal`
// names (EasyBuild templates allowed only in the first part).
std::vector<std::string> pip_commands(const Site& site, const Stack& stack, const std::string& python_templated,
                                      const std::string& python_literal, const std::string& user_option) {
    std::vector<std::string> cmds;
    for (const auto& pip : pip_installs(site, stack)) {
        std::string reqs;
        for (const auto& r : pip.requirements) reqs += " " + r;
        cmds.push_back(easybuild_template(pip.env + python_templated, python_literal + " -m pip install" + user_option +
                                                                          " --no-cache-dir" + pip.options + reqs));
    }
    return cmds;
}

std::string container_runtime(const Site& site) {
    return site.container.runtime == ContainerRuntime::apptainer ? "apptainer" : "singularity";
}

// The venv on top of the image's conda environment, created in <installdir>/user-software
// (mounted at /user-software) by running python inside the image.
std::vector<std::string> container_venv_commands(const Site& site, const Stack& stack) {
    const Python& py = stack.python;
    const std::string inner = "source " + bash_word(py.conda_root + "/bin/activate") + " " + bash_word(py.conda_env) +
                              " && mkdir -p " + bash_word(parent_dir(py.venv)) +
                              " && python -m venv --system-site-packages " + bash_word(py.venv);
    return {
        easybuild_template(std::string("mkdir -p \"") + kInstallDir + "/user-software\""),
        easybuild_template(container_runtime(site) + " exec --bind \"" + kInstallDir + "/user-software:/user-software\" \"" +
                               kInstallDir + "/\"",
                           bash_word(stack.image) + " bash -c " + bash_word(inner)),
    };
}

// Install steps that depend on the Python layout (the scripts come afterwards). The base
// modules are loaded by EasyBuild (dependencies), so `python` and `conda` are theirs.
std::vector<std::string> layout_commands(const Site& site, const Stack& stack) {
    const Python& py = stack.python;
    switch (py.layout) {
        case PythonLayout::container_venv:
            return container_venv_commands(site, stack);
        case PythonLayout::userbase_venv:
            // The site's python module (a dependency) installs under PYTHONUSERBASE.
            return pip_commands(site, stack, std::string("PYTHONUSERBASE=\"") + kInstallDir + "/python/",
                                bash_double_quoted(py.version) + "\" python", " --user");
        case PythonLayout::conda_env: {
            if (!py.conda_env.empty()) return {};  // the site's own environment
            std::vector<std::string> cmds = {
                easybuild_template(std::string("conda create --yes --prefix \"") + kInstallDir + "/conda-env\"",
                                   " python=" + bash_word(python_major_minor(py.version)))};
            for (auto& c : pip_commands(site, stack, std::string("\"") + kInstallDir + "/conda-env/bin/python\"", "", ""))
                cmds.push_back(std::move(c));
            return cmds;
        }
        case PythonLayout::frameworks_module:
        case PythonLayout::system:
            return {};  // the site provides Python and the packages
    }
    return {};
}

// A generated script and how postinstallcmds write it.
struct Script {
    std::string rel;         // path in the install dir, e.g. runscripts/get-master
    std::string local_name;  // the easyconfig variable holding its text
    std::string content;
    bool executable = false;
};

std::vector<Script> stack_scripts(const Site& site, const Stack& stack, const EmitOptions& options) {
    OutputList files = emit_stack_runscripts(site, stack, options);
    for (auto& f : emit_stack_venv_extension(site, stack, options)) files.push_back(std::move(f));
    const std::string base = stack_output_path(site, stack, "");
    std::vector<Script> scripts;
    std::set<std::string> names;
    for (auto& f : files) {
        if (f.path.compare(0, base.size(), base) != 0) throw std::logic_error("script outside the stack: " + f.path);
        Script s{f.path.substr(base.size()), "local_", std::move(f.contents), f.executable};
        for (char c : s.rel) s.local_name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
        while (!names.insert(s.local_name).second) s.local_name += "_";
        scripts.push_back(std::move(s));
    }
    return scripts;
}

bool has_line(const std::string& text, const std::string& line) {
    size_t start = 0;
    for (size_t nl; start <= text.size(); start = nl + 1) {
        nl = text.find('\n', start);
        if (nl == std::string::npos) nl = text.size();
        if (text.compare(start, nl - start, line) == 0 && nl - start == line.size()) return true;
    }
    return false;
}

// A heredoc delimiter that is no line of the content (stable: derived from its hash).
std::string heredoc_delimiter(const std::string& content) {
    std::string delim = "SITEGEN_EOF_" + sha256_hex(content).substr(0, 12);
    while (has_line(content, delim)) delim += "_";
    return delim;
}

// `cat > FILE <<'DELIM'` + the text: a quoted delimiter, so nothing in it expands. A heredoc
// always ends its text with a newline; truncate removes it when the script has none.
std::vector<std::string> write_script_commands(const Script& s) {
    if (s.content.find('\0') != std::string::npos) throw std::invalid_argument(s.rel + " holds a NUL byte");
    const std::string delim = heredoc_delimiter(s.content);
    const bool ends_with_newline = !s.content.empty() && s.content.back() == '\n';
    std::vector<std::string> cmds = {
        on_installed_file("cat > ", s.rel, " <<'" + delim + "'\n") + " + " + s.local_name + " + " +
        python_string((ends_with_newline ? "" : "\n") + delim)};
    if (!ends_with_newline) cmds.push_back(on_installed_file("truncate -s -1 ", s.rel));
    cmds.push_back(on_installed_file(s.executable ? "chmod 755 " : "chmod 644 ", s.rel));
    return cmds;
}

// Values EasyBuild's Lua module generator writes back unchanged in setenv(): it quotes
// with quote_str, which escapes nothing (a backslash would become a Lua escape, ' and "
// together give invalid Lua) and turns $VAR into os.getenv() by default. Other values
// stay in modluafooter, where sitegen's own Lua quoting writes them.
bool survives_easybuild_setenv(const std::string& value) {
    for (unsigned char c : value)
        if (c < 0x20 || c > 0x7e || c == '\\' || c == '$' || c == '\'' || c == '"') return false;
    return true;
}

// sitegen's modulefile, split into what EasyBuild writes itself (modextravars) and the
// Lua footer it appends verbatim. The split is exact or not done: the environment section
// is cut off only if it is, byte for byte, the one rebuilt here from the site.
struct ModuleForEasyBuild {
    EnvList extravars;
    std::string footer;
};

// The variables sitegen's modulefile sets last, from the site file (the same merge:
// stack values override the site's collectives, in name order).
EnvList module_env(const Site& site, const Stack& stack) {
    std::map<std::string, std::string> merged;
    for (const auto& [k, v] : site.collectives.env) merged[k] = v;
    for (const auto& [k, v] : stack.env) merged[k] = v;
    return EnvList(merged.begin(), merged.end());
}

ModuleForEasyBuild module_for_easybuild(const Site& site, const Stack& stack, const EmitOptions& options) {
    const ModulefileParts parts = modulefile_parts(site, stack, options);
    std::string deps;  // family/conflict lines; depends_on comes from `dependencies`
    for (size_t start = 0, nl; start < parts.dependencies.size(); start = nl + 1) {
        nl = parts.dependencies.find('\n', start);
        if (nl == std::string::npos) nl = parts.dependencies.size();
        const std::string line = parts.dependencies.substr(start, nl - start);
        if (line.rfind("depends_on(", 0) != 0) deps += line + "\n";
    }
    ModuleForEasyBuild out;
    const std::string marker = "-- Collective, network and stack environment (one source: the site file).\n";
    std::string env_section, kept_env;
    const EnvList env = module_env(site, stack);
    for (const auto& [k, v] : env) env_section += "setenv(" + lua_string(k) + ", " + lua_string(v) + ")\n";
    if (!env.empty()) env_section = marker + env_section;
    const std::string& body = parts.body;
    if (env.empty() || body.size() < env_section.size() ||
        body.compare(body.size() - env_section.size(), env_section.size(), env_section) != 0) {
        out.footer = (deps.empty() ? "" : deps + "\n") + body;
        return out;
    }
    const std::string before = body.substr(0, body.size() - env_section.size());
    for (const auto& [k, v] : env) {
        // Set earlier in the body too: keep its place in the order.
        const bool set_before = before.find("(" + lua_string(k) + ", ") != std::string::npos;
        if (survives_easybuild_setenv(v) && !set_before)
            out.extravars.emplace_back(k, v);
        else
            kept_env += "setenv(" + lua_string(k) + ", " + lua_string(v) + ")\n";
    }
    out.footer = (deps.empty() ? "" : deps + "\n") + before + (kept_env.empty() ? "" : marker + kept_env);
    return out;
}

void write_identity(PythonWriter& w, const Stack& stack, bool container) {
    w.assign("easyblock", easybuild_string(container ? "MakeCp" : "Bundle"));
    w.blank();
    std::vector<std::pair<std::string, std::string>> names = {{"name", easybuild_string(stack.name)},
                                                              {"version", easybuild_string(stack.version)}};
    if (!stack.versionsuffix.empty()) names.emplace_back("versionsuffix", easybuild_string(stack.versionsuffix));
    if (container) names.emplace_back("local_sif", easybuild_string(stack.image));
    w.assign_aligned(names);
    w.blank();
    w.assign("homepage", easybuild_string(stack.homepage));
    std::vector<std::string> whatis = {easybuild_string("Description: " + stack.description)};
    if (!stack.keywords.empty()) {
        std::string kw;
        for (const auto& k : stack.keywords) kw += (kw.empty() ? "" : ", ") + k;
        whatis.push_back(easybuild_string("Keywords: " + kw));
    }
    w.assign_list("whatis", whatis);
    w.assign("description", easybuild_lines(stack.description));
    if (!stack.docurls.empty()) {
        std::vector<std::string> urls;
        for (const auto& u : stack.docurls) urls.push_back(easybuild_string(u));
        w.assign_list("docurls", urls);
    }
    w.blank();
    w.assign("toolchain", "SYSTEM");
}

void write_module(PythonWriter& w, const Site& site, const Stack& stack, const EmitOptions& options) {
    const ModuleForEasyBuild module = module_for_easybuild(site, stack, options);
    if (!module.extravars.empty()) {
        std::vector<std::pair<std::string, std::string>> items;
        for (const auto& [k, v] : module.extravars) items.emplace_back(python_string(k), easybuild_string(v));
        w.assign_dict("modextravars", items);
        w.blank();
    }
    w.comment("sitegen's modulefile body; EasyBuild's module defines `root` (the install dir) before it.");
    w.assign("modluafooter", easybuild_lines(module.footer));
}

std::string easyconfig(const Site& site, const Stack& stack, const EmitOptions& options) {
    const bool container = runs_in_container(site, stack);
    const std::vector<Script> scripts = stack_scripts(site, stack, options);

    PythonWriter w;
    w.comment(stack.module_full_name() + " for site " + site.site.name + ": generated by sitegen; do not edit,");
    w.comment("change the site definition and regenerate.");
    w.blank();
    write_identity(w, stack, container);
    std::vector<std::string> deps;
    for (const auto& m : base_modules(site, stack)) deps.push_back("(" + easybuild_string(m) + ", EXTERNAL_MODULE)");
    if (!deps.empty()) {
        w.blank();
        w.assign_list("dependencies", deps);
    }
    w.blank();
    if (container) {
        // As LUMI's recipes: the image is the source, copied (not unpacked) into the install dir.
        w.assign_list("sources", {"{'filename': local_sif, 'extract_cmd': '/bin/cp -L %s .'}"});
        w.assign("skipsteps", "['build']");
        w.assign_list("files_to_copy", {"([local_sif], '.')"});
        w.blank();
    }
    w.comment("The scripts, byte for byte as sitegen generates them.");
    for (const auto& s : scripts) w.assign(s.local_name, easybuild_lines(s.content));
    w.blank();
    std::vector<std::string> cmds = {
        easybuild_template(std::string("mkdir -p \"") + kInstallDir + "/bin\" \"" + kInstallDir + "/runscripts\"")};
    for (const auto& c : layout_commands(site, stack)) cmds.push_back(c);
    std::vector<std::string> sanity_files, sanity_cmds;
    for (const auto& s : scripts) {
        for (auto& c : write_script_commands(s)) cmds.push_back(std::move(c));
        sanity_files.push_back(easybuild_string(s.rel));
        sanity_cmds.push_back(on_installed_file("bash -n ", s.rel));
    }
    w.assign_list("postinstallcmds", cmds);
    w.blank();
    // The image is not checked: users may delete the installed copy (the module then uses
    // the site's), as LUMI's recipes note.
    w.assign_dict("sanity_check_paths",
                  {{"'files'", python_list(sanity_files, 4)}, {"'dirs'", python_list({"'runscripts'"}, 4)}});
    w.assign_list("sanity_check_commands", sanity_cmds);
    w.blank();
    write_module(w, site, stack, options);
    w.blank();
    w.assign("moduleclass", easybuild_string(stack.moduleclass));
    return w.text();
}

}  // namespace

std::string easyconfig_file_name(const Stack& stack) {
    // <name>-<version>[-<toolchain>-<tcversion>]<versionsuffix>.eb; the SYSTEM toolchain
    // adds nothing.
    return stack.name + "-" + stack.version + stack.versionsuffix + ".eb";
}

OutputList emit_easyconfigs(const Site& site, const EmitOptions& options) {
    OutputList out;
    for (const auto& stack : site.stacks)
        out.push_back({easyconfigs_root(site) + "/" + letter_dir(stack.name) + "/" + stack.name + "/" +
                           easyconfig_file_name(stack),
                       easyconfig(site, stack, options), false});
    return out;
}

}  // namespace sitegen
