// Lmod Lua statements for the plan's module operations: the one Lua writer shared by the Lmod
// renderer (whole modulefiles) and the easyconfig renderer (EasyBuild's modluafooter).
// Every value goes through lua_string; paths hang off the Lua local `root`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "plan/stack_plan.h"

namespace sitegen {

class LuaStatements {
public:
    // A comment is one line whatever the text holds: control bytes become '?'.
    void comment(const std::string& text);
    void blank();
    void call(const std::string& fn, const std::vector<std::string>& lua_args);
    void local(const std::string& name, const std::string& lua_expr);
    void op(const ModuleOp& op);
    const std::string& text() const { return out_; }

private:
    void line(std::string_view text) {  // (appended in place: no temporary per line)
        out_ += text;
        out_ += '\n';
    }
    void driver_gate(const DriverGateCheck& gate);
    std::string out_;
};

// A module value as a Lua expression: its pieces joined with "..".
std::string lua_value(const ModuleValue& value);

// family(), conflict() and depends_on() lines of a module, in that order.
std::string lua_dependency_lines(const ModulePlan& module, bool with_depends_on);

}  // namespace sitegen
