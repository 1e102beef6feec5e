// selfcheck: generated modulefiles evaluated in the sandbox by a recorder of Lmod's modulefile API.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lua/supervisor.h"
#include "site/diagnostics.h"
#include "render/emit.h"

namespace sitegen {

// One change a modulefile makes, as Lmod would apply it in the recorded mode. op is one of
// setenv, unsetenv, pushenv, popenv, prepend_path, append_path, remove_path, set_alias,
// unset_alias, set_shell_function, unset_shell_function; in .modulerc files module_version,
// module_alias, hide_version, hide_modulefile. `line` is the modulefile line of the call.
struct EnvChange {
    std::string op;
    std::string name;
    std::string value;  // "" for unsetenv, popenv and the unset_* ops
    int line = 0;

    bool operator==(const EnvChange& o) const {
        return op == o.op && name == o.name && value == o.value && line == o.line;
    }
};

struct ModuleRecord {
    std::vector<EnvChange> changes;
    std::vector<std::string> loads;    // load, try_load, load_any, always_load, depends_on (load mode)
    std::vector<std::string> unloads;  // unload; and what load-like calls unload in unload mode
    std::vector<std::string> prereqs, conflicts, whatis, families;
    std::string help;
    std::vector<std::string> errors;    // "file:line: message"; a fatal one ends the evaluation
    std::vector<std::string> messages;  // LmodMessage, LmodWarning, print
};

struct RecordOptions {
    std::function<bool(const std::string&)> is_file;  // answers isFile(); unset: nothing exists
    std::function<bool(const std::string&)> is_dir;   // answers isDir(); unset: nothing exists
    std::string module_full_name;  // myModuleFullName(); "" = the path after modulefiles/, minus .lua
    bool modulerc = false;         // evaluate with the .modulerc API (module_version, ...)
};

// Runs modulefile text in a fresh sandbox whose globals are a recorder of Lmod's modulefile
// API, in mode "load" or "unload" (setenv records unsetenv on unload, prepend_path records
// remove_path, and so on, as Lmod does). os.getenv answers from `env`; execute, capture,
// subprocess and source_sh are refused; unknown functions, wrong arity or argument types and
// invalid variable names are errors.
ModuleRecord record_modulefile(const std::string& text, const std::string& chunkname, const std::string& mode,
                               const std::map<std::string, std::string>& env, const RecordOptions& options = {});

// Checks every OutputFile whose path ends in .lua under a modulefiles/ dir: syntax errors,
// unknown functions, wrong arity/type, invalid variable names, and load/unload asymmetry
// (each variable set or extended on load is unset or removed on unload, nothing else is
// touched on unload). Files are evaluated as installed: isFile/isDir answer true. Findings go
// to `diags` at the generated file's path and line, with the suffix " [self-check]".
void self_check_modulefiles(const OutputList& files, Diagnostics& diags);
// The same findings, in the same order, each handed to `report` with the index in `files` of the
// file it is about. Returns the index of the file after which the check could not go on (its
// finding says why; later files are unchecked), or files.size() when every file was checked.
// Each file's findings depend on that file alone.
// With `early` (an EarlyChild of early_self_check(), not run yet), that child checks first.
size_t self_check_each(const OutputList& files, const std::function<void(size_t, Diagnostic)>& report,
                       EarlyChild* early = nullptr);
// The body of an EarlyChild that self_check_each can give its files to (one made before a
// build's memory grows: see EarlyChild).
EarlyChild::Body early_self_check();
// Whether self_check_modulefiles checks `path` (a Lua modulefile of a module tree).
bool is_self_checked(const std::string& path);

}  // namespace sitegen
