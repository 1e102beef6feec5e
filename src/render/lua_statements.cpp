// Lmod Lua statements for module operations (see lua_statements.h).
#include "render/lua_statements.h"

#include "plan/traits.h"
#include "text/quote.h"

namespace sitegen {

namespace {

// pathJoin(base, "a", "b") as Lua source.
std::string path_join(const std::string& base, const std::vector<std::string>& parts) {
    std::string out = "pathJoin(" + base;
    for (const auto& p : parts) out += ", " + lua_string(p);
    return out + ")";
}

std::string lua_piece(const ValuePiece& piece) {
    switch (piece.kind) {
        case ValuePiece::Kind::text: return lua_string(piece.text);
        case ValuePiece::Kind::root: return "root";
        case ValuePiece::Kind::under_root: return path_join("root", piece.parts);
        case ValuePiece::Kind::local: return piece.text;
        case ValuePiece::Kind::under_local: return path_join(piece.text, piece.parts);
    }
    return "";
}

const char* lua_test(PathTest test) {
    switch (test) {
        case PathTest::is_file: return "isFile";
        case PathTest::is_dir: return "isDir";
    }
    return "";
}

}  // namespace

std::string lua_value(const ModuleValue& value) {
    std::string out;
    for (size_t i = 0; i < value.size(); ++i) {
        if (i) out += " .. ";
        out += lua_piece(value[i]);
    }
    return out;
}

void LuaStatements::comment(const std::string& text) {
    out_ += "-- ";
    for (unsigned char c : text) out_ += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
    out_ += '\n';
}

void LuaStatements::blank() { out_ += "\n"; }

void LuaStatements::call(const std::string& fn, const std::vector<std::string>& lua_args) {
    out_ += fn;
    out_ += '(';
    for (size_t i = 0; i < lua_args.size(); ++i) {
        if (i) out_ += ", ";
        out_ += lua_args[i];
    }
    out_ += ")\n";
}

void LuaStatements::local(const std::string& name, const std::string& lua_expr) {
    line("local " + name + " = " + lua_expr);
}

void LuaStatements::op(const ModuleOp& op) {
    switch (op.kind) {
        case ModuleOp::Kind::comment:
            comment(op.text);
            return;
        case ModuleOp::Kind::set_local:
            local(op.name, lua_value(op.value));
            return;
        case ModuleOp::Kind::find_image: {
            const std::string file = op.name + "_name", dir = lua_string(op.fallback_dir);
            const std::string missing = "not isFile(" + op.name + ")" +
                                        (op.directory_ok ? " and not isDir(" + op.name + ")" : std::string());
            line("local " + file + " = " + lua_string(op.text));
            line("local " + op.name + " = pathJoin(root, " + file + ")");
            line("if " + missing + " then " + op.name + " = pathJoin(" + dir + ", " + file + ") end");
            // Only a user's load fails without the image: EasyBuild's test load of the module
            // (eb --module-only, before the image is installed) runs with ___EASYBUILD___ set.
            line("if mode() == \"load\" and " + missing + " and os.getenv(\"___EASYBUILD___\") ~= \"EasyBuild\" then");
            line("  LmodError(\"container image \" .. " + file + " .. \" not found in \" .. root .. \" nor in \" .. " + dir +
                 " .. \"; reinstall the module or ask your support team\")");
            line("end");
            return;
        }
        case ModuleOp::Kind::append_first:
            for (size_t i = 0; i < op.alternatives.size(); ++i) {
                const ConditionalAppend& alt = op.alternatives[i];
                line(std::string(i ? "elseif " : "if ") + lua_test(alt.test) + "(" + lua_value(alt.path) + ") then");
                line("  " + op.name + " = " + op.name + " .. " + lua_value(alt.appended));
            }
            if (!op.alternatives.empty()) line("end");
            return;
        case ModuleOp::Kind::setenv:
            call("setenv", {lua_string(op.name), lua_value(op.value)});
            return;
        case ModuleOp::Kind::prepend_path:
            call("prepend_path", {lua_string(op.name), lua_value(op.value)});
            return;
        case ModuleOp::Kind::add_property:
            call("add_property", {lua_string(op.name), lua_string(op.text)});
            return;
        case ModuleOp::Kind::message:
            // LmodMessage prints in unload mode too: say it once, when the module is loaded
            // (https://lmod.readthedocs.io/en/latest/050_lua_modulefiles.html: LmodMessage, mode()).
            line("if mode() == \"load\" then");
            line("  LmodMessage(" + lua_string(op.text) + ")");
            line("end");
            return;
        case ModuleOp::Kind::driver_gate:
            driver_gate(op.gate);
            return;
    }
}

// The version compare runs in the module: the node's driver is known only where it is loaded.
// Numbers compare as numbers ("535.104.05" < "535.129.03"); missing trailing numbers are 0.
void LuaStatements::driver_gate(const DriverGateCheck& gate) {
    line("if mode() == \"load\" and os.getenv(\"___EASYBUILD___\") ~= \"EasyBuild\" then");
    line("  local driver_file = os.getenv(" + lua_string(kDriverVersionFileVar) + ") or " + lua_string(gate.version_file));
    line("  local driver_fh = io.open(driver_file, \"r\")");
    line("  local driver_version = driver_fh and (driver_fh:read(\"*a\") or \"\"):match(\"%d+%.%d[%d.]*\")");
    line("  if driver_fh then driver_fh:close() end");
    line("  local function numbers(v)");
    line("    local t = {}");
    line("    for n in v:gmatch(\"%d+\") do t[#t + 1] = tonumber(n) end");
    line("    return t");
    line("  end");
    line("  local function older(a, b)");
    line("    local x, y = numbers(a), numbers(b)");
    line("    for i = 1, math.max(#x, #y) do");
    line("      if (x[i] or 0) ~= (y[i] or 0) then return (x[i] or 0) < (y[i] or 0) end");
    line("    end");
    line("    return false");
    line("  end");
    line("  if driver_version and older(driver_version, " + lua_string(gate.minimum) + ") then");
    // warn: LmodMessage, since an LmodWarning makes `module load` exit 1 (Lmod 8.6), which
    // would stop a job script under `set -e` as a refusal does.
    line(std::string("    ") + (gate.warn ? "LmodMessage(\"WARNING: \" .. " : "LmodError(") + lua_string(gate.before) +
         " .. driver_version .. \" (\" .. driver_file .. \")\" .. " + lua_string(gate.after) + ")");
    line("  end");
    line("end");
}

std::string lua_dependency_lines(const ModulePlan& module, bool with_depends_on) {
    LuaStatements w;
    if (!module.family.empty()) w.call("family", {lua_string(module.family)});
    for (const auto& c : module.conflicts) w.call("conflict", {lua_string(c)});
    if (with_depends_on)
        for (const auto& m : module.depends_on) w.call("depends_on", {lua_string(m)});
    return w.text();
}

}  // namespace sitegen
