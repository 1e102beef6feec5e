// The site-file schema table and its Markdown rendering.
#include "site/schema.h"

#include <sstream>

namespace sitegen {

const std::vector<TableSchema>& site_schema() {
    static const std::vector<TableSchema> schema = {
        {"", "Top level of `sites/<name>/site.toml` or of a shared fragment.", false, {
            {"extends", "array of strings", "optional",
             "Fragments applied before this file, paths relative to this file; later files override earlier ones key by key."},
            {"site", "table", "required", "See [site]."},
            {"hardware", "table", "required", "See [hardware]."},
            {"binding", "table", "optional", "See [binding]."},
            {"batch", "table", "optional", "See [batch]."},
            {"collectives", "table", "required", "See [collectives]."},
            {"container", "table", "optional", "See [container]."},
            {"python", "table", "required", "See [python]."},
            {"stacks", "array of tables", "required", "See [stacks[]]; at least one `[[stacks]]`."},
        }},
        {"site", "Identity of the site and how users reach the module tree.", false, {
            {"name", "string", "required", "Site id; must equal the `sites/<name>/` directory."},
            {"description", "string", "required", "One line shown in `sitegen list`."},
            {"url", "string", "optional", "User documentation of the site."},
            {"scheduler", "`slurm` | `pbs`", "required", "Batch system."},
            {"launcher", "`srun` | `mpiexec`", "required", "Parallel launcher (srun for Slurm, mpiexec for PBS/PALS)."},
            {"install_prefix", "string (absolute path)", "required", "Where stacks are installed (`<prefix>/software/<name>/<version>`); `--prefix` overrides it."},
            {"module_system", "`lmod`", "default `lmod`", "Module system the modulefiles are written for."},
            {"module_use", "array of strings", "optional", "Paths users `module use` before loading (Aurora: `/soft/modulefiles`)."},
            {"base_modules", "array of strings", "optional", "Modules every stack depends on (e.g. `LUMI/24.03`, `rocm/6.0.0`)."},
        }},
        {"hardware", "A compute node as the scheduler sees it.", false, {
            {"gpu_vendor", "`none` | `amd` | `nvidia` | `intel`", "required", "GPU vendor."},
            {"gpu_model", "string", "optional", "GPU model, e.g. `MI250X`, `V100-SXM2-16GB`, `Max 1550`."},
            {"devices_per_node", "integer", "required", "GPUs per node as the scheduler counts them (GCDs on MI250X, tiles on PVC); 0 on CPU-only nodes."},
            {"cores_per_node", "integer", "required", "Physical cores per node."},
            {"threads_per_core", "integer", "default 1", "Hardware threads per core."},
            {"device_cores", "array of strings", "required if devices_per_node > 0", "For device i, the cores nearest to it as ranges (`\"48-55\"`, `\"0-3,8-11\"`)."},
            {"reserved_cores", "array of integers", "optional", "Cores never bound to a rank (OS / low-noise cores)."},
            {"nics", "array of strings", "optional", "High-speed network interfaces (`hsn0`...)."},
            {"interconnect", "string", "optional", "Interconnect name, e.g. `slingshot-11`."},
        }},
        {"binding", "How ranks are pinned to cores, computed from `hardware.device_cores`.", false, {
            {"style", "`none` | `mask` | `list`", "default `none`", "`mask`: Slurm `--cpu-bind=mask_cpu:`; `list`: PALS `mpiexec --cpu-bind list:`."},
            {"cores_per_rank", "integer", "default 0", "Cores per rank taken from its device's domain (0 = all that are not reserved)."},
            {"core_offset", "integer", "default 0", "Domain cores skipped before the rank's cores start."},
            {"verbose", "boolean", "default false", "Prefix the PALS list with `verbose,`."},
            {"affinity_env", "table of strings", "optional", "Variables listing one core per rank: `last` (last core of the rank) or `next` (the core after it), e.g. `HOROVOD_THREAD_AFFINITY = \"last\"`."},
        }},
        {"binding.affinity_env", "Affinity variables (name = `last` | `next`).", true, {}},
        {"batch", "Defaults for the generated batch scripts.", false, {
            {"nodes", "integer", "default 1", "Nodes requested."},
            {"tasks_per_node", "integer", "default devices_per_node (1 without GPUs)", "Ranks per node."},
            {"gpus_per_node", "integer", "default devices_per_node", "GPUs requested per node."},
            {"cpus_per_task", "integer", "default from binding", "CPUs per rank."},
            {"partition", "string", "optional", "Slurm partition or PBS queue."},
            {"account", "string", "optional", "Account / project placeholder."},
            {"time", "string", "default `00:10:00`", "Wall time."},
            {"mem", "string", "optional", "Memory per node (Slurm `--mem`)."},
            {"output", "string", "optional", "Slurm output file pattern."},
            {"place", "string", "optional", "PBS `place=` value."},
            {"filesystems", "string", "optional", "PBS `filesystems=` value."},
        }},
        {"collectives", "Collective library, its network plugin and environment.", false, {
            {"library", "`nccl` | `rccl` | `oneccl` | `gloo`", "required", "Collective library torch.distributed uses."},
            {"network_plugin", "string", "optional", "Network plugin, e.g. `aws-ofi-rccl`."},
            {"visibility_var", "string", "optional", "Device-visibility variable the rank wrapper sets (`ROCR_VISIBLE_DEVICES`, `CUDA_VISIBLE_DEVICES`, `ZE_AFFINITY_MASK`)."},
            {"master_port_base", "integer", "default 29500", "MASTER_PORT = base + job id mod span, unless MASTER_PORT is already set."},
            {"master_port_span", "integer", "default 1000", "See master_port_base."},
            {"env", "table of strings", "optional", "Variables every rank and the module export (NCCL_*, FI_CXI_*, CCL_*)."},
        }},
        {"collectives.env", "Collective environment (name = value).", true, {}},
        {"container", "Container runtime and bind mounts (omit for bare-metal sites).", false, {
            {"runtime", "`singularity` | `apptainer`", "required", "Container runtime; selects SINGULARITY_* or APPTAINER_* variables."},
            {"image_dir", "string (absolute path)", "required", "Where the site keeps its images."},
            {"binds", "array of tables", "optional", "Bind mounts, each `{ host = \"/opt/cray\", container = \"/opt/cray\", options = \"ro\" }`; `container` defaults to `host`."},
        }},
        {"container.binds[]", "One bind mount.", false, {
            {"host", "string (absolute path)", "required", "Path on the host."},
            {"container", "string (absolute path)", "default host", "Path inside the container."},
            {"options", "`ro` | `rw`", "optional", "Mount options."},
        }},
        {"python", "Python layout of the stacks (each stack may override it).", false, {
            {"layout", "`container-venv` | `conda-env` | `userbase-venv` | `frameworks-module` | `system`", "required", "How Python and the packages are provided."},
            {"version", "string", "required", "Python version, `3.12` or `3.12.1`."},
            {"interpreter", "string", "optional", "Interpreter path outside containers (e.g. `/usr/bin/python3`)."},
            {"conda_root", "string", "optional", "Conda installation (inside the container for container-venv)."},
            {"conda_env", "string", "optional", "Conda environment name or path."},
            {"venv", "string", "optional", "Virtual environment path (container-venv: inside the container)."},
        }},
        {"stacks[]", "A module to publish (`[[stacks]]`).", false, {
            {"name", "string", "required", "Module name, e.g. `PyTorch`."},
            {"version", "string", "required", "Version, e.g. `2.3.1`."},
            {"versionsuffix", "string", "optional", "Appended to the version in module and easyconfig names."},
            {"description", "string", "required", "What the module provides (module help, easyconfig description)."},
            {"homepage", "string", "required", "Project home page."},
            {"keywords", "array of strings", "optional", "`whatis` keywords."},
            {"docurls", "array of strings", "optional", "Further documentation."},
            {"moduleclass", "string", "default `devel`", "EasyBuild module class."},
            {"family", "string", "optional", "Lmod family (only one module of a family loaded at a time)."},
            {"conflicts", "array of strings", "optional", "Modules that cannot be loaded together with this one."},
            {"base_modules", "array of strings", "optional", "Modules this stack depends on, after the site's."},
            {"default", "boolean", "default false", "Make this version the default (`.modulerc.lua`)."},
            {"image", "string", "required on container sites", "Image file name in `container.image_dir`."},
            {"venv_extension", "boolean", "default false", "Ship `extend-venv-activate` for user venvs."},
            {"python", "table", "optional", "Overrides keys of `[python]` for this stack."},
            {"components", "table of strings", "optional", "Packages and versions the stack contains (torch = \"2.3.1\")."},
            {"env", "table of strings", "optional", "Extra variables the module sets."},
        }},
        {"stacks[].python", "Per-stack override of `[python]` (same keys).", false, {
            {"layout", "see [python]", "optional", ""},
            {"version", "see [python]", "optional", ""},
            {"interpreter", "see [python]", "optional", ""},
            {"conda_root", "see [python]", "optional", ""},
            {"conda_env", "see [python]", "optional", ""},
            {"venv", "see [python]", "optional", ""},
        }},
        {"stacks[].components", "Components (name = version).", true, {}},
        {"stacks[].env", "Extra module variables (name = value).", true, {}},
    };
    return schema;
}

const TableSchema* find_table_schema(const std::string& path) {
    for (const auto& t : site_schema())
        if (t.path == path) return &t;
    return nullptr;
}

std::vector<std::string> known_keys(const std::string& table_path) {
    std::vector<std::string> out;
    if (const auto* t = find_table_schema(table_path))
        for (const auto& k : t->keys) out.push_back(k.key);
    return out;
}

std::string schema_markdown() {
    std::ostringstream os;
    os << "# Site file reference\n\n"
          "Generated by `sitegen schema`; a test keeps this file equal to that output.\n"
          "A site is `sites/<name>/site.toml`; fragments shared by several sites live in\n"
          "`sites/shared/` and are pulled in with `extends`. Unknown keys are errors\n"
          "(with a did-you-mean); values are type-checked; strings must be UTF-8 without NUL.\n";
    for (const auto& t : site_schema()) {
        os << "\n## `" << (t.path.empty() ? "(top level)" : "[" + t.path + "]") << "`\n\n"
           << t.meaning << "\n";
        if (t.free_keys) {
            os << "\nKeys are names you choose; each must match `^[A-Za-z_][A-Za-z0-9_.-]*$`"
                  " (environment tables: `^[A-Za-z_][A-Za-z0-9_]*$`) and each value is a string.\n";
            continue;
        }
        os << "\n| key | type | required / default | meaning |\n|---|---|---|---|\n";
        for (const auto& k : t.keys)
            os << "| `" << k.key << "` | " << k.type << " | " << k.requirement << " | " << k.meaning
               << " |\n";
    }
    return os.str();
}

}  // namespace sitegen
