// Names of the model's enumerations, source-region lookup, the order of the selected profiles and a stack's place.
#include "site/model.h"

#include <algorithm>
#include <functional>
#include <optional>

namespace sitegen {

namespace {

template <typename E, size_t N>
constexpr bool in_declaration_order(const EnumName<E> (&names)[N]) {
    for (size_t i = 0; i < N; ++i)
        if (static_cast<size_t>(names[i].value) != i) return false;
    return true;
}

constexpr EnumName<Scheduler> kSchedulers[] = {
    {Scheduler::slurm, "slurm"}, {Scheduler::pbs, "pbs"}, {Scheduler::flux, "flux"}};
constexpr EnumName<Launcher> kLaunchers[] = {
    {Launcher::srun, "srun"}, {Launcher::mpiexec, "mpiexec"}, {Launcher::flux, "flux"}};
constexpr EnumName<GpuVendor> kGpuVendors[] = {
    {GpuVendor::none, "none"}, {GpuVendor::amd, "amd"}, {GpuVendor::nvidia, "nvidia"}, {GpuVendor::intel, "intel"}};
constexpr EnumName<CollectiveLib> kCollectiveLibs[] = {{CollectiveLib::nccl, "nccl"},
                                                       {CollectiveLib::rccl, "rccl"},
                                                       {CollectiveLib::oneccl, "oneccl"},
                                                       {CollectiveLib::gloo, "gloo"}};
constexpr EnumName<ContainerRuntime> kContainerRuntimes[] = {{ContainerRuntime::singularity, "singularity"},
                                                             {ContainerRuntime::apptainer, "apptainer"},
                                                             {ContainerRuntime::charliecloud, "charliecloud"},
                                                             {ContainerRuntime::podman_hpc, "podman-hpc"},
                                                             {ContainerRuntime::pyxis, "pyxis"},
                                                             {ContainerRuntime::uenv, "uenv"}};
constexpr EnumName<PythonLayout> kPythonLayouts[] = {{PythonLayout::container_venv, "container-venv"},
                                                     {PythonLayout::conda_env, "conda-env"},
                                                     {PythonLayout::userbase_venv, "userbase-venv"},
                                                     {PythonLayout::frameworks_module, "frameworks-module"},
                                                     {PythonLayout::system, "system"},
                                                     {PythonLayout::container_system, "container-system"},
                                                     {PythonLayout::container_system_venv, "container-system-venv"},
                                                     {PythonLayout::module_venv, "module-venv"}};
constexpr EnumName<BindingStyle> kBindingStyles[] = {
    {BindingStyle::none, "none"}, {BindingStyle::mask, "mask"}, {BindingStyle::list, "list"}, {BindingStyle::numa, "numa"}};
constexpr EnumName<VisibilityPolicy> kVisibilityPolicies[] = {
    {VisibilityPolicy::narrow, "narrow"}, {VisibilityPolicy::all, "all"}, {VisibilityPolicy::shared, "shared"}};
constexpr EnumName<RankStarter> kRankStarters[] = {{RankStarter::launcher, "launcher"},
                                                   {RankStarter::torchrun, "torchrun"}};
static_assert(in_declaration_order(kRankStarters));
constexpr EnumName<ModuleSystem> kModuleSystems[] = {{ModuleSystem::lmod, "lmod"},
                                                     {ModuleSystem::environment_modules, "environment-modules"}};
static_assert(in_declaration_order(kModuleSystems));
constexpr EnumName<DriverGate> kDriverGates[] = {{DriverGate::refuse, "refuse"}, {DriverGate::warn, "warn"}};
static_assert(in_declaration_order(kDriverGates));

static_assert(in_declaration_order(kSchedulers) && in_declaration_order(kLaunchers) &&
              in_declaration_order(kGpuVendors) && in_declaration_order(kCollectiveLibs) &&
              in_declaration_order(kContainerRuntimes) && in_declaration_order(kPythonLayouts) &&
              in_declaration_order(kBindingStyles) && in_declaration_order(kVisibilityPolicies));

template <typename E>
std::string name_of(E value) {
    return enum_names<E>()[static_cast<size_t>(value)].name;
}

}  // namespace

template <> std::span<const EnumName<Scheduler>> enum_names() { return kSchedulers; }
template <> std::span<const EnumName<Launcher>> enum_names() { return kLaunchers; }
template <> std::span<const EnumName<GpuVendor>> enum_names() { return kGpuVendors; }
template <> std::span<const EnumName<CollectiveLib>> enum_names() { return kCollectiveLibs; }
template <> std::span<const EnumName<ContainerRuntime>> enum_names() { return kContainerRuntimes; }
template <> std::span<const EnumName<PythonLayout>> enum_names() { return kPythonLayouts; }
template <> std::span<const EnumName<BindingStyle>> enum_names() { return kBindingStyles; }
template <> std::span<const EnumName<VisibilityPolicy>> enum_names() { return kVisibilityPolicies; }
template <> std::span<const EnumName<RankStarter>> enum_names() { return kRankStarters; }
template <> std::span<const EnumName<ModuleSystem>> enum_names() { return kModuleSystems; }
template <> std::span<const EnumName<DriverGate>> enum_names() { return kDriverGates; }

std::string to_string(Scheduler v) { return name_of(v); }
std::string to_string(Launcher v) { return name_of(v); }
std::string to_string(GpuVendor v) { return name_of(v); }
std::string to_string(CollectiveLib v) { return name_of(v); }
std::string to_string(ContainerRuntime v) { return name_of(v); }
std::string to_string(PythonLayout v) { return name_of(v); }
std::string to_string(BindingStyle v) { return name_of(v); }
std::string to_string(VisibilityPolicy v) { return name_of(v); }
std::string to_string(RankStarter v) { return name_of(v); }
std::string to_string(ModuleSystem v) { return name_of(v); }
std::string to_string(DriverGate v) { return name_of(v); }

SourceRegion Site::where(const std::string& path) const {
    std::string p = path;
    for (;;) {
        if (auto r = regions.find(p)) return *r;
        auto dot = p.rfind('.');
        if (dot == std::string::npos) break;
        p.resize(dot);
    }
    SourceRegion r;
    if (!files.empty()) r = {files.front(), 1, 1};
    return r;
}

std::vector<size_t> profile_order(const Site& site) {
    std::vector<size_t> out;
    std::vector<bool> visiting(site.profiles.size(), false);
    auto find = [&](const std::string& name) -> std::optional<size_t> {
        for (size_t i = 0; i < site.profiles.size(); ++i)
            if (site.profiles[i].name == name) return i;
        return std::nullopt;
    };
    std::function<void(size_t)> visit = [&](size_t i) {
        if (visiting[i] || std::find(out.begin(), out.end(), i) != out.end()) return;
        visiting[i] = true;
        for (const auto& base : site.profiles[i].extends)
            if (auto j = find(base)) visit(*j);
        visiting[i] = false;
        out.push_back(i);
    };
    for (const auto& name : site.collectives.profiles)
        if (auto i = find(name)) visit(*i);
    return out;
}

std::optional<size_t> stack_index(const Site& site, const Stack& stack) {
    const Stack* first = site.stacks.data();
    if (!std::less_equal<const Stack*>()(first, &stack) || !std::less<const Stack*>()(&stack, first + site.stacks.size()))
        return std::nullopt;
    return static_cast<size_t>(&stack - first);
}

}  // namespace sitegen
