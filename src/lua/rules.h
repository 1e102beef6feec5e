// rules: site rules written in Lua (rules/*.lua and sites/<name>/rules/*.lua), run sandboxed.
// The rule API is documented in docs/rules.md.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "site/diagnostics.h"
#include "lua/lua_sandbox.h"
#include "lua/rules_memo.h"
#include "lua/site_view.h"
#include "site/model.h"

namespace sitegen {

// The largest rule file read (the built-in ones are a few KiB).
constexpr size_t kMaxRuleFileBytes = size_t{1} << 20;

struct RuleInfo {
    std::string name;
    std::string file;
    std::string description;
};

// Runs the built-in rules (default_rules_dir()), the rules in `rule_dirs` (--rules DIR) and
// the site's own sites/<name>/rules/*.lua, all sorted by file name, each file in a fresh
// sandbox against the read-only site. Findings go to `diags` at the TOML location of their
// path, with the suffix " [rule <name>]"; a rule that fails or runs away is reported at its
// own file:line. The rules run in a supervised child process (lua/supervisor.h): a call
// that outlives its time limit inside C code (a backtracking pattern) is killed there, reported
// at the line that called it, and the next rule runs in a new child.
// With a `memo` (lua/rules_memo.h), the findings of the last run are reported instead of
// running the rules again when the rule files are the same and every value the rules read
// of the site is too; `memo->next` is what to keep for the next run.
// (`memo_checked`: rules_from_memo found that the memo does not hold; it is not asked again.)
void run_rules(const Site& site, const std::vector<std::string>& rule_dirs, Diagnostics& diags,
               RulesMemo* memo = nullptr, bool memo_checked = false);
// run_rules' first step alone: when `memo` holds for the site (the same sitegen and rule
// files, the same values read), its findings are added to `diags` and true returned; else
// nothing is added (run_rules then runs them). It costs a view of what the rules read, not a
// child process: a build takes it on its own thread, and a thread of the rules' only when
// they run.
bool rules_from_memo(const Site& site, const std::vector<std::string>& rule_dirs, Diagnostics& diags, RulesMemo& memo);

// Every rule the built-in dir and `rule_dirs` define (files that fail to load are listed
// under their file stem with the reason as description).
std::vector<RuleInfo> list_rules(const std::vector<std::string>& rule_dirs);

// The built-in rules: share/sitegen/rules next to an installed binary, else the source tree's.
std::string default_rules_dir();

// The *.lua files of `dirs`, sorted by file name (then by directory order); a directory that
// does not exist is reported to `diags` when given.
std::vector<std::string> rule_files(const std::vector<std::string>& dirs, Diagnostics* diags = nullptr);

// How many children run_rule_files starts at once for `files` rule files: split_threads()
// (out/threads.h), at most kMaxRuleGroups and one per file; one when the rules run in process,
// or in a supervised child already. Each child is a fork of a process that may hold hundreds
// of megabytes and builds the site's view again: on 16 cores, three or four children ended the
// rules as soon as eleven did, for far less CPU.
constexpr size_t kMaxRuleGroups = 4;
size_t rule_groups(size_t files);

// Runs exactly these rule files against `site` (what run_rules does after collecting them),
// each call under `limits` (tests lengthen the time limit where only memory should stop a rule).
// The files run in `groups` children at once (0: rule_groups()); the findings are those of
// one run over the files in order.
void run_rule_files(const Site& site, const std::vector<std::string>& files, Diagnostics& diags,
                    const SandboxLimits& limits = {}, size_t groups = 0);

// Shared with the site's hooks (lua/hooks.h), which are read like rule files:
// the path as users should see it (relative to the working directory when inside it),
std::string shown_path(const std::filesystem::path& p);
// and the "-- <description>" of a file's first line, or "" when the file lacks it.
std::string purpose_comment(const std::string& text);

}  // namespace sitegen
