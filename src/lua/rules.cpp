// Rule engine: finds rule files, exposes the site read-only and turns findings into diagnostics.
#include "lua/rules.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

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

// The path as users should see it: relative to the working directory when inside it.
std::string shown_path(const fs::path& p) {
    std::error_code ec;
    const fs::path abs = fs::absolute(p, ec).lexically_normal();
    if (ec) return p.generic_string();
    const fs::path rel = abs.lexically_relative(fs::current_path(ec));
    if (!ec && !rel.empty() && *rel.begin() != "..") return rel.generic_string();
    return abs.generic_string();
}

bool read_text(const std::string& path, std::string& text) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
    return true;
}

// "-- <description>" on the first line, or "" when the file lacks it.
std::string purpose_comment(const std::string& text) {
    const std::string first = text.substr(0, text.find('\n'));
    if (first.size() < 4 || first.compare(0, 3, "-- ") != 0 || first[3] == ' ') return {};
    std::string d = first.substr(3);
    while (!d.empty() && (d.back() == '\r' || d.back() == ' ')) d.pop_back();
    return d;
}

struct Registered {
    std::string name;
    std::string description;
    int line = 0;
};

// What the host functions of one rule file's sandbox write to.
struct RuleFileRun {
    const Site* site = nullptr;
    Diagnostics* diags = nullptr;  // null while only listing
    std::vector<Registered> rules;
};

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
        if (!run.diags) return 0;
        Diagnostic d;
        d.severity = severity_named(severity);
        d.where = run.site->where(std::string(path, path_len));
        d.message = std::string(message, msg_len) + " [rule " + std::string(rule, rule_len) + "]";
        run.diags->add(std::move(d));
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
                          const std::shared_ptr<const LuaValue>& site_tree, RuleFileRun& run) {
    LoadedFile out;
    out.sandbox = std::make_unique<LuaSandbox>();
    LuaSandbox& sb = *out.sandbox;
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

void run_one_file(const Site& site, const std::shared_ptr<const LuaValue>& site_tree, const std::string& path,
                  std::vector<std::pair<std::string, std::string>>& seen_rules, Diagnostics& diags) {
    const std::string file = shown_path(path);
    std::string text;
    if (!read_text(path, text)) {
        diags.error({file, 0, 0}, "cannot read rule file");
        return;
    }
    if (purpose_comment(text).empty()) {
        diags.error({file, 1, 1}, "a rule file starts with a one-line purpose comment: -- <what its rules check>");
        return;
    }
    RuleFileRun run{&site, &diags, {}};
    LoadedFile loaded = load_rule_file(file, text, site_tree, run);
    if (loaded.run_check == LUA_NOREF) {
        diags.error(region_of(loaded.failure, file), "rule file failed to load: " + loaded.failure.message);
        return;
    }
    if (run.rules.empty())
        diags.warning({file, 1, 1}, "rule file defines no rules (call rule{name = ..., check = function(site) ... end})");
    for (size_t i = 0; i < run.rules.size(); ++i) {
        const Registered& r = run.rules[i];
        auto twin = std::find_if(seen_rules.begin(), seen_rules.end(), [&](const auto& s) { return s.first == r.name; });
        if (twin != seen_rules.end()) {
            diags.error({file, r.line, 0}, "rule '" + r.name + "' is already defined in " + twin->second);
            continue;
        }
        seen_rules.emplace_back(r.name, file);
        const LuaResult result = loaded.sandbox->call_kept(loaded.run_check, {LuaValue::make_int(static_cast<long long>(i) + 1)});
        if (!result.ok)
            diags.error(region_of(result, file), "rule failed: " + result.message + " [rule " + r.name + "]");
    }
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
            if (p.extension() == ".lua" && e.is_regular_file(ec))
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

void run_rule_files(const Site& site, const std::vector<std::string>& files, Diagnostics& diags) {
    const auto tree = std::make_shared<const LuaValue>(site_to_lua(site));  // shared by every file's sandbox
    std::vector<std::pair<std::string, std::string>> seen_rules;              // name -> file
    for (const auto& f : files) {
        try {
            run_one_file(site, tree, f, seen_rules, diags);
        } catch (const std::exception& e) {  // e.g. no memory for a sandbox: the file's rules did not run
            diags.error({shown_path(f), 0, 0}, std::string("rules could not run: ") + e.what());
        }
    }
}

void run_rules(const Site& site, const std::vector<std::string>& rule_dirs, Diagnostics& diags) {
    std::vector<std::string> dirs{default_rules_dir()};
    dirs.insert(dirs.end(), rule_dirs.begin(), rule_dirs.end());
    if (!site.files.empty()) {
        // The site's own rules live beside its site.toml; absent is normal.
        const fs::path own = fs::path(site.files.front()).parent_path() / "rules";
        std::error_code ec;
        if (fs::is_directory(own, ec)) dirs.push_back(own.string());
    }
    run_rule_files(site, rule_files(dirs, &diags), diags);
}

std::vector<RuleInfo> list_rules(const std::vector<std::string>& rule_dirs) {
    std::vector<std::string> dirs{default_rules_dir()};
    dirs.insert(dirs.end(), rule_dirs.begin(), rule_dirs.end());
    const Site empty;
    const auto tree = std::make_shared<const LuaValue>(site_to_lua(empty));
    std::vector<RuleInfo> out;
    for (const auto& path : rule_files(dirs)) {
        const std::string file = shown_path(path);
        std::string text;
        if (!read_text(path, text)) continue;
        const std::string comment = purpose_comment(text);
        RuleFileRun run{&empty, nullptr, {}};
        LoadedFile loaded = load_rule_file(file, text, tree, run);
        if (loaded.run_check == LUA_NOREF) {
            out.push_back({fs::path(path).stem().string(), file, "(cannot load: " + loaded.failure.describe() + ")"});
            continue;
        }
        for (const auto& r : run.rules) out.push_back({r.name, file, r.description.empty() ? comment : r.description});
    }
    return out;
}

}  // namespace sitegen
