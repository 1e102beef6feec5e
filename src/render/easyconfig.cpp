// render: an EasyBuild easyconfig per stack, in EasyBuild's own naming and repository layout.
// The planned files are written by postinstallcmds byte for byte (quoted heredocs,
// %-escaped for EasyBuild's templating); dependencies, modextravars and modluafooter make
// the module EasyBuild generates set what sitegen's own modulefile sets.
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

#include <cctype>
#include <set>
#include <stdexcept>

#include "render/lua_statements.h"
#include "text/python_writer.h"
#include "text/quote.h"
#include "out/sha256.h"

namespace sitegen {

namespace {

constexpr const char* kInstallDir = "%(installdir)s";
constexpr const char* kEasyBuildVersion = "5.2.1";

// A planned shell command as an easyconfig string: install-dir paths become
// "%(installdir)s/<rel>" (the template kept), everything else comes out as written.
std::string easybuild_command(const ShellCommand& cmd) {
    std::string text, literal;
    for (const auto& piece : cmd) {
        if (!piece.in_install_dir) {
            literal += piece.text;
            continue;
        }
        text += easybuild_escape(literal) + "\"" + kInstallDir + "/";
        literal = bash_double_quoted(piece.text) + "\"";
    }
    return python_string(text + easybuild_escape(literal));
}

// A command on a file of the install dir: PREFIX "%(installdir)s/REL" SUFFIX.
std::string on_installed_file(const std::string& prefix, const std::string& rel, const std::string& suffix = "") {
    return easybuild_command({bash_text(prefix), install_path(rel), bash_text(suffix)});
}

std::string letter_dir(const std::string& name) {
    return std::string(1, static_cast<char>(std::tolower(static_cast<unsigned char>(name.at(0)))));
}

// A generated script and how postinstallcmds write it.
struct Script {
    std::string rel;         // path in the install dir, e.g. runscripts/get-master
    std::string local_name;  // the easyconfig variable holding its text
    std::string content;
    bool executable = false;
};

std::vector<Script> stack_scripts(const StackPlan& plan) {
    std::vector<Script> scripts;
    std::set<std::string> names;
    for (const auto& f : plan.files) {
        Script s{f.rel, "local_", f.contents, f.executable};
        for (char c : s.rel) s.local_name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
        while (!names.insert(s.local_name).second) s.local_name += "_";
        scripts.push_back(std::move(s));
    }
    return scripts;
}

bool has_line(const std::string& text, const std::string& line) {
    size_t start = 0;
    for (size_t nl; start <= text.size(); start = nl + 1) {
        nl = text.find('\n', start);
        if (nl == std::string::npos) nl = text.size();
        if (text.compare(start, nl - start, line) == 0 && nl - start == line.size()) return true;
    }
    return false;
}

// A heredoc delimiter that is no line of the content (stable: derived from its hash).
std::string heredoc_delimiter(const std::string& content) {
    std::string delim = "SITEGEN_EOF_" + sha256_hex(content).substr(0, 12);
    while (has_line(content, delim)) delim += "_";
    return delim;
}

// `cat > FILE <<'DELIM'` + the text: a quoted delimiter, so nothing in it expands. A heredoc
// always ends its text with a newline; truncate removes it when the script has none.
std::vector<std::string> write_script_commands(const Script& s) {
    if (s.content.find('\0') != std::string::npos) throw std::invalid_argument(s.rel + " holds a NUL byte");
    const std::string delim = heredoc_delimiter(s.content);
    const bool ends_with_newline = !s.content.empty() && s.content.back() == '\n';
    std::vector<std::string> cmds = {
        on_installed_file("cat > ", s.rel, " <<'" + delim + "'\n") + " + " + s.local_name + " + " +
        python_string((ends_with_newline ? "" : "\n") + delim)};
    if (!ends_with_newline) cmds.push_back(on_installed_file("truncate -s -1 ", s.rel));
    cmds.push_back(on_installed_file(s.executable ? "chmod 755 " : "chmod 644 ", s.rel));
    return cmds;
}

// Values EasyBuild's Lua module generator writes back unchanged in setenv(): it quotes
// with quote_str, which escapes nothing (a backslash would become a Lua escape, ' and "
// together give invalid Lua) and turns $VAR into os.getenv() by default. Other values
// stay in modluafooter, where sitegen's own Lua quoting writes them.
bool survives_easybuild_setenv(const std::string& value) {
    for (unsigned char c : value)
        if (c < 0x20 || c > 0x7e || c == '\\' || c == '$' || c == '\'' || c == '"') return false;
    return true;
}

// sitegen's module, split into what EasyBuild writes itself (modextravars) and the Lua
// footer it appends verbatim: the site's env goes to modextravars where EasyBuild writes
// the value back unchanged, everything else is rendered by the same Lua statements as
// sitegen's modulefile (depends_on excepted: those are `dependencies`).
struct ModuleForEasyBuild {
    EnvList extravars;
    std::string footer;
};

ModuleForEasyBuild module_for_easybuild(const ModulePlan& module) {
    ModuleForEasyBuild out;
    std::set<std::string> core_names;
    LuaStatements core, kept;
    const ModuleOp* env_comment = nullptr;
    for (const auto& op : module.ops) {
        if (op.section == ModuleSection::core) {
            core.op(op);
            if (!op.name.empty()) core_names.insert(op.name);
        }
    }
    for (const auto& op : module.ops) {
        if (op.section != ModuleSection::site_env) continue;
        if (op.kind == ModuleOp::Kind::comment) {
            env_comment = &op;
            continue;
        }
        const std::string value = op.value.size() == 1 ? op.value.front().text : "";
        const bool plain = op.kind == ModuleOp::Kind::setenv && op.value.size() == 1 &&
                           op.value.front().kind == ValuePiece::Kind::text;
        // Set earlier by the core too: keep its place in the order.
        if (plain && survives_easybuild_setenv(value) && !core_names.count(op.name))
            out.extravars.emplace_back(op.name, value);
        else
            kept.op(op);
    }
    const std::string deps = lua_dependency_lines(module, false);
    out.footer = (deps.empty() ? "" : deps + "\n") + core.text();
    if (!kept.text().empty()) {
        LuaStatements marker;
        if (env_comment) marker.op(*env_comment);
        out.footer += marker.text() + kept.text();
    }
    return out;
}

void write_identity(PythonWriter& w, const Stack& stack, const char* easyblock, const std::string& image) {
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
    w.assign("description", easybuild_lines(stack.description));
    if (!stack.docurls.empty()) {
        std::vector<std::string> urls;
        for (const auto& u : stack.docurls) urls.push_back(easybuild_string(u));
        w.assign_list("docurls", urls);
    }
    w.blank();
    w.assign("toolchain", "SYSTEM");
}

void write_module(PythonWriter& w, const ModulePlan& plan) {
    const ModuleForEasyBuild module = module_for_easybuild(plan);
    if (!module.extravars.empty()) {
        std::vector<std::pair<std::string, std::string>> items;
        for (const auto& [k, v] : module.extravars) items.emplace_back(python_string(k), easybuild_string(v));
        w.assign_dict("modextravars", items);
        w.blank();
    }
    w.comment("sitegen's modulefile body; EasyBuild's module defines `root` (the install dir) before it.");
    w.assign("modluafooter", easybuild_lines(module.footer));
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

    PythonWriter w;
    w.comment(stack.module_full_name() + " for site " + site.site.name + ": generated by sitegen; do not edit,");
    w.comment("change the site definition and regenerate.");
    w.blank();
    write_identity(w, stack, easyblock(install.method), copy_image ? install.image : "");
    // The site's modules are not built by EasyBuild: EXTERNAL_MODULE dependencies make `eb`
    // load them for the build and write depends_on() for them in the generated module,
    // exactly like sitegen's modulefile.
    std::vector<std::string> deps;
    for (const auto& m : plan.module.depends_on) deps.push_back("(" + easybuild_string(m) + ", EXTERNAL_MODULE)");
    if (!deps.empty()) {
        w.blank();
        w.assign_list("dependencies", deps);
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
    for (const auto& s : scripts) w.assign(s.local_name, easybuild_lines(s.content));
    w.blank();
    std::vector<std::string> cmds;
    for (const auto& step : install.steps) cmds.push_back(easybuild_command(step));
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
    write_module(w, plan.module);
    w.blank();
    w.assign("moduleclass", easybuild_string(stack.moduleclass));
    return w.text();
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
