// plan: the values a site's Lua hooks may add to a stack, each validated here (where the plan
// knows what the module owns), and the job prologue they make, as bash lines.
#pragma once

#include <string>
#include <vector>

#include "plan/stack_plan.h"

namespace sitegen {

constexpr size_t kMaxHookNameBytes = 64;        // family, property names and values
constexpr size_t kMaxHookMessageBytes = 1024;   // a load message
constexpr size_t kMaxHookWordBytes = 4096;      // one word of a job command
constexpr size_t kMaxHookRunWords = 64;         // words of one job.run command

// Each returns "" when the value may be used, else why not (one line, for the hook's file:line).
std::string hook_family_problem(const std::string& name);
std::string hook_property_problem(const std::string& name, const std::string& value);
std::string hook_message_problem(const std::string& text);
std::string job_setenv_problem(const Site& site, const Stack& stack, const std::string& name, const std::string& value);
std::string job_module_problem(const std::string& name);
std::string job_run_problem(const std::vector<std::string>& argv);

// True when Lmod's own lmodrc.lua defines the property (every ':'-separated part of `value`):
// only those load without a site lmodrc.lua that adds more.
bool lmod_default_property(const std::string& name, const std::string& value);

// The job prologue of `stack` as bash lines, every value one bash_word ("" without hooks).
std::string job_prologue_lines(const Site& site, const Stack& stack, const PlanOptions& options);

}  // namespace sitegen
