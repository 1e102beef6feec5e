// The runtime rows hold together: what each way of entering needs is present, and the facts
// the documentation gives (cited in traits.cpp) are the ones the rows say.
#include <catch2/catch.hpp>

#include <string>

#include "plan/traits.h"

using namespace sitegen;

TEST_CASE("every container runtime row is complete for the way it is entered", "[traits]") {
    for (const auto& [runtime, name] : enum_names<ContainerRuntime>()) {
        INFO(name);
        const RuntimeTraits& rt = traits(runtime);
        CHECK(rt.runtime == runtime);
        CHECK(*rt.command != '\0');
        CHECK(*rt.inside_test != '\0');
        if (rt.job_entry == RuntimeEntry::launcher_flags) {
            CHECK(rt.image_launcher_flag != nullptr);
            CHECK(rt.slurm_only != nullptr);  // srun flags exist only under Slurm
        }
        // Binds reach the container through a variable, as flags, or not at all.
        CHECK((rt.env_prefix != nullptr || rt.host_filesystem || *rt.bind_flag != '\0'));
        if (rt.host_filesystem) CHECK(rt.mounts_launcher_flag == nullptr);
        if (rt.image_is_name) CHECK_FALSE(rt.image_directories);
        if (rt.env_prefix_glob) CHECK(rt.env_flag != nullptr);
        // A runtime that hides the devices must have a flag to show them for some vendor.
        if (!rt.gpu_devices_shared) CHECK((rt.nvidia_flag != nullptr || rt.amd_flag != nullptr));
    }
}

TEST_CASE("podman-hpc, pyxis and uenv rows say what their documentation says", "[traits]") {
    const RuntimeTraits& podman = traits(ContainerRuntime::podman_hpc);
    CHECK(std::string(podman.nvidia_flag) == "--gpu");  // etc/modules.d/gpu.yaml
    CHECK(podman.amd_flag == nullptr);
    CHECK(std::string(podman.env_flag) == "-e");
    CHECK(podman.image_is_name);
    CHECK(podman.job_entry == RuntimeEntry::command);
    const RuntimeTraits& pyxis = traits(ContainerRuntime::pyxis);
    CHECK(pyxis.job_entry == RuntimeEntry::launcher_flags);
    CHECK(std::string(pyxis.image_launcher_flag) == "--container-image=");
    CHECK(std::string(pyxis.mounts_launcher_flag) == "--container-mounts=");
    CHECK(std::string(pyxis.command) + " " + pyxis.exec == "enroot start");
    CHECK_FALSE(pyxis.image_is_name);  // a SquashFS file
    const RuntimeTraits& uenv = traits(ContainerRuntime::uenv);
    CHECK(std::string(uenv.image_launcher_flag) == "--uenv=");
    CHECK(std::string(uenv.view_flag) == "--view=");
    CHECK(uenv.host_filesystem);
    CHECK_FALSE(uenv.conda_images);
}
