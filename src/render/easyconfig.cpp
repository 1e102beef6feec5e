// render: an EasyBuild easyconfig per stack, in EasyBuild's own naming and repository layout.
// The planned files are written by postinstallcmds byte for byte (quoted heredocs,
// %-escaped for EasyBuild's templating); dependencies, modextrapaths, modextravars and the
// Lua and Tcl footers make the module EasyBuild generates (either syntax) set what sitegen's
// own modulefile sets, and usage carries its help.
//
// Easyblocks: container stacks use MakeCp like LUMI's own recipes (copy the image, write
// the scripts, create the venv in the image). Everything else uses Bundle with no
// components, the install done by postinstallcmds, because the layouts the modulefile
// describes are not what the specialised easyblocks build: PythonBundle installs with
// `pip install --prefix=<installdir>` into lib/pythonX.Y/site-packages and fails without an
// EasyBuild-built Python ("Python not included as dependency!"), while Cirrus uses pip
// --user under PYTHONUSERBASE=<root>/python/<version> over the site's python module; Conda
// makes <installdir> itself the environment (the module uses <root>/conda-env) and needs an
// EasyBuild-built conda (EBROOTMINIFORGE3...), while Frontier's miniforge3 is the site's.
#include "render/easyconfig.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>

#include "render/lua_statements.h"
#include "render/tcl_statements.h"
#include "text/python_writer.h"
#include "text/quote.h"

namespace sitegen {

namespace {

constexpr const char* kInstallDir = "%(installdir)s";
constexpr const char* kEasyBuildVersion = "5.2.1";

// A shell command as an easyconfig string, built piece by piece: install-dir paths become
// "%(installdir)s/<rel>" (the template kept), everything else comes out as written.
class CommandText {
public:
    // Room for a usual command, so the text does not grow piece by piece.
    CommandText() { templated_.reserve(128); }
    CommandText& text(std::string_view source) {
        literal_ += source;
        return *this;
    }
    CommandText& installed(std::string_view rel) {
        // The literal text since the last path is escaped as a whole: a template needs its
        // '%' run and "(name)s" seen together.
        append_easybuild_escaped(templated_, literal_);
        templated_.append("\"").append(kInstallDir).append("/");
        literal_ = bash_double_quoted(rel);
        literal_ += '"';
        return *this;
    }
    std::string python_string() {
        append_easybuild_escaped(templated_, literal_);
        literal_.clear();
        return sitegen::python_string(templated_);
    }

private:
    std::string templated_;  // escaped for EasyBuild, templates kept
    std::string literal_;    // to come out exactly as written
};

// A planned shell command as an easyconfig string.
std::string easybuild_command(const ShellCommand& cmd) {
    CommandText text;
    for (const auto& piece : cmd) {
        if (piece.in_install_dir) text.installed(piece.text);
        else text.text(piece.text);
    }
    return text.python_string();
}

// A command on a file of the install dir: PREFIX "%(installdir)s/REL" SUFFIX.
std::string on_installed_file(std::string_view prefix, std::string_view rel, std::string_view suffix = "") {
    return CommandText().text(prefix).installed(rel).text(suffix).python_string();
}

std::string letter_dir(const std::string& name) {
    return std::string(1, static_cast<char>(std::tolower(static_cast<unsigned char>(name.at(0)))));
}

// A generated script and how postinstallcmds write it.
struct Script {
    std::string rel;           // path in the install dir, e.g. runscripts/get-master
    std::string local_name;    // the easyconfig variable holding its text
    std::string_view content;  // the plan's text, not copied (it is most of the easyconfig)
    bool executable = false;
};

std::vector<Script> stack_scripts(const StackPlan& plan) {
    std::vector<Script> scripts;
    std::set<std::string> names;
    for (const auto& f : plan.files) {
        Script s{f.rel, "local_", f.contents, f.executable};
        s.local_name.reserve(s.local_name.size() + s.rel.size());
        for (char c : s.rel) s.local_name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
        while (!names.insert(s.local_name).second) s.local_name += "_";
        scripts.push_back(std::move(s));
    }
    return scripts;
}

// The memo of the script at `rel` in the last easyconfig this thread wrote: the next stack's
// script mostly repeats it (render workers each keep their own; what is written never
// depends on it, see LinesMemo).
LinesMemo& script_memo(const std::string& rel) {
    // Bounded: a site whose file names differ per stack would otherwise keep every script.
    constexpr size_t kMaxMemos = 64;
    thread_local std::map<std::string, LinesMemo, std::less<>> memos;
    if (memos.size() >= kMaxMemos && !memos.count(rel)) memos.clear();
    return memos[rel];
}

// `cat > FILE <<'DELIM'` + the text: a quoted delimiter, so nothing in it expands. A heredoc
// always ends its text with a newline; truncate removes it when the script has none.
std::vector<std::string> write_script_commands(const Script& s) {
    if (s.content.find('\0') != std::string_view::npos) throw std::invalid_argument(s.rel + " holds a NUL byte");
    const std::string delim = heredoc_delimiter(s.content);
    const bool ends_with_newline = !s.content.empty() && s.content.back() == '\n';
    std::vector<std::string> cmds = {
        on_installed_file("cat > ", s.rel, " <<'" + delim + "'\n") + " + " + s.local_name + " + " +
        python_string((ends_with_newline ? "" : "\n") + delim)};
    if (!ends_with_newline) cmds.push_back(on_installed_file("truncate -s -1 ", s.rel));
    cmds.push_back(on_installed_file(s.executable ? "chmod 755 " : "chmod 644 ", s.rel));
    return cmds;
}

// Text EasyBuild writes back unchanged in both module syntaxes: its set_environment quotes
// with quote_str, which escapes nothing (a backslash becomes a Lua escape, ' and " together
// give invalid Lua, [ ] $ \ substitute inside Tcl's "...") and turns $VAR into os.getenv()
// or $::env() by default. Other values stay in the footers, where sitegen's own writers
// quote them.
bool survives_easybuild_setenv(const std::string& value) {
    for (unsigned char c : value)
        if (c < 0x20 || c > 0x7e || c == '\\' || c == '$' || c == '\'' || c == '"' || c == '[' || c == ']') return false;
    return true;
}

// A path EasyBuild can carry in modextrapaths: it globs each entry (so no * ? [) and writes
// it unquoted in Tcl (so no space or substitution), and ':' would make two entries.
bool survives_easybuild_path(const std::string& path) {
    if (path.empty()) return false;
    for (unsigned char c : path)
        if (!std::isalnum(c) && c != '/' && c != '.' && c != '_' && c != '-' && c != '+' && c != ',' && c != '=' && c != '@')
            return false;
    return path.find("..") == std::string::npos && path.find("//") == std::string::npos && path.back() != '/';
}

// sitegen's module split the way EasyBuild's module generator can write it: modextrapaths
// (prepend_path of a path under the install dir, or of an absolute path), modextravars
// (setenv of text and install-dir paths: %(installdir)s), and what needs code when the module
// is loaded (the image lookup, the conditional binds and the locals they use) as one footer
// per module syntax, rendered from the same operations by the Lua and the Tcl writer.
// A variable goes entirely to one place, so the order of its operations is kept.
// EasyBuild writes default paths and modextrapaths first (variables by name, the defaults
// such as bin/ first within one), then modextravars, then the footer; for PATH that is
// sitegen's order too (plan/module.cpp puts bin/ first).
struct ModuleForEasyBuild {
    std::vector<std::pair<std::string, std::string>> extravars;           // name, Python literal
    std::vector<std::pair<std::string, std::vector<std::string>>> extrapaths;  // name, paths in order
    std::string lua_footer, tcl_footer;
};

class ModuleSplit {
public:
    explicit ModuleSplit(const ModulePlan& module) : module_(module) {
        for (const auto& op : module.ops) {
            switch (op.kind) {
                case ModuleOp::Kind::set_local:
                    if (!locals_.emplace(op.name, op.value).second) dynamic_.insert(op.name);
                    break;
                case ModuleOp::Kind::find_image:
                case ModuleOp::Kind::append_first:
                    dynamic_.insert(op.name);
                    break;
                case ModuleOp::Kind::comment:
                case ModuleOp::Kind::setenv:
                case ModuleOp::Kind::prepend_path:
                case ModuleOp::Kind::add_property:  // footer statements (from site hooks)
                case ModuleOp::Kind::message:
                case ModuleOp::Kind::driver_gate:  // a footer statement: code run on load
                    break;
            }
        }
    }

    ModuleForEasyBuild split() {
        // Which variables EasyBuild can carry: one setenv it can write, or only prepends it can.
        std::map<std::string, std::vector<const ModuleOp*>> by_variable;
        for (const auto& op : module_.ops)
            if (op.kind == ModuleOp::Kind::setenv || op.kind == ModuleOp::Kind::prepend_path) by_variable[op.name].push_back(&op);
        // Each carried operation's value, as extravar or extrapath gives it (made once).
        std::map<const ModuleOp*, std::string> value_of;
        std::map<std::string, bool> carried;
        for (const auto& [name, ops] : by_variable) {
            bool ok = ops.front()->kind == ModuleOp::Kind::prepend_path || ops.size() == 1;
            for (const ModuleOp* op : ops) {
                if (!ok || op->kind != ops.front()->kind) {
                    ok = false;
                    break;
                }
                auto value = op->kind == ModuleOp::Kind::setenv ? extravar(*op) : extrapath(*op);
                ok = value.has_value();
                if (ok) value_of[op] = std::move(*value);
            }
            carried[name] = ok;
        }
        ModuleForEasyBuild out;
        std::vector<const ModuleOp*> footer;
        for (const auto& op : module_.ops) {
            const bool variable = op.kind == ModuleOp::Kind::setenv || op.kind == ModuleOp::Kind::prepend_path;
            if (variable && carried.at(op.name)) {
                if (op.kind == ModuleOp::Kind::setenv) {
                    out.extravars.emplace_back(op.name, value_of.at(&op));
                } else {
                    auto it = std::find_if(out.extrapaths.begin(), out.extrapaths.end(),
                                           [&](const auto& p) { return p.first == op.name; });
                    if (it == out.extrapaths.end()) it = out.extrapaths.insert(it, {op.name, {}});
                    it->second.push_back(value_of.at(&op));
                }
                continue;
            }
            footer.push_back(&op);
        }
        // Locals are set in the footer only where a footer operation reads them; comments
        // go with the operation they precede.
        std::set<std::string> read;
        for (const ModuleOp* op : footer) note_reads(*op, read);
        std::vector<const ModuleOp*> kept;
        for (size_t i = 0; i < footer.size(); ++i) {
            const ModuleOp& op = *footer[i];
            if (op.kind == ModuleOp::Kind::set_local && !read.count(op.name)) continue;
            kept.push_back(&op);
        }
        LuaStatements lua;
        TclStatements tcl;
        for (size_t i = 0; i < kept.size(); ++i) {
            if (kept[i]->kind == ModuleOp::Kind::comment) {
                // only when the next kept operation is the one it came before
                const ModuleOp* next = i + 1 < kept.size() ? kept[i + 1] : nullptr;
                if (!next || next != kept[i] + 1) continue;
            }
            lua.op(*kept[i]);
            tcl.op(*kept[i]);
        }
        const std::string lua_deps = lua_dependency_lines(module_, false), tcl_deps = tcl_dependency_lines(module_, false);
        if (!lua.text().empty() || !lua_deps.empty()) {
            out.lua_footer = (lua_deps.empty() ? "" : lua_deps + "\n") + lua.text();
            out.tcl_footer = (tcl_deps.empty() ? "" : tcl_deps + "\n") + tcl.text();
        }
        return out;
    }

private:
    // The value with every local that is set once to a plain value put in its place; none
    // when it reads a local computed at load time.
    std::optional<ModuleValue> inlined(const ModuleValue& value) const {
        ModuleValue out;
        for (const auto& piece : value) {
            if (piece.kind != ValuePiece::Kind::local && piece.kind != ValuePiece::Kind::under_local) {
                out.push_back(piece);
                continue;
            }
            auto it = locals_.find(piece.text);
            if (it == locals_.end() || dynamic_.count(piece.text)) return std::nullopt;
            auto base = inlined(it->second);
            if (!base) return std::nullopt;
            if (piece.kind == ValuePiece::Kind::under_local) {
                if (base->size() == 1 && (base->front().kind == ValuePiece::Kind::root ||
                                          base->front().kind == ValuePiece::Kind::under_root)) {
                    ValuePiece p{ValuePiece::Kind::under_root, "", base->front().parts};
                    p.parts.insert(p.parts.end(), piece.parts.begin(), piece.parts.end());
                    base = ModuleValue{p};
                } else {
                    std::string tail;
                    for (const auto& part : piece.parts) tail += "/" + part;
                    base->push_back({ValuePiece::Kind::text, tail, {}});
                }
            }
            out.insert(out.end(), base->begin(), base->end());
        }
        // Adjacent texts as one piece ("/opt/env" "/bin" is the path "/opt/env/bin").
        ModuleValue merged;
        for (auto& piece : out) {
            if (piece.kind == ValuePiece::Kind::text && !merged.empty() && merged.back().kind == ValuePiece::Kind::text)
                merged.back().text += piece.text;
            else
                merged.push_back(std::move(piece));
        }
        return merged;
    }

    // setenv as a modextravars value (a Python literal), if EasyBuild can write it.
    std::optional<std::string> extravar(const ModuleOp& op) const {
        auto value = inlined(op.value);
        if (!value) return std::nullopt;
        std::string templated;
        for (const auto& piece : *value) {
            switch (piece.kind) {
                case ValuePiece::Kind::text:
                    if (!survives_easybuild_setenv(piece.text)) return std::nullopt;
                    templated += easybuild_escape(piece.text);
                    break;
                case ValuePiece::Kind::root:
                    templated += kInstallDir;
                    break;
                case ValuePiece::Kind::under_root: {
                    templated += kInstallDir;
                    for (const auto& part : piece.parts) {
                        if (!survives_easybuild_setenv(part)) return std::nullopt;
                        templated += "/" + easybuild_escape(part);
                    }
                    break;
                }
                case ValuePiece::Kind::local:
                case ValuePiece::Kind::under_local:
                    return std::nullopt;
            }
        }
        return python_string(templated);
    }

    // prepend_path as a modextrapaths entry: relative to the install dir, or absolute.
    std::optional<std::string> extrapath(const ModuleOp& op) const {
        auto value = inlined(op.value);
        if (!value || value->size() != 1) return std::nullopt;
        const ValuePiece& piece = value->front();
        std::string path;
        switch (piece.kind) {
            case ValuePiece::Kind::under_root:
                for (const auto& part : piece.parts) path += (path.empty() ? "" : "/") + part;
                if (!survives_easybuild_path(path) || path.front() == '/') return std::nullopt;
                return path;
            case ValuePiece::Kind::text:  // a host path (e.g. a network plugin's directory): EasyBuild
                                          // writes only paths that exist when it writes the module, so
                                          // it goes to the footers, which prepend it as sitegen's does
            case ValuePiece::Kind::root:
            case ValuePiece::Kind::local:
            case ValuePiece::Kind::under_local:
                return std::nullopt;
        }
        return std::nullopt;
    }

    static void note_value(const ModuleValue& value, std::set<std::string>& read) {
        for (const auto& piece : value)
            if (piece.kind == ValuePiece::Kind::local || piece.kind == ValuePiece::Kind::under_local) read.insert(piece.text);
    }

    // The locals an operation reads (an append reads and writes its own).
    void note_reads(const ModuleOp& op, std::set<std::string>& read) const {
        note_value(op.value, read);
        for (const auto& alt : op.alternatives) {
            note_value(alt.path, read);
            note_value(alt.appended, read);
        }
        if (op.kind == ModuleOp::Kind::append_first) read.insert(op.name);
        // a local read through another local
        for (const auto& name : std::set<std::string>(read)) {
            auto it = locals_.find(name);
            if (it != locals_.end()) note_value(it->second, read);
        }
    }

    const ModulePlan& module_;
    std::map<std::string, ModuleValue> locals_;
    std::set<std::string> dynamic_;
};

void write_identity(PythonWriter& w, const Stack& stack, const char* easyblock, const std::string& image,
                    const std::string& usage) {
    // The EasyBuild release the easyconfig is written for (and checked with).
    w.assign("easybuild_version", easybuild_string(kEasyBuildVersion));
    w.blank();
    w.assign("easyblock", easybuild_string(easyblock));
    w.blank();
    // Not aligned: --check-contrib refuses E221.
    w.assign("name", easybuild_string(stack.name));
    w.assign("version", easybuild_string(stack.version));
    if (!stack.versionsuffix.empty()) w.assign("versionsuffix", easybuild_string(stack.versionsuffix));
    if (!image.empty()) w.assign("local_sif", easybuild_string(image));
    w.blank();
    w.assign("homepage", easybuild_string(stack.homepage));
    std::vector<std::string> whatis = {easybuild_string("Description: " + stack.description)};
    if (!stack.keywords.empty()) {
        std::string kw;
        for (const auto& k : stack.keywords) kw += (kw.empty() ? "" : ", ") + k;
        whatis.push_back(easybuild_string("Keywords: " + kw));
    }
    whatis.push_back(easybuild_string("URL: " + stack.homepage));
    w.assign_list("whatis", whatis);
    w.assign_lines("description", stack.description);
    w.assign_lines("usage", usage);
    if (!stack.docurls.empty()) {
        std::vector<std::string> urls;
        for (const auto& u : stack.docurls) urls.push_back(easybuild_string(u));
        w.assign_list("docurls", urls);
    }
    w.blank();
    w.assign("toolchain", "SYSTEM");
}

void write_module(PythonWriter& w, const ModuleForEasyBuild& module) {
    if (!module.extrapaths.empty()) {
        // var_type PATH: EasyBuild writes a path only if it exists when the module is
        // generated, but also when it is empty (postinstallcmds create each one).
        std::vector<std::pair<std::string, std::string>> items;
        for (const auto& [name, paths] : module.extrapaths) {
            std::vector<std::string> literals;
            for (const auto& p : paths) literals.push_back(python_string(p));
            items.emplace_back(python_string(name), "{'paths': " + python_list(literals, 4) + ", 'var_type': 'PATH'}");
        }
        w.assign_dict("modextrapaths", items);
        w.blank();
    }
    if (!module.extravars.empty()) {
        std::vector<std::pair<std::string, std::string>> items;
        for (const auto& [k, v] : module.extravars) items.emplace_back(python_string(k), v);
        w.assign_dict("modextravars", items);
        w.blank();
    }
    if (!module.lua_footer.empty()) {
        w.comment("What EasyBuild cannot carry above (load-time code), once per module syntax from the same");
        w.comment("operations; EasyBuild's module sets `root` (the install dir) before it.");
        w.assign_lines("modluafooter", module.lua_footer);
        w.blank();
        w.assign_lines("modtclfooter", module.tcl_footer);
        w.blank();
    }
}

// EasyBuild's module help is Description, Usage, Examples, Citing, then More information
// (homepage, docurls) (_generate_help_text in https://github.com/easybuilders/easybuild-framework/
// blob/easybuild-framework-v5.2.1/easybuild/tools/module_generator.py):
// `usage` carries sitegen's help after its first paragraph (the description), so every
// line of sitegen's help is in EasyBuild's.
std::string usage_text(const ModulePlan& module) {
    const std::string lead = module.description + "\n\n";
    if (module.help.compare(0, lead.size(), lead) != 0)
        throw std::logic_error("the module help does not start with the description paragraph");
    return module.help.substr(lead.size());
}

// EasyBuild's easyblock for the plan's install method.
const char* easyblock(InstallMethod method) {
    switch (method) {
        case InstallMethod::copy_image: return "MakeCp";
        case InstallMethod::bundle: return "Bundle";
    }
    return "";
}

std::string easyconfig(const Site& site, const StackPlan& plan) {
    const Stack& stack = *plan.stack;
    const InstallPlan& install = plan.install;
    const bool copy_image = install.method == InstallMethod::copy_image;
    const std::vector<Script> scripts = stack_scripts(plan);
    const ModuleForEasyBuild module = ModuleSplit(plan.module).split();

    PythonWriter w;
    // The scripts' literals are most of the file; about a quarter more for quotes and indents.
    size_t script_bytes = 0;
    for (const auto& s : scripts) script_bytes += s.content.size();
    w.reserve(script_bytes + script_bytes / 4 + 16384);
    w.comment(stack.module_full_name() + " for site " + site.site.name + ": generated by sitegen; do not edit,");
    w.comment("change the site definition and regenerate.");
    w.blank();
    write_identity(w, stack, easyblock(install.method), copy_image ? install.image : "", usage_text(plan.module));
    // The site's modules are not built by EasyBuild: EXTERNAL_MODULE dependencies make `eb`
    // load them for the build and write depends_on() for them in the generated module,
    // exactly like sitegen's modulefile.
    std::vector<std::string> deps;
    for (const auto& m : plan.module.depends_on) deps.push_back("(" + easybuild_string(m) + ", EXTERNAL_MODULE)");
    if (!deps.empty()) {
        w.blank();
        w.assign_list("dependencies", deps);
    }
    // Modules only the install steps need (cmake for a source build): EasyBuild has no
    // per-command modules, and loads builddependencies for the whole build, not for users.
    std::vector<std::string> build_deps;
    for (const auto& m : install.build_modules) build_deps.push_back("(" + easybuild_string(m) + ", EXTERNAL_MODULE)");
    if (!build_deps.empty()) {
        if (deps.empty()) w.blank();
        w.assign_list("builddependencies", build_deps);
    }
    w.blank();
    if (copy_image) {
        // As LUMI's recipes: the image is the source, copied (not unpacked) into the install dir.
        w.assign_list("sources", {"{'filename': local_sif, 'extract_cmd': '/bin/cp -L %s .'}"});
        // The image's SHA-256 when the site gives it (eb --check-contrib requires one).
        if (!stack.image_sha256.empty()) w.assign_list("checksums", {easybuild_string(stack.image_sha256)});
        w.assign("skipsteps", "['build']");
        w.assign_list("files_to_copy", {"([local_sif], '.')"});
        w.blank();
    }
    w.comment("The scripts, byte for byte as sitegen generates them.");
    for (const auto& s : scripts) w.assign_lines(s.local_name, s.content, script_memo(s.rel));
    w.blank();
    std::vector<std::string> cmds;
    for (const auto& step : install.steps) cmds.push_back(easybuild_command(step));
    // The module's paths under the install dir exist, so EasyBuild writes them (see write_module);
    // a directory that holds a planned file exists already.
    for (const auto& [name, paths] : module.extrapaths)
        for (const auto& p : paths) {
            const bool holds_file = std::any_of(scripts.begin(), scripts.end(),
                                                [&](const Script& s) { return s.rel.starts_with(p + "/"); });
            if (p.front() != '/' && !holds_file) cmds.push_back(on_installed_file("mkdir -p ", p));
        }
    std::vector<std::string> sanity_files, sanity_dirs, sanity_cmds;
    for (const auto& s : scripts) {
        for (auto& c : write_script_commands(s)) cmds.push_back(std::move(c));
        sanity_files.push_back(easybuild_string(s.rel));
    }
    for (const auto& d : install.sanity_dirs) sanity_dirs.push_back(easybuild_string(d));
    for (const auto& c : install.sanity_commands) sanity_cmds.push_back(easybuild_command(c));
    w.assign_list("postinstallcmds", cmds);
    w.blank();
    w.assign_dict("sanity_check_paths",
                  {{"'files'", python_list(sanity_files, 4)}, {"'dirs'", python_list(sanity_dirs, 4)}});
    w.assign_list("sanity_check_commands", sanity_cmds);
    w.blank();
    write_module(w, module);
    w.assign("moduleclass", easybuild_string(stack.moduleclass));
    return w.take();
}

}  // namespace

std::string easyconfig_file_name(const Stack& stack) {
    // <name>-<version>[-<toolchain>-<tcversion>]<versionsuffix>.eb; the SYSTEM toolchain
    // adds nothing.
    return stack.name + "-" + stack.version + stack.versionsuffix + ".eb";
}

OutputList render_easyconfigs(const SitePlan& plan) {
    const Site& site = *plan.site;
    OutputList out;
    for (const auto& stack_plan : plan.stacks) {
        const Stack& stack = *stack_plan.stack;
        out.push_back({easyconfigs_root(site) + "/" + letter_dir(stack.name) + "/" + stack.name + "/" +
                           easyconfig_file_name(stack),
                       easyconfig(site, stack_plan), false});
    }
    return out;
}

}  // namespace sitegen
