// Install steps of the seed sites against the seeds' own commands (../shared/seeds/): the pip
// invocations and their environment, written here by hand from the seeds, in sitegen's word
// order (options before requirements); and how [[stacks.install]] steps become commands.
#include <catch2/catch.hpp>

#include "plan/install.h"
#include "plan/stack_plan.h"
#include "test_support.h"
#include "text/quote.h"

#include <string>
#include <vector>

using namespace sitegen;

namespace {

// A command as one line, install-dir paths written as EasyBuild's "%(installdir)s/REL".
std::string flat(const ShellCommand& cmd) {
    std::string out;
    for (const auto& piece : cmd) out += piece.in_install_dir ? "\"%(installdir)s/" + piece.text + "\"" : piece.text;
    return out;
}

std::vector<std::string> flat(const std::vector<ShellCommand>& cmds) {
    std::vector<std::string> out;
    for (const auto& c : cmds) out.push_back(flat(c));
    return out;
}

InstallPlan seed_install(const std::string& name) {
    const Site site = sitegen::test::load_seed_site(name);
    const SitePlan plan = plan_site(site, {site.site.install_prefix});
    REQUIRE(plan.stacks.size() == 1);
    return plan.stacks.front().install;
}

// The steps that run pip.
std::vector<std::string> pip_steps(const InstallPlan& install) {
    std::vector<std::string> out;
    for (const auto& s : flat(install.steps))
        if (s.find(" -m pip install") != std::string::npos) out.push_back(s);
    return out;
}

}  // namespace

TEST_CASE("Frontier installs as OLCF's guide: ROCm 6.0 wheels from PyTorch's index, mpi4py against Cray MPICH", "[install]") {
    // Seed: pip install torch==2.3.1 torchvision==0.18.1 torchaudio==2.3.1 --index-url https://download.pytorch.org/whl/rocm6.0
    //       MPICC="cc -shared" pip install --no-cache-dir --no-binary=mpi4py mpi4py
    const InstallPlan install = seed_install("frontier");
    CHECK(pip_steps(install) ==
          std::vector<std::string>{
              "\"%(installdir)s/conda-env/bin/python\" -m pip install --no-cache-dir --index-url "
              "https://download.pytorch.org/whl/rocm6.0 torch==2.3.1 torchaudio==2.3.1 torchvision==0.18.1",
              "MPICC='cc -shared' \"%(installdir)s/conda-env/bin/python\" -m pip install --no-cache-dir "
              "--no-binary=mpi4py mpi4py==3.1.6",
          });
    CHECK(install.build_modules.empty());
}

TEST_CASE("Cirrus installs as its seed: the torch group from the cu121 index, tensorboard, Horovod from the C++17 fork", "[install]") {
    // Seed: pip install --user torch==2.3.1+cu121 --extra-index-url https://download.pytorch.org/whl/cu121 (and
    // torchaudio, torchmetrics, torchtext, torchvision the same way); pip install --user tensorboard ...;
    // module -s load cmake/3.25.2; export LD_LIBRARY_PATH=${NVHPC_ROOT}/cuda/lib64/stubs:${LD_LIBRARY_PATH}
    // CC=mpicc CXX=mpicxx FC=mpifort HOROVOD_CUDA_HOME=${NVHPC_ROOT}/cuda/12.4 ... pip install --user --no-cache-dir
    //   git+https://github.com/thomas-bouvier/horovod.git@compile-cpp17
    const InstallPlan install = seed_install("cirrus");
    const std::string python = "PYTHONUSERBASE=\"%(installdir)s/python/3.12.1\" python3.12 -m pip install --user --no-cache-dir";
    CHECK(pip_steps(install) ==
          std::vector<std::string>{
              python + " --extra-index-url https://download.pytorch.org/whl/cu121 torch==2.3.1 torchaudio==2.3.1 "
                       "torchmetrics==1.0.3 torchtext==0.18.0 torchvision==0.18.1",
              python + " tensorboard==2.17.0 tensorboard-plugin-wit==1.8.1 tensorboard-pytorch==0.7.1 "
                       "tensorboard_plugin_profile==2.15.1 torch-tb-profiler==0.4.3",
              // build_env in name order (a TOML table's keys); the values as the seed has them.
              "CC=mpicc CUDA_PATH=\"${NVHPC_ROOT}/cuda/12.4\" CXX=mpicxx FC=mpifort HOROVOD_BUILD_CUDA_CC_LIST=70 "
              "HOROVOD_CPU_OPERATIONS=MPI HOROVOD_CUDA_HOME=\"${NVHPC_ROOT}/cuda/12.4\" HOROVOD_GPU=CUDA "
              "HOROVOD_GPU_OPERATIONS=NCCL HOROVOD_NCCL_HOME=\"${NVHPC_ROOT}/comm_libs/nccl\" HOROVOD_WITH_MPI=1 "
              "HOROVOD_WITH_MXNET=0 HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_TENSORFLOW=0 "
              "LD_LIBRARY_PATH=\"${NVHPC_ROOT}/cuda/lib64/stubs:${LD_LIBRARY_PATH}\" " +
                  python + " git+https://github.com/thomas-bouvier/horovod.git@compile-cpp17",
          });
    CHECK(install.build_modules == std::vector<std::string>{"cmake/3.25.2"});
    // Seed: "Now run `horovodrun --check-build` ... [X] PyTorch ... [X] NCCL ... [X] MPI".
    const auto sanity = flat(install.sanity_commands);
    CHECK(std::find(sanity.begin(), sanity.end(),
                    "out=$(horovodrun --check-build 2>&1) && printf '%s\\n' \"$out\" && grep -qF -- '[X] PyTorch' "
                    "<<<\"$out\" && grep -qF -- '[X] NCCL' <<<\"$out\" && grep -qF -- '[X] MPI' <<<\"$out\"") !=
          sanity.end());
}

TEST_CASE("LUMI installs no package: the venv is created inside the image, over its conda environment", "[install]") {
    const InstallPlan install = seed_install("lumi");
    CHECK(pip_steps(install).empty());
    CHECK(install.build_modules.empty());
    // LUMI's recipe: singularity exec ... bash -c 'source /opt/miniconda3/bin/activate pytorch && python -m venv
    // --system-site-packages /user-software/venv/pytorch'.
    const auto steps = flat(install.steps);
    REQUIRE(steps.size() == 3);
    CHECK(steps[1] == "mkdir -p \"%(installdir)s/user-software\"");
    CHECK(steps[2].find("bash -c 'source /opt/miniconda3/bin/activate pytorch && mkdir -p /user-software/venv && "
                        "python -m venv --system-site-packages /user-software/venv/pytorch'") != std::string::npos);
}

TEST_CASE("install steps: the unnamed components come last from PyPI, a source replaces name==version", "[install]") {
    Stack stack;
    stack.python.layout = PythonLayout::userbase_venv;
    stack.components = {{"a", "1"}, {"b", "2"}, {"c", ""}, {"d", "4"}};
    InstallStep first;
    first.packages = {"d", "b"};
    first.pip_flags = {"--no-build-isolation"};
    first.build_env = {{"X", "it's ${HOME}/$HOME"}};
    InstallStep second;
    second.packages = {"c"};
    second.source = "https://example.org/c.tar.gz";
    stack.install = {first, second};
    CHECK(flat(pip_commands(Site{}, stack, {bash_text("py")}, "")) ==
          std::vector<std::string>{
              "X=\"it's ${HOME}/\\$HOME\" py -m pip install --no-cache-dir --no-build-isolation b==2 d==4",
              "py -m pip install --no-cache-dir https://example.org/c.tar.gz",
              "py -m pip install --no-cache-dir a==1",
          });
    stack.install.clear();
    CHECK(flat(pip_commands(Site{}, stack, {bash_text("py")}, " --user")) ==
          std::vector<std::string>{"py -m pip install --user --no-cache-dir a==1 b==2 c d==4"});
}

TEST_CASE("an install step's check passes only when its output holds every expected text (bash)", "[install]") {
    sitegen::test::require_tool("bash");
    Stack stack;
    InstallStep step;
    step.packages = {"horovod"};
    step.check = {"horovodrun", "--check-build"};
    step.check_expect = {"[X] PyTorch", "[X] NCCL"};
    stack.install = {step};
    const auto checks = install_step_checks(stack);
    REQUIRE(checks.size() == 1);
    sitegen::test::TempDir dir("install-check");
    // horovodrun as a function printing the seed's --check-build output, with or without NCCL.
    auto outcome = [&](const std::string& nccl_line) {
        const std::string script = "horovodrun() { printf '%s\\n' 'Horovod v0.28.1:' '' 'Available Frameworks:' "
                                   "'    [ ] TensorFlow' '    [X] PyTorch' 'Available Tensor Operations:' '" +
                                   nccl_line + "' '    [X] MPI'; }\n" + flat(checks[0]) + "\n";
        return sitegen::test::run("bash " + dir.write("check.sh", script) + " >/dev/null");
    };
    CHECK(outcome("    [X] NCCL") == 0);
    CHECK(outcome("    [ ] NCCL") != 0);
}

TEST_CASE("hostile install settings reach pip as exactly their bytes and run nothing (bash)", "[install]") {
    sitegen::test::require_tool("bash");
    sitegen::test::TempDir dir("install-hostile");
    const std::string marker = dir.file("MARKER");
    const std::vector<std::string> hostile = {"$(touch " + marker + ")", "`touch " + marker + "`", "a'b\"c\\d",
                                              "; touch " + marker + " #", "x\ty  z", "%(installdir)s %s", "${HOME:-x}"};
    Stack stack;
    stack.python.layout = PythonLayout::userbase_venv;
    stack.components = {{"pkg", "1"}};
    InstallStep step;
    step.packages = {"pkg"};
    for (size_t i = 0; i < hostile.size(); ++i) {
        step.build_env.push_back({"V" + std::to_string(i), hostile[i]});
        step.pip_flags.push_back("--opt=" + hostile[i]);
    }
    step.check = {"show", hostile[0], hostile[3]};
    step.check_expect = {hostile[2], hostile[4]};
    stack.install = {step};
    // `py` prints its arguments and the V* variables, one per line (NUL-free values).
    std::string script = "py() { printf '%s\\n' \"$@\"; for v in V0 V1 V2 V3 V4 V5 V6; do printf '%s\\n' \"${!v}\"; done; }\n"
                         "show() { printf '%s\\n' \"$@\" " + bash_word(hostile[2]) + " " + bash_word(hostile[4]) + "; }\n";
    const auto pip = pip_commands(Site{}, stack, {bash_text("py")}, "");
    REQUIRE(pip.size() == 1);
    script += flat(pip[0]) + " > " + bash_word(dir.file("pip.out")) + "\n";
    const auto checks = install_step_checks(stack);
    REQUIRE(checks.size() == 1);
    script += "{ " + flat(checks[0]) + "; } > " + bash_word(dir.file("check.out")) + "\n";
    REQUIRE(sitegen::test::run("bash -e " + dir.write("run.sh", script)) == 0);
    CHECK_FALSE(std::filesystem::exists(marker));
    std::string expected = "-m\npip\ninstall\n--no-cache-dir\n";
    for (const auto& h : hostile) expected += "--opt=" + h + "\n";
    expected += "pkg==1\n";
    // ${NAME} in a build_env value expands (documented): ${HOME:-x} is not a ${NAME}, so it is literal.
    for (const auto& h : hostile) expected += h + "\n";
    CHECK(sitegen::test::read_file(dir.file("pip.out")) == expected);
    CHECK(sitegen::test::read_file(dir.file("check.out")) ==
          hostile[0] + "\n" + hostile[3] + "\n" + hostile[2] + "\n" + hostile[4] + "\n");
}
