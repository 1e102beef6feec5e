// Tcl modulefile statements for the plan's module operations, one function per operation
// kind as the Lua writer (lua_statements) has: EasyBuild's modtclfooter uses them now, and a
// whole Environment Modules modulefile renderer can later. Every value goes through
// tcl_string; paths hang off the Tcl variable `root` (EasyBuild's Tcl module sets it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "plan/stack_plan.h"

namespace sitegen {

class TclStatements {
public:
    // A comment is one line whatever the text holds (see tcl_comment).
    void comment(const std::string& text);
    void blank();
    // `cmd word...`: the words are Tcl source (tcl_string, tcl_value).
    void call(const std::string& cmd, const std::vector<std::string>& tcl_words);
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

// A module value as one double-quoted Tcl word: text escaped, root and locals as ${name},
// path parts joined with "/" (what Lmod's pathJoin gives for the plan's clean parts).
std::string tcl_value(const ModuleValue& value);

// family, conflict and depends-on lines of a module, in that order.
std::string tcl_dependency_lines(const ModulePlan& module, bool with_depends_on);

}  // namespace sitegen
