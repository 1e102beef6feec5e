// Rule engine: finds rule files, exposes the site read-only and turns findings into diagnostics.
#include "lua/rules.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>

#include "lua/read_log.h"
#include "lua/rules_memo.h"
#include "lua/supervisor.h"
#include "out/fs.h"
#include "out/threads.h"
#include "out/trace.h"

namespace sitegen {

namespace fs = std::filesystem;

namespace {

// The rule API, run as trusted host code in every rule file's sandbox before the file.
// Arguments: host functions (register, report, declared, caller). Returns run_check(i).
constexpr const char* kPrelude = R"lua(-- rules prelude: rule{}, error_at, warn_at, report and declared over the read-only site
local register, report_host, declared_host, caller = ...
local site, pathof, pcall, error, type, ipairs, tostring = site, pathof, pcall, error, type, ipairs, tostring
local rules, current = {}, nil

local roots = { [""] = true, site = true, hardware = true, binding = true, batch = true,
                collectives = true, container = true, python = true, stacks = true, files = true }

local function path_string(fn, path, level)
  if type(path) == "table" then
    local ok, p = pcall(pathof, path)
    if ok then return p end
  end
  if type(path) ~= "string" then
    error(fn .. ": path must be a dotted key path such as 'hardware.nics' or a site table, got " .. type(path), level)
  end
  if not roots[path:match("^[^.]*")] then
    error(fn .. ": '" .. path .. "' is not a site path (it must start with one of the site's tables, e.g. 'hardware.')", level)
  end
  return path
end

local severities = { error = true, warning = true, note = true }

local function emit(fn, severity, path, message)
  if not current then error(fn .. " can only be called while a rule's check function runs", 3) end
  if not severities[severity] then
    error(fn .. ": severity must be 'error', 'warning' or 'note', got " .. tostring(severity), 3)
  end
  path = path_string(fn, path, 4)
  if type(message) ~= "string" then error(fn .. ": message must be a string, got " .. type(message), 3) end
  report_host(current.name, severity, path, message)
end

function error_at(path, message) emit("error_at", "error", path, message) end
function warn_at(path, message) emit("warn_at", "warning", path, message) end
function report(t)
  if type(t) ~= "table" then error("report: expects a table {severity=, path=, message=}", 2) end
  emit("report", t.severity or "error", t.path, t.message)
end
function declared(path) return declared_host(path_string("declared", path, 3)) end

function rule(spec)
  if type(spec) ~= "table" then error("rule: expects a table {name=, description=, check=}", 2) end
  local name = spec.name
  if type(name) ~= "string" or not name:match("^[a-z0-9][a-z0-9%-]*$") then
    error("rule: name must be lower-case letters, digits and '-' (e.g. 'gpu-masks'), got " .. tostring(name), 2)
  end
  if spec.description ~= nil and type(spec.description) ~= "string" then
    error("rule '" .. name .. "': description must be a string", 2)
  end
  if type(spec.check) ~= "function" then error("rule '" .. name .. "': check must be a function(site)", 2) end
  for _, r in ipairs(rules) do
    if r.name == name then error("rule '" .. name .. "' is defined twice in this file", 2) end
  end
  rules[#rules + 1] = { name = name, check = spec.check }
  register(name, spec.description or "", (caller()))
end

return function(i)
  current = rules[i]  -- stays set if check fails: the next call replaces it
  current.check(site)
  current = nil
end
)lua";

const char* const kPreludeName = "=[rules prelude]";

// ---- rule files ---------------------------------------------------------------------------

}  // namespace

// The path as users should see it: relative to the working directory when inside it.
std::string shown_path(const fs::path& p) {
    std::error_code ec;
    const fs::path abs = fs::absolute(p, ec).lexically_normal();
    if (ec) return p.generic_string();
    const fs::path rel = abs.lexically_relative(fs::current_path(ec));
    if (!ec && !rel.empty() && *rel.begin() != "..") return rel.generic_string();
    return abs.generic_string();
}

// "-- <description>" on the first line, or "" when the file lacks it.
std::string purpose_comment(const std::string& text) {
    const std::string first = text.substr(0, text.find('\n'));
    if (first.size() < 4 || first.compare(0, 3, "-- ") != 0 || first[3] == ' ') return {};
    std::string d = first.substr(3);
    while (!d.empty() && (d.back() == '\r' || d.back() == ' ')) d.pop_back();
    return d;
}

namespace {

struct Registered {
    std::string name;
    std::string description;
    int line = 0;
};

// What the host functions of one rule file's sandbox write to. Runs in the supervised child:
// findings go to the parent as messages.
struct RuleFileRun {
    const Site* site = nullptr;
    Outbox* out = nullptr;  // null while only listing
    std::vector<Registered> rules;
    ReadLog* log = nullptr;  // what the file reads of the site (null while only listing)
};

// Messages from the child running rule files to the parent.
enum Message : uint8_t {
    kStep = 's',     // file index, rule index (-1: loading the file), rule name, rule line
    kDone = 'd',     // the step finished
    kFinding = 'f',  // a Diagnostic (of the rule engine: a file or rule that failed)
    kReported = 'r', // a RuleFinding (error_at, warn_at, report): severity, site path, message
    kRead = 'x',     // a line of the child's ReadLog
    kReadsEnd = 'X', // the child's ReadLog ends: 1 if it is whole, 0 if a read was not recorded
    kSeen = 'n',     // a rule name and the file that defines it (for duplicate names)
    kInfo = 'i',     // list_rules: name, file, description
};

void send_finding(Outbox& out, const Diagnostic& d) {
    MessageWriter w;
    w.u8(kFinding);
    put_diagnostic(w, d);
    out.send(w.bytes());
}

// (Built field by field: GCC 12 warns falsely about nested brace-initialised temporaries.)
void send_finding(Outbox& out, Severity severity, const SourceRegion& where, const std::string& message) {
    Diagnostic d;
    d.severity = severity;
    d.where = where;
    d.message = message;
    send_finding(out, d);
}

void send_step(Outbox& out, size_t file, long rule, const std::string& name = {}, int line = 0) {
    out.send(MessageWriter().u8(kStep).i64(static_cast<int64_t>(file)).i64(rule).str(name).i64(line).bytes());
}

void send_done(Outbox& out) { out.send(MessageWriter().u8(kDone).bytes()); }

RuleFileRun& run_of(lua_State* L) { return *static_cast<RuleFileRun*>(host_context(L)); }

int l_register(lua_State* L) {
    size_t name_len = 0, desc_len = 0;
    const char* name = luaL_checklstring(L, 1, &name_len);
    const char* desc = luaL_checklstring(L, 2, &desc_len);
    const int line = static_cast<int>(luaL_optinteger(L, 3, 0));
    RuleFileRun& run = run_of(L);
    return host_guard(L, [&] {
        run.rules.push_back({std::string(name, name_len), std::string(desc, desc_len), line});
        return 0;
    });
}

Severity severity_named(const char* s) {
    if (std::strcmp(s, "warning") == 0) return Severity::warning;
    if (std::strcmp(s, "note") == 0) return Severity::note;
    return Severity::error;
}

int l_report(lua_State* L) {
    size_t rule_len = 0, path_len = 0, msg_len = 0;
    const char* rule = luaL_checklstring(L, 1, &rule_len);
    const char* severity = luaL_checkstring(L, 2);
    const char* path = luaL_checklstring(L, 3, &path_len);
    const char* message = luaL_checklstring(L, 4, &msg_len);
    RuleFileRun& run = run_of(L);
    return host_guard(L, [&] {
        if (!run.out) return 0;
        // Long messages are cut here already: only so much crosses to the parent, which
        // places the finding at its path (as it places one kept from an earlier run).
        const std::string text = std::string(message, std::min(msg_len, kMaxMessageBytes)) +
                                 (msg_len > kMaxMessageBytes ? "..." : "") + " [rule " + std::string(rule, rule_len) + "]";
        run.out->send(MessageWriter()
                          .u8(kReported)
                          .i64(static_cast<int64_t>(severity_named(severity)))
                          .str(std::string_view(path, path_len))
                          .str(text)
                          .bytes());
        return 0;
    });
}

int l_declared(lua_State* L) {
    size_t len = 0;
    const char* path = luaL_checklstring(L, 1, &len);
    RuleFileRun& run = run_of(L);
    bool found = false;
    host_guard(L, [&] {
        found = run.site->regions.count(std::string(path, len)) > 0;
        if (run.log) run.log->declared(std::string_view(path, len));
        return 0;
    });
    lua_pushboolean(L, found);
    return 1;
}

// Loads one rule file into a fresh sandbox: the read-only site, the prelude, then the file.
// Returns the prelude's run_check reference, or LUA_NOREF after reporting why not.
struct LoadedFile {
    std::unique_ptr<LuaSandbox> sandbox;
    int run_check = LUA_NOREF;
    LuaResult failure;  // why loading failed (ok when it did not)
};

LoadedFile load_rule_file(const std::string& file, const std::string& text,
                          const std::shared_ptr<const LuaValue>& site_tree, RuleFileRun& run,
                          const SandboxLimits& limits = {}) {
    LoadedFile out;
    out.sandbox = std::make_unique<LuaSandbox>(limits);
    LuaSandbox& sb = *out.sandbox;
    sb.track_reads(run.log);
    out.failure = sb.set_readonly_global("site", site_tree);
    if (!out.failure.ok) return out;
    std::vector<int> kept;
    out.failure = sb.run_host_chunk(kPrelude, kPreludeName,
                                    {{l_register, &run}, {l_report, &run}, {l_declared, &run}, LuaSandbox::caller_function()},
                                    kept);
    if (!out.failure.ok || kept.empty()) return out;
    out.failure = sb.run(text, "@" + file);
    if (out.failure.ok) out.run_check = kept.front();
    return out;
}

SourceRegion region_of(const LuaResult& r, const std::string& file) {
    return {r.file.empty() ? file : r.file, r.line, 0};
}

// The rule files' text, or why not: only regular files of at most kMaxRuleFileBytes.
bool read_rule_file(const std::string& path, std::string& text, std::string& error) {
    return read_regular_file(path, text, error, kMaxRuleFileBytes);
}

// Where a run over rule files is, as the parent sees it; each child starts at (file, rule).
struct Progress {
    size_t file = 0;     // resume at this file
    size_t rule = 0;     // at this rule of it; > 0: the file was loaded and reported already
    std::vector<std::pair<std::string, std::string>> seen;  // rule name -> file, in run order
    bool running = false;  // a step is running:
    size_t step_file = 0;
    long step_rule = -1;   // -1: loading the file
    std::string step_name;
    int step_line = 0;
};

// The child's work on one rule file, from rule `first` on (0: all of it, and the file's own
// findings; > 0: an earlier child reported those). Ends the file's step (sent by the caller),
// then runs each rule as a step of its own.
void run_file_in_child(const Site& site, const std::shared_ptr<const LuaValue>& tree, const std::string& path,
                       size_t f, size_t first, std::vector<std::pair<std::string, std::string>>& seen,
                       const SandboxLimits& limits, Outbox& out, ReadLog& log) {
    const std::string file = shown_path(path);
    // Ends the file's step, with its finding when this child reports the file's findings.
    const auto file_done = [&](Severity severity, SourceRegion where, std::string message) {
        if (first == 0 && !message.empty()) send_finding(out, severity, where, message);
        send_done(out);
    };
    std::string text, error;
    if (!read_rule_file(path, text, error)) return file_done(Severity::error, {file, 0, 0}, "cannot read rule file: " + error);
    if (purpose_comment(text).empty())
        return file_done(Severity::error, {file, 1, 1}, "a rule file starts with a one-line purpose comment: -- <what its rules check>");
    RuleFileRun run{&site, &out, {}, &log};
    LoadedFile loaded = load_rule_file(file, text, tree, run, limits);
    if (loaded.run_check == LUA_NOREF)
        return file_done(Severity::error, region_of(loaded.failure, file), "rule file failed to load: " + loaded.failure.message);
    if (run.rules.empty())
        return file_done(Severity::warning, {file, 1, 1}, "rule file defines no rules (call rule{name = ..., check = function(site) ... end})");
    file_done(Severity::note, {}, {});
    for (size_t i = first; i < run.rules.size(); ++i) {
        const Registered& r = run.rules[i];
        auto twin = std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == r.name; });
        if (twin != seen.end()) {
            send_finding(out, Severity::error, {file, r.line, 0}, "rule '" + r.name + "' is already defined in " + twin->second);
            continue;
        }
        seen.emplace_back(r.name, file);
        out.send(MessageWriter().u8(kSeen).str(r.name).str(file).bytes());
        send_step(out, f, static_cast<long>(i), r.name, r.line);
        const LuaResult result = loaded.sandbox->call_kept(loaded.run_check, {LuaValue::make_int(static_cast<long long>(i) + 1)});
        if (!result.ok)
            send_finding(out, Severity::error, region_of(result, file), "rule failed: " + result.message + " [rule " + r.name + "]");
        send_done(out);
    }
}

// The child: every rule file from `start` up to `end`, findings and progress sent as messages,
// then what the files read of the site.
void run_files_in_child(const Site& site, const std::shared_ptr<const LuaValue>& tree,
                        const std::vector<std::string>& files, size_t end, const Progress& start,
                        const SandboxLimits& limits, Outbox& out) {
    auto seen = start.seen;
    ReadLog log;
    log.root = tree.get();
    for (size_t f = start.file; f < end; ++f) {
        send_step(out, f, -1);
        try {
            run_file_in_child(site, tree, files[f], f, f == start.file ? start.rule : 0, seen, limits, out, log);
        } catch (const std::exception& e) {  // e.g. no memory for a sandbox: the file's rules did not run
            send_finding(out, Severity::error, {shown_path(files[f]), 0, 0}, std::string("rules could not run: ") + e.what());
            send_done(out);
        }
    }
    for (const auto& line : log.reads) out.send(MessageWriter().u8(kRead).str(line).bytes());
    out.send(MessageWriter().u8(kReadsEnd).i64(log.broken ? 0 : 1).bytes());
}

// The parent's side of a step message; true if it was one.
bool track_step(MessageReader& m, uint8_t kind, Progress& p) {
    if (kind == kStep) {
        p.running = true;
        p.step_file = static_cast<size_t>(m.i64());
        p.step_rule = static_cast<long>(m.i64());
        p.step_name = m.str();
        p.step_line = static_cast<int>(m.i64());
        return true;
    }
    if (kind == kDone) {
        p.running = false;
        p.file = p.step_file;
        p.rule = static_cast<size_t>(p.step_rule + 1);
        return true;
    }
    return false;
}

// After a child timed out or died: report(file, rule, name, running) records what failed
// (rule -1: loading the file; running false: between steps, e.g. no process could start) and
// the next child starts after it.
template <typename Report>
void after_abnormal_end(Progress& p, size_t nfiles, Report report) {
    if (!p.running) {  // nothing of a rule was running: give up on this file
        report(std::min(p.file, nfiles - 1), -1, std::string(), false);
        p.file += 1;
        p.rule = 0;
        return;
    }
    p.running = false;
    report(p.step_file, p.step_rule, p.step_name, true);
    p.file = p.step_rule < 0 ? p.step_file + 1 : p.step_file;
    p.rule = p.step_rule < 0 ? 0 : static_cast<size_t>(p.step_rule + 1);
}

}  // namespace

std::string default_rules_dir() {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const fs::path installed = exe.parent_path().parent_path() / "share" / "sitegen" / "rules";
        if (fs::is_directory(installed, ec)) return installed.string();
    }
    return SITEGEN_SOURCE_DIR "/rules";
}

std::vector<std::string> rule_files(const std::vector<std::string>& dirs, Diagnostics* diags) {
    struct Entry {
        std::string name;
        size_t dir;
        std::string path;
    };
    std::vector<Entry> entries;
    for (size_t d = 0; d < dirs.size(); ++d) {
        std::error_code ec;
        if (!fs::is_directory(dirs[d], ec)) {
            if (diags) diags->error({dirs[d], 0, 0}, "rules directory not found");
            continue;
        }
        for (const auto& e : fs::directory_iterator(dirs[d], ec)) {
            const fs::path& p = e.path();
            // Whatever its type: reading refuses a FIFO or device named *.lua with a message.
            if (p.extension() == ".lua")
                entries.push_back({p.filename().string(), d, p.string()});
        }
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        if (a.name != b.name) return a.name < b.name;
        return a.dir < b.dir;
    });
    std::vector<std::string> out;
    for (const auto& e : entries) out.push_back(e.path);
    return out;
}

namespace {

// What a run over rule files came to, for the memo: what its children read of the site and
// the findings its rules reported; `clean` while every child ended normally, recorded all it
// read and reported nothing but its rules' findings (a rule that failed is not kept).
struct RuleRun {
    bool clean = true;
    std::set<std::string> reads;
    std::vector<RuleFinding> findings;
};

// A reported finding placed in `site`: at its path's region.
Diagnostic placed(const Site& site, const RuleFinding& f) {
    Diagnostic d;
    d.severity = f.severity;
    d.where = site.where(f.path);
    d.message = f.message;
    return d;
}

// Runs files [begin, end) as run_rule_files does, children after children until every file
// ran; `seen` gets the names of the rules run, with their files. `given` is the site's view,
// when the caller made it (else the child makes it: the parent neither builds nor frees it).
void run_rule_range(const Site& site, const std::vector<std::string>& files, size_t begin, size_t end,
                    Diagnostics& diags, const SandboxLimits& limits,
                    std::vector<std::pair<std::string, std::string>>& seen,
                    const std::shared_ptr<const LuaValue>& given, RuleRun& run) {
    std::shared_ptr<const LuaValue> tree = given;
    Progress progress;
    progress.file = begin;
    const auto body = [&](Outbox& out) {
        const Progress start = progress;  // (in process, messages update `progress` meanwhile)
        if (!tree) tree = std::make_shared<const LuaValue>(site_to_lua(site));
        run_files_in_child(site, tree, files, end, start, limits, out);
    };
    size_t ends = 0;  // kReadsEnd messages
    const auto on_message = [&](std::string_view bytes) {
        MessageReader m(bytes);
        const uint8_t kind = m.u8();
        if (track_step(m, kind, progress)) return;
        if (kind == kFinding) {
            Diagnostic d = get_diagnostic(m);
            if (m.ok()) diags.add(std::move(d));
            run.clean = false;
        } else if (kind == kReported) {
            RuleFinding f;
            const int64_t severity = m.i64();
            f.path = m.str();
            f.message = m.str();
            if (!m.ok() || severity < 0 || severity > static_cast<int64_t>(Severity::note)) return;
            f.severity = static_cast<Severity>(severity);
            diags.add(placed(site, f));
            if (run.clean) run.findings.push_back(std::move(f));
        } else if (kind == kRead) {
            std::string line = m.str();
            if (m.ok() && run.clean) run.reads.insert(std::move(line));
        } else if (kind == kReadsEnd) {
            if (m.i64() != 1 || !m.ok()) run.clean = false;
            ++ends;
        } else if (kind == kSeen) {
            std::string name = m.str(), file = m.str();
            progress.seen.emplace_back(std::move(name), std::move(file));
        }
    };
    while (progress.file < end) {
        const RunEnd run_end = run_supervised(body, on_message);
        if (run_end.kind == RunEnd::Kind::finished) break;
        run.clean = false;
        after_abnormal_end(progress, end, [&](size_t f, long rule, const std::string& name, bool running) {
            // At the untrusted code's last position when known, else at the file (or rule).
            const bool here = !run_end.file.empty();
            const std::string file = here ? run_end.file : shown_path(files[f]);
            if (!running)
                diags.error({shown_path(files[f]), 0, 0}, "rules could not run: " + run_end.why);
            else if (rule < 0)
                diags.error({file, here ? run_end.line : 0, 0}, "rule file failed to load: " + run_end.why);
            else
                diags.error({file, here ? run_end.line : progress.step_line, 0}, "rule failed: " + run_end.why + " [rule " + name + "]");
        });
    }
    seen = std::move(progress.seen);
    if (ends != 1) run.clean = false;  // (each child sends its reads last: one child, one end)
}

// True when a rule name was run in two groups: run one after the other, the second would
// have been refused as a duplicate instead.
bool names_repeat(const std::vector<std::vector<std::pair<std::string, std::string>>>& seen) {
    std::vector<std::string_view> names;
    for (const auto& group : seen)
        for (const auto& s : group) names.push_back(s.first);
    std::sort(names.begin(), names.end());
    return std::adjacent_find(names.begin(), names.end()) != names.end();
}

}  // namespace

size_t rule_groups(size_t files) {
    if (files < 2 || lua_isolation() == LuaIsolation::in_process || supervised_page()) return 1;
    return std::min({files, kMaxRuleGroups, size_t{split_threads()}});
}

namespace {

// run_rule_files with the site's view `tree` made by the caller (null: each child makes its
// own), and what the run came to in `run`.
void run_files_on(const Site& site, const std::shared_ptr<const LuaValue>& tree, const std::vector<std::string>& files,
                  Diagnostics& diags, const SandboxLimits& limits, size_t groups, RuleRun& run) {
    if (files.empty()) return;
    groups = std::min(groups == 0 ? rule_groups(files.size()) : groups, files.size());
    if (groups > 1) {
        // Consecutive files per group, each group in its own child on its own core: their
        // findings joined in group order are the findings of one run over all the files.
        std::vector<Diagnostics> found(groups, Diagnostics(diags.cap()));
        std::vector<std::vector<std::pair<std::string, std::string>>> names(groups);
        std::vector<RuleRun> runs(groups);
        share_out(groups, static_cast<unsigned>(groups), [&](size_t g, unsigned) {
            run_rule_range(site, files, files.size() * g / groups, files.size() * (g + 1) / groups, found[g], limits,
                           names[g], tree, runs[g]);
        });
        if (!names_repeat(names)) {
            for (const auto& d : found) diags.append(d);
            for (auto& r : runs) {
                run.clean = run.clean && r.clean;
                run.reads.merge(r.reads);
                for (auto& f : r.findings) run.findings.push_back(std::move(f));
            }
            return;
        }
        // A rule name defined in two files of different groups: run them in order, so the
        // second is reported where it is defined and not run.
    }
    std::vector<std::pair<std::string, std::string>> seen;
    run_rule_range(site, files, 0, files.size(), diags, limits, seen, tree, run);
}

}  // namespace

void run_rule_files(const Site& site, const std::vector<std::string>& files, Diagnostics& diags,
                    const SandboxLimits& limits, size_t groups) {
    RuleRun run;
    run_files_on(site, nullptr, files, diags, limits, groups, run);
}

namespace {

// The rule files a site's rules are (in the order they run), and the rules memo's key for
// them: sitegen and the files' bytes ("" when one cannot be read: the run reports why and is
// not kept).
struct RuleSet {
    std::vector<std::string> files;
    std::string key;
};
RuleSet rule_set(const Site& site, const std::vector<std::string>& rule_dirs, Diagnostics& diags,
                 const RulesMemo* memo) {
    std::vector<std::string> dirs{default_rules_dir()};
    dirs.insert(dirs.end(), rule_dirs.begin(), rule_dirs.end());
    if (!site.files.empty()) {
        // The site's own rules live beside its site.toml; absent is normal.
        const fs::path own = fs::path(site.files.front()).parent_path() / "rules";
        std::error_code ec;
        if (fs::is_directory(own, ec)) dirs.push_back(own.string());
    }
    RuleSet set{rule_files(dirs, &diags), {}};
    if (!memo) return set;
    std::vector<std::string> texts(set.files.size());
    bool readable = true;
    for (size_t i = 0; i < set.files.size(); ++i) {
        std::string error;
        readable = read_rule_file(set.files[i], texts[i], error) && readable;
    }
    if (readable) set.key = rules_key(memo->identity, set.files, texts);
    return set;
}

// The memo's findings placed in `diags` when it holds for `set` and the site.
bool kept_findings(const Site& site, const RuleSet& set, Diagnostics& diags, RulesMemo& memo) {
    memo.reused = false;
    memo.next.clear();
    RulesRecord last;
    if (set.key.empty() || !parse_rules_memo(memo.text, last) || last.key != set.key) return false;
    // Only what the last run read is made of the view to compare it.
    const TraceSpan compare("rules_memo_check");
    const ViewNeeds needs = view_needs(last.reads);
    if (reads_digest(site_to_lua(site, &needs), site, last.reads) != last.digest) return false;
    for (const auto& f : last.findings) diags.add(placed(site, f));
    memo.reused = true;
    memo.next = memo.text;
    return true;
}

}  // namespace

bool rules_from_memo(const Site& site, const std::vector<std::string>& rule_dirs, Diagnostics& diags, RulesMemo& memo) {
    const TraceSpan span("rules");
    Diagnostics found(diags.cap());  // (what listing the rule files found, then the kept findings)
    if (!kept_findings(site, rule_set(site, rule_dirs, found, &memo), found, memo)) return false;
    diags.append(found);
    return true;
}

void run_rules(const Site& site, const std::vector<std::string>& rule_dirs, Diagnostics& diags, RulesMemo* memo,
               bool memo_checked) {
    const TraceSpan span("rules");
    const RuleSet set = rule_set(site, rule_dirs, diags, memo);
    const std::vector<std::string>& files = set.files;
    if (!memo) return run_rule_files(site, files, diags);
    const std::string& key = set.key;
    // (rules_from_memo's kept_findings left `reused` and `next` cleared when it did not hold.)
    if (!memo_checked && kept_findings(site, set, diags, *memo)) return;
    // The view is made here, once, for the children when the rules run (they share it with
    // this process) and for the digest of what they read.
    std::optional<TraceSpan> phase(std::in_place, "rules_view");
    const auto tree = std::make_shared<const LuaValue>(site_to_lua(site));
    RuleRun run;
    phase.emplace("rules_run");
    run_files_on(site, tree, files, diags, {}, 0, run);
    if (key.empty() || !run.clean) return;
    RulesRecord record{key, std::move(run.reads), {}, std::move(run.findings)};
    record.digest = reads_digest(*tree, site, record.reads);
    memo->next = rules_memo_text(record);
}

std::vector<RuleInfo> list_rules(const std::vector<std::string>& rule_dirs) {
    std::vector<std::string> dirs{default_rules_dir()};
    dirs.insert(dirs.end(), rule_dirs.begin(), rule_dirs.end());
    const std::vector<std::string> files = rule_files(dirs);
    const Site empty;
    const auto tree = std::make_shared<const LuaValue>(site_to_lua(empty));
    std::vector<RuleInfo> out;
    Progress progress;
    const auto body = [&](Outbox& box) {
        const size_t first = progress.file;
        for (size_t f = first; f < files.size(); ++f) {
            const std::string& path = files[f];
            const std::string file = shown_path(path);
            send_step(box, f, -1);
            std::string text, error;
            const auto info = [&](const std::string& name, const std::string& description) {
                box.send(MessageWriter().u8(kInfo).str(name).str(file).str(description).bytes());
            };
            if (!read_rule_file(path, text, error)) {
                info(fs::path(path).stem().string(), "(cannot read: " + error + ")");
            } else {
                const std::string comment = purpose_comment(text);
                RuleFileRun run{&empty, nullptr, {}};
                LoadedFile loaded = load_rule_file(file, text, tree, run);
                if (loaded.run_check == LUA_NOREF)
                    info(fs::path(path).stem().string(), "(cannot load: " + loaded.failure.describe() + ")");
                else
                    for (const auto& r : run.rules) info(r.name, r.description.empty() ? comment : r.description);
            }
            send_done(box);
        }
    };
    const auto on_message = [&](std::string_view bytes) {
        MessageReader m(bytes);
        const uint8_t kind = m.u8();
        if (track_step(m, kind, progress)) {
            if (kind == kDone) progress.file = progress.step_file + 1;
            return;
        }
        if (kind == kInfo) {
            RuleInfo r;
            r.name = m.str();
            r.file = m.str();
            r.description = m.str();
            // One line each: a description cannot break or recolour `sitegen rules`.
            if (m.ok()) out.push_back({printable(r.name), printable(r.file), printable(r.description)});
        }
    };
    while (progress.file < files.size()) {
        const RunEnd end = run_supervised(body, on_message);
        if (end.kind == RunEnd::Kind::finished) break;
        after_abnormal_end(progress, files.size(), [&](size_t f, long, const std::string&, bool) {
            const std::string where = end.file.empty() ? shown_path(files[f]) : end.file + ":" + std::to_string(end.line);
            out.push_back({printable(fs::path(files[f]).stem().string()), printable(shown_path(files[f])),
                           printable("(cannot load: " + where + ": " + end.why + ")")});
        });
        progress.rule = 0;
    }
    return out;
}

}  // namespace sitegen
