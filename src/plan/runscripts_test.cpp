// Runscripts for the seed sites: binding equal to the seeds, none of the seeds' bugs.
#include <catch2/catch.hpp>

#include "plan/stack_plan.h"
#include "plan/runscripts.h"
#include "plan/traits.h"
#include "render/install_files.h"
#include "site/load.h"
#include "test_support.h"

#include <stdexcept>

using namespace sitegen;

namespace {

// The scripts of every stack (the installed files but extend-venv-activate), as installed.
OutputList emit_runscripts(const Site& site, const PlanOptions& options) {
    OutputList out;
    for (auto& f : render_install_files(plan_site(site, options)))
        if (!f.path.ends_with("/bin/extend-venv-activate")) out.push_back(std::move(f));
    return out;
}

using sitegen::test::load_seed_site;

std::string file_ending(const OutputList& files, const std::string& suffix) {
    for (const auto& f : files)
        if (f.path.size() >= suffix.size() && f.path.compare(f.path.size() - suffix.size(), suffix.size(), suffix) == 0)
            return f.contents;
    FAIL("no output ends with " << suffix);
    return {};
}

}  // namespace

TEST_CASE("LUMI's job script binds with exactly the seed's MYMASKS", "[runscripts]") {
    const Site lumi = load_seed_site("lumi");
    const auto files = emit_runscripts(lumi, {"/appl/lumi/SW/container"});
    const std::string job = file_ending(files, "/runscripts/job.slurm");
    // lumi-pytorch.md: c=fe; MYMASKS="0x${c}000000000000,0x${c}00000000000000,0x${c}0000,..."
    CHECK(job.find("CPU_MASKS=0xfe000000000000,0xfe00000000000000,0xfe0000,0xfe000000,0xfe,0xfe00,"
                   "0xfe00000000,0xfe0000000000\n") != std::string::npos);
    CHECK(job.find("srun --cpu-bind=mask_cpu:\"$CPU_MASKS\" singularity exec \"$SIFPYTORCH\" "
                   "/runscripts/conda-python-distributed \"$@\"") != std::string::npos);
    CHECK(job.find("#SBATCH --cpus-per-task=7\n") != std::string::npos);
}

TEST_CASE("rank wrappers have none of the seeds' bugs", "[runscripts]") {
    for (const char* name : {"lumi", "frontier", "cirrus", "aurora", "local"}) {
        INFO(name);
        const Site site = load_seed_site(name);
        for (const auto& f : emit_runscripts(site, {"/p"})) {
            INFO(f.path);
            CHECK(f.contents.find("sleep") == std::string::npos);       // no sleep as a barrier
            // Local rank 0's `rm -rf` of the node's cache races the other ranks; the one removal
            // allowed is a rank's own mktemp directory (batch.miopen_cache_per_rank).
            const std::string own = "rm -rf -- \"$miopen_dir\"";
            const std::string rest = f.contents.find(own) == std::string::npos
                                         ? f.contents
                                         : f.contents.substr(0, f.contents.find(own)) + f.contents.substr(f.contents.find(own) + own.size());
            CHECK(rest.find("rm -rf") == std::string::npos);
            CHECK(f.contents.find("MASTER_PORT=29500\n") == std::string::npos);  // no fixed port
            for (const char* launch : {"\ntorchrun", "srun torchrun", "exec torchrun", "python -m torch.distributed.run"})
                CHECK(f.contents.find(launch) == std::string::npos);  // srun maps the ranks
            if (f.path.find("distributed") != std::string::npos) {
                CHECK(f.contents.find("set -euo pipefail\n") != std::string::npos);
                CHECK(f.contents.find(" \"$@\"\n") != std::string::npos);
                // exec, unless the rank's own MIOpen cache is removed after the program ends.
                CHECK(f.contents.find(site.batch.miopen_cache_per_rank ? "\npython \"$@\"\n" : "\nexec ") != std::string::npos);
            }
        }
    }
}

TEST_CASE("AMD wrappers give MIOpen a cache per job and node, created by every rank", "[runscripts]") {
    const std::string w = file_ending(emit_runscripts(load_seed_site("frontier"), {"/p"}),
                                      "/runscripts/python-distributed");
    CHECK(w.find("MIOPEN_USER_DB_PATH:-/tmp/${USER:-$UID}-miopen-$SLURM_JOB_ID-$node_id}") != std::string::npos);
    CHECK(w.find("mkdir -p -- \"$MIOPEN_USER_DB_PATH\"") != std::string::npos);
    CHECK(w.find("export ROCR_VISIBLE_DEVICES=\"$LOCAL_RANK\"") != std::string::npos);
    const std::string cirrus = file_ending(emit_runscripts(load_seed_site("cirrus"), {"/p"}),
                                           "/runscripts/python-distributed");
    CHECK(cirrus.find("MIOPEN") == std::string::npos);
    CHECK(cirrus.find("export CUDA_VISIBLE_DEVICES=\"$LOCAL_RANK\"") != std::string::npos);
}

TEST_CASE("MASTER_PORT is base + job id % span, per job, overridable", "[runscripts]") {
    const OutputList lumi = emit_runscripts(load_seed_site("lumi"), {"/p"});
    // model.h: MASTER_PORT = base + job id % span (29500, 1000); step k adds k * 618.
    CHECK(file_ending(lumi, "/conda-python-distributed")
              .find("export MASTER_PORT=\"${MASTER_PORT:-$((29500 + (10#$SLURM_JOB_ID % 1000 + 10#$step_id % 1000 * 618) % 1000))}\"\n") !=
          std::string::npos);
    const OutputList aurora = emit_runscripts(load_seed_site("aurora"), {"/p"});
    CHECK(file_ending(aurora, "/python-distributed")
              .find("export MASTER_PORT=\"${MASTER_PORT:-$((29500 + (10#$job_number) % 1000))}\"\n") != std::string::npos);
    // The ids are checked to be plain numbers before they enter $((...)).
    CHECK(file_ending(aurora, "/python-distributed").find("[[ $job_number =~ ^[0-9]{1,18}$ ]]") != std::string::npos);
}

TEST_CASE("batch directive values that would break their line are refused", "[runscripts]") {
    Site lumi = load_seed_site("lumi");
    Diagnostics clean;
    check_runscript_values(lumi, clean);
    CHECK_FALSE(clean.has_errors());

    for (const char* bad : {"debug --uid=0", "debug\n#SBATCH --uid=0", "a\"b", "a#b", "a\\b", "a'b"}) {
        INFO(bad);
        lumi.batch.partition = bad;
        CHECK_THROWS_AS(emit_runscripts(lumi, {"/p"}), std::invalid_argument);
        Diagnostics diags;
        check_runscript_values(lumi, diags);
        REQUIRE(diags.error_count() == 1);
        const Diagnostic& d = diags.all().front();
        CHECK(d.message.find("'batch.partition' cannot be written into a #SBATCH directive") == 0);
        CHECK(d.where.line == 27);  // sites/lumi/site.toml: partition = "standard-g"
    }
    // In Slurm a comma is an ordinary character; in a PBS -l resource it starts another one.
    lumi.batch.partition = "small-g,standard-g";
    CHECK_NOTHROW(emit_runscripts(lumi, {"/p"}));
    Site aurora = load_seed_site("aurora");
    aurora.batch.filesystems = "home,select=512";
    CHECK_THROWS_AS(emit_runscripts(aurora, {"/p"}), std::invalid_argument);
    Diagnostics diags;
    check_runscript_values(aurora, diags);
    REQUIRE(diags.error_count() == 1);
    CHECK(diags.all().front().message == "'batch.filesystems' cannot be written into a #PBS directive: ',' would start another resource");
}

TEST_CASE("variable names from the site are names, never code", "[runscripts]") {
    Site local = load_seed_site("local");
    local.collectives.env.push_back({"X=1; touch /tmp/pwned; Y", "v"});
    CHECK_THROWS_AS(emit_runscripts(local, {"/p"}), std::invalid_argument);
    Site cirrus = load_seed_site("cirrus");
    cirrus.collectives.visibility_var = "CUDA_VISIBLE_DEVICES}$(id)";
    CHECK_THROWS_AS(emit_runscripts(cirrus, {"/p"}), std::invalid_argument);
}

TEST_CASE("PBS job script: mpiexec over nodes x ranks per node, arguments or PROGRAM", "[runscripts]") {
    const std::string job = file_ending(emit_runscripts(load_seed_site("aurora"), {"/p"}), "/runscripts/job.pbs");
    // aurora-pytorch.md: select, place=scatter, walltime=1:59:00, filesystems=home, 12 ranks per node.
    for (const char* line : {"#PBS -l select=2\n", "#PBS -l place=scatter\n", "#PBS -l walltime=1:59:00\n",
                             "#PBS -l filesystems=home\n", "export SITEGEN_RANKS_PER_NODE=12\n",
                             "NNODES=$(sort -u \"$PBS_NODEFILE\" | wc -l)\n",
                             "mpiexec -np \"$SITEGEN_NRANKS\" -ppn \"$SITEGEN_RANKS_PER_NODE\" --cpu-bind \"$CPU_BIND\" "
                             "\"$RUNSCRIPTS/python-distributed\" \"$@\"\n"}) {
        INFO(line);
        CHECK(job.find(line) != std::string::npos);
    }
}

TEST_CASE("Flux time limits: Slurm-style times in Flux Standard Duration", "[runscripts][flux]") {
    // sbatch(1) --time forms, converted by hand.
    CHECK(flux_time_limit("00:10:00") == "10m");
    CHECK(flux_time_limit("01:30:00") == "90m");
    CHECK(flux_time_limit("1:59:00") == "119m");
    CHECK(flux_time_limit("10") == "10m");
    CHECK(flux_time_limit("5:30") == "330s");
    CHECK(flux_time_limit("1-00:00:00") == "1440m");
    CHECK(flux_time_limit("2-12") == "3600m");
    CHECK(flux_time_limit("0-0:0:45") == "45s");
    for (const char* bad : {"", "abc", "00:00:00", "1:2:3:4", "-5", "1-", "1h", "10 ", "1--2"}) {
        INFO(bad);
        CHECK(flux_time_limit(bad).empty());
    }
}

TEST_CASE("Flux job script: whole nodes, one flux run task per rank, the site's binding as cpu-affinity map",
          "[runscripts][flux]") {
    Site site = load_seed_site("frontier");
    site.site.scheduler = Scheduler::flux;
    site.site.launcher = Launcher::flux;
    site.batch.output = "logs/flux-{{id}}.out";
    const auto files = emit_runscripts(site, {"/p"});
    const std::string job = file_ending(files, "/runscripts/job.flux");
    for (const char* line : {"#!/bin/bash -l\n# flux: --job-name=pytorch\n# flux: -N 2\n# flux: --exclusive\n"
                             "# flux: -t 10m\n# flux: --queue=batch\n# flux: --bank=<PROJECT_ID>\n"
                             "# flux: --output=logs/flux-{{id}}.out\n#",
                             "NNODES=$(flux hostlist --count instance)\n",
                             // Frontier's srun masks, as flux-shell map entries.
                             "CPU_MAP='0xfe000000000000;0xfe00000000000000;0xfe0000;0xfe000000;0xfe;0xfe00;"
                             "0xfe00000000;0xfe0000000000'\n",
                             "flux run -N \"$NNODES\" -n \"$((NNODES * 8))\" -c 7 -g 1 -o cpu-affinity=map:\"$CPU_MAP\" "
                             "-o gpu-affinity=off \"$RUNSCRIPTS/python-distributed\" \"$@\"\n"}) {
        INFO(line);
        CHECK(job.find(line) != std::string::npos);
    }
    const std::string acceptance = file_ending(files, "/runscripts/acceptance.flux");
    CHECK(acceptance.find("# flux: --job-name=pytorch-acceptance\n# flux: -N 2\n") != std::string::npos);
    const std::string wrapper = file_ending(files, "/runscripts/python-distributed");
    CHECK(wrapper.find("for v in FLUX_TASK_RANK FLUX_TASK_LOCAL_ID FLUX_JOB_SIZE FLUX_JOB_NNODES; do\n") != std::string::npos);
    CHECK(wrapper.find("MASTER_ADDR=$(flux hostlist --nth=0 local)") != std::string::npos);

    // Core lists instead of masks; NVIDIA's CUDA_VISIBLE_DEVICES is the one Flux narrows itself.
    site.binding.style = BindingStyle::list;
    site.collectives.visibility_var = "CUDA_VISIBLE_DEVICES";
    const std::string listed = file_ending(emit_runscripts(site, {"/p"}), "/runscripts/job.flux");
    CHECK(listed.find("CPU_MAP='49-55;57-63;17-23;25-31;1-7;9-15;33-39;41-47'\n") != std::string::npos);
    CHECK(listed.find("-o cpu-affinity=map:\"$CPU_MAP\" -o gpu-affinity=per-task \"$RUNSCRIPTS") != std::string::npos);
}

TEST_CASE("torchrun as the rank starter: one launcher task per node with all its CPUs and ranks",
          "[runscripts][torchrun]") {
    Site site = load_seed_site("local");
    site.batch.rank_starter = RankStarter::torchrun;
    const auto files = emit_runscripts(site, {"/p"});
    const std::string job = file_ending(files, "/runscripts/job.slurm");
    CHECK(job.find("#SBATCH --ntasks-per-node=1\n#SBATCH --cpus-per-task=2\n") != std::string::npos);
    CHECK(job.find("srun starts one task per node, which runs torchrun with the node's 2 ranks.\n") != std::string::npos);
    const std::string wrapper = file_ending(files, "/runscripts/python-distributed");
    CHECK(wrapper.find("((10#$LOCAL_WORLD_SIZE == 1)) || die \"torchrun starts the ranks: launch one task per node, "
                       "not $LOCAL_WORLD_SIZE\"\n") != std::string::npos);
    CHECK(wrapper.find("unset RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE\n"
                       "exec /usr/bin/python3 -m torch.distributed.run --nnodes=\"$nnodes\" --nproc_per_node=2 "
                       "--rdzv_backend=c10d --rdzv_endpoint=\"$MASTER_ADDR:$MASTER_PORT\" --rdzv_id=\"$SLURM_JOB_ID\" "
                       "\"$@\"\n") != std::string::npos);
    CHECK(wrapper.find("SITEGEN_REPORT_AFFINITY") == std::string::npos);  // no per-rank report: no rank runs it

    Site pbs = load_seed_site("aurora");
    pbs.batch.rank_starter = RankStarter::torchrun;
    pbs.binding.style = BindingStyle::none;
    pbs.collectives.visibility_var.clear();
    const std::string pbs_job = file_ending(emit_runscripts(pbs, {"/p"}), "/runscripts/job.pbs");
    CHECK(pbs_job.find("export SITEGEN_RANKS_PER_NODE=1\n") != std::string::npos);
    CHECK(pbs_job.find("mpiexec -np \"$SITEGEN_NRANKS\" -ppn \"$SITEGEN_RANKS_PER_NODE\" \"$RUNSCRIPTS/") != std::string::npos);

    Site flux = load_seed_site("frontier");
    flux.site.scheduler = Scheduler::flux;
    flux.batch.rank_starter = RankStarter::torchrun;
    flux.binding.style = BindingStyle::none;
    flux.collectives.visibility_var.clear();
    const std::string flux_job = file_ending(emit_runscripts(flux, {"/p"}), "/runscripts/job.flux");
    CHECK(flux_job.find("flux run -N \"$NNODES\" -n \"$((NNODES * 1))\" -c 8 -g 8 -o cpu-affinity=per-task "
                        "-o gpu-affinity=off \"$RUNSCRIPTS/python-distributed\" \"$@\"\n") != std::string::npos);
}

TEST_CASE("batch options become their scheduler's directives, bools and numbers too", "[runscripts]") {
    Site local = load_seed_site("local");
    local.batch.qos = "high";
    local.batch.constraint = "a100&ib";
    local.batch.exclusive = true;
    local.batch.reservation = "maint";
    std::string job = file_ending(emit_runscripts(local, {"/p"}), "/runscripts/job.slurm");
    CHECK(job.find("#SBATCH --time=00:05:00\n#SBATCH --qos=high\n#SBATCH --constraint=a100&ib\n#SBATCH --exclusive\n"
                   "#SBATCH --reservation=maint\n#") != std::string::npos);
    local.batch.exclusive = false;  // unset values write nothing
    job = file_ending(emit_runscripts(local, {"/p"}), "/runscripts/job.slurm");
    CHECK(job.find("--exclusive") == std::string::npos);
    CHECK(job.find("--gpu") == std::string::npos);

    Site aurora = load_seed_site("aurora");
    aurora.batch.place = "";
    aurora.batch.partition = "";
    aurora.batch.exclusive = true;
    aurora.batch.reservation = "R42";
    job = file_ending(emit_runscripts(aurora, {"/p"}), "/runscripts/job.pbs");
    CHECK(job.find("#PBS -l place=excl\n") != std::string::npos);
    CHECK(job.find("#PBS -q R42\n") != std::string::npos);
}

TEST_CASE("Frontier's job: the seed's gpu options, --export=NONE safe, submit creates logs/", "[runscripts]") {
    const auto files = emit_runscripts(load_seed_site("frontier"), {"/sw/frontier/sitegen"});
    const std::string job = file_ending(files, "/runscripts/job.slurm");
    CHECK(job.find("#SBATCH --gpus-per-task=1\n#SBATCH --gpu-bind=closest\n") != std::string::npos);
    CHECK(job.find("--gpus-per-node") == std::string::npos);  // --gpus-per-task requests them
    CHECK(job.find("module load pytorch/2.3.1-rocm-6.0.0\n# sbatch --export=NONE") != std::string::npos);
    CHECK(job.find("\nexport SLURM_EXPORT_ENV=ALL\n# One master for the job") != std::string::npos);
    const std::string submit = file_ending(files, "/runscripts/submit");
    CHECK(submit.ends_with("\nmkdir -p -- logs\nexec sbatch \"$@\"\n"));
    // Sites whose output pattern has no directory get no submit script.
    for (const auto& f : emit_runscripts(load_seed_site("lumi"), {"/p"})) CHECK_FALSE(f.path.ends_with("/submit"));
}

TEST_CASE("Frontier's job exports one master before srun and fills in the seed's $MASTER_ADDR arguments", "[runscripts]") {
    const std::string job =
        file_ending(emit_runscripts(load_seed_site("frontier"), {"/sw/frontier/sitegen"}), "/runscripts/job.slurm");
    const std::string block = R"(if [[ ${SLURM_JOB_ID:-} =~ ^[0-9]{1,18}$ ]]; then
  MASTER_ADDR=${MASTER_ADDR:-$("$RUNSCRIPTS/get-master" "${SLURM_JOB_NODELIST:-}")}
  export MASTER_ADDR
  # Port: 29500 + job id % 1000 (concurrent jobs on a node differ); a MASTER_PORT set by the user wins.
  export MASTER_PORT="${MASTER_PORT:-$((29500 + (10#$SLURM_JOB_ID) % 1000))}"
  # shellcheck disable=SC2016  # the literal words, not their values
  set -- "${@//'$MASTER_ADDR'/"$MASTER_ADDR"}"
  # shellcheck disable=SC2016
  set -- "${@//'$MASTER_PORT'/"$MASTER_PORT"}"
fi
)";
    const auto at = job.find(block);
    REQUIRE(at != std::string::npos);
    CHECK(at < job.find("\nsrun "));
    CHECK(job.find("ulimit") == std::string::npos);  // Frontier sets no job environment of its own
}

TEST_CASE("Aurora's job: the seed's TF32, oneCCL paths and ulimit -c 0 after the module, before mpiexec", "[runscripts]") {
    const std::string job = file_ending(emit_runscripts(load_seed_site("aurora"), {"/soft"}), "/runscripts/job.pbs");
    const std::string ccl =
        "/opt/aurora/24.180.3/frameworks/aurora_nre_models_frameworks-2024.2.1_u1/lib/python3.10/site-packages/"
        "oneccl_bindings_for_pytorch";
    // Tables of strings come in key order (CPATH, LD_LIBRARY_PATH, LIBRARY_PATH).
    const std::string lines = "cd \"${PBS_O_WORKDIR:-.}\"\n"
                              "# The site's job environment ([batch] env, prepend_path, core_dumps).\n"
                              "export IPEX_FP32_MATH_MODE=TF32\n"
                              "export CPATH=" + ccl + "/include\"${CPATH:+:$CPATH}\"\n"
                              "export LD_LIBRARY_PATH=" + ccl + "/lib\"${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\"\n"
                              "export LIBRARY_PATH=" + ccl + "/lib\"${LIBRARY_PATH:+:$LIBRARY_PATH}\"\n"
                              "ulimit -c 0\n";
    const auto at = job.find(lines);
    REQUIRE(at != std::string::npos);
    CHECK(at > job.find("module load frameworks/2024.2.1_u1\n"));
    CHECK(at < job.find("\nmpiexec "));
}

TEST_CASE("[batch] env values are single-quoted bash words: nothing in them runs", "[runscripts]") {
    Site aurora = load_seed_site("aurora");
    aurora.batch.env = {{"X", "$(touch /tmp/pwned) `id`"}};
    const std::string job = file_ending(emit_runscripts(aurora, {"/soft"}), "/runscripts/job.pbs");
    CHECK(job.find(R"(export X='$(touch /tmp/pwned) `id`')" "\n") != std::string::npos);
}

TEST_CASE("per-rank MIOpen caches: made by mktemp, removed by the rank's own EXIT trap", "[runscripts]") {
    const Site lumi = load_seed_site("lumi");
    REQUIRE(lumi.batch.miopen_cache_per_rank);
    const std::string w = file_ending(emit_runscripts(lumi, {"/p"}), "/runscripts/conda-python-distributed");
    CHECK(w.find("  miopen_dir=$(mktemp -d \"/tmp/miopen-$UID-$SLURM_JOB_ID-$RANK.XXXXXX\") || die ") != std::string::npos);
    CHECK(w.find("  trap 'rm -rf -- \"$miopen_dir\"' EXIT\n  trap 'exit 143' TERM\n  trap 'exit 130' INT\n") != std::string::npos);
    CHECK(w.find("  export MIOPEN_USER_DB_PATH=\"$miopen_dir\"\n") != std::string::npos);
    // Only a path mktemp made is removed: the removal sits inside `if [[ -z ${MIOPEN_USER_DB_PATH:-} ]]`.
    CHECK(w.find("if [[ -z ${MIOPEN_USER_DB_PATH:-} ]]; then\n  miopen_dir=") != std::string::npos);
    // The trap must outlive the program: python runs as a child, not by exec.
    CHECK(w.find("exec python") == std::string::npos);
    CHECK(w.ends_with("\npython \"$@\"\n"));
}

TEST_CASE("SITEGEN_NCCL_DEBUG sets NCCL_DEBUG in the ranks only, where the site has the switch", "[runscripts]") {
    const auto lumi = emit_runscripts(load_seed_site("lumi"), {"/p"});
    const std::string w = file_ending(lumi, "/runscripts/conda-python-distributed");
    CHECK(w.find("if [[ -n ${SITEGEN_NCCL_DEBUG:-} ]]; then\n"
                 "  [[ $SITEGEN_NCCL_DEBUG =~ ^(VERSION|WARN|INFO|TRACE)$ ]] || die \"SITEGEN_NCCL_DEBUG must be VERSION, "
                 "WARN, INFO or TRACE, not $SITEGEN_NCCL_DEBUG\"\n"
                 "  export NCCL_DEBUG=\"$SITEGEN_NCCL_DEBUG\"\n"
                 "  [[ -n ${NCCL_DEBUG_SUBSYS+x} ]] || NCCL_DEBUG_SUBSYS=INIT,COLL\n"
                 "  export NCCL_DEBUG_SUBSYS\n"
                 "fi\n") != std::string::npos);
    const std::string job = file_ending(lumi, "/runscripts/job.slurm");
    CHECK(job.find("# SITEGEN_NCCL_DEBUG=INFO sbatch job.slurm ...: NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL in the ranks only\n") !=
          std::string::npos);
    CHECK(job.find("export NCCL_DEBUG") == std::string::npos);  // not in the job's own shell
    const std::string frontier = file_ending(emit_runscripts(load_seed_site("frontier"), {"/p"}), "/runscripts/python-distributed");
    CHECK(frontier.find("SITEGEN_NCCL_DEBUG") == std::string::npos);
}
