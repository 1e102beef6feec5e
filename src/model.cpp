// Names of the model's enumerations and source-region lookup.
#include "model.h"

namespace sitegen {

std::string to_string(Scheduler v) { return v == Scheduler::slurm ? "slurm" : "pbs"; }
std::string to_string(Launcher v) { return v == Launcher::srun ? "srun" : "mpiexec"; }

std::string to_string(GpuVendor v) {
    switch (v) {
        case GpuVendor::none: return "none";
        case GpuVendor::amd: return "amd";
        case GpuVendor::nvidia: return "nvidia";
        case GpuVendor::intel: return "intel";
    }
    return "none";
}

std::string to_string(CollectiveLib v) {
    switch (v) {
        case CollectiveLib::nccl: return "nccl";
        case CollectiveLib::rccl: return "rccl";
        case CollectiveLib::oneccl: return "oneccl";
        case CollectiveLib::gloo: return "gloo";
    }
    return "gloo";
}

std::string to_string(ContainerRuntime v) {
    return v == ContainerRuntime::singularity ? "singularity" : "apptainer";
}

std::string to_string(PythonLayout v) {
    switch (v) {
        case PythonLayout::container_venv: return "container-venv";
        case PythonLayout::conda_env: return "conda-env";
        case PythonLayout::userbase_venv: return "userbase-venv";
        case PythonLayout::frameworks_module: return "frameworks-module";
        case PythonLayout::system: return "system";
    }
    return "system";
}

std::string to_string(BindingStyle v) {
    switch (v) {
        case BindingStyle::none: return "none";
        case BindingStyle::mask: return "mask";
        case BindingStyle::list: return "list";
    }
    return "none";
}

SourceRegion Site::where(const std::string& path) const {
    std::string p = path;
    for (;;) {
        auto it = regions.find(p);
        if (it != regions.end()) return it->second;
        auto dot = p.rfind('.');
        if (dot == std::string::npos) break;
        p.resize(dot);
    }
    SourceRegion r;
    if (!files.empty()) r = {files.front(), 1, 1};
    return r;
}

}  // namespace sitegen
