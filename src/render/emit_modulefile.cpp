// emit: Lmod Lua modulefiles and .modulerc.lua for every stack. Values go through
// lua_string; paths hang off `local root` so --prefix relocates the whole tree.
#include "render/emit_modulefile.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <stdexcept>

#include "render/emit_runscripts.h"
#include "render/emit_venv_extension.h"
#include "plan/layout.h"
#include "text/quote.h"

namespace sitegen {

namespace {

// Collects the module's statements; everything that names a value quotes it.
class LuaModuleWriter {
public:
    // A comment is one line whatever the text holds: control bytes become '?'.
    void comment(const std::string& text) {
        std::string line = "-- ";
        for (unsigned char c : text) line += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
        out_ += line + "\n";
    }
    void blank() { out_ += "\n"; }
    void raw(const std::string& line) { out_ += line + "\n"; }
    void call(const std::string& fn, const std::vector<std::string>& lua_args) {
        out_ += fn + "(";
        for (size_t i = 0; i < lua_args.size(); ++i) out_ += (i ? ", " : "") + lua_args[i];
        out_ += ")\n";
    }
    void setenv(const std::string& name, const std::string& lua_value) {
        call("setenv", {lua_string(name), lua_value});
    }
    void prepend_path(const std::string& name, const std::string& lua_value) {
        call("prepend_path", {lua_string(name), lua_value});
    }
    const std::string& text() const { return out_; }

private:
    std::string out_;
};

// pathJoin(root, "a", "b") as Lua source.
std::string under_root(const std::vector<std::string>& parts) {
    std::string out = "pathJoin(root";
    for (const auto& p : parts) out += ", " + lua_string(p);
    return out + ")";
}

// The module's variables in one list: collectives first, stack values override them.
EnvList module_env(const Site& site, const Stack& stack) {
    std::map<std::string, std::string> merged;
    for (const auto& [k, v] : site.collectives.env) merged[k] = v;
    for (const auto& [k, v] : stack.env) merged[k] = v;
    return EnvList(merged.begin(), merged.end());
}

// Commands the stack installs, by directory, for the help text.
std::map<std::string, std::vector<std::string>> stack_commands(const Site& site, const Stack& stack,
                                                               const EmitOptions& options) {
    std::map<std::string, std::vector<std::string>> out;
    const std::string base = stack_output_path(site, stack, "");
    OutputList files = emit_stack_runscripts(site, stack, options);
    OutputList venv = emit_stack_venv_extension(site, stack, options);
    files.insert(files.end(), venv.begin(), venv.end());
    for (const auto& f : files) {
        if (f.path.compare(0, base.size(), base) != 0) continue;
        std::string rel = f.path.substr(base.size());
        auto slash = rel.find('/');
        if (slash == std::string::npos) continue;
        out[rel.substr(0, slash)].push_back(rel.substr(slash + 1));
    }
    for (auto& [dir, names] : out) std::sort(names.begin(), names.end());
    return out;
}

std::string container_prefix(const Site& site) {
    return site.container.runtime == ContainerRuntime::apptainer ? "APPTAINER" : "SINGULARITY";
}

std::string help_text(const Site& site, const Stack& stack, const EmitOptions& options,
                      const std::vector<std::string>& variables) {
    std::string h = stack.description + "\n\nHomepage: " + stack.homepage + "\n";
    if (!stack.components.empty()) {
        h += "\nComponents:\n";
        for (const auto& [name, version] : stack.components) h += "  " + name + " " + version + "\n";
    }
    const auto commands = stack_commands(site, stack, options);
    if (auto it = commands.find("bin"); it != commands.end()) {
        h += "\nCommands added to PATH:\n";
        for (const auto& c : it->second) h += "  " + c + "\n";
    }
    if (auto it = commands.find("runscripts"); it != commands.end()) {
        h += "\nScripts in $RUNSCRIPTS" + std::string(site.container.enabled ? " (/runscripts in the container)" : "") + ":\n";
        for (const auto& c : it->second) h += "  " + c + "\n";
    }
    h += "\nVariables this module sets:\n";
    for (const auto& v : variables) h += "  " + v + "\n";
    if (site.container.enabled) {
        const std::string runtime = site.container.runtime == ContainerRuntime::apptainer ? "apptainer" : "singularity";
        h += "\nRun `" + runtime + " exec $SIF <command>` (or start-shell). Inside the container the\n"
             "conda environment and the venv in /user-software are already active. To add\n"
             "packages, `pip install` inside the container: they land in\n"
             "$CONTAINERROOT/user-software, mounted at /user-software when that directory\n"
             "(or a packed user-software.squashfs) exists when the module is loaded.\n";
    }
    if (stack.python.layout == PythonLayout::userbase_venv)
        h += "\nPYTHONUSERBASE points into the shared installation: do not `pip install --user`\n"
             "with this module loaded; install into your own venv instead.\n";
    if (stack.venv_extension)
        h += "\nYour own venv: with this module loaded (so the venv uses its Python),\n"
             "python3 -m venv --system-site-packages DIR, then extend-venv-activate DIR:\n"
             "activating the venv then loads this module and deactivating unloads it.\n";
    // module_use paths are only documented, never prepended to MODULEPATH here: users need
    // them to find this module in the first place, and unloading a module that had
    // prepended them would drop a path the user added themselves.
    if (!site.site.module_use.empty()) {
        h += "\nBefore loading:";
        for (const auto& p : site.site.module_use) h += " module use " + p + ";";
        h += "\n";
    }
    for (const auto& url : stack.docurls) h += "\nMore: " + url;
    if (!stack.docurls.empty()) h += "\n";
    return h;
}

void container_section(LuaModuleWriter& w, const Site& site, const Stack& stack,
                       std::vector<std::string>& vars) {
    const std::string ident = stack_ident(stack.name);
    const std::string rt = container_prefix(site);
    const Python& py = stack.python;
    w.comment("The image: the installed copy, else the site's shared copy (as LUMI's create_container_vars).");
    w.raw("local image_name = " + lua_string(stack.image));
    w.raw("local image = pathJoin(root, image_name)");
    w.raw("if not isFile(image) then image = pathJoin(" + lua_string(site.container.image_dir) + ", image_name) end");
    w.raw("if mode() == \"load\" and not isFile(image) then");
    w.raw("  LmodError(\"" + std::string("container image ") + "\" .. image_name .. \" not found in \" .. root .. \" nor in \" .. " +
          lua_string(site.container.image_dir) + " .. \"; reinstall the module or ask your support team\")");
    w.raw("end");
    for (const std::string& v : {std::string("SIF"), "SIF" + ident}) { w.setenv(v, "image"); vars.push_back(v); }
    w.setenv("CONTAINERROOT", "root");
    vars.push_back("CONTAINERROOT");
    w.setenv("RUNSCRIPTS" + ident, under_root({"runscripts"}));
    vars.push_back("RUNSCRIPTS" + ident);
    // Binds: the site's, then runscripts, then /user-software as LUMI's create_container_vars
    // does it: the packed squashfs if there is one, else the directory, else nothing (a bind
    // whose source is missing stops the container from starting).
    std::string site_binds;
    for (const auto& b : site.container.binds) {
        std::string entry = b.host;
        if (b.container != b.host || !b.options.empty()) entry += ":" + b.container;
        if (!b.options.empty()) entry += ":" + b.options;
        site_binds += entry + ",";
    }
    w.raw("local binds = " + lua_string(site_binds) + " .. " + under_root({"runscripts"}) + " .. \":/runscripts\"");
    w.raw("if isFile(" + under_root({"user-software.squashfs"}) + ") then");
    w.raw("  binds = binds .. \",\" .. " + under_root({"user-software.squashfs"}) + " .. \":/user-software:image-src=/\"");
    w.raw("elseif isDir(" + under_root({"user-software"}) + ") then");
    w.raw("  binds = binds .. \",\" .. " + under_root({"user-software"}) + " .. \":/user-software\"");
    w.raw("end");
    w.setenv(rt + "_BIND", "binds");
    vars.push_back(rt + "_BIND");
    if (py.layout == PythonLayout::container_venv) {
        const std::string env_prefix = py.conda_root + "/envs/" + py.conda_env;
        const EnvList inside = {
            {rt + "ENV_CONDA_DEFAULT_ENV", py.conda_env},
            {rt + "ENV_CONDA_EXE", py.conda_root + "/bin/conda"},
            {rt + "ENV_CONDA_PREFIX", env_prefix},
            {rt + "ENV_PREPEND_PATH", "/runscripts:" + py.venv + "/bin:" + env_prefix + "/bin:" + py.conda_root + "/condabin"},
            {rt + "ENV_VIRTUAL_ENV", py.venv},
            {rt + "ENV_WITH_CONDA_VENV", "source /runscripts/init-conda-venv"},
            // A command users run as `eval "$WITH_VENV"`: the path is one bash word.
            {rt + "ENV_WITH_VENV", "source " + bash_word(py.venv + "/bin/activate")},
        };
        for (const auto& [k, v] : inside) { w.setenv(k, lua_string(v)); vars.push_back(k); }
    }
}

void python_section(LuaModuleWriter& w, const Stack& stack, std::vector<std::string>& vars) {
    const Python& py = stack.python;
    switch (py.layout) {
        case PythonLayout::userbase_venv: {
            // The seed's PIP_CACHE_DIR belongs to the install procedure, not to the module:
            // users keep pip's own per-user cache rather than writing into the shared tree.
            w.raw("local userbase = " + under_root({"python", py.version}));
            w.setenv("PYTHONUSERBASE", "userbase");
            w.prepend_path("PATH", "pathJoin(userbase, \"bin\")");
            w.prepend_path("PYTHONPATH", "pathJoin(userbase, " + lua_string("lib/python" + python_major_minor(py.version) + "/site-packages") + ")");
            vars.insert(vars.end(), {"PYTHONUSERBASE", "PATH", "PYTHONPATH"});
            break;
        }
        case PythonLayout::conda_env:
        case PythonLayout::frameworks_module: {
            std::string env = py.conda_env.empty() ? under_root({"conda-env"}) : lua_string(py.conda_env);
            w.comment("What activating the conda environment sets, without running conda's shell hooks.");
            w.raw("local conda_env = " + env);
            w.setenv("CONDA_PREFIX", "conda_env");
            w.setenv("CONDA_DEFAULT_ENV", "conda_env");
            w.prepend_path("PATH", "pathJoin(conda_env, \"bin\")");
            vars.insert(vars.end(), {"CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PATH"});
            break;
        }
        case PythonLayout::container_venv:
        case PythonLayout::system:
            break;
    }
}

std::string dependency_lines(const Site& site, const Stack& stack) {
    LuaModuleWriter w;
    if (!stack.family.empty()) w.call("family", {lua_string(stack.family)});
    for (const auto& c : stack.conflicts) w.call("conflict", {lua_string(c)});
    for (const auto& m : site.site.base_modules) w.call("depends_on", {lua_string(m)});
    for (const auto& m : stack.base_modules) w.call("depends_on", {lua_string(m)});
    return w.text();
}

// Variables the site's env may not set: the ones the module computes itself, and path lists
// and Lmod's own state, which a plain setenv would replace on load and unset on unload.
const char* const kNeverSetenv[] = {"PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "MANPATH", "MODULEPATH",
                                    "LOADEDMODULES", "_LMFILES_", "PYTHONUSERBASE", "VIRTUAL_ENV"};

bool never_setenv(const std::string& name) {
    return std::find(std::begin(kNeverSetenv), std::end(kNeverSetenv), name) != std::end(kNeverSetenv) ||
           name.rfind("LMOD_", 0) == 0 || name.rfind("__LMOD", 0) == 0;
}

// Last line of defence (check_site reports these with their TOML location first).
void refuse_module_owned(const EnvList& env, const std::vector<std::string>& owned) {
    for (const auto& [name, value] : env) {
        if (!is_valid_var_name(name)) throw std::invalid_argument("not a valid environment variable name: " + name);
        if (never_setenv(name) || std::find(owned.begin(), owned.end(), name) != owned.end())
            throw std::invalid_argument(name + " is managed by the module (or by Lmod); it cannot come from collectives.env or a stack's env");
    }
}

// Everything that changes the environment; expects a Lua local `root`. Order (stable, and
// the order of "Variables this module sets" in the help): the container's variables (SIF,
// SIF<NAME>, CONTAINERROOT, RUNSCRIPTS<NAME>, the bind list, the in-container variables
// sorted by name), the Python layout's, RUNSCRIPTS, PATH, then the site's env sorted by name.
// EBROOT<NAME>/EBVERSION<NAME> are deliberately absent: they mean "installed by EasyBuild",
// which EasyBuild's own module of the easyconfig says for itself; CONTAINERROOT is the root.
std::string body_lines(const Site& site, const Stack& stack, std::vector<std::string>& vars) {
    LuaModuleWriter body;
    if (site.container.enabled) container_section(body, site, stack, vars);
    python_section(body, stack, vars);
    body.setenv("RUNSCRIPTS", under_root({"runscripts"}));
    vars.push_back("RUNSCRIPTS");
    body.prepend_path("PATH", under_root({"bin"}));
    if (std::find(vars.begin(), vars.end(), "PATH") == vars.end()) vars.push_back("PATH");
    const EnvList env = module_env(site, stack);
    refuse_module_owned(env, vars);
    if (!env.empty()) body.comment("Collective, network and stack environment (one source: the site file).");
    for (const auto& [k, v] : env) { body.setenv(k, lua_string(v)); vars.push_back(k); }
    return body.text();
}

std::string modulefile(const Site& site, const Stack& stack, const EmitOptions& options) {
    LuaModuleWriter w;
    w.comment(stack.module_full_name() + " for site " + site.site.name + ": generated by sitegen from its site");
    w.comment("definition; do not edit, change the site and regenerate.");
    w.blank();
    w.raw("local root = " + lua_string(stack_install_dir(options.prefix, stack)));
    w.blank();
    const ModulefileParts parts = modulefile_parts(site, stack, options);
    w.call("whatis", {lua_string("Description: " + stack.description)});
    if (!stack.keywords.empty()) {
        std::string kw;
        for (const auto& k : stack.keywords) kw += (kw.empty() ? "" : ", ") + k;
        w.call("whatis", {lua_string("Keywords: " + kw)});
    }
    w.call("whatis", {lua_string("URL: " + stack.homepage)});
    w.call("help", {lua_string(parts.help)});
    w.blank();
    std::string out = w.text();
    if (!parts.dependencies.empty()) out += parts.dependencies + "\n";
    return out + parts.body;
}

}  // namespace

bool module_owns_variable(const Site& site, const Stack& stack, const std::string& name) {
    if (never_setenv(name)) return true;
    std::vector<std::string> vars = {"RUNSCRIPTS"};
    LuaModuleWriter scratch;
    if (site.container.enabled) container_section(scratch, site, stack, vars);
    python_section(scratch, stack, vars);
    return std::find(vars.begin(), vars.end(), name) != vars.end();
}

ModulefileParts modulefile_parts(const Site& site, const Stack& stack, const EmitOptions& options) {
    ModulefileParts parts;
    parts.dependencies = dependency_lines(site, stack);
    parts.body = body_lines(site, stack, parts.variables);
    parts.help = help_text(site, stack, options, parts.variables);
    return parts;
}

OutputList emit_modulefiles(const Site& site, const EmitOptions& options) {
    OutputList out;
    std::map<std::string, std::string> defaults;
    for (const auto& stack : site.stacks) {
        out.push_back({modulefile_output_path(site, stack), modulefile(site, stack, options), false});
        if (stack.is_default) defaults[stack.name] = stack.module_full_name();
    }
    for (const auto& [name, full] : defaults)
        out.push_back({modulerc_output_path(site, name),
                       "-- Default version of " + name + ": generated by sitegen.\nmodule_version(" +
                           lua_string(full) + ", \"default\")\n",
                       false});
    return out;
}

}  // namespace sitegen
