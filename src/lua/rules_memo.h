// rules_memo: the rules' findings kept for the next run, reused while the rule files are the
// same and every value the rules read of the site is too (lua/read_log.h).
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "site/diagnostics.h"

namespace sitegen {

// A finding a rule reported with error_at/warn_at/report: at a site path, which each run
// places in the site it checks (a reused finding moves with its key's line).
struct RuleFinding {
    Severity severity = Severity::error;
    std::string path;
    std::string message;  // with its " [rule NAME]"
};

// One run of the rules, as a memo keeps it.
struct RulesRecord {
    std::string key;               // rules_key(): sitegen and every rule file, by path and bytes
    std::set<std::string> reads;   // what the rules read of the site (ReadLog lines)
    std::string digest;            // reads_digest() of those reads in the site they ran on
    std::vector<RuleFinding> findings;  // in the order the run reported them
};

// The caller's side of run_rules: the memo the last build left (a cache beside the build
// state; `text` "" when there is none) and the one this run leaves.
struct RulesMemo {
    std::string identity;  // sitegen's identity (pipeline's tool_identity()): part of the key
    std::string text;      // as read
    std::string next;      // what to keep for the next run ("" = nothing: a run that cannot be reused)
    bool reused = false;   // this run's findings came from the memo (the rules did not run)
};

// The memo's text, and back (false when `text` is not a whole memo: cut short or changed).
std::string rules_memo_text(const RulesRecord& record);
bool parse_rules_memo(std::string_view text, RulesRecord& record);

// The SHA-256 of `identity` and of each rule file's path and bytes, in order (`texts`: the
// files' bytes).
std::string rules_key(const std::string& identity, const std::vector<std::string>& files,
                      const std::vector<std::string>& texts);

}  // namespace sitegen
