// Runscripts for the seed sites: binding equal to the seeds, none of the seeds' bugs.
#include <catch2/catch.hpp>

#include "emit_runscripts.h"
#include "load.h"

using namespace sitegen;

namespace {

Site load_repo_site(const std::string& name) {
    auto fs = make_disk_fs();
    Site site;
    Diagnostics diags;
    REQUIRE(load_site(*fs, SITEGEN_SOURCE_DIR "/sites", name, site, diags));
    return site;
}

std::string file_ending(const OutputList& files, const std::string& suffix) {
    for (const auto& f : files)
        if (f.path.size() >= suffix.size() && f.path.compare(f.path.size() - suffix.size(), suffix.size(), suffix) == 0)
            return f.contents;
    FAIL("no output ends with " << suffix);
    return {};
}

}  // namespace

TEST_CASE("LUMI's job script binds with exactly the seed's MYMASKS", "[runscripts]") {
    const Site lumi = load_repo_site("lumi");
    const auto files = emit_runscripts(lumi, {"/appl/lumi/SW/container"});
    const std::string job = file_ending(files, "/runscripts/job.slurm");
    // lumi-pytorch.md: c=fe; MYMASKS="0x${c}000000000000,0x${c}00000000000000,0x${c}0000,..."
    CHECK(job.find("CPU_MASKS=0xfe000000000000,0xfe00000000000000,0xfe0000,0xfe000000,0xfe,0xfe00,"
                   "0xfe00000000,0xfe0000000000\n") != std::string::npos);
    CHECK(job.find("srun --cpu-bind=mask_cpu:\"$CPU_MASKS\" singularity exec \"$SIFPYTORCH\" "
                   "conda-python-distributed \"$@\"") != std::string::npos);
    CHECK(job.find("#SBATCH --cpus-per-task=7\n") != std::string::npos);
}

TEST_CASE("rank wrappers have none of the seeds' bugs", "[runscripts]") {
    for (const char* name : {"lumi", "frontier", "cirrus", "aurora", "local"}) {
        INFO(name);
        const Site site = load_repo_site(name);
        for (const auto& f : emit_runscripts(site, {"/p"})) {
            INFO(f.path);
            CHECK(f.contents.find("sleep") == std::string::npos);       // no sleep as a barrier
            CHECK(f.contents.find("rm -rf") == std::string::npos);      // no removal of caches
            CHECK(f.contents.find("MASTER_PORT=29500\n") == std::string::npos);  // no fixed port
            for (const char* launch : {"\ntorchrun", "srun torchrun", "exec torchrun", "python -m torch.distributed.run"})
                CHECK(f.contents.find(launch) == std::string::npos);  // srun maps the ranks
            if (f.path.find("distributed") != std::string::npos) {
                CHECK(f.contents.find("set -euo pipefail\n") != std::string::npos);
                CHECK(f.contents.find(" \"$@\"\n") != std::string::npos);
                CHECK(f.contents.find("\nexec ") != std::string::npos);
            }
        }
    }
}

TEST_CASE("AMD wrappers give MIOpen a cache per job and node, created by every rank", "[runscripts]") {
    const std::string w = file_ending(emit_runscripts(load_repo_site("lumi"), {"/p"}),
                                      "/runscripts/conda-python-distributed");
    CHECK(w.find("-miopen-$SLURM_JOB_ID-${SLURM_NODEID:-0}") != std::string::npos);
    CHECK(w.find("mkdir -p -- \"$MIOPEN_USER_DB_PATH\"") != std::string::npos);
    CHECK(w.find("export ROCR_VISIBLE_DEVICES=\"$LOCAL_RANK\"") != std::string::npos);
    const std::string cirrus = file_ending(emit_runscripts(load_repo_site("cirrus"), {"/p"}),
                                           "/runscripts/python-distributed");
    CHECK(cirrus.find("MIOPEN") == std::string::npos);
    CHECK(cirrus.find("export CUDA_VISIBLE_DEVICES=\"$LOCAL_RANK\"") != std::string::npos);
}
