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

// One `pip install` of some components: environment, options and requirements.
struct PipInstall {
    std::string env;      // NAME=value words before the command
    std::string options;  // after --no-cache-dir
    std::vector<std::string> requirements;
};

// The components in install order, as the site says in [[stacks.install]]: each step one pip
// command (its packages in the components' order, from its index, with its flags and build
// environment), then the components no step names, from PyPI (after the steps, so that a
// package needing torch finds the step's torch installed and pip does not fetch PyPI's). The
// seeds' settings live in their site files: OLCF's `--index-url
// https://download.pytorch.org/whl/rocm6.0` and `MPICC="cc -shared" pip install
// --no-binary=mpi4py` (sites/frontier), Cirrus' Horovod from its C++17 fork (sites/cirrus).
std::vector<PipInstall> pip_installs(const Stack& stack) {
    auto requirement = [](const std::string& name, const std::string& version) {
        return bash_word(version.empty() ? name : name + "==" + version);
    };
    std::vector<PipInstall> out;
    std::vector<std::string> named;
    for (const InstallStep& step : stack.install) {
        PipInstall pip;
        for (const auto& [name, value] : step.build_env) pip.env += name + "=" + bash_word_expanding_braced_vars(value) + " ";
        if (!step.index_url.empty()) pip.options += " --index-url " + bash_word(step.index_url);
        if (!step.extra_index_url.empty()) pip.options += " --extra-index-url " + bash_word(step.extra_index_url);
        for (const auto& flag : step.pip_flags) pip.options += " " + bash_word(flag);
        for (const auto& [name, version] : stack.components)
            if (std::find(step.packages.begin(), step.packages.end(), name) != step.packages.end())
                pip.requirements.push_back(step.source.empty() ? requirement(name, version) : bash_word(step.source));
        named.insert(named.end(), step.packages.begin(), step.packages.end());
        if (!pip.requirements.empty()) out.push_back(std::move(pip));
    }
    PipInstall rest;
    for (const auto& [name, version] : stack.components)
        if (std::find(named.begin(), named.end(), name) == named.end()) rest.requirements.push_back(requirement(name, version));
    if (!rest.requirements.empty()) out.push_back(std::move(rest));
    return out;
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

std::vector<ShellCommand> pip_commands([[maybe_unused]] const Site& site, const Stack& stack, const ShellCommand& python,
                                       const std::string& user_option) {
    std::vector<ShellCommand> cmds;
    for (const auto& pip : pip_installs(stack)) {
        std::string reqs;
        for (const auto& r : pip.requirements) reqs += " " + r;
        ShellCommand cmd = {bash_text(pip.env)};
        cmd.insert(cmd.end(), python.begin(), python.end());
        cmd.push_back(bash_text(" -m pip install" + user_option + " --no-cache-dir" + pip.options + reqs));
        cmds.push_back(std::move(cmd));
    }
    return cmds;
}

bool installs_with_pip(const Stack& stack) {
    switch (stack.python.layout) {
        case PythonLayout::userbase_venv:
        case PythonLayout::module_venv:
            return true;
        case PythonLayout::conda_env:
            // Not over the site's own environment, nor over an environment file's packages.
            return stack.python.conda_env.empty() && stack.python.environment_file.empty();
        case PythonLayout::container_venv:
        case PythonLayout::container_system:
        case PythonLayout::container_system_venv:
        case PythonLayout::frameworks_module:
        case PythonLayout::system:
            return false;
    }
    return false;
}

// The output is kept in a variable so that each expected text is searched in all of it, and
// printed, so that a failing check shows what the command said.
std::vector<ShellCommand> install_step_checks(const Stack& stack) {
    std::vector<ShellCommand> out;
    for (const InstallStep& step : stack.install) {
        if (step.check.empty()) continue;
        std::string words;
        for (const auto& w : step.check) words += (words.empty() ? "" : " ") + bash_word(w);
        std::string cmd = "out=$(" + words + " 2>&1) && printf '%s\\n' \"$out\"";
        for (const auto& text : step.check_expect) cmd += " && grep -qF -- " + bash_word(text) + " <<<\"$out\"";
        out.push_back(shell({bash_text(cmd)}));
    }
    return out;
}

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
    if (installs_with_pip(stack)) {
        for (auto& check : install_step_checks(stack)) plan.sanity_commands.push_back(std::move(check));
        for (const InstallStep& step : stack.install)
            for (const auto& m : step.build_modules)
                if (std::find(plan.build_modules.begin(), plan.build_modules.end(), m) == plan.build_modules.end())
                    plan.build_modules.push_back(m);
    }
    return plan;
}

}  // namespace sitegen
