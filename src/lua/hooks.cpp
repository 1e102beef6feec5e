// Site hooks: finds sites/<name>/hooks/*.lua, runs each hook per stack in a supervised sandbox
// and turns its builder calls into validated plan data (see hooks.h, docs/hooks.md).
#include "lua/hooks.h"

#include <algorithm>
#include <filesystem>

#include "lua/rules.h"
#include "lua/site_view.h"
#include "lua/supervisor.h"
#include "out/fs.h"
#include "plan/hook_additions.h"
#include "site/suggest.h"

namespace sitegen {

namespace fs = std::filesystem;

namespace {

// The hook API, run as trusted host code in every hook file's sandbox before the file.
// Arguments: host functions (register, add, suggest, caller). Returns run_hook(h, i).
constexpr const char* kPrelude = R"lua(-- hooks prelude: hook{} and the builder each hook's stack function writes to
local register, add_host, suggest, caller = ...
local site, error, type, tostring, setmetatable, select, pairs, next = site, error, type, tostring, setmetatable, select, pairs, next
local sort, concat, unpack = table.sort, table.concat, table.unpack
local hooks, running = {}, nil  -- running: the hook whose stack function runs, and its builder's token

local function name_of(k) return type(k) == "string" and k or "(a " .. type(k) .. ")" end

-- A read-only table of `fns`; reading a name it lacks is an error with a did-you-mean.
local function api(path, fns)
  local names = {}
  for k in pairs(fns) do names[#names + 1] = k end
  sort(names)
  local list = concat(names, " ")
  return setmetatable({}, {
    __index = function(_, k)
      local f = fns[k]
      if f ~= nil then return f end
      error(path .. " has no '" .. name_of(k) .. "'" .. suggest(name_of(k), list) ..
            " (it offers " .. concat(names, ", ") .. ")", 2)
    end,
    __newindex = function() error(path .. " is read-only", 2) end,
    __metatable = false,
  })
end

-- The builder one call of a hook's stack function gets, for stack `index` (0-based).
local function builder(index, token)
  local function add(fn, kind, ...)
    if running == nil or running.token ~= token then
      error(fn .. " can only be called while the stack function it was given to runs", 3)
    end
    local line, file = caller()
    local why = add_host(kind, index, running.name, line or 0, file or "", ...)
    if why then error(fn .. ": " .. why, 3) end
  end
  -- A call taking strings, described by `whats`.
  local function strings(fn, kind, ...)
    local whats = { ... }
    return function(...)
      local n = select("#", ...)
      if n ~= #whats then
        error(fn .. " expects " .. #whats .. " argument" .. (#whats == 1 and "" or "s") .. " (" ..
              concat(whats, ", ") .. "), got " .. n, 2)
      end
      local args = { ... }
      for i = 1, n do
        if type(args[i]) ~= "string" then error(fn .. ": " .. whats[i] .. " must be a string, got " .. type(args[i]), 2) end
      end
      add(fn, kind, ...)
    end
  end
  local function run(...)
    local fn = "out.job.run"
    local t = ...
    if select("#", ...) ~= 1 or type(t) ~= "table" then
      error(fn .. " expects one list of words, e.g. out.job.run{\"hostname\"}", 2)
    end
    local n = #t
    if n > 64 then error(fn .. ": a command has at most 64 words, got " .. n, 2) end
    local words = {}
    for i = 1, n do
      if type(t[i]) ~= "string" then error(fn .. ": word " .. i .. " must be a string, got " .. type(t[i]), 2) end
      words[i] = t[i]
    end
    local count = 0
    for _ in next, t do count = count + 1 end
    if count ~= n then error(fn .. ": expects a list of words only (no other keys)", 2) end
    add(fn, "run", unpack(words, 1, n))
  end
  return api("out", {
    module = api("out.module", {
      family = strings("out.module.family", "family", "a family name"),
      property = strings("out.module.property", "property", "a property name", "its value"),
      message = strings("out.module.message", "message", "the text"),
    }),
    job = api("out.job", {
      setenv = strings("out.job.setenv", "setenv", "a variable name", "its value"),
      module_load = strings("out.job.module_load", "module_load", "a module name"),
      run = run,
    }),
  })
end

local keys = "name description stack"

function hook(spec)
  if type(spec) ~= "table" then error("hook: expects a table {name=, description=, stack=}", 2) end
  for k in pairs(spec) do
    if k ~= "name" and k ~= "description" and k ~= "stack" then
      error("hook: unknown key '" .. name_of(k) .. "'" .. suggest(name_of(k), keys) ..
            " (a hook has name, description and stack)", 2)
    end
  end
  local name = spec.name
  if type(name) ~= "string" or not name:match("^[a-z0-9][a-z0-9%-]*$") or #name > 64 then
    error("hook: name must be lower-case letters, digits and '-' (e.g. 'gpu-props'), got " .. name_of(name), 2)
  end
  if spec.description ~= nil and type(spec.description) ~= "string" then
    error("hook '" .. name .. "': description must be a string", 2)
  end
  if type(spec.stack) ~= "function" then error("hook '" .. name .. "': stack must be a function(site, stack, out)", 2) end
  for _, h in pairs(hooks) do
    if h.name == name then error("hook '" .. name .. "' is defined twice in this file", 2) end
  end
  hooks[#hooks + 1] = { name = name, stack = spec.stack }
  register(name, (caller()))
end

return function(h, i)
  local entry, token = hooks[h], {}
  running = { name = entry.name, token = token }  -- stays set if the hook fails: the next call replaces it
  entry.stack(site, site.stacks[i], builder(i - 1, token))
  running = nil
end
)lua";

const char* const kPreludeName = "=[hooks prelude]";

constexpr size_t kMaxHookFileBytes = size_t{1} << 20;

struct Registered {
    std::string name;
    int line = 0;
};

// What the host functions of one hook file's sandbox use. Runs in the supervised child.
struct HookFileRun {
    const Site* site = nullptr;
    Outbox* out = nullptr;
    std::vector<Registered> hooks;
    size_t added = 0;  // additions of the running step
};

// Messages from the child to the parent.
enum Message : uint8_t {
    kStep = 's',     // file index, step (-1: loading the file; else hook * stacks + stack), hook name, line
    kDone = 'd',     // the step finished
    kFinding = 'f',  // a Diagnostic
    kSeen = 'n',     // a hook name and the file that defines it (for duplicate names)
    kAdd = 'a',      // stack, kind, file, line, hook name, word count, words
};

void send_finding(Outbox& out, Severity severity, const SourceRegion& where, const std::string& message) {
    Diagnostic d;
    d.severity = severity;
    d.where = where;
    d.message = message;
    MessageWriter w;
    w.u8(kFinding);
    put_diagnostic(w, d);
    out.send(w.bytes());
}

void send_step(Outbox& out, size_t file, long step, const std::string& name = {}, int line = 0) {
    out.send(MessageWriter().u8(kStep).i64(static_cast<int64_t>(file)).i64(step).str(name).i64(line).bytes());
}

void send_done(Outbox& out) { out.send(MessageWriter().u8(kDone).bytes()); }

HookFileRun& run_of(lua_State* L) { return *static_cast<HookFileRun*>(host_context(L)); }

int l_register(lua_State* L) {
    size_t len = 0;
    const char* name = luaL_checklstring(L, 1, &len);
    const int line = static_cast<int>(luaL_optinteger(L, 2, 0));
    HookFileRun& run = run_of(L);
    return host_guard(L, [&] {
        run.hooks.push_back({std::string(name, len), line});
        return 0;
    });
}

// A host function's answer, copied out of its C++ objects before Lua is called again (a Lua
// error would skip their destructors).
struct Answer {
    char text[512];
    size_t len = 0;
    void set(const std::string& s) {
        len = std::min(s.size(), sizeof text);
        std::copy_n(s.data(), len, text);
    }
};

// add(kind, stack, hook, line, file, words...): nil when added, else why not.
int l_add(lua_State* L) {
    constexpr int kMaxArgs = 5 + static_cast<int>(kMaxHookRunWords);
    const int n = lua_gettop(L);
    if (n < 5 || n > kMaxArgs) return luaL_error(L, "add: expects a kind, a stack, a hook, a position and up to %d words",
                                                 static_cast<int>(kMaxHookRunWords));
    const char* arg[kMaxArgs];
    size_t len[kMaxArgs];
    for (int i = 1; i <= n; ++i)
        if (i != 2 && i != 4) arg[i - 1] = luaL_checklstring(L, i, &len[i - 1]);
    const auto stack = static_cast<size_t>(luaL_checkinteger(L, 2));
    const int line = static_cast<int>(luaL_checkinteger(L, 4));
    HookFileRun& run = run_of(L);
    Answer answer;
    host_guard(L, [&] {
        const std::string kind(arg[0], len[0]), hook(arg[2], len[2]), file(arg[4], len[4]);
        std::vector<std::string> words;
        for (int i = 5; i < n; ++i) words.emplace_back(arg[i], len[i]);
        const Site& site = *run.site;
        std::string why;
        if (stack >= site.stacks.size()) why = "no such stack";
        else if (++run.added > kMaxHookAdditions)
            why = "a hook adds at most " + std::to_string(kMaxHookAdditions) + " things to one stack";
        else if (kind == "family" && words.size() == 1) why = hook_family_problem(words[0]);
        else if (kind == "property" && words.size() == 2) why = hook_property_problem(words[0], words[1]);
        else if (kind == "message" && words.size() == 1) why = hook_message_problem(words[0]);
        else if (kind == "setenv" && words.size() == 2) why = job_setenv_problem(site, site.stacks[stack], words[0], words[1]);
        else if (kind == "module_load" && words.size() == 1) why = job_module_problem(words[0]);
        else if (kind == "run") why = job_run_problem(words);
        else why = "unknown addition '" + kind + "'";
        if (!why.empty()) {
            answer.set(why);
            return 0;
        }
        if (kind == "property" && !lmod_default_property(words[0], words[1]))
            send_finding(*run.out, Severity::warning, {file, line, 0},
                         "property " + words[0] + " = " + words[1] +
                             " is not in Lmod's own lmodrc.lua: loading the module fails unless the site's "
                             "lmodrc.lua defines it [hook " + hook + "]");
        MessageWriter w;
        w.u8(kAdd).i64(static_cast<int64_t>(stack)).str(kind).str(file).i64(line).str(hook).i64(static_cast<int64_t>(words.size()));
        for (const auto& word : words) w.str(word);
        run.out->send(w.bytes());
        return 0;
    });
    if (answer.len == 0) return 0;
    lua_pushlstring(L, answer.text, answer.len);
    return 1;
}

// suggest(word, "a b c"): " (did you mean 'x'?)" or "".
int l_suggest(lua_State* L) {
    size_t word_len = 0, list_len = 0;
    const char* word = luaL_checklstring(L, 1, &word_len);
    const char* list = luaL_checklstring(L, 2, &list_len);
    Answer answer;
    host_guard(L, [&] {
        std::vector<std::string> names;
        const std::string all(list, list_len);
        size_t start = 0;
        while (start < all.size()) {
            size_t space = all.find(' ', start);
            if (space == std::string::npos) space = all.size();
            names.push_back(all.substr(start, space - start));
            start = space + 1;
        }
        const std::string hint = did_you_mean(std::string_view(word, word_len), names);
        if (!hint.empty()) answer.set(" (" + hint + ")");
        return 0;
    });
    lua_pushlstring(L, answer.text, answer.len);
    return 1;
}

struct LoadedFile {
    std::unique_ptr<LuaSandbox> sandbox;
    int run_hook = LUA_NOREF;
    LuaResult failure;
};

LoadedFile load_hook_file(const std::string& file, const std::string& text, const std::shared_ptr<const LuaValue>& tree,
                          HookFileRun& run, const SandboxLimits& limits) {
    LoadedFile out;
    out.sandbox = std::make_unique<LuaSandbox>(limits);
    LuaSandbox& sb = *out.sandbox;
    out.failure = sb.set_readonly_global("site", tree);
    if (!out.failure.ok) return out;
    std::vector<int> kept;
    out.failure = sb.run_host_chunk(kPrelude, kPreludeName,
                                    {{l_register, &run}, {l_add, &run}, {l_suggest, &run}, LuaSandbox::caller_function()},
                                    kept);
    if (!out.failure.ok || kept.empty()) return out;
    out.failure = sb.run(text, "@" + file);
    if (out.failure.ok) out.run_hook = kept.front();
    return out;
}

SourceRegion region_of(const LuaResult& r, const std::string& file) { return {r.file.empty() ? file : r.file, r.line, 0}; }

// Where a run over hook files is, as the parent sees it; each child starts at (file, next).
struct Progress {
    size_t file = 0;
    long next = -1;  // -1: load the file and report its findings; else the first step to run
    std::vector<std::pair<std::string, std::string>> seen;  // hook name -> file
    bool running = false;
    size_t step_file = 0;
    long step = -1;
    std::string step_name;
    int step_line = 0;
};

// The child's work on one hook file from step `first` on (-1: also load findings).
void run_file_in_child(const Site& site, const std::shared_ptr<const LuaValue>& tree, const std::string& path, size_t f,
                       long first, std::vector<std::pair<std::string, std::string>>& seen, const SandboxLimits& limits,
                       Outbox& out) {
    const std::string file = shown_path(path);
    const auto file_done = [&](Severity severity, SourceRegion where, const std::string& message) {
        if (first < 0 && !message.empty()) send_finding(out, severity, where, message);
        send_done(out);
    };
    std::string text, error;
    if (!read_regular_file(path, text, error, kMaxHookFileBytes))
        return file_done(Severity::error, {file, 0, 0}, "cannot read hook file: " + error);
    if (purpose_comment(text).empty())
        return file_done(Severity::error, {file, 1, 1}, "a hook file starts with a one-line purpose comment: -- <what its hooks add>");
    HookFileRun run{&site, &out, {}, 0};
    LoadedFile loaded = load_hook_file(file, text, tree, run, limits);
    if (loaded.run_hook == LUA_NOREF)
        return file_done(Severity::error, region_of(loaded.failure, file), "hook file failed to load: " + loaded.failure.message);
    if (run.hooks.empty())
        return file_done(Severity::warning, {file, 1, 1},
                         "hook file defines no hooks (call hook{name = ..., stack = function(site, stack, out) ... end})");
    // Names defined in an earlier file: reported once (when this file's load is reported), never run.
    std::vector<bool> twin(run.hooks.size(), false);
    for (size_t h = 0; h < run.hooks.size(); ++h) {
        const Registered& r = run.hooks[h];
        auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == r.name && s.second != file; });
        twin[h] = it != seen.end();
        if (twin[h] && first < 0)
            send_finding(out, Severity::error, {file, r.line, 0}, "hook '" + r.name + "' is already defined in " + it->second);
        if (!twin[h] && first < 0) {
            seen.emplace_back(r.name, file);
            out.send(MessageWriter().u8(kSeen).str(r.name).str(file).bytes());
        }
    }
    file_done(Severity::note, {}, {});
    const size_t nstacks = site.stacks.size();
    for (size_t h = 0; h < run.hooks.size(); ++h) {
        if (twin[h]) continue;
        for (size_t s = 0; s < nstacks; ++s) {
            const long step = static_cast<long>(h * nstacks + s);
            if (step < first) continue;
            const Registered& r = run.hooks[h];
            send_step(out, f, step, r.name, r.line);
            run.added = 0;
            const LuaResult result = loaded.sandbox->call_kept(
                loaded.run_hook, {LuaValue::make_int(static_cast<long long>(h) + 1), LuaValue::make_int(static_cast<long long>(s) + 1)});
            if (!result.ok)
                send_finding(out, Severity::error, region_of(result, file), "hook failed: " + result.message + " [hook " + r.name + "]");
            send_done(out);
        }
    }
}

// Where a hook set a stack's family (for conflicts).
struct FamilyOrigin {
    SourceRegion where;
    std::string hook;
};

}  // namespace

std::vector<HookAdditions> run_hook_files(const Site& site, const std::vector<std::string>& files, Diagnostics& diags,
                                          const SandboxLimits& limits) {
    std::vector<HookAdditions> adds(site.stacks.size());
    std::vector<FamilyOrigin> family_origin(site.stacks.size());
    if (files.empty()) return adds;
    std::shared_ptr<const LuaValue> tree;  // made where the hooks run (as the rules' view: rules.cpp)
    Progress progress;
    const auto body = [&](Outbox& out) {
        const Progress start = progress;
        auto seen = start.seen;
        if (!tree) tree = std::make_shared<const LuaValue>(site_to_lua(site));
        for (size_t f = start.file; f < files.size(); ++f) {
            const long first = f == start.file ? start.next : -1;
            send_step(out, f, -1);
            try {
                run_file_in_child(site, tree, files[f], f, first, seen, limits, out);
            } catch (const std::exception& e) {
                send_finding(out, Severity::error, {shown_path(files[f]), 0, 0}, std::string("hooks could not run: ") + e.what());
                send_done(out);
            }
        }
    };
    const auto on_message = [&](std::string_view bytes) {
        MessageReader m(bytes);
        const uint8_t kind = m.u8();
        if (kind == kStep) {
            progress.running = true;
            progress.step_file = static_cast<size_t>(m.i64());
            progress.step = static_cast<long>(m.i64());
            progress.step_name = m.str();
            progress.step_line = static_cast<int>(m.i64());
        } else if (kind == kDone) {
            progress.running = false;
            progress.file = progress.step_file;
            progress.next = progress.step + 1;
        } else if (kind == kFinding) {
            Diagnostic d = get_diagnostic(m);
            if (m.ok()) diags.add(std::move(d));
        } else if (kind == kSeen) {
            std::string name = m.str(), file = m.str();
            if (m.ok()) progress.seen.emplace_back(std::move(name), std::move(file));
        } else if (kind == kAdd) {
            const auto stack = static_cast<size_t>(m.i64());
            const std::string what = m.str(), file = m.str();
            const int line = static_cast<int>(m.i64());
            const std::string hook = m.str();
            const auto n = static_cast<size_t>(m.i64());
            std::vector<std::string> words;
            for (size_t i = 0; i < n && m.ok(); ++i) words.push_back(m.str());
            if (!m.ok() || stack >= adds.size() || words.size() != n || n == 0) return;
            HookAdditions& a = adds[stack];
            const SourceRegion where{file, line, 0};
            if (what == "family" && n == 1) {
                if (a.family.empty()) {
                    a.family = words[0];
                    family_origin[stack] = {where, hook};
                } else if (a.family != words[0]) {
                    const SourceRegion& w0 = family_origin[stack].where;
                    diags.error(where, "family '" + words[0] + "' for stack " + site.stacks[stack].module_full_name() +
                                           " differs from the family '" + a.family + "' set at " + w0.file + ":" +
                                           std::to_string(w0.line) + " [hook " + hook + "]");
                }
            } else if (what == "property" && n == 2) {
                const std::pair<std::string, std::string> p{words[0], words[1]};
                if (std::find(a.properties.begin(), a.properties.end(), p) == a.properties.end()) a.properties.push_back(p);
            } else if (what == "message" && n == 1) {
                a.messages.push_back(words[0]);
            } else if (what == "setenv" && n == 2) {
                a.job_prologue.push_back({JobCommand::Kind::setenv, std::move(words)});
            } else if (what == "module_load" && n == 1) {
                a.job_prologue.push_back({JobCommand::Kind::module_load, std::move(words)});
            } else if (what == "run") {
                a.job_prologue.push_back({JobCommand::Kind::run, std::move(words)});
            }
        }
    };
    while (progress.file < files.size()) {
        const RunEnd end = run_supervised(body, on_message);
        if (end.kind == RunEnd::Kind::finished) break;
        const bool here = !end.file.empty();
        if (!progress.running) {  // between steps: give up on this file
            diags.error({shown_path(files[std::min(progress.file, files.size() - 1)]), 0, 0}, "hooks could not run: " + end.why);
            progress.file += 1;
            progress.next = -1;
            continue;
        }
        progress.running = false;
        const std::string file = here ? end.file : shown_path(files[progress.step_file]);
        if (progress.step < 0) {
            diags.error({file, here ? end.line : 0, 0}, "hook file failed to load: " + end.why);
            progress.file = progress.step_file + 1;
            progress.next = -1;
        } else {
            diags.error({file, here ? end.line : progress.step_line, 0},
                        "hook failed: " + end.why + " [hook " + progress.step_name + "]");
            progress.file = progress.step_file;
            progress.next = progress.step + 1;
        }
    }
    // A module belongs to one family: a hook may repeat the stack's own, not replace it.
    for (size_t s = 0; s < site.stacks.size(); ++s) {
        const Stack& stack = site.stacks[s];
        if (adds[s].family.empty() || stack.family.empty() || adds[s].family == stack.family) continue;
        const std::string key = "stacks." + std::to_string(s) + ".family";
        diags.error(family_origin[s].where,
                    "family '" + adds[s].family + "' conflicts with the family '" + stack.family + "' of stack " +
                        stack.module_full_name() + " (" + key + "): a module belongs to one family [hook " +
                        family_origin[s].hook + "]",
                    "remove one of them; a hook may only set a family the stack does not have (or the same one)");
        Diagnostic note;
        note.severity = Severity::note;
        note.where = site.where(key);
        note.message = "the stack's family, which the hook's family '" + adds[s].family + "' conflicts with";
        diags.add(std::move(note));
    }
    return adds;
}

std::vector<HookAdditions> run_hooks(const Site& site, Diagnostics& diags) {
    if (site.files.empty()) return {};
    const fs::path dir = fs::path(site.files.front()).parent_path() / "hooks";
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return {};  // no hooks: the normal case
    return run_hook_files(site, rule_files({dir.string()}, &diags), diags);
}

}  // namespace sitegen
