// The plan of one stack, computed once from the resolved site: the module's operations as
// data, the files the stack installs with their contents, the install steps and the sanity
// checks. Every output format is a renderer of this plan (render/), none reads another's text.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "site/model.h"

namespace sitegen {

// ---- what the site's Lua hooks add (sites/<name>/hooks/*.lua, run by lua/hooks.h) ----------

// One command of the job prologue: typed data, written by the job scripts' bash writer.
struct JobCommand {
    enum class Kind {
        setenv,       // export words[0]=words[1]
        module_load,  // module load words[0]
        run,          // the program words[0] with arguments words[1..] (run through env, never
                      // as a shell builtin, function or keyword)
    };
    Kind kind = Kind::run;
    std::vector<std::string> words;
};

// Everything the hooks add to one stack, in call order (values validated by plan/hook_additions.h).
struct HookAdditions {
    std::string family;  // Lmod family; "" = none (never differs from the stack's own family)
    std::vector<std::pair<std::string, std::string>> properties;  // Lmod add_property(name, value)
    std::vector<std::string> messages;                            // shown when the module is loaded
    std::vector<JobCommand> job_prologue;  // after the job scripts' module loads
};

// Options that shape the plan (resolved from the CLI).
struct PlanOptions {
    std::string prefix;  // install prefix written into outputs (the site's unless --prefix)
    std::vector<HookAdditions> hooks;  // per stack in site order; empty: the site has no hooks
};

// What the hooks add to `stack` (one of site.stacks), or null when they add nothing.
const HookAdditions* hook_additions(const Site& site, const Stack& stack, const PlanOptions& options);

// ---- the module -----------------------------------------------------------------------------

// One piece of a value the module computes when it is loaded; a value is its pieces joined.
struct ValuePiece {
    enum class Kind {
        text,         // `text` as it is
        root,         // the stack's install dir
        under_root,   // install dir / parts...
        local,        // the module-local value `name`
        under_local,  // local `name` / parts...
    };
    Kind kind = Kind::text;
    std::string text;                // text: the literal; local, under_local: the local's name
    std::vector<std::string> parts;  // under_root, under_local: path components
};
using ModuleValue = std::vector<ValuePiece>;

ModuleValue text_value(std::string text);
ModuleValue root_value();
ModuleValue under_root(std::vector<std::string> parts);
ModuleValue local_value(std::string name);
ModuleValue under_local(std::string name, std::vector<std::string> parts);

// An existence test a conditional operation makes when the module is loaded.
enum class PathTest { is_file, is_dir };

struct ConditionalAppend {
    PathTest test;
    ModuleValue path;      // what is tested
    ModuleValue appended;  // what is appended to the local when the test holds
};

// Which part of the module an operation belongs to: the core the layout and runtime imply,
// or the site's own environment ([collectives.env] and the stack's env, in name order).
enum class ModuleSection { core, site_env };

// A module's GPU driver check, made when it is loaded (not in EasyBuild's test load): the
// version in `version_file` (or in the file the variable kDriverVersionFileVar names) is the
// first run of digits and dots with a dot in it; when it is older than `minimum`, number by
// number, the load fails (or warns) with `before` + that version + " (" + file + ")" + `after`.
// A missing or unreadable file (no GPU driver on this node: a login node) is no failure.
struct DriverGateCheck {
    std::string minimum;       // e.g. "6.7.0"
    std::string version_file;  // e.g. /sys/module/amdgpu/version
    bool warn = false;         // warn and load instead of refusing
    std::string before, after;  // the message around the node's version and its file
};

struct ModuleOp {
    enum class Kind {
        comment,        // text
        set_local,      // local `name` = value
        find_image,     // local `name` = the image `text` in the install dir, else in
                        // `fallback_dir`; loading fails with a message when it is in neither
                        // (a file, or also a directory when `directory_ok`)
        append_first,   // local `name` gets the `appended` of the first `alternatives` whose
                        // test holds (nothing when none does)
        setenv,         // variable `name` = value
        prepend_path,   // value put first on the path list `name`
        add_property,   // Lmod property `name` with value `text` (from a site hook)
        message,        // `text` shown when the module is loaded (from a site hook)
        driver_gate,    // on load, `gate`: the node's GPU driver against the stack's minimum
    };
    Kind kind = Kind::comment;
    ModuleSection section = ModuleSection::core;
    std::string name;
    std::string text;          // comment text; find_image: the image file name
    ModuleValue value;         // set_local, setenv, prepend_path
    std::string fallback_dir;  // find_image
    bool directory_ok = false;  // find_image: the image may be a directory (charliecloud)
    std::vector<ConditionalAppend> alternatives;  // append_first
    DriverGateCheck gate;                         // driver_gate
};

struct ModulePlan {
    std::string install_dir;  // absolute (with --prefix): what `root` is
    std::string description, homepage;
    std::vector<std::string> keywords;
    std::string help;  // plain text
    std::string family;
    std::vector<std::string> conflicts;
    std::vector<std::string> depends_on;  // the site's base modules, then the stack's
    std::vector<ModuleOp> ops;            // in order
    std::vector<std::string> variables;   // every variable the module sets, in the order set
};

// ---- files, install steps, sanity checks ---------------------------------------------------

// A file the stack installs (rank wrapper, batch script, helpers, extend-venv-activate).
struct PlannedFile {
    std::string rel;  // path inside the install dir, e.g. runscripts/get-master
    std::string contents;
    bool executable = false;
};

// One piece of a shell command: bash source, or a path inside the install dir that each
// renderer writes as its own double-quoted "<install dir>/<rel>".
struct ShellPiece {
    bool in_install_dir = false;
    std::string text;  // bash source; or the path relative to the install dir ("" = the dir)
};
using ShellCommand = std::vector<ShellPiece>;

ShellCommand shell(std::initializer_list<ShellPiece> pieces);
ShellPiece bash_text(std::string source);
ShellPiece install_path(std::string rel);

enum class InstallMethod {
    copy_image,  // the container image is the source, copied into the install dir
    bundle,      // nothing to unpack: the steps below do the install
};

struct InstallPlan {
    InstallMethod method = InstallMethod::bundle;
    std::string image;                // copy_image: the image file name
    std::vector<ShellCommand> steps;  // in order, before the files are written
    std::vector<std::string> sanity_dirs;
    std::vector<ShellCommand> sanity_commands;  // besides: every planned file exists
    std::vector<std::string> build_modules;     // modules the install steps need, not the users
};

// ---- the plan ---------------------------------------------------------------------------------

struct StackPlan {
    const Stack* stack = nullptr;  // identity: name, version, suffix, moduleclass, docurls
    ModulePlan module;
    std::vector<PlannedFile> files;  // in install order
    InstallPlan install;
};

// Plans of some of a site's stacks (all of them, or one at a time): renderers write exactly
// the outputs of the stacks it holds, so a site can be rendered stack by stack. (The options
// are in the plans: a stack's plan holds the prefix and the hooks' additions it was made with.)
struct SitePlan {
    const Site* site = nullptr;
    std::vector<StackPlan> stacks;  // in site order
};

// The plan of one stack (counted: plans_computed()).
StackPlan plan_stack(const Site& site, const Stack& stack, const PlanOptions& options);
// Every stack's plan, each computed once.
SitePlan plan_site(const Site& site, const PlanOptions& options);
// How many stack plans this process has computed (tests: one per stack per build).
size_t plans_computed();

}  // namespace sitegen
