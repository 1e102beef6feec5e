// emit: an EasyBuild easyconfig per stack, in EasyBuild's own naming and repository layout.
// The scripts sitegen generates are written by postinstallcmds byte for byte (quoted
// heredocs, %-escaped for EasyBuild's templating), and modluafooter carries the same
// module body as sitegen's own modulefile, so `eb` installs exactly what was reviewed.
#include "emit_easyconfig.h"

#include <cctype>

#include "emit_modulefile.h"
#include "emit_runscripts.h"
#include "emit_venv_extension.h"
#include "layout.h"
#include "quote.h"
#include "sha256.h"

namespace sitegen {

namespace {

constexpr const char* kInstallDir = "%(installdir)s";

// One formatter for easyconfig files: assignments of Python literals, aligned and stable.
class EasyconfigWriter {
public:
    void comment(const std::string& text) { out_ += "# " + text + "\n"; }
    void blank() { out_ += "\n"; }
    void assign(const std::string& name, const std::string& python_expr) { out_ += name + " = " + python_expr + "\n"; }
    void assign_list(const std::string& name, const std::vector<std::string>& python_exprs) {
        if (python_exprs.empty()) { assign(name, "[]"); return; }
        out_ += name + " = [\n";
        for (const auto& e : python_exprs) out_ += "    " + e + ",\n";
        out_ += "]\n";
    }
    void raw_sanity(const std::vector<std::string>& files) {
        out_ += "sanity_check_paths = {\n    'files': [\n";
        for (const auto& f : files) out_ += "        " + f + ",\n";
        out_ += "    ],\n    'dirs': ['runscripts'],\n}\n";
    }
    const std::string& text() const { return out_; }

private:
    std::string out_;
};

bool template_follows(const std::string& s, size_t i) {
    // "%(name)s" after a run of %: EasyBuild treats it as a template (see easybuild-framework
    // easyconfig.resolve_template), so such runs are the only ones that need doubling.
    if (i >= s.size() || s[i] != '(') return false;
    size_t j = i + 1;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
    return j > i + 1 && j + 1 < s.size() && s[j] == ')' && s[j + 1] == 's';
}

// A literal for EasyBuild: after its templating the value is exactly `s`.
std::string easybuild_literal(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size();) {
        if (s[i] != '%') { out += s[i++]; continue; }
        size_t j = i;
        while (j < s.size() && s[j] == '%') ++j;
        const size_t run = j - i;
        out.append(template_follows(s, j) ? 2 * run : run, '%');
        i = j;
    }
    return out;
}

std::string py(const std::string& literal) { return python_string(easybuild_literal(literal)); }
// A Python string whose value keeps EasyBuild templates in `templated` and escapes `literal`.
std::string py_template(const std::string& templated, const std::string& literal = "") {
    return python_string(templated + easybuild_literal(literal));
}

// `cat > FILE <<'DELIM'` with a delimiter that is no line of the content.
std::string heredoc_command(const std::string& rel, const std::string& content) {
    std::string delim = "SITEGEN_EOF_" + sha256_hex(content).substr(0, 12);
    while (content.find("\n" + delim + "\n") != std::string::npos || content.rfind(delim + "\n", 0) == 0) delim += "_";
    return std::string("cat > \"") + kInstallDir + "/" + rel + "\" <<'" + delim + "'\n" + easybuild_literal(content) +
           delim;
}

std::string letter_dir(const std::string& name) {
    return std::string(1, static_cast<char>(std::tolower(static_cast<unsigned char>(name[0]))));
}

std::string parent_dir(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

std::string pip_requirements(const Stack& stack) {
    std::string out;
    for (const auto& [name, version] : stack.components)
        out += " " + bash_word(version.empty() ? name : name + "==" + version);
    return out;
}

// Install steps that depend on the Python layout (the scripts come afterwards).
std::vector<std::string> layout_commands(const Site& site, const Stack& stack) {
    const Python& py = stack.python;
    std::vector<std::string> cmds;
    std::string load_modules;
    for (const auto& m : site.site.base_modules) load_modules += "module load " + bash_word(m) + " && ";
    for (const auto& m : stack.base_modules) load_modules += "module load " + bash_word(m) + " && ";
    switch (py.layout) {
        case PythonLayout::container_venv: {
            const std::string runtime = site.container.runtime == ContainerRuntime::apptainer ? "apptainer" : "singularity";
            const std::string inner = "source " + bash_word(py.conda_root + "/bin/activate") + " " + bash_word(py.conda_env) +
                                      " && mkdir -p " + bash_word(parent_dir(py.venv)) +
                                      " && python -m venv --system-site-packages " + bash_word(py.venv);
            cmds.push_back(py_template(std::string("mkdir -p \"") + kInstallDir + "/user-software\""));
            cmds.push_back(py_template(runtime + " exec --bind \"" + kInstallDir + "/user-software:/user-software\" \"" +
                                           kInstallDir + "/\"",
                                       bash_word(stack.image) + " bash -c " + bash_word(inner)));
            break;
        }
        case PythonLayout::userbase_venv:
            cmds.push_back(py_template(load_modules + "PYTHONUSERBASE=\"" + kInstallDir + "/python/",
                                       py.version + "\" python -m pip install --user --no-cache-dir" + pip_requirements(stack)));
            break;
        case PythonLayout::conda_env:
            if (py.conda_env.empty()) {
                cmds.push_back(py_template(load_modules + "conda create --yes --prefix \"" + kInstallDir + "/conda-env\"",
                                           " python=" + bash_word(python_major_minor(py.version))));
                cmds.push_back(py_template(std::string("\"") + kInstallDir + "/conda-env/bin/python\" -m pip install --no-cache-dir",
                                           pip_requirements(stack)));
            }
            break;
        case PythonLayout::frameworks_module:
        case PythonLayout::system:
            break;  // the site provides Python and the packages
    }
    return cmds;
}

std::string easyconfig(const Site& site, const Stack& stack, const EmitOptions& options) {
    OutputList scripts = emit_stack_runscripts(site, stack, options);
    for (auto& f : emit_stack_venv_extension(site, stack, options)) scripts.push_back(std::move(f));
    const std::string base = stack_output_path(site, stack, "");
    const bool container = runs_in_container(site, stack);

    EasyconfigWriter w;
    w.comment(stack.module_full_name() + " for site " + site.site.name + ": generated by sitegen; do not edit,");
    w.comment("change the site definition and regenerate. Load the site's base modules before `eb`.");
    w.blank();
    w.assign("easyblock", py(container ? "MakeCp" : "Bundle"));
    w.blank();
    w.assign("name", py(stack.name));
    w.assign("version", py(stack.version));
    if (!stack.versionsuffix.empty()) w.assign("versionsuffix", py(stack.versionsuffix));
    if (container) w.assign("local_sif", py(stack.image));
    w.blank();
    w.assign("homepage", py(stack.homepage));
    std::vector<std::string> whatis = {py("Description: " + stack.description)};
    if (!stack.keywords.empty()) {
        std::string kw;
        for (const auto& k : stack.keywords) kw += (kw.empty() ? "" : ", ") + k;
        whatis.push_back(py("Keywords: " + kw));
    }
    w.assign_list("whatis", whatis);
    w.assign("description", py(stack.description));
    if (!stack.docurls.empty()) {
        std::vector<std::string> urls;
        for (const auto& u : stack.docurls) urls.push_back(py(u));
        w.assign_list("docurls", urls);
    }
    w.blank();
    w.assign("toolchain", "SYSTEM");
    w.blank();
    if (container) {
        w.assign_list("sources", {"{'filename': local_sif, 'extract_cmd': '/bin/cp -L %s .'}"});
        w.assign("skipsteps", "['build']");
        w.assign_list("files_to_copy", {"([local_sif], '.')"});
        w.blank();
    }

    std::vector<std::string> cmds = {py_template(std::string("mkdir -p \"") + kInstallDir + "/bin\" \"" + kInstallDir + "/runscripts\"")};
    for (const auto& c : layout_commands(site, stack)) cmds.push_back(c);
    std::vector<std::string> sanity_files, sanity_cmds;
    for (const auto& f : scripts) {
        const std::string rel = f.path.substr(base.size());
        cmds.push_back(python_string(heredoc_command(rel, f.contents)));
        cmds.push_back(py_template(std::string("chmod ") + (f.executable ? "755" : "644") + " \"" + kInstallDir + "/", rel + "\""));
        sanity_files.push_back(py(rel));
        sanity_cmds.push_back(py_template(std::string("bash -n \"") + kInstallDir + "/", rel + "\""));
    }
    w.assign_list("postinstallcmds", cmds);
    w.blank();
    w.raw_sanity(sanity_files);
    w.assign_list("sanity_check_commands", sanity_cmds);
    w.blank();
    const ModulefileParts parts = modulefile_parts(site, stack, options);
    w.assign("modluafooter", py_template(std::string("local root = \"") + kInstallDir + "\"\n",
                                         (parts.dependencies.empty() ? "" : parts.dependencies + "\n") + parts.body));
    w.blank();
    w.assign("moduleclass", py(stack.moduleclass));
    return w.text();
}

}  // namespace

OutputList emit_easyconfigs(const Site& site, const EmitOptions& options) {
    OutputList out;
    for (const auto& stack : site.stacks) {
        const std::string file = stack.name + "-" + stack.version + stack.versionsuffix + ".eb";
        out.push_back({easyconfigs_root(site) + "/" + letter_dir(stack.name) + "/" + stack.name + "/" + file,
                       easyconfig(site, stack, options), false});
    }
    return out;
}

}  // namespace sitegen
