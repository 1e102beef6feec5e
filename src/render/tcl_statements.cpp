// Tcl modulefile statements for module operations (see tcl_statements.h).
#include "render/tcl_statements.h"

#include <stdexcept>

#include "plan/traits.h"
#include "text/quote.h"
#include "text/tcl_writer.h"

namespace sitegen {

namespace {

// ${name} inside a double-quoted word; the plan's locals are identifiers, never site values.
std::string tcl_variable(const std::string& name) {
    if (!is_valid_var_name(name)) throw std::logic_error("not a Tcl variable name: " + name);
    return "${" + name + "}";
}

// base/part/part inside a double-quoted word.
std::string tcl_path(const std::string& base, const std::vector<std::string>& parts) {
    std::string out = tcl_variable(base);
    for (const auto& p : parts) out += "/" + tcl_quoted_content(p);
    return out;
}

std::string tcl_piece(const ValuePiece& piece) {
    switch (piece.kind) {
        case ValuePiece::Kind::text: return tcl_quoted_content(piece.text);
        case ValuePiece::Kind::root: return tcl_variable("root");
        case ValuePiece::Kind::under_root: return tcl_path("root", piece.parts);
        case ValuePiece::Kind::local: return tcl_variable(piece.text);
        case ValuePiece::Kind::under_local: return tcl_path(piece.text, piece.parts);
    }
    return "";
}

const char* tcl_test(PathTest test) {
    switch (test) {
        case PathTest::is_file: return "file isfile";
        case PathTest::is_dir: return "file isdirectory";
    }
    return "";
}

}  // namespace

std::string tcl_value(const ModuleValue& value) {
    std::string out = "\"";
    for (const auto& piece : value) out += tcl_piece(piece);
    return out + "\"";
}

void TclStatements::comment(const std::string& text) { line(tcl_comment(text)); }

void TclStatements::blank() { out_ += "\n"; }

void TclStatements::call(const std::string& cmd, const std::vector<std::string>& tcl_words) {
    out_ += cmd;
    for (const auto& w : tcl_words) {
        out_ += ' ';
        out_ += w;
    }
    out_ += '\n';
}

void TclStatements::op(const ModuleOp& op) {
    switch (op.kind) {
        case ModuleOp::Kind::comment:
            comment(op.text);
            return;
        case ModuleOp::Kind::set_local:
            call("set", {op.name, tcl_value(op.value)});
            return;
        case ModuleOp::Kind::find_image: {
            const std::string image = tcl_variable(op.name), file = tcl_variable(op.name + "_name");
            const std::string dir = tcl_quoted_content(op.fallback_dir);
            const std::string missing = "![file isfile \"" + image + "\"]" +
                                        (op.directory_ok ? " && ![file isdirectory \"" + image + "\"]" : std::string());
            call("set", {op.name + "_name", tcl_string(op.text)});
            call("set", {op.name, "\"" + tcl_variable("root") + "/" + file + "\""});
            line("if { " + missing + " } { set " + op.name + " \"" + dir + "/" + file + "\" }");
            // Only a user's load fails without the image: EasyBuild's test load of the module
            // (eb --module-only, before the image is installed) runs with ___EASYBUILD___ set.
            line("if { [module-info mode load] && " + missing +
                 " && !([info exists ::env(___EASYBUILD___)] && $::env(___EASYBUILD___) eq \"EasyBuild\") } {");
            line("    error \"container image " + file + " not found in " + tcl_variable("root") + " nor in " + dir +
                 "; reinstall the module or ask your support team\"");
            line("}");
            return;
        }
        case ModuleOp::Kind::append_first:
            for (size_t i = 0; i < op.alternatives.size(); ++i) {
                const ConditionalAppend& alt = op.alternatives[i];
                line(std::string(i ? "} elseif" : "if") + " { [" + tcl_test(alt.test) + " " + tcl_value(alt.path) + "] } {");
                line("    append " + op.name + " " + tcl_value(alt.appended));
            }
            if (!op.alternatives.empty()) line("}");
            return;
        case ModuleOp::Kind::setenv:
            call("setenv", {tcl_string(op.name), tcl_value(op.value)});
            return;
        case ModuleOp::Kind::prepend_path:
            call("prepend-path", {tcl_string(op.name), tcl_value(op.value)});
            return;
        case ModuleOp::Kind::add_property:
            // Lmod's Tcl reader maps add-property to add_property; Environment Modules accepts
            // it for compatibility and ignores it.
            call("add-property", {tcl_string(op.name), tcl_string(op.text)});
            return;
        case ModuleOp::Kind::message:
            // Shown on load only (an unload evaluates the file again).
            line("if { [module-info mode load] } {");
            line("    puts stderr " + tcl_string(op.text));
            line("}");
            return;
        case ModuleOp::Kind::driver_gate:
            driver_gate(op.gate);
            return;
    }
}

// The Lua form's check in Tcl (lua_statements.cpp): leading zeros are dropped before
// `package vcompare`, which compares dotted numbers as numbers.
void TclStatements::driver_gate(const DriverGateCheck& gate) {
    const std::string var = kDriverVersionFileVar;
    line("if { [module-info mode load] && !([info exists ::env(___EASYBUILD___)] && $::env(___EASYBUILD___) eq \"EasyBuild\") } {");
    line("    set driver_file " + tcl_string(gate.version_file));
    line("    if { [info exists ::env(" + var + ")] } { set driver_file $::env(" + var + ") }");
    line("    if { [file readable $driver_file] && ![catch {open $driver_file r} driver_fh] } {");
    line("        set driver_text [read $driver_fh]");
    line("        close $driver_fh");
    line("        if { [regexp {[0-9]+\\.[0-9][0-9.]*} $driver_text driver_version] } {");
    line("            set driver_numbers [join [lmap n [regexp -all -inline {[0-9]+} $driver_version] {scan $n %d}] .]");
    line("            if { [package vcompare $driver_numbers " + tcl_string(gate.minimum) + "] < 0 } {");
    const std::string message = "\"" + std::string(gate.warn ? "WARNING: " : "") + tcl_quoted_content(gate.before) + "${driver_version} (${driver_file})" +
                                tcl_quoted_content(gate.after) + "\"";
    line(std::string("                ") + (gate.warn ? "puts stderr " : "error ") + message);
    line("            }");
    line("        }");
    line("    }");
    line("}");
}

std::string tcl_dependency_lines(const ModulePlan& module, bool with_depends_on) {
    TclStatements w;
    if (!module.family.empty()) w.call("family", {tcl_string(module.family)});
    for (const auto& c : module.conflicts) w.call("conflict", {tcl_string(c)});
    if (with_depends_on)
        for (const auto& m : module.depends_on) w.call("depends-on", {tcl_string(m)});
    return w.text();
}

}  // namespace sitegen
