// Centres described from their own documentation (ALCF Polaris, NERSC Perlmutter, CSCS Alps,
// LLNL Tuolumne): binding, GPU-to-rank mapping, network variables, module names and job script
// shape, written by hand from the pages cited in sites/<name>/site.toml.
#include <catch2/catch.hpp>

#include "plan/stack_plan.h"
#include "render/renderers.h"
#include "test_support.h"

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace sitegen;

namespace {

// Every output of the site (modulefiles, scripts, easyconfigs), rendered from its plan.
OutputList all_outputs(const std::string& name) {
    const Site site = sitegen::test::load_seed_site(name);
    const SitePlan plan = plan_site(site, {site.site.install_prefix});
    OutputList out;
    for (const auto& r : renderers())
        if (renders_for(r, site))
            for (auto& f : r.render(plan)) out.push_back(std::move(f));
    return out;
}

std::string ending(const OutputList& files, const std::string& suffix) {
    for (const auto& f : files)
        if (f.path.ends_with(suffix)) return f.contents;
    FAIL("no output ends with " << suffix);
    return {};
}

// The value after `NAME=` on the line that starts with it.
std::string assigned(const std::string& script, const std::string& name) {
    std::istringstream in(script);
    for (std::string line; std::getline(in, line);)
        if (line.rfind(name + "=", 0) == 0) return line.substr(name.size() + 1);
    FAIL("no line assigns " << name);
    return {};
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> parts;
    std::string part;
    std::istringstream in(s);
    while (std::getline(in, part, sep)) parts.push_back(part);
    return parts;
}

std::set<int> range(int first, int last) {
    std::set<int> cores;
    for (int c = first; c <= last; ++c) cores.insert(c);
    return cores;
}

// "24-31" or "5" -> the cores.
std::set<int> pals_cores(const std::string& entry) {
    const auto dash = entry.find('-');
    if (dash == std::string::npos) return {std::stoi(entry)};
    return range(std::stoi(entry.substr(0, dash)), std::stoi(entry.substr(dash + 1)));
}

// "0xffff0000" -> the cores whose bits are set.
std::set<int> mask_cores(const std::string& mask) {
    REQUIRE(mask.rfind("0x", 0) == 0);
    std::set<int> cores;
    int bit = 0;
    for (auto it = mask.rbegin(); it != mask.rend() - 2; ++it, bit += 4) {
        const int nibble = std::stoi(std::string(1, *it), nullptr, 16);
        for (int b = 0; b < 4; ++b)
            if (nibble & (1 << b)) cores.insert(bit + b);
    }
    return cores;
}

}  // namespace

TEST_CASE("Polaris binds each rank to its GPU's NUMA domain as ALCF's depth binding and GPU map do", "[centres]") {
    const auto files = all_outputs("polaris");
    const std::string job = ending(files, "/runscripts/job.pbs");
    // ALCF machine overview (nvidia-smi topo): GPU0 24-31, GPU1 16-23, GPU2 8-15, GPU3 0-7.
    CHECK(assigned(job, "CPU_BIND") == "list:24-31:16-23:8-15:0-7");
    // ALCF's job: mpiexec --ppn 4 --depth=8 --cpu-bind depth puts local rank r on cores
    // 8r..8r+7, and set_affinity_gpu_polaris.sh gives it GPU 3 - r. The wrapper gives rank i
    // GPU i (checked below), so GPU i must get the same cores as under ALCF's recipe.
    std::map<int, std::set<int>> alcf;
    for (int r = 0; r < 4; ++r) alcf[3 - r] = range(8 * r, 8 * r + 7);
    const auto lists = split(assigned(job, "CPU_BIND").substr(std::string("list:").size()), ':');
    REQUIRE(lists.size() == 4);
    for (int gpu = 0; gpu < 4; ++gpu) {
        INFO("GPU " << gpu);
        CHECK(pals_cores(lists[gpu]) == alcf[gpu]);
    }
    const std::string wrapper = ending(files, "/runscripts/python-distributed");
    CHECK(wrapper.find("  export CUDA_VISIBLE_DEVICES=\"$LOCAL_RANK\"\n") != std::string::npos);
    CHECK(wrapper.find("export RANK=\"$PALS_RANKID\" LOCAL_RANK=\"$PALS_LOCAL_RANKID\"") != std::string::npos);
}

TEST_CASE("Polaris job script: the conda module, four ranks per node through mpiexec, PBS directives", "[centres]") {
    const std::string job = ending(all_outputs("polaris"), "/runscripts/job.pbs");
    // python.md: module use /soft/modulefiles; module load conda (conda/2025-09-25 by system-updates.md).
    CHECK(job.find("module use /soft/modulefiles\nmodule load conda/2025-09-25\n"
                   "module load pytorch/2.8.0-conda-2025-09-25\n") != std::string::npos);
    CHECK(job.find("export SITEGEN_RANKS_PER_NODE=4\n") != std::string::npos);
    CHECK(job.find("mpiexec -np \"$SITEGEN_NRANKS\" -ppn \"$SITEGEN_RANKS_PER_NODE\" --cpu-bind \"$CPU_BIND\" "
                   "\"$RUNSCRIPTS/python-distributed\" \"$@\"\n") != std::string::npos);
    for (const char* directive : {"#PBS -l select=2\n", "#PBS -l place=scatter\n", "#PBS -l filesystems=home:eagle\n",
                                  "#PBS -q debug\n", "#PBS -A <project>\n"}) {
        INFO(directive);
        CHECK(job.find(directive) != std::string::npos);
    }
}

TEST_CASE("Polaris module sets ALCF's NCCL and libfabric settings over the conda base environment", "[centres]") {
    const auto files = all_outputs("polaris");
    const std::string lua = ending(files, "/modulefiles/pytorch/2.8.0-conda-2025-09-25.lua");
    CHECK(lua.find("depends_on(\"conda/2025-09-25\")\n") != std::string::npos);
    CHECK(lua.find("local conda_env = \"/soft/applications/conda/2025-09-25/mconda3\"\n") != std::string::npos);
    // nccl.md (ncclenv), in the module's sorted order.
    CHECK(lua.find("setenv(\"FI_CXI_DEFAULT_CQ_SIZE\", \"131072\")\n"
                   "setenv(\"FI_CXI_DISABLE_HOST_REGISTER\", \"1\")\n"
                   "setenv(\"FI_MR_CACHE_MONITOR\", \"userfaultfd\")\n"
                   "setenv(\"NCCL_COLLNET_ENABLE\", \"1\")\n"
                   "setenv(\"NCCL_CROSS_NIC\", \"1\")\n"
                   "setenv(\"NCCL_NET_GDR_LEVEL\", \"PHB\")\n") != std::string::npos);
    // The rank wrapper carries the same values for ranks started without the module.
    const std::string wrapper = ending(files, "/runscripts/python-distributed");
    CHECK(wrapper.find("[[ -n ${NCCL_NET_GDR_LEVEL+x} ]] || NCCL_NET_GDR_LEVEL=PHB\n") != std::string::npos);
    CHECK(wrapper.find("[[ -n ${NCCL_CROSS_NIC+x} ]] || NCCL_CROSS_NIC=1\n") != std::string::npos);
}

TEST_CASE("Perlmutter masks pair each rank with the 16 cores NERSC's default binding gives its GPU", "[centres]") {
    const auto files = all_outputs("perlmutter");
    const std::string job = ending(files, "/runscripts/job.slurm");
    // GPU i sits on NUMA domain 3 - i (16 cores each): 48-63, 32-47, 16-31, 0-15.
    CHECK(assigned(job, "CPU_MASKS") == "0xffff000000000000,0xffff00000000,0xffff0000,0xffff");
    // NERSC's tutorial job: --ntasks-per-node 4 -c 32 puts task t on cores 16t..16t+15 and
    // CUDA_VISIBLE_DEVICES=3,2,1,0 gives it GPU 3 - t; sitegen's rank i has GPU i.
    std::map<int, std::set<int>> nersc;
    const std::vector<int> reversed = {3, 2, 1, 0};
    for (int t = 0; t < 4; ++t) nersc[reversed[t]] = range(16 * t, 16 * t + 15);
    const auto masks = split(assigned(job, "CPU_MASKS"), ',');
    REQUIRE(masks.size() == 4);
    for (int gpu = 0; gpu < 4; ++gpu) {
        INFO("GPU " << gpu);
        CHECK(mask_cores(masks[gpu]) == nersc[gpu]);
    }
    const std::string wrapper = ending(files, "/runscripts/python-distributed");
    CHECK(wrapper.find("  export CUDA_VISIBLE_DEVICES=\"$LOCAL_RANK\"\n") != std::string::npos);
}

TEST_CASE("Perlmutter job script: the pytorch module, srun with masks, -c 32, one GPU per task, -C gpu -q regular", "[centres]") {
    const auto files = all_outputs("perlmutter");
    const std::string job = ending(files, "/runscripts/job.slurm");
    // NERSC: -C gpu, -q regular, one GPU per task with --gpu-bind=none (docs.nersc.gov running-jobs).
    CHECK(job.find("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n#SBATCH --cpus-per-task=32\n") != std::string::npos);
    CHECK(job.find("#SBATCH --qos=regular\n#SBATCH --constraint=gpu\n#SBATCH --gpus-per-task=1\n"
                   "#SBATCH --gpu-bind=none\n") != std::string::npos);
    CHECK(job.find("--gpus-per-node") == std::string::npos);
    CHECK(job.find("module load pytorch/2.8.0\nmodule load pytorch-dist/2.8.0\n") != std::string::npos);
    CHECK(job.find("srun --cpu-bind=mask_cpu:\"$CPU_MASKS\" \"$RUNSCRIPTS/python-distributed\" \"$@\"\n") !=
          std::string::npos);
    const std::string lua = ending(files, "/modulefiles/pytorch-dist/2.8.0.lua");
    CHECK(lua.find("depends_on(\"pytorch/2.8.0\")\n") != std::string::npos);
    CHECK(lua.find("setenv(\"FI_MR_CACHE_MONITOR\", \"userfaultfd\")\n") != std::string::npos);
}

TEST_CASE("Alps masks give rank r the 72 Grace cores CSCS's srun -c72 gives it", "[centres]") {
    const auto files = all_outputs("alps");
    const std::string job = ending(files, "/runscripts/job.slurm");
    // docs.cscs.ch/running/slurm (affinity example): `srun -n8 -N2 -c72` puts rank r of a node on
    // cores 72r..72r+71, and --gpus-per-task=1 gives it its own GPU; sitegen's rank r has GPU r.
    const auto masks = split(assigned(job, "CPU_MASKS"), ',');
    REQUIRE(masks.size() == 4);
    for (int r = 0; r < 4; ++r) {
        INFO("local rank " << r);
        CHECK(mask_cores(masks[r]) == range(72 * r, 72 * r + 71));
    }
    CHECK(masks[0] == "0x" + std::string(18, 'f'));
    CHECK(masks[3] == "0x" + std::string(18, 'f') + std::string(54, '0'));
    // The pytorch uenv entered by srun's uenv plugin, --view=default, with the masks.
    CHECK(job.find("SITEGEN_CONTAINER=1 srun --cpu-bind=mask_cpu:\"$CPU_MASKS\" --uenv=\"$SIFPYTORCH\" --view=default "
                   "\"$RUNSCRIPTS/python-distributed\" \"$@\"\n") != std::string::npos);
    // Slurm's one GPU per task (CUDA_VISIBLE_DEVICES=0 in each task) is kept, not replaced by LOCAL_RANK.
    const std::string wrapper = ending(files, "/runscripts/python-distributed");
    CHECK(wrapper.find("if [[ -z ${CUDA_VISIBLE_DEVICES:-} ]]; then\n  export CUDA_VISIBLE_DEVICES=\"$LOCAL_RANK\"\n") !=
          std::string::npos);
}

TEST_CASE("Alps job script: CSCS's directives, the uenv label as the module's image, the logs/ directory", "[centres]") {
    const auto files = all_outputs("alps");
    const std::string job = ending(files, "/runscripts/job.slurm");
    CHECK(job.find("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n#SBATCH --cpus-per-task=72\n") != std::string::npos);
    CHECK(job.find("#SBATCH --output=logs/slurm-%x-%j.log\n#SBATCH --gpus-per-task=1\n") != std::string::npos);
    CHECK(job.find("--gpus-per-node") == std::string::npos);
    CHECK(job.find("module load pytorch/2.8.0-uenv-v1\n") != std::string::npos);
    CHECK(ending(files, "/runscripts/submit").find("logs") != std::string::npos);
    const std::string lua = ending(files, "/modulefiles/pytorch/2.8.0-uenv-v1.lua");
    CHECK(lua.find("setenv(\"SIF\", \"pytorch/v2.8.0:v1\")\n") != std::string::npos);
}

TEST_CASE("Alps module and ranks carry CSCS's NCCL and libfabric variables", "[centres]") {
    const auto files = all_outputs("alps");
    const std::string lua = ending(files, "/modulefiles/pytorch/2.8.0-uenv-v1.lua");
    // docs/software/communication/nccl_env_vars, in the module's sorted order.
    CHECK(lua.find("setenv(\"FI_CXI_DEFAULT_CQ_SIZE\", \"131072\")\n"
                   "setenv(\"FI_CXI_DEFAULT_TX_SIZE\", \"16384\")\n"
                   "setenv(\"FI_CXI_DISABLE_HOST_REGISTER\", \"1\")\n"
                   "setenv(\"FI_CXI_RX_MATCH_MODE\", \"software\")\n"
                   "setenv(\"FI_MR_CACHE_MONITOR\", \"userfaultfd\")\n") != std::string::npos);
    CHECK(lua.find("setenv(\"NCCL_CROSS_NIC\", \"1\")\n"
                   "setenv(\"NCCL_NET\", \"AWS Libfabric\")\n"
                   "setenv(\"NCCL_NET_GDR_LEVEL\", \"PHB\")\n"
                   "setenv(\"NCCL_PROTO\", \"^LL128\")\n") != std::string::npos);
    // CSCS: never NCCL_NET_PLUGIN with a uenv.
    CHECK(lua.find("NCCL_NET_PLUGIN") == std::string::npos);
    const std::string wrapper = ending(files, "/runscripts/python-distributed");
    CHECK(wrapper.find("NCCL_NET_PLUGIN") == std::string::npos);
    CHECK(wrapper.find("NCCL_NET='AWS Libfabric'") != std::string::npos);
}

TEST_CASE("Tuolumne: flux run with 21 cores and one APU per rank, as LLNL's launcher does", "[centres]") {
    const auto files = all_outputs("tuolumne");
    const std::string job = ending(files, "/runscripts/job.flux");
    // HPC-launcher's El Capitan family: `flux run --exclusive -N2 -n8 -c21 -g1`; queue pbatch.
    CHECK(job.find("flux run -N \"$NNODES\" -n \"$((NNODES * 4))\" -c 21 -g 1 -o cpu-affinity=per-task "
                   "-o gpu-affinity=off \"$RUNSCRIPTS/python-distributed\" \"$@\"\n") != std::string::npos);
    CHECK(job.find("# flux: -N 2\n# flux: --exclusive\n# flux: -t 30m\n# flux: --queue=pbatch\n# flux: --bank=<bank>\n") !=
          std::string::npos);
    CHECK(job.find("module load rocm/6.4.1\nmodule load cray-python/3.11.7\nmodule load pytorch/2.8.0-rocm-6.4\n") !=
          std::string::npos);
    // The APU by the wrapper: ROCR_VISIBLE_DEVICES = the Flux task's local id (Flux sets only CUDA_VISIBLE_DEVICES).
    const std::string wrapper = ending(files, "/runscripts/python-distributed");
    CHECK(wrapper.find("export RANK=\"$FLUX_TASK_RANK\" WORLD_SIZE=\"$FLUX_JOB_SIZE\" LOCAL_RANK=\"$FLUX_TASK_LOCAL_ID\"") !=
          std::string::npos);
    CHECK(wrapper.find("  export ROCR_VISIBLE_DEVICES=\"$LOCAL_RANK\"\n") != std::string::npos);
}

TEST_CASE("Tuolumne module sets the RCCL and libfabric values of LLNL's HPC-launcher", "[centres]") {
    const auto files = all_outputs("tuolumne");
    const std::string lua = ending(files, "/modulefiles/pytorch/2.8.0-rocm-6.4.lua");
    CHECK(lua.find("depends_on(\"rocm/6.4.1\")\ndepends_on(\"cray-python/3.11.7\")\n") != std::string::npos);
    CHECK(lua.find("setenv(\"FI_CXI_DEFAULT_CQ_SIZE\", \"131072\")\n"
                   "setenv(\"FI_CXI_DEFAULT_TX_SIZE\", \"1024\")\n"
                   "setenv(\"FI_CXI_DISABLE_HOST_REGISTER\", \"1\")\n"
                   "setenv(\"FI_CXI_RX_MATCH_MODE\", \"hybrid\")\n"
                   "setenv(\"FI_MR_CACHE_MONITOR\", \"userfaultfd\")\n"
                   "setenv(\"MPICH_OFI_NIC_POLICY\", \"GPU\")\n"
                   "setenv(\"NCCL_CROSS_NIC\", \"1\")\n"
                   "setenv(\"NCCL_MIN_NCHANNELS\", \"24\")\n"
                   "setenv(\"NCCL_NET_GDR_LEVEL\", \"3\")\n"
                   "setenv(\"NCCL_SOCKET_IFNAME\", \"hsi0\")\n") != std::string::npos);
    // Without LC's plugin directory NCCL_NET is not forced (RCCL would fail at init).
    CHECK(lua.find("NCCL_NET\"") == std::string::npos);
}
