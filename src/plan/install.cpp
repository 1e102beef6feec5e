// plan: install steps per Python layout and the sanity checks. Container stacks copy the
// image (LUMI's recipes) and create the venv in it; the others run their own steps, since
// the layouts the module describes are not what EasyBuild's specialised easyblocks build
// (see render/easyconfig.cpp).
#include "plan/install.h"

#include <algorithm>
#include <optional>

#include "plan/paths.h"
#include "plan/traits.h"
#include "text/quote.h"

namespace sitegen {

namespace {

std::string parent_dir(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

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

// `pip install` commands: `before` + `python` + " -m pip install" + options.
std::vector<ShellCommand> pip_commands(const Site& site, const Stack& stack, const ShellCommand& python,
                                       const std::string& user_option) {
    std::vector<ShellCommand> cmds;
    for (const auto& pip : pip_installs(site, stack)) {
        std::string reqs;
        for (const auto& r : pip.requirements) reqs += " " + r;
        ShellCommand cmd = {bash_text(pip.env)};
        cmd.insert(cmd.end(), python.begin(), python.end());
        cmd.push_back(bash_text(" -m pip install" + user_option + " --no-cache-dir" + pip.options + reqs));
        cmds.push_back(std::move(cmd));
    }
    return cmds;
}

// A command run inside the stack's image with <installdir>/user-software mounted at
// /user-software: `bash -c INNER` (the image's bash), so what it writes persists there.
ShellCommand in_image_command(const Site& site, const Stack& stack, const std::string& inner) {
    const RuntimeTraits& rt = traits(site.container.runtime);
    const std::string exec = *rt.exec ? std::string(" ") + rt.exec : "";
    const std::string before_program = *rt.before_program ? std::string(" ") + rt.before_program : "";
    // enroot's --mount takes an fstab entry; a named image is not a file in the install dir.
    ShellCommand run = {bash_text(std::string(rt.command) + exec + " " + rt.bind_flag + " "),
                        install_path("user-software:/user-software"),
                        bash_text(std::string(rt.bind_fstab ? ":none:x-create=auto,rbind" : "") + " ")};
    if (!rt.image_is_name) run.push_back(install_path(""));
    run.push_back(bash_text(bash_word(stack.image) + before_program + " bash -c " + bash_word(inner)));
    return run;
}

// The venv on top of the image's conda environment, created in <installdir>/user-software
// (mounted at /user-software) by running python inside the image.
std::vector<ShellCommand> container_venv_commands(const Site& site, const Stack& stack) {
    const Python& py = stack.python;
    const std::string inner = "source " + bash_word(py.conda_root + "/bin/activate") + " " + bash_word(py.conda_env) +
                              " && mkdir -p " + bash_word(parent_dir(py.venv)) +
                              " && python -m venv --system-site-packages " + bash_word(py.venv);
    return {
        shell({bash_text("mkdir -p "), install_path("user-software")}),
        in_image_command(site, stack, inner),
    };
}

// The image's own python (python.interpreter, default python3) makes the venv in
// /user-software; --system-site-packages keeps the image's packages (torch) visible. No conda.
std::vector<ShellCommand> container_system_venv_commands(const Site& site, const Stack& stack) {
    const Python& py = stack.python;
    const std::string python = py.interpreter.empty() ? "python3" : py.interpreter;
    const std::string inner = "mkdir -p " + bash_word(parent_dir(py.venv)) + " && " + bash_word(python) +
                              " -m venv --system-site-packages " + bash_word(py.venv);
    return {
        shell({bash_text("mkdir -p "), install_path("user-software")}),
        in_image_command(site, stack, inner),
    };
}

// A conda environment in <installdir>/conda-env. From the site's environment file (its bytes
// written into the install dir first, so the easyconfig carries them and the install is
// deterministic), `conda env create --prefix P --file F`: the file lists its own channels
// and packages, so the components are not pip-installed on top
// (https://docs.conda.io/projects/conda/en/24.1.x/commands/env/create.html; that conda env
// create has no --channel). Else `conda create` with python=X.Y, from only the given
// channels when there are some (--override-channels -c C...,
// https://docs.conda.io/projects/conda/en/23.7.x/commands/create.html), then pip.
std::vector<ShellCommand> conda_env_commands(const Site& site, const Stack& stack) {
    const Python& py = stack.python;
    if (!py.environment_file.empty())
        return {shell({bash_text("printf %s " + bash_word(py.environment) + " > "), install_path("conda-environment.yml")}),
                shell({bash_text("conda env create --prefix "), install_path("conda-env"), bash_text(" --file "),
                       install_path("conda-environment.yml")})};
    std::string channels;
    for (const auto& c : py.channels) channels += " -c " + bash_word(c);
    if (!channels.empty()) channels = " --override-channels" + channels;
    std::vector<ShellCommand> cmds = {shell({bash_text("conda create --yes --prefix "), install_path("conda-env"),
                                             bash_text(channels + " python=" + bash_word(python_major_minor(py.version)))})};
    for (auto& c : pip_commands(site, stack, {install_path("conda-env/bin/python")}, "")) cmds.push_back(std::move(c));
    return cmds;
}

// The site's python module (a dependency; python.interpreter, else pythonX.Y) makes a venv
// in <installdir>/venv, and the components are pip-installed into it.
std::vector<ShellCommand> module_venv_commands(const Site& site, const Stack& stack) {
    const Python& py = stack.python;
    const std::string python = py.interpreter.empty() ? "python" + python_major_minor(py.version) : py.interpreter;
    std::vector<ShellCommand> cmds = {
        shell({bash_text(bash_word(python) + " -m venv --system-site-packages "), install_path("venv")})};
    for (auto& c : pip_commands(site, stack, {install_path("venv/bin/python")}, "")) cmds.push_back(std::move(c));
    return cmds;
}

// Install steps that depend on the Python layout. The base modules are loaded by the
// installer (dependencies), so `python` and `conda` are theirs.
std::vector<ShellCommand> layout_steps(const Site& site, const Stack& stack) {
    const Python& py = stack.python;
    switch (py.layout) {
        case PythonLayout::container_venv:
            return container_venv_commands(site, stack);
        case PythonLayout::container_system:
            return {};  // the image's own python and packages
        case PythonLayout::container_system_venv:
            return container_system_venv_commands(site, stack);
        case PythonLayout::userbase_venv:
            // The site's python module (a dependency) installs under PYTHONUSERBASE, run as
            // pythonX.Y: a bare `python` may be another interpreter (EasyBuild's own).
            return pip_commands(site, stack,
                                {bash_text("PYTHONUSERBASE="), install_path("python/" + py.version),
                                 bash_text(" " + bash_word("python" + python_major_minor(py.version)))},
                                " --user");
        case PythonLayout::conda_env:
            if (!py.conda_env.empty()) return {};  // the site's own environment
            return conda_env_commands(site, stack);
        case PythonLayout::module_venv:
            return module_venv_commands(site, stack);
        case PythonLayout::frameworks_module:
        case PythonLayout::system:
            return {};  // the site provides Python and the packages
    }
    return {};
}

// The payload, tested: the stack's python imports torch at the listed version (a local
// suffix such as +rocm6.0 aside), run as the module's users run it: inside the image (the
// module's $SIF) for container stacks, by its path where the site names the interpreter,
// else pythonX.Y from the module's environment. None without a torch component or a Python
// to run.
std::optional<ShellCommand> payload_check(const Site& site, const Stack& stack) {
    std::string torch;
    for (const auto& [name, version] : stack.components)
        if (name == "torch") torch = version;
    const Python& py = stack.python;
    const std::string python = !py.interpreter.empty() ? py.interpreter
                               : !py.version.empty()   ? "python" + python_major_minor(py.version)
                                                       : "";
    if (torch.empty() || python.empty()) return std::nullopt;
    const std::string expected = torch.substr(0, torch.find('+'));
    const std::string code =
        "import torch; v = torch.__version__.split('+')[0]; assert v == " + python_string(expected) + ", v";
    const std::string check = " -c \"" + bash_double_quoted(code) + "\"";
    // The venv's own python: the base interpreter does not see what was installed into it.
    if (py.layout == PythonLayout::module_venv) return shell({install_path("venv/bin/python"), bash_text(check)});
    std::string run = bash_word(python);
    if (runs_in_container(site, stack)) {
        const RuntimeTraits& rt = traits(site.container.runtime);
        run = std::string(rt.command) + (*rt.exec ? std::string(" ") + rt.exec : "") +
              (rt.view_flag ? std::string(" ") + rt.view_flag + bash_word(site.container.view) : "") + " \"$SIF\"" +
              (*rt.before_program ? std::string(" ") + rt.before_program : "") + " " + run;
    }
    return shell({bash_text(run + check)});
}

// The venv made at install time is what `python` is in the container under the module, as
// LUMI's demo checks with `which python` (-> /user-software/venv/pytorch/bin/python). Only
// where the module itself puts the venv first on PATH in the container (SINGULARITYENV_*).
std::optional<ShellCommand> venv_check(const Site& site, const Stack& stack) {
    const RuntimeTraits& rt = traits(site.container.runtime);
    if (!runs_in_container(site, stack) || stack.python.layout != PythonLayout::container_venv || !rt.env_prefix ||
        stack.python.venv.empty())
        return std::nullopt;
    const std::string inner = "test \"$(command -v python)\" = " + bash_word(stack.python.venv + "/bin/python");
    return shell({bash_text(std::string(rt.command) + (*rt.exec ? std::string(" ") + rt.exec : "") + " \"$SIF\" bash -c " +
                            bash_word(inner))});
}

}  // namespace

InstallPlan plan_install(const Site& site, const Stack& stack, const std::vector<PlannedFile>& files) {
    InstallPlan plan;
    // Named images live in the runtime's own store (podman-hpc migrate, uenv image pull): nothing to copy.
    if (runs_in_container(site, stack) && !traits(site.container.runtime).image_is_name) {
        plan.method = InstallMethod::copy_image;
        plan.image = stack.image;
    }
    // bin/ only when the stack installs commands there (the module puts it on PATH then).
    const bool has_bin = std::any_of(files.begin(), files.end(), [](const PlannedFile& f) { return f.rel.starts_with("bin/"); });
    plan.steps.push_back(has_bin ? shell({bash_text("mkdir -p "), install_path("bin"), bash_text(" "), install_path("runscripts")})
                                 : shell({bash_text("mkdir -p "), install_path("runscripts")}));
    for (auto& step : layout_steps(site, stack)) plan.steps.push_back(std::move(step));
    // The image is not checked: users may delete the installed copy (the module then uses
    // the site's), as LUMI's recipes note.
    plan.sanity_dirs = {"runscripts"};
    // Each file parsed by what reads it: Python programs by python3's parser, scripts by bash.
    for (const auto& f : files)
        plan.sanity_commands.push_back(
            f.rel.ends_with(".py")
                ? shell({bash_text("python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "), install_path(f.rel)})
                : shell({bash_text("bash -n "), install_path(f.rel)}));
    if (auto check = payload_check(site, stack)) plan.sanity_commands.push_back(std::move(*check));
    if (auto check = venv_check(site, stack)) plan.sanity_commands.push_back(std::move(*check));
    return plan;
}

}  // namespace sitegen
