// plan: validation of what site hooks add, and the job prologue (see hook_additions.h).
#include "plan/hook_additions.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "plan/module.h"
#include "text/quote.h"

namespace sitegen {

namespace {

bool all_of_chars(const std::string& s, const char* extra) {
    return std::all_of(s.begin(), s.end(), [&](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || (c != '\0' && std::strchr(extra, c));
    });
}

// Text shown on a terminal: UTF-8, no control characters (escape sequences, carriage
// returns) but newlines, no C1 controls.
std::string terminal_text_problem(const std::string& text, size_t max_bytes) {
    if (text.empty()) return "is empty";
    if (text.size() > max_bytes) return "is longer than " + std::to_string(max_bytes) + " bytes";
    if (!is_valid_utf8_without_nul(text)) return "is not UTF-8 text (or holds a NUL byte)";
    for (size_t i = 0; i < text.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        const bool c1 = c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xa0;
        if ((c < 0x20 && c != '\n') || c == 0x7f || c1) return "holds a control character (only newlines may be used)";
    }
    return {};
}

// A word of a job command: anything bash can hold in a single-quoted word.
std::string word_problem(const std::string& word) {
    if (word.size() > kMaxHookWordBytes) return "is longer than " + std::to_string(kMaxHookWordBytes) + " bytes";
    if (!is_valid_utf8_without_nul(word)) return "is not UTF-8 text (or holds a NUL byte)";
    return {};
}

// Variables bash itself reads (a value there changes how later shell code runs) and the
// scripts' own.
bool shell_owned(const std::string& name) {
    static const char* const kNames[] = {"ENV", "SHELLOPTS", "IFS", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND",
                                         "CDPATH", "GLOBIGNORE", "HOME", "OLDPWD", "PWD", "SHELL", "TMOUT"};
    return std::find_if(std::begin(kNames), std::end(kNames), [&](const char* n) { return name == n; }) !=
               std::end(kNames) ||
           name.rfind("BASH", 0) == 0 || name.rfind("SITEGEN_", 0) == 0;
}

}  // namespace

std::string hook_family_problem(const std::string& name) {
    // Lmod exports LMOD_FAMILY_<NAME in upper case>: the name must make a variable name.
    if (name.empty() || name.size() > kMaxHookNameBytes || !std::isalpha(static_cast<unsigned char>(name[0])) ||
        !all_of_chars(name, "_"))
        return "a family name is a letter, then letters, digits or '_' (at most " + std::to_string(kMaxHookNameBytes) +
               "), e.g. 'pytorch'";
    return {};
}

std::string hook_property_problem(const std::string& name, const std::string& value) {
    if (name.empty() || name.size() > kMaxHookNameBytes || !std::isalpha(static_cast<unsigned char>(name[0])) ||
        !all_of_chars(name, "_"))
        return "a property name is a letter, then letters, digits or '_', e.g. 'arch'";
    if (value.empty() || value.size() > kMaxHookNameBytes || value.front() == ':' || value.back() == ':' ||
        value.find("::") != std::string::npos || !all_of_chars(value, "_.-:"))
        return "a property value is letters, digits, '_', '.' or '-', several joined by ':', e.g. 'gpu'";
    return {};
}

bool lmod_default_property(const std::string& name, const std::string& value) {
    // propT of Lmod's init/lmodrc.lua (https://lmod.readthedocs.io/en/latest/145_properties.html).
    static const std::vector<std::pair<std::string, std::vector<std::string>>> kPropT = {
        {"state", {"experimental", "testing", "obsolete"}},
        {"lmod", {"sticky"}},
        {"arch", {"mic", "offload", "gpu"}},
        {"status", {"active"}},
    };
    const auto kind = std::find_if(kPropT.begin(), kPropT.end(), [&](const auto& p) { return p.first == name; });
    if (kind == kPropT.end()) return false;
    size_t start = 0;
    while (true) {  // Lmod checks each ':'-separated part against validT
        const size_t colon = value.find(':', start);
        const std::string part = value.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
        if (std::find(kind->second.begin(), kind->second.end(), part) == kind->second.end()) return false;
        if (colon == std::string::npos) return true;
        start = colon + 1;
    }
}

std::string hook_message_problem(const std::string& text) {
    const std::string why = terminal_text_problem(text, kMaxHookMessageBytes);
    return why.empty() ? why : "the message " + why;
}

std::string job_setenv_problem(const Site& site, const Stack& stack, const std::string& name, const std::string& value) {
    if (!is_valid_var_name(name)) return "'" + name + "' is not a variable name (letters, digits and '_', not first a digit)";
    if (shell_owned(name)) return name + " is read by bash or by the generated scripts; a hook cannot set it";
    if (module_owns_variable(site, stack, name))
        return name + " is managed by the module (or by Lmod); a hook cannot set it in the job";
    const std::string why = word_problem(value);
    return why.empty() ? why : "the value of " + name + " " + why;
}

std::string job_module_problem(const std::string& name) {
    if (name.empty() || name.size() > 256 || name.front() == '-' || name.front() == '/' ||
        !all_of_chars(name, "._+/-"))
        return "a module name is letters, digits and '._+/-', not starting with '-' or '/', e.g. 'rocm/6.0.3'";
    return {};
}

std::string job_run_problem(const std::vector<std::string>& argv) {
    if (argv.empty()) return "a command needs at least its program";
    if (argv.size() > kMaxHookRunWords) return "a command has at most " + std::to_string(kMaxHookRunWords) + " words";
    // The program is found by env (a path or a name on PATH): never `NAME=VALUE` (env would
    // set it) or an option of env.
    const std::string& program = argv.front();
    if (program.empty() || program.front() == '-' || program.find('=') != std::string::npos)
        return "the program must be a name or a path, without '=' and not starting with '-'";
    for (size_t i = 0; i < argv.size(); ++i)
        if (auto why = word_problem(argv[i]); !why.empty()) return "word " + std::to_string(i + 1) + " " + why;
    return {};
}

std::string job_prologue_lines(const Site& site, const Stack& stack, const PlanOptions& options) {
    const HookAdditions* hooks = hook_additions(site, stack, options);
    if (!hooks || hooks->job_prologue.empty()) return {};
    std::string s = "# Job prologue from the site's Lua hooks (hooks/*.lua); each value is one quoted word.\n";
    for (const JobCommand& c : hooks->job_prologue) {
        // Last line of defence (lua/hooks.cpp reports these at the hook's line first).
        std::string why;
        switch (c.kind) {
            case JobCommand::Kind::setenv:
                why = c.words.size() != 2 ? "setenv takes a name and a value" : job_setenv_problem(site, stack, c.words[0], c.words[1]);
                break;
            case JobCommand::Kind::module_load:
                why = c.words.size() != 1 ? "module_load takes one name" : job_module_problem(c.words[0]);
                break;
            case JobCommand::Kind::run: why = job_run_problem(c.words); break;
        }
        if (!why.empty()) throw std::invalid_argument("job prologue from a hook: " + why);
        // ShellCheck's SC2016 asks whether '$x' was meant to expand: here it never is.
        if (std::any_of(c.words.begin(), c.words.end(), [](const std::string& w) { return w.find_first_of("$`") != std::string::npos; }))
            s += "# shellcheck disable=SC2016\n";
        switch (c.kind) {
            case JobCommand::Kind::setenv:
                s += "export " + c.words.at(0) + "=" + bash_word(c.words.at(1)) + "\n";
                break;
            case JobCommand::Kind::module_load:
                s += "module load " + bash_word(c.words.at(0)) + "\n";
                break;
            case JobCommand::Kind::run:
                // Through env: the words run as one program's argv, never as a builtin
                // (eval, source, trap), a function or a keyword.
                s += "env --";
                for (const auto& w : c.words) s += " " + bash_word(w);
                s += "\n";
                break;
        }
    }
    return s;
}

}  // namespace sitegen
