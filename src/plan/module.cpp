// plan: a stack's module as operations. The order here is the order every renderer writes:
// the container's variables (SIF, SIF<NAME>, CONTAINERROOT, RUNSCRIPTS<NAME>, the bind list,
// the in-container variables sorted by name), PATH for bin/, the Python layout's, RUNSCRIPTS,
// then the site's env sorted by name (which is also the order of "Variables this module sets").
// EBROOT<NAME>/EBVERSION<NAME> are deliberately absent: they mean "installed by EasyBuild",
// which EasyBuild's own module of the easyconfig says for itself; CONTAINERROOT is the root.
#include "plan/module.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "plan/env_profile.h"
#include "plan/hook_additions.h"
#include "plan/paths.h"
#include "plan/traits.h"
#include "text/quote.h"

namespace sitegen {

namespace {

// Collects operations and the variables they set.
class ModuleBuilder {
public:
    // names_only: record only the variables set (module_owned_variables), no ops to build.
    explicit ModuleBuilder(ModulePlan& plan, bool names_only = false) : plan_(plan), names_only_(names_only) {
        if (!names_only) plan_.ops.reserve(32);  // a module has about 20 ops: no regrowth moving them
    }

    void comment(std::string text, ModuleSection section = ModuleSection::core) {
        if (names_only_) return;
        ModuleOp op{ModuleOp::Kind::comment, section};
        op.text = std::move(text);
        plan_.ops.push_back(std::move(op));
    }
    void set_local(std::string name, ModuleValue value) {
        if (names_only_) return;
        ModuleOp op{ModuleOp::Kind::set_local};
        op.name = std::move(name);
        op.value = std::move(value);
        plan_.ops.push_back(std::move(op));
    }
    void find_image(std::string local, std::string file, std::string fallback_dir, bool directory_ok) {
        if (names_only_) return;
        ModuleOp op{ModuleOp::Kind::find_image};
        op.name = std::move(local);
        op.text = std::move(file);
        op.fallback_dir = std::move(fallback_dir);
        op.directory_ok = directory_ok;
        plan_.ops.push_back(std::move(op));
    }
    void append_first(std::string local, std::vector<ConditionalAppend> alternatives) {
        if (names_only_) return;
        ModuleOp op{ModuleOp::Kind::append_first};
        op.name = std::move(local);
        op.alternatives = std::move(alternatives);
        plan_.ops.push_back(std::move(op));
    }
    bool names_only() const { return names_only_; }
    void setenv(const std::string& name, ModuleValue value, ModuleSection section = ModuleSection::core) {
        variable(ModuleOp::Kind::setenv, name, std::move(value), section);
    }
    void prepend_path(const std::string& name, ModuleValue value) {
        variable(ModuleOp::Kind::prepend_path, name, std::move(value), ModuleSection::core);
    }
    void add_property(std::string name, std::string value) {
        ModuleOp op{ModuleOp::Kind::add_property};
        op.name = std::move(name);
        op.text = std::move(value);
        plan_.ops.push_back(std::move(op));
    }
    void driver_gate(DriverGateCheck gate) {
        ModuleOp op{ModuleOp::Kind::driver_gate};
        op.gate = std::move(gate);
        plan_.ops.push_back(std::move(op));
    }
    void message(std::string text) {
        ModuleOp op{ModuleOp::Kind::message};
        op.text = std::move(text);
        plan_.ops.push_back(std::move(op));
    }

private:
    void variable(ModuleOp::Kind kind, const std::string& name, ModuleValue value, ModuleSection section) {
        if (!names_only_) {
            ModuleOp op{kind, section};
            op.name = name;
            op.value = std::move(value);
            plan_.ops.push_back(std::move(op));
        }
        // Listed once, where first set (PATH may be extended by the layout and again for bin/).
        if (std::find(plan_.variables.begin(), plan_.variables.end(), name) == plan_.variables.end())
            plan_.variables.push_back(name);
    }

    ModulePlan& plan_;
    bool names_only_ = false;
};

// The module's variables in one list, by name: the resolved collective environment that applies
// on any node count (plan/env_profile.h; the stack's env overrides it). Node-count settings are
// the rank wrapper's alone.
EnvList module_env(const Site& site, const Stack& stack) {
    std::map<std::string, std::string> merged;
    for (const EnvSetting& s : resolve_env(site, stack))
        if (s.nodes == NodeScope::any) merged[s.name] = s.value;
    return EnvList(merged.begin(), merged.end());
}

// The help's account of the profiles' settings: each with its reason, and the ones only the
// rank wrapper sets, with when. Nothing for a site without [[profiles]].
std::string profile_help(const Site& site, const Stack& stack) {
    std::string set, wrapper;
    for (const EnvSetting& s : resolve_env(site, stack)) {
        if (s.reason.empty()) continue;
        const std::string line = "  " + s.name + "=" + s.value + "  (" + s.origin + ")\n      " + s.reason + "\n";
        if (s.nodes == NodeScope::any) set += line;
        else wrapper += "  " + s.name + "=" + s.value + " on " + node_scope_text(s.nodes) + " runs  (" + s.origin +
                        ")\n      " + s.reason + "\n";
    }
    std::string h;
    if (!set.empty()) h += "\nWhy the collective settings are set (sitegen explain shows their origin):\n" + set;
    if (!wrapper.empty()) h += "\nSet by the rank wrapper only, when the run's node count matches:\n" + wrapper;
    return h;
}

// The variable holding the bind list: the runtime's own (SINGULARITY_BIND), else
// CONTAINER_BINDS, which the generated scripts turn into the runtime's bind flags.
std::string bind_variable(const RuntimeTraits& rt) {
    return rt.env_prefix ? std::string(rt.env_prefix) + "_BIND" : "CONTAINER_BINDS";
}

// Binds: the site's, then runscripts, then /user-software as LUMI's create_container_vars
// does it: the packed squashfs if there is one, else the directory, else nothing (a bind
// whose source is missing stops the container from starting).
void bind_ops(ModuleBuilder& m, const Site& site, const RuntimeTraits& runtime) {
    std::string site_binds;
    for (const auto& b : site.container.binds) {
        std::string entry = b.host;
        if (b.container != b.host || !b.options.empty() || runtime.bind_target_required) entry += ":" + b.container;
        if (!b.options.empty()) entry += ":" + b.options;
        site_binds += entry + ",";
    }
    // A host plugin directory is bound at the same path; the rank wrapper prepends it inside.
    const Collectives& col = site.collectives;
    if (!col.network_plugin_path.empty() && !col.network_plugin_in_image) site_binds += col.network_plugin_path + ",";
    ModuleValue binds = text_value(site_binds);
    for (auto& piece : under_root({"runscripts"})) binds.push_back(std::move(piece));
    binds.push_back({ValuePiece::Kind::text, ":/runscripts", {}});
    m.set_local("binds", std::move(binds));
    auto bind_of = [](const std::string& source, const std::string& suffix) {
        ModuleValue v = text_value(",");
        v.push_back(under_root({source}).front());
        v.push_back({ValuePiece::Kind::text, suffix, {}});
        return v;
    };
    std::vector<ConditionalAppend> user_software;
    if (runtime.squashfs_binds)
        user_software.push_back({PathTest::is_file, under_root({"user-software.squashfs"}),
                                 bind_of("user-software.squashfs", ":/user-software:image-src=/")});
    user_software.push_back({PathTest::is_dir, under_root({"user-software"}), bind_of("user-software", ":/user-software")});
    m.append_first("binds", std::move(user_software));
    m.setenv(bind_variable(runtime), local_value("binds"));
}

void container_ops(ModuleBuilder& m, const Site& site, const Stack& stack) {
    const std::string ident = stack_ident(stack.name);
    const RuntimeTraits& runtime = traits(site.container.runtime);
    const Python& py = stack.python;
    if (runtime.image_is_name) {
        m.comment("The image: a name " + std::string(runtime.command) + " resolves in its own image store.");
        for (const std::string& v : {std::string("SIF"), "SIF" + ident}) m.setenv(v, text_value(stack.image));
    } else {
        m.comment("The image: the installed copy, else the site's shared copy (as LUMI's create_container_vars).");
        m.find_image("image", stack.image, site.container.image_dir, runtime.image_directories);
        for (const std::string& v : {std::string("SIF"), "SIF" + ident}) m.setenv(v, local_value("image"));
    }
    m.setenv("CONTAINERROOT", root_value());
    m.setenv("RUNSCRIPTS" + ident, under_root({"runscripts"}));
    // The host's files are visible as they are (uenv): nothing to bind.
    if (runtime.host_filesystem) return;
    // (Only the variable's name when the builder records names: the binds are values.)
    if (m.names_only()) m.setenv(bind_variable(runtime), {});
    else bind_ops(m, site, runtime);
    // Runtimes that read no variables get the in-container environment from the rank
    // wrapper instead (it sources /runscripts/init-conda-venv).
    if (traits(py.layout).conda_venv && runtime.env_prefix) {
        const std::string rt = runtime.env_prefix;
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
        for (const auto& [k, v] : inside) m.setenv(k, text_value(v));
    }
    // The venv over the image's python, activated inside as its bin/activate does (no conda
    // variables); runtimes that read no variables get this from the rank wrapper.
    if (py.layout == PythonLayout::container_system_venv && runtime.env_prefix) {
        const std::string rt = runtime.env_prefix;
        m.setenv(rt + "ENV_PREPEND_PATH", text_value("/runscripts:" + py.venv + "/bin"));
        m.setenv(rt + "ENV_VIRTUAL_ENV", text_value(py.venv));
    }
}

void python_ops(ModuleBuilder& m, const Stack& stack) {
    const Python& py = stack.python;
    switch (py.layout) {
        case PythonLayout::userbase_venv:
            // The seed's PIP_CACHE_DIR belongs to the install procedure, not to the module:
            // users keep pip's own per-user cache rather than writing into the shared tree.
            m.set_local("userbase", under_root({"python", py.version}));
            m.setenv("PYTHONUSERBASE", local_value("userbase"));
            m.prepend_path("PATH", under_local("userbase", {"bin"}));
            m.prepend_path("PYTHONPATH", under_local("userbase", {"lib/python" + python_major_minor(py.version) + "/site-packages"}));
            break;
        case PythonLayout::conda_env:
        case PythonLayout::frameworks_module:
            m.comment("What activating the conda environment sets, without running conda's shell hooks.");
            m.set_local("conda_env", py.conda_env.empty() ? under_root({"conda-env"}) : text_value(py.conda_env));
            m.setenv("CONDA_PREFIX", local_value("conda_env"));
            m.setenv("CONDA_DEFAULT_ENV", local_value("conda_env"));
            m.prepend_path("PATH", under_local("conda_env", {"bin"}));
            break;
        case PythonLayout::module_venv:
            // The venv's bin first: its python finds the venv's packages by its pyvenv.cfg.
            // A user's venv made from that python has the base interpreter's packages, not
            // the venv's, so they also go on PYTHONPATH (as userbase-venv's do). VIRTUAL_ENV
            // stays the user's own venv's.
            m.set_local("venv", under_root({"venv"}));
            m.prepend_path("PATH", under_local("venv", {"bin"}));
            m.prepend_path("PYTHONPATH", under_local("venv", {"lib/python" + python_major_minor(py.version) + "/site-packages"}));
            break;
        case PythonLayout::container_venv:
        case PythonLayout::container_system:
        case PythonLayout::container_system_venv:
        case PythonLayout::system:
            break;
    }
}

// Bare metal: the network plugin's directory first on LD_LIBRARY_PATH (prepended, so the
// user's value stays and unloading removes only this entry). In a container the rank
// wrapper prepends it inside instead: SINGULARITYENV_LD_LIBRARY_PATH would replace the image's.
void network_plugin_ops(ModuleBuilder& m, const Site& site, const Stack& stack) {
    const Collectives& c = site.collectives;
    if (c.network_plugin_path.empty() || runs_in_container(site, stack)) return;
    m.comment("The network plugin's library directory, before the others.");
    m.prepend_path("LD_LIBRARY_PATH", text_value(c.network_plugin_path));
}

// The stack's GPU driver minimum, checked first on load: a container built for a newer ROCm
// (or CUDA) than the node's driver otherwise loads fine and fails at the first GPU call.
void driver_gate_ops(ModuleBuilder& m, const Site& site, const Stack& stack) {
    const DriverTraits& driver = driver_traits(site.hardware.gpu_vendor);
    if (stack.min_driver.empty() || !driver.version_file) return;
    DriverGateCheck gate;
    gate.minimum = stack.min_driver;
    gate.version_file = driver.version_file;
    gate.warn = site.hardware.driver_gate == DriverGate::warn;
    gate.before = stack.module_full_name() + " needs the " + driver.driver + " " + stack.min_driver +
                  " or newer; this node has ";
    gate.after = std::string(gate.warn ? ", so GPU calls may fail. " : ". ") +
                 "Use it on nodes with a newer driver, or load a " + stack.name +
                 " version built for an older one (module avail " + stack.name +
                 "); your support team knows which nodes have which driver.";
    m.comment("The GPU driver this stack needs (" + std::string(kDriverVersionFileVar) +
              " names another version file, for tests).");
    m.driver_gate(std::move(gate));
}

// The variables the module computes before the site's env (the core). bin/ goes on PATH
// only when the stack installs commands there, and before the layout's own bin: EasyBuild
// writes its default bin/ first, then modextrapaths, so both modules give the same PATH.
void core_ops(ModuleBuilder& m, const Site& site, const Stack& stack, bool has_bin) {
    if (site.container.enabled) container_ops(m, site, stack);
    if (has_bin) m.prepend_path("PATH", under_root({"bin"}));
    python_ops(m, stack);
    m.setenv("RUNSCRIPTS", under_root({"runscripts"}));
    network_plugin_ops(m, site, stack);
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

// Commands the stack installs, by directory (bin, runscripts), for the help text.
std::map<std::string, std::vector<std::string>> commands_by_dir(const std::vector<PlannedFile>& files) {
    std::map<std::string, std::vector<std::string>> out;
    for (const auto& f : files) {
        auto slash = f.rel.find('/');
        if (slash == std::string::npos) continue;
        out[f.rel.substr(0, slash)].push_back(f.rel.substr(slash + 1));
    }
    for (auto& [dir, names] : out) std::sort(names.begin(), names.end());
    return out;
}

// A stack installed per user or project (LUMI's EasyBuild-user): pip writes into the copy's
// own user-software, which only its owner can write; a central copy is read-only for users,
// so the venv's python runs there but pip cannot add to it (said plainly, not attempted).
std::string user_install_help(const Site& site, const Stack& stack) {
    const std::string& var = site.site.user_prefix_var;
    std::string h = "\nRun `" + std::string(traits(site.container.runtime).command) +
                    " exec $SIF <command>` (or start-shell). Inside the container the\n"
                    "conda environment and the venv " + stack.python.venv + " are already active.\n"
                    "\nThis stack is installed per user or project with EasyBuild into $" + var + ".\n"
                    "In your own copy, `pip install` inside the container adds packages to the venv:\n"
                    "they land in $CONTAINERROOT/user-software (mounted at /user-software; after\n"
                    "make-squashfs it is read-only until unmake-squashfs). A copy you cannot write\n"
                    "(a central install) still runs its venv's python, but pip cannot install there.\n"
                    "Your own copy (set " + var + " before loading the modules):\n"
                    "  export " + var + "=<your project's directory>/EasyBuild\n"
                    "  module load";
    for (const auto& m : site.site.user_install_modules) h += " " + m;
    h += "\n  eb " + stack.name + "-" + stack.module_version() + ".eb\n";
    return h;
}

std::string help_text(const Site& site, const Stack& stack, const std::vector<PlannedFile>& files,
                      const std::vector<std::string>& variables) {
    std::string h = stack.description + "\n\nHomepage: " + stack.homepage + "\n";
    if (!stack.components.empty()) {
        h += "\nComponents:\n";
        for (const auto& [name, version] : stack.components) h += "  " + name + " " + version + "\n";
    }
    const auto commands = commands_by_dir(files);
    if (auto it = commands.find("bin"); it != commands.end()) {
        h += "\nCommands added to PATH:\n";
        for (const auto& c : it->second) h += "  " + c + "\n";
    }
    if (auto it = commands.find("runscripts"); it != commands.end()) {
        h += "\nScripts in $RUNSCRIPTS" + std::string(site.container.enabled && !traits(site.container.runtime).host_filesystem ? " (/runscripts in the container)" : "") + ":\n";
        for (const auto& c : it->second) h += "  " + c + "\n";
    }
    h += "\nVariables this module sets:\n";
    for (const auto& v : variables) h += "  " + v + "\n";
    h += profile_help(site, stack);
    if (site.container.enabled) {
        const RuntimeTraits& rt = traits(site.container.runtime);
        if (rt.env_prefix && traits(stack.python.layout).conda_venv && site.site.user_install)
            h += user_install_help(site, stack);
        else if (rt.env_prefix && traits(stack.python.layout).conda_venv)
            h += "\nRun `" + std::string(rt.command) +
                 " exec $SIF <command>` (or start-shell). Inside the container the\n"
                 "conda environment and the venv in /user-software are already active. To add\n"
                 "packages, `pip install` inside the container: they land in\n"
                 "$CONTAINERROOT/user-software, mounted at /user-software when that directory\n"
                 "(or a packed user-software.squashfs) exists when the module is loaded.\n";
        else if (rt.host_filesystem)
            h += "\nRun start-shell (a shell with the uenv " + stack.image + " mounted and its view\n"
                 "loaded) or start-shell -c <command>; the host's files stay visible.\n";
        else
            h += "\nRun start-shell (a shell in the container with this module's binds) or\n"
                 "start-shell -c <command>. $CONTAINERROOT/user-software is mounted at\n"
                 "/user-software when that directory exists when the module is loaded.\n";
        if (rt.env_flag && rt.job_entry == RuntimeEntry::command)
            h += "\n" + std::string(rt.command) + " passes only named variables into the container: the\n"
                 "scheduler's, MASTER_*, SITEGEN_*, the device-visibility variable and this module's.\n";
    }
    if (stack.python.layout == PythonLayout::container_system_venv)
        h += "\nThe venv " + stack.python.venv + " (over the image's python, kept in\n"
             "$CONTAINERROOT/user-software) is active in the rank wrapper" +
             std::string(site.container.enabled && traits(site.container.runtime).env_prefix ? " and in the container" : "") +
             ".\n";
    if (stack.python.layout == PythonLayout::module_venv)
        h += "\nThe stack's packages are in a venv over the python module (bin first on PATH,\n"
             "site-packages on PYTHONPATH): install your own into your own venv.\n";
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
    if (!site.site.depend_on_base_modules && !site.site.base_modules.empty()) {
        h += "\nThe job script loads";
        for (const auto& m : site.site.base_modules) h += " " + m;
        h += " first; this module needs none of them\n(it works from any stack that shows it).\n";
    }
    if (!site.site.module_use.empty()) {
        h += "\nBefore loading:";
        for (const auto& p : site.site.module_use) h += " module use " + p + ";";
        h += "\n";
    }
    for (const auto& url : stack.docurls) h += "\nMore: " + url;
    if (!stack.docurls.empty()) h += "\n";
    return h;
}

// The family, properties and load messages of the site's hooks (validated again here: the
// hooks report these at their own line first), and what the help says about them.
void hook_ops(ModuleBuilder& m, ModulePlan& plan, const HookAdditions& hooks) {
    if (!hooks.family.empty()) {
        if (auto why = hook_family_problem(hooks.family); !why.empty()) throw std::invalid_argument(why);
        if (!plan.family.empty() && plan.family != hooks.family)
            throw std::invalid_argument("a hook's family '" + hooks.family + "' differs from the stack's family '" + plan.family + "'");
        plan.family = hooks.family;
    }
    if (hooks.properties.empty() && hooks.messages.empty()) return;
    m.comment("From the site's Lua hooks (hooks/*.lua).");
    std::string help;
    for (const auto& [name, value] : hooks.properties) {
        if (auto why = hook_property_problem(name, value); !why.empty()) throw std::invalid_argument(why);
        m.add_property(name, value);
        help += "  property " + name + " = " + value + "\n";
    }
    for (const auto& text : hooks.messages) {
        if (auto why = hook_message_problem(text); !why.empty()) throw std::invalid_argument(why);
        m.message(text);
        help += "  ";
        for (char c : text) help += c == '\n' ? std::string("\n  ") : std::string(1, c);
        help += "\n";
    }
    plan.help += "\nFrom the site's hooks (messages are shown when the module is loaded):\n" + help;
}

}  // namespace

bool module_owns_variable(const Site& site, const Stack& stack, const std::string& name) {
    if (never_setenv(name)) return true;
    return module_owns_variable(module_owned_variables(site, stack), name);
}

std::vector<std::string> module_owned_variables(const Site& site, const Stack& stack) {
    ModulePlan scratch;
    ModuleBuilder m(scratch, true);
    core_ops(m, site, stack, true);
    return std::move(scratch.variables);
}

bool module_owns_variable(const std::vector<std::string>& owned, const std::string& name) {
    return never_setenv(name) || std::find(owned.begin(), owned.end(), name) != owned.end();
}

ModulePlan plan_module(const Site& site, const Stack& stack, const PlanOptions& options,
                       const std::vector<PlannedFile>& files) {
    ModulePlan plan;
    plan.install_dir = stack_install_dir(options.prefix, stack);
    plan.description = stack.description;
    plan.homepage = stack.homepage;
    plan.keywords = stack.keywords;
    plan.family = stack.family;
    plan.conflicts = stack.conflicts;
    if (site.site.depend_on_base_modules) plan.depends_on = site.site.base_modules;
    plan.depends_on.insert(plan.depends_on.end(), stack.base_modules.begin(), stack.base_modules.end());
    ModuleBuilder m(plan);
    driver_gate_ops(m, site, stack);
    core_ops(m, site, stack, commands_by_dir(files).count("bin") > 0);
    const EnvList env = module_env(site, stack);
    refuse_module_owned(env, plan.variables);
    if (!env.empty()) m.comment("Collective, network and stack environment (one source: the site file).", ModuleSection::site_env);
    for (const auto& [k, v] : env) m.setenv(k, text_value(v), ModuleSection::site_env);
    plan.help = help_text(site, stack, files, plan.variables);
    if (!stack.min_driver.empty() && driver_traits(site.hardware.gpu_vendor).version_file)
        plan.help += "\nNeeds the " + std::string(driver_traits(site.hardware.gpu_vendor).driver) + " " + stack.min_driver +
                     " or newer: loading " + (site.hardware.driver_gate == DriverGate::warn ? "warns" : "fails") +
                     " on an older node.\n";
    if (const HookAdditions* hooks = hook_additions(site, stack, options)) hook_ops(m, plan, *hooks);
    return plan;
}

}  // namespace sitegen
