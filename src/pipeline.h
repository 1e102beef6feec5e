// The pipeline, end to end: load -> check -> rules -> hooks -> plan -> render -> self-check -> publish.
// main.cpp only parses arguments into a Request and prints the Result.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "render/emit.h"
#include "out/fs.h"
#include "plan/stack_plan.h"
#include "site/model.h"

namespace sitegen {

enum ExitCode { kExitOk = 0, kExitSiteErrors = 1, kExitUsage = 2, kExitIo = 3 };

struct Request {
    std::vector<std::string> sites;  // empty + all = every site
    bool all = false;
    std::string sites_dir = "sites";
    std::string out_dir = ".";
    std::optional<std::string> prefix;
    std::vector<std::string> rule_dirs;  // extra rule directories (--rules)
    bool dry_run = false;
    bool force = false;
    // run_build leaves the build's working set allocated (the process is about to exit and
    // frees it at once): tearing down its tens of thousands of small allocations one by one
    // was ~10% of a one-stack rebuild of a 2,000-stack site. For main only; tests free it.
    bool leave_working_set = false;
};

struct Result {
    int exit_code = kExitOk;
    std::string out;  // for stdout
    std::string err;  // for stderr (diagnostics)
};

// Makes the function-local statics that a forked child may use (a rule or hook sandbox, the
// self-check: the field tables, through the schema that walks them, SHA-256's choice, Lmod's
// properties, the view's empty needs) while the process has one thread: main calls it first. A child forked while
// another thread is inside such a first initialization would wait for it forever (its guard
// is copied as taken, by a thread the child does not have).
void prime_statics();

// Loads and checks the named sites (schema checks, rules and the sites' hooks). Nothing is written.
Result run_check(FileSystem& fs, const Request& request);
// check, then emit every output kind, self-check them and publish atomically.
Result run_build(FileSystem& fs, const Request& request);
// One line per active rule: name, description, file.
Result run_rules_list(const Request& request);
// One line per site: name and description.
Result run_list(FileSystem& fs, const Request& request);

// `sitegen topology import FILE.xml`: the [hardware] table of a node from its hwloc XML
// (exit 3 when hwloc cannot read it).
Result run_topology_import(const std::string& xml_path);

// `sitegen doctor SITE`: this node (or --topology FILE.xml, files under --root DIR) against the
// site file; findings at their TOML locations. Exit codes as check.
struct DoctorRequest {
    std::string topology;    // hwloc XML of the node; "" = this node, read live
    std::string root = "/";  // where the node's file system is ("/" = this node's)
};
Result run_doctor(FileSystem& fs, const Request& request, const DoctorRequest& doctor);

// `sitegen explain SITE STACK [VAR]`: the collective environment a rank of the stack gets (the
// module's and the rank wrapper's), each setting with its file:line, profile and conditions.
// STACK is the module's full name (PyTorch/2.3.1-rocm-6.0.3) or a name only one stack has.
// Exit 1 when the site has errors or VAR is set by nothing; 2 for an unknown stack.
Result run_explain(FileSystem& fs, const Request& request, const std::string& stack, const std::string& var);

// Every output of one loaded, checked site (used by build, tests and the fuzzer).
OutputList emit_all(const Site& site, const PlanOptions& options);
// One stack's outputs, appended to `all` (only reads its arguments: safe on several threads).
void emit_stack(const Site& site, const Stack& stack, const PlanOptions& options, OutputList& all);

}  // namespace sitegen
