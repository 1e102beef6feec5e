// Runs the pipeline stages in order for each requested site and renders the outcome.
#include "pipeline.h"
#include "out/beside.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <sys/stat.h>
#include <unistd.h>

#include "site/check.h"
#include "site/diagnostics.h"
#include "site/load.h"
#include "out/input_log.h"
#include "out/manifest.h"
#include "out/publish.h"
#include "out/sha256.h"
#include "out/threads.h"
#include "out/trace.h"
#include "plan/stack_plan.h"
#include "render/explain.h"
#include "render/parallel_emit.h"
#include "render/renderers.h"
#include "lua/hooks.h"
#include "lua/rules.h"
#include "lua/selfcheck.h"
#include "lua/selfcheck_batches.h"
#include "node/doctor.h"
#include "node/hwloc_topology.h"
#include "plan/paths.h"
#include "plan/traits.h"
#include "site/suggest.h"
#include "site/schema.h"
#include "plan/hook_additions.h"
#include "lua/read_log.h"

namespace sitegen {

namespace {

SourceReader reader_for(FileSystem& fs) {
    return [&fs](const std::string& path, std::string& text) {
        std::string error;
        return fs.read(path, text, error);
    };
}

// Resolves the requested names against sites_dir; unknown names are usage errors.
bool resolve_sites(FileSystem& fs, const Request& request, std::vector<std::string>& names,
                   Result& result) {
    const auto known = list_sites(fs, request.sites_dir);
    if (request.all) {
        names = known;
        if (names.empty()) {
            result.err += "sitegen: error: no sites in '" + request.sites_dir + "'\n";
            result.exit_code = kExitUsage;
            return false;
        }
        return true;
    }
    if (request.sites.empty()) {
        result.err += "sitegen: error: name at least one site, or use --all\n";
        result.exit_code = kExitUsage;
        return false;
    }
    for (const auto& name : request.sites) {
        if (std::find(known.begin(), known.end(), name) == known.end()) {
            std::string hint = did_you_mean(name, known);
            result.err += "sitegen: error: no site '" + name + "' in '" + request.sites_dir + "'" +
                          (hint.empty() ? "" : "; " + hint) + "\n";
            result.exit_code = kExitUsage;
            return false;
        }
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
    return true;
}

// sitegen itself as an input of every build key (and of the stack memo's keys): its version
// and this binary's identity (a rebuilt or replaced sitegen renders everything again), plus
// SITEGEN_BUILD_SALT, which tests vary and a user may set to force a full rebuild
// (docs/performance.md).
std::string tool_identity() {
    std::string id = "sitegen " SITEGEN_VERSION;
    struct stat st;
    if (::stat("/proc/self/exe", &st) == 0)
        id += " " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) +
              ":" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    if (const char* salt = std::getenv("SITEGEN_BUILD_SALT")) id += std::string(" salt ") + salt;
    return id;
}

std::string state_dir_of(const std::string& out_dir);

// Where a site's stack memo (site/stack_memo.h) lives: beside its build state.
std::string stack_memo_path(const std::string& state_dir, const std::string& site_name) {
    return state_path(state_dir, site_name) + ".stacks";
}

// Where a site's rules memo (lua/rules_memo.h) lives: beside its build state.
std::string rules_memo_path(const std::string& state_dir, const std::string& site_name) {
    return state_path(state_dir, site_name) + ".rules";
}

struct Loaded {
    std::string name;
    Site site;
    std::vector<HookAdditions> hooks;  // what the site's Lua hooks add, per stack (run once)
    // The site's inputs as loading asked for them, and what check found (for the build state).
    std::vector<InputQuery> queries;
    std::string answers;
    std::vector<std::string> rule_dirs;
    std::vector<Diagnostic> findings;
    bool findings_complete = false;  // every finding of this site is in `findings`, none clipped
    std::unique_ptr<StackMemo> memo;  // the stacks the last build loaded (build and check only)
    std::unique_ptr<RulesMemo> rules_memo;  // the rules' last findings (build and check only)
    // A build runs the Lua rules of a site that passed load and check on a thread of their own
    // (their sandbox is a child process the thread waits for) while the hooks and the build
    // keys go on; join_checks() ends them before anything is written.
    struct PendingChecks {
        explicit PendingChecks(size_t cap) : before(cap), rules(cap), hooks(cap) {}
        Diagnostics before, rules, hooks;  // load and check's findings; the rules'; the hooks'
        std::thread thread;
        std::exception_ptr failed;
        ~PendingChecks() { if (thread.joinable()) thread.join(); }
    };
    std::unique_ptr<PendingChecks> pending;
};

// The directories whose *.lua files a site's build runs: sitegen's rules, --rules DIRs, and
// the site's own hooks directory when it has one.
std::vector<std::string> rule_dirs_of(FileSystem& fs, const Request& request, const Site& site) {
    std::vector<std::string> dirs{default_rules_dir()};
    dirs.insert(dirs.end(), request.rule_dirs.begin(), request.rule_dirs.end());
    if (!site.files.empty()) {
        const std::string hooks = std::filesystem::path(site.files.front()).parent_path().string() + "/hooks";
        if (fs.is_dir(hooks)) dirs.push_back(hooks);
    }
    return dirs;
}

// What loading a site read (for the build state).
void record_inputs(RecordingFs& inputs, const Request& request, Loaded& l) {
    // The rule and hook files are inputs too (their sandboxes read them): asked through the
    // recorder, so an up-to-date build compares their bytes as well.
    l.rule_dirs = rule_dirs_of(inputs, request, l.site);
    for (const auto& file : rule_files(l.rule_dirs)) {
        std::string text, error;
        inputs.read(file, text, error, kMaxInputFileBytes);
    }
    l.queries = inputs.queries();
    l.answers = inputs.answers();
}

// What check found for a site (for the build state: an up-to-date build repeats it).
void record_findings(Loaded& l, const Diagnostics& site_diags) {
    l.findings = site_diags.all();
    l.findings_complete =
        site_diags.error_count() + site_diags.warning_count() + site_diags.note_count() == l.findings.size();
}

// Load + check every site; all findings of all sites are reported in one run. Each site's
// checks run in order, each only on a site the ones before it passed: load, check, the Lua
// rules (they read a schema-valid site; on a broken one they would only add noise), the hooks
// (they add to the plan of a site that passed every check, so check reports them too).
// With `rules_later` the rules of a site that loads without errors run on a thread while the
// rest goes on (the hooks run meanwhile, their findings kept only if the rules pass):
// join_checks() adds their findings to `diags` in that same order. (Unless their memo holds:
// then its findings are taken here, in the same place.)
// With a `memo_dir` (a build's state directory), each site's load reads back the stacks the
// last build loaded from its memo there (read through `fs`: a cache, not an input).
bool load_and_check(FileSystem& fs, const Request& request, std::vector<Loaded>& sites,
                    Diagnostics& diags, bool rules_later = false, const std::string& memo_dir = {}) {
    sites.reserve(sites.size() + request.sites.size());  // the rules' threads read sites in place
    for (const auto& name : request.sites) {
        Loaded& l = sites.emplace_back();
        l.name = name;
        Diagnostics site_diags(diags.cap());
        RecordingFs inputs(fs);
        std::optional<TraceSpan> loading(std::in_place, "load");
        if (!memo_dir.empty()) {
            l.memo = std::make_unique<StackMemo>();
            l.memo->identity = tool_identity();
            FileText text;
            std::string error;
            if (fs.read_cache(stack_memo_path(memo_dir, name), text, error)) read_stack_memo(std::move(text), *l.memo);
            l.rules_memo = std::make_unique<RulesMemo>();
            l.rules_memo->identity = l.memo->identity;
            if (!fs.read(rules_memo_path(memo_dir, name), l.rules_memo->text, error, kMaxOutputFileBytes))
                l.rules_memo->text.clear();
        }
        const bool loaded = load_site(inputs, request.sites_dir, name, l.site, site_diags, l.memo.get());
        loading.reset();
        if (loaded || !site_diags.has_errors()) {
            // The rules' kept findings, when their memo holds: taken on this thread (what the
            // rules read of the site, ~13 ms at 2,000 stacks); a thread of the rules' own only
            // waits for the child process that runs them (it took CPU from the look and check).
            std::optional<Diagnostics> kept_rules;
            if (rules_later && !site_diags.has_errors()) {
                if (l.rules_memo && !rules_from_memo(l.site, request.rule_dirs, kept_rules.emplace(diags.cap()), *l.rules_memo))
                    kept_rules.reset();
                if (!kept_rules) {
                    l.pending = std::make_unique<Loaded::PendingChecks>(diags.cap());
                    Loaded::PendingChecks& p = *l.pending;
                    p.thread = std::thread([&l, &p, &request] {
                        try {
                            run_rules(l.site, request.rule_dirs, p.rules, l.rules_memo.get(), l.rules_memo != nullptr);
                        } catch (...) {
                            p.failed = std::current_exception();
                        }
                    });
                }
            }
            {
                const TraceSpan span("check_site");
                check_site(l.site, name, site_diags);
            }
            if (l.pending && site_diags.has_errors()) {
                l.pending->thread.join();  // a site check refused: its rules' findings are not wanted
                if (l.pending->failed) std::rethrow_exception(l.pending->failed);
                l.pending.reset();
            }
            if (kept_rules && !site_diags.has_errors()) site_diags.append(*kept_rules);
            else if (!l.pending && !site_diags.has_errors()) run_rules(l.site, request.rule_dirs, site_diags, l.rules_memo.get());
            const TraceSpan hooks("hooks");
            if (!site_diags.has_errors()) l.hooks = run_hooks(l.site, l.pending ? l.pending->hooks : site_diags);
        }
        record_inputs(inputs, request, l);
        if (l.pending) {
            l.pending->before = std::move(site_diags);
        } else {
            record_findings(l, site_diags);
            diags.append(site_diags);
        }
    }
    return !diags.has_errors();
}

// Ends the checks load_and_check left running and adds every site's findings to `diags`,
// site by site, as a run without `rules_later` would have.
void join_checks(std::vector<Loaded>& sites, Diagnostics& diags) {
    std::exception_ptr failed;
    for (Loaded& l : sites) {
        if (!l.pending) continue;
        Loaded::PendingChecks& p = *l.pending;
        if (p.thread.joinable()) p.thread.join();
        if (p.failed && !failed) failed = p.failed;
        Diagnostics& site_diags = p.before;  // (no errors: the rules run only after a clean check)
        site_diags.append(p.rules);
        if (site_diags.has_errors()) l.hooks.clear();  // hooks run on a site every rule passed
        else site_diags.append(p.hooks);
        record_findings(l, site_diags);
        diags.append(site_diags);
        l.pending.reset();
    }
    if (failed) std::rethrow_exception(failed);
}

// Resolves the requested site names (usage errors go to `result`), then loads and checks
// them into `sites` and `diags`. False only when a name could not be resolved.
bool resolve_and_check(FileSystem& fs, const Request& request, std::vector<Loaded>& sites, Diagnostics& diags,
                       Result& result, const std::string& memo_dir = {}) {
    Request resolved = request;
    resolved.sites.clear();
    if (!resolve_sites(fs, request, resolved.sites, result)) return false;
    load_and_check(fs, resolved, sites, diags, false, memo_dir);
    return true;
}

// resolve_and_check for the commands that need sites without errors (explain, doctor): on
// errors they are rendered into `result` with kExitSiteErrors and false is returned; warnings
// stay in `diags` for the caller.
bool checked_sites(FileSystem& fs, const Request& request, std::vector<Loaded>& sites, Diagnostics& diags,
                   Result& result) {
    if (!resolve_and_check(fs, request, sites, diags, result)) return false;
    if (!diags.has_errors()) return true;
    result.err += render_all(diags, reader_for(fs));
    result.exit_code = kExitSiteErrors;
    return false;
}

std::string plural(size_t n, const char* word) {
    return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

std::string plural(size_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

void put_text(std::string& out, std::string_view s) { append_prefixed(out, s); }

// What the hooks add to one stack, as text for its key.
std::string hook_text(const HookAdditions& h) {
    std::string out;
    put_text(out, h.family);
    for (const auto& [name, value] : h.properties) { put_text(out, "p"); put_text(out, name); put_text(out, value); }
    for (const auto& m : h.messages) { put_text(out, "m"); put_text(out, m); }
    for (const auto& c : h.job_prologue) {
        put_text(out, "j" + std::to_string(static_cast<int>(c.kind)) + "/" + std::to_string(c.words.size()));
        for (const auto& w : c.words) put_text(out, w);
    }
    return out;
}

// One build key per stack (in site order): a digest of everything its outputs are made
// from: sitegen, the install prefix, the site-wide tables, the rule and hook files (by
// content), the stack itself and what the hooks add to it.
std::vector<std::string> stack_keys(FileSystem& fs, const Loaded& l, const PlanOptions& options) {
    const TraceSpan span("stack_keys");
    std::string base;
    put_text(base, tool_identity());
    put_text(base, options.prefix);
    put_text(base, site_wide_text(l.site));
    for (const auto& file : rule_files(l.rule_dirs)) {
        std::string text, error;
        if (!fs.read(file, text, error)) text = "unreadable: " + error;
        put_text(base, file);
        put_text(base, text);
    }
    const std::string site_digest = sha256_hex(base);
    // A stack read back from the stack memo has its text there (not made again: ~3 us a stack).
    std::vector<std::string_view> texts(l.site.stacks.size());
    if (l.memo)
        for (const StackMemo::Piece& p : l.memo->pieces)
            if (!p.entry.text.empty() && p.stack < texts.size()) texts[p.stack] = stack_memo_stack_text(p.entry.text);
    std::vector<std::string> keys;
    for (size_t i = 0; i < l.site.stacks.size(); ++i) {
        std::string text = site_digest;
        if (!texts[i].empty()) put_text(text, texts[i]);
        else put_text(text, stack_text(l.site.stacks[i]));
        put_text(text, l.site.stacks[i].python.environment);  // the environment file's bytes, not its name
        put_text(text, i < options.hooks.size() ? hook_text(options.hooks[i]) : std::string());
        keys.push_back(sha256_hex(text));
    }
    return keys;
}

// The digest of everything a site's outputs depend on besides the answers to its load's
// queries: sitegen, the request's prefix and rule directories, and which rule files exist.
std::string inputs_digest(const Request& request, const std::vector<std::string>& rule_dirs, const std::string& answers) {
    std::string text;
    put_text(text, tool_identity());
    put_text(text, request.prefix ? "prefix " + *request.prefix : std::string("site prefix"));
    // The queries' paths are relative to where sitegen runs: the sites directory must be the same.
    std::error_code ec;
    put_text(text, std::filesystem::absolute(request.sites_dir, ec).lexically_normal().string());
    put_text(text, default_rules_dir());
    for (const auto& dir : request.rule_dirs) put_text(text, "rules " + dir);
    for (const auto& dir : rule_dirs) put_text(text, "dir " + dir);
    for (const auto& file : rule_files(rule_dirs)) put_text(text, "file " + file);
    put_text(text, answers);
    return sha256_hex(text);
}

std::string under_out(const std::string& out_dir, const std::string& path) {
    return out_dir.empty() || out_dir == "." ? path : out_dir + "/" + path;
}

// A recorded stat (of a directory, or of a file as a state holds it).
const FileStat& stat_in(const FileStat& stat) { return stat; }
const FileStat& stat_in(const KnownFile& file) { return file.stat; }

// An up-to-date build: every requested site has a build state whose inputs answer exactly as
// they did (same bytes of every file its load, rules and hooks read; same sitegen and request)
// and whose tree is as that build left it (no journal; every directory, file and manifest
// with its recorded stat, so nothing was added, removed, edited or chmod-ed). Then there is
// nothing to load, check, render or publish: the findings check made are repeated and the
// build reports every file unchanged. False (and `result` untouched) otherwise.
// The states read on the way are left in `states` (by site name), or in `texts` when their
// inputs changed (unparsed), so a build that is not up to date need not read them again.
bool up_to_date(FileSystem& fs, const Request& request, const std::string& state_dir, Result& result,
                std::map<std::string, BuildState>& states, std::map<std::string, FileText>& texts) {
    const TraceSpan span("up_to_date");
    if (state_dir.empty()) return false;
    Result scratch;
    std::vector<std::string> names;
    if (!resolve_sites(fs, request, names, scratch)) return false;
    TreeEntry journal;
    if (fs.entry(under_out(request.out_dir, ".sitegen-journal"), journal)) return false;
    Diagnostics diags;
    size_t files = 0;
    for (const auto& name : names) {
        FileText text;
        std::string error;
        if (!fs.read_cache(state_path(state_dir, name), text, error)) return false;
        // Its inputs first: when they changed, the rest is read by the build (on the look's thread).
        BuildState inputs;
        if (!parse_state(text, inputs, StateParts::inputs) || inputs.inputs.empty() ||
            inputs.inputs != inputs_digest(request, inputs.rule_dirs, answer_again(fs, inputs.queries))) {
            texts[name] = std::move(text);
            return false;
        }
        BuildState& state = states[name];
        if (!parse_state(std::move(text), state)) {
            states.erase(name);  // (a text cut short leaves a partial state: never used)
            return false;
        }
        if (state.inputs != inputs.inputs || state.manifests.size() != 2) return false;
        // Whether each path (relative to the out dir) is a `type` with its stat: in slices, on
        // up to lone_stat_threads() threads (the file system allowing: nothing else runs yet);
        // the first difference ends it.
        const auto same = [&](const auto& stats, TreeEntry::Type type) {
            std::vector<const typename std::decay_t<decltype(stats)>::value_type*> items;
            items.reserve(stats.size());
            for (const auto& item : stats) items.push_back(&item);
            std::atomic<bool> all_same{true};
            share_out_slices(items.size(), 1024, fs.concurrent_reads() ? lone_stat_threads() : 1, [&](size_t i, unsigned) {
                TreeEntry e;
                const auto& [path, recorded] = *items[i];
                if (all_same.load(std::memory_order_relaxed) &&
                    (!fs.entry(under_out(request.out_dir, path), e) || e.type != type || !(stat_of(e) == stat_in(recorded))))
                    all_same.store(false, std::memory_order_relaxed);
            });
            return all_same.load();
        };
        std::map<std::string, FileStat> manifests;
        for (const auto& [root, stat] : state.manifests) manifests[root + "/" + kManifestName] = stat;
        if (!same(manifests, TreeEntry::Type::file) || !same(state.dirs, TreeEntry::Type::dir) ||
            !same(state.files, TreeEntry::Type::file))
            return false;
        for (const auto& d : state.findings) diags.add(d);
        files += state.files.size();
    }
    result.err += render_all(diags, reader_for(fs));
    std::string list;
    for (const auto& name : names) list += (list.empty() ? "" : ", ") + name;
    result.out += std::string("sitegen: ") + (request.dry_run ? "would write " : "wrote ") + list + ": " +
                  plural(files, "file") + " (0 added, 0 changed, 0 removed, " + std::to_string(files) + " unchanged)\n";
    return true;
}

// Where the build states of `out_dir` live ("" = nowhere: no state directory is known).
std::string state_dir_of(const std::string& out_dir) {
    std::string dir;
    if (const char* d = std::getenv("SITEGEN_STATE_DIR"); d && *d) dir = d;
    else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') dir = std::string(x) + "/sitegen";
    else if (const char* h = std::getenv("HOME"); h && *h == '/') dir = std::string(h) + "/.cache/sitegen";
    if (dir.empty()) return {};
    std::error_code ec;
    auto abs = std::filesystem::weakly_canonical(std::filesystem::absolute(out_dir.empty() ? "." : out_dir, ec), ec);
    return dir + "/" + sha256_hex(abs.lexically_normal().string()).substr(0, 16);
}

// The last build's state of a site (`read`: as up_to_date read it, if it did; `text_read`: its
// text, if up_to_date read that only), if it still describes the live roots (each root's
// manifest has the stat the state recorded, so it is the one that build wrote); empty otherwise.
// (`parts`: all, or up to its head when read here: then parse_state_stacks reads the rest.)
BuildState usable_state(FileSystem& fs, const std::string& out_dir, const std::string& state_dir,
                        const std::string& site_name, BuildState* read, FileText* text_read,
                        StateParts parts) {
    const TraceSpan span("last_state");
    BuildState state;
    if (read) {
        state = std::move(*read);
    } else {
        FileText text;
        std::string error;
        if (text_read) text = std::move(*text_read);
        else if (state_dir.empty() || !fs.read_cache(state_path(state_dir, site_name), text, error))
            return {};
        if (!parse_state(std::move(text), state, parts)) return {};
    }
    for (const std::string& root : {modules_root(site_name), easyconfigs_root(site_name)}) {
        TreeEntry e;
        const auto it = state.manifests.find(root);
        if (it == state.manifests.end() || !fs.entry(under_out(out_dir, root + "/" + kManifestName), e) ||
            e.type != TreeEntry::Type::file || !(stat_of(e) == it->second))
            return {};
    }
    return state;
}

// The stack's files when it need not be rendered: its key is the one recorded and each of its
// files is on the live tree as the last build left it (the publisher's scan found it with the
// recorded stat and the manifest's mode). Empty otherwise.
// (`lines_from`: the place of the state's first file line among the publisher's known files.)
std::vector<KeptFile> reusable(const Publisher& publisher, const BuildState& state, uint32_t lines_from,
                               const std::string& id, const std::string& key) {
    const auto record = state.stacks.find(id);
    if (record == state.stacks.end() || record->second.key != key || record->second.files.empty()) return {};
    const BuildState::StackRecord& r = record->second;
    const bool by_line = r.first_line != KnownFile::kNoLine;  // (else by path: lines not one run)
    std::vector<KeptFile> kept(r.files.size());
    for (size_t i = 0; i < kept.size(); ++i) {
        const uint32_t line = by_line ? static_cast<uint32_t>(lines_from + r.first_line + i) : 0;
        if (!(by_line ? publisher.as_last_built(r.files[i], line, kept[i]) : publisher.as_last_built(r.files[i], kept[i])))
            return {};
    }
    return kept;
}

// For each stack of a site, its files when it need not be rendered (reusable), else none;
// `ids`: each stack's module full name (its state record's).
// Two stacks with one name render both, so the clash is reported.
// (Only reads: on a big site the second half is looked up on a thread of its own.)
std::vector<std::vector<KeptFile>> kept_stacks(const Publisher& publisher, const BuildState& state, uint32_t lines_from,
                                               const Site& site, const std::vector<std::string>& keys,
                                               std::vector<std::string>& ids) {
    const TraceSpan span("kept_stacks");
    const size_t n = site.stacks.size();
    ids.assign(n, {});
    std::unordered_map<std::string_view, int> count;
    for (size_t i = 0; i < n; ++i) ++count[ids[i] = site.stacks[i].module_full_name()];
    std::vector<std::vector<KeptFile>> kept(n);
    const auto look_up = [&](size_t from, size_t to) {
        for (size_t i = from; i < to; ++i)
            if (count.at(ids[i]) == 1) kept[i] = reusable(publisher, state, lines_from, ids[i], keys[i]);
    };
    run_beside(n >= 256 && render_threads() > 1 && !state.stacks.empty(), [&] { look_up(n / 2, n); },
               [&] { look_up(0, n / 2); });
    return kept;
}

}  // namespace

// One stack's outputs: its plan is computed once, rendered by every format, then dropped,
// so memory holds the outputs and a single plan, not every plan besides.
void emit_stack(const Site& site, const Stack& stack, const PlanOptions& options, OutputList& all) {
    SitePlan plan{&site, {}};
    plan.stacks.push_back(plan_stack(site, stack, options));  // (moved: a braced list would copy it)
    for (const Renderer& renderer : renderers()) {
        if (!renders_for(renderer, site)) continue;
        OutputList part = renderer.render(plan);
        all.insert(all.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
    }
}

OutputList emit_all(const Site& site, const PlanOptions& options) {
    OutputList all;
    for (const Stack& stack : site.stacks) emit_stack(site, stack, options, all);
    std::stable_sort(all.begin(), all.end(),
                     [](const OutputFile& a, const OutputFile& b) { return a.path < b.path; });
    return all;
}

Result run_explain(FileSystem& fs, const Request& request, const std::string& stack_name, const std::string& var) {
    Result result;
    Diagnostics diags;
    std::vector<Loaded> sites;
    // Warnings are check's business; explain speaks only when the site cannot be explained.
    if (!checked_sites(fs, request, sites, diags, result)) return result;
    const Site& site = sites.front().site;
    std::vector<const Stack*> matches;
    std::vector<std::string> names;
    for (const Stack& s : site.stacks) {
        names.push_back(s.module_full_name());
        if (s.module_full_name() == stack_name) matches = {&s};
    }
    if (matches.empty())
        for (const Stack& s : site.stacks)
            if (s.name == stack_name) matches.push_back(&s);
    if (matches.size() != 1) {
        const std::string hint = did_you_mean(stack_name, names);
        std::string known;
        for (const auto& n : names) known += " " + n;
        result.err += "sitegen: error: " + std::string(matches.empty() ? "no stack '" : "several stacks named '") +
                      stack_name + "' in site '" + site.site.name + "'" + (hint.empty() ? "" : "; " + hint) +
                      "; its stacks:" + known + "\n";
        result.exit_code = kExitUsage;
        return result;
    }
    result.out = explain_text(site, *matches.front(), var);
    if (result.out.empty()) {
        result.err += "sitegen: " + (var.empty() ? std::string("no collective environment") : "'" + var + "' is not set") +
                      " for " + matches.front()->module_full_name() + " at " + site.site.name + "\n";
        result.exit_code = var.empty() ? kExitOk : kExitSiteErrors;
    }
    return result;
}

Result run_check(FileSystem& fs, const Request& request) {
    const TraceSpan span("check");
    Result result;
    Diagnostics diags;
    std::vector<Loaded> sites;
    // (It reads the stack memo the last build of --out-dir left, and writes nothing.)
    if (!resolve_and_check(fs, request, sites, diags, result, state_dir_of(request.out_dir))) return result;
    result.err += render_all(diags, reader_for(fs));
    if (diags.has_errors()) { result.exit_code = kExitSiteErrors; return result; }
    result.out += "sitegen: " + plural(sites.size(), "site") + " checked, no errors\n";
    return result;
}

// The memory of one build that outlives its steps: the sites, the last states, the scanned
// trees, the states to write. Freed as a whole by its owner (see Request::leave_working_set).
struct BuildWorkingSet {
    std::map<std::string, BuildState> states_read;
    std::map<std::string, FileText> state_texts_read;
    KnownFiles known;
    // How many file lines the states of `known` have, and where each state's first is among
    // them (KnownFile::line counts from there: site by site).
    uint32_t known_lines = 0;
    std::vector<uint32_t> first_lines;
    std::map<std::string, SpareListing> spares;  // the last build's spare listings, by root
    std::map<std::string, unsigned long long> looked;  // when its looks saw the roots' directories
    std::vector<BuildState> last, next;
    std::optional<Publisher> publisher;
    std::vector<Loaded> sites;
    PublishReport report;
};

namespace {

// What --prefix may be: an absolute path without the separators of PATH-like lists and binds.
bool usable_prefix(const std::string& p) {
    bool bad = p.empty() || p[0] != '/' || p.find_first_of(":,") != std::string::npos;
    for (unsigned char c : p) bad = bad || c < 0x20 || c == 0x7f;
    return !bad;
}

// What a site's build needs besides the site: its plan options, each stack's build key, and
// each stack's files when it need not be rendered (kept_stacks).
struct PreparedSite {
    PlanOptions options;
    std::vector<std::string> keys;
    std::vector<std::vector<KeptFile>> kept;
    std::vector<std::string> ids;  // each stack's module full name (kept_stacks made them)
};

// Renders the stacks of a site that need it (on worker threads) and hands every stack's files
// to the publisher in stack order, recording them in `next`; rendered modulefiles are
// self-checked meanwhile.
void render_site(const Loaded& l, PreparedSite& p, Publisher& publisher, const BuildState& last, BuildState& next,
                 Diagnostics& diags, EarlyChild* early_check) {
    const TraceSpan span("render_site");
    // Stacks render on worker threads and come back here in stack order, hashed, to be
    // staged; the self-check runs on batches of modulefiles meanwhile (render_threads()
    // == 1: one after the other in this thread, as before).
    const unsigned threads = render_threads();
    BatchedSelfCheck self_check(threads > 1, 1024, early_check);  // what the self-check runs
    const size_t twice_before = publisher.added_twice().size();
    // The last stack to render: once it is delivered, the self-check need not wait for the
    // kept stacks after it (a one-stack rebuild hands over ~2,000 kept ones meanwhile).
    size_t last_rendered = l.site.stacks.size();
    for (size_t i = 0; i < p.kept.size(); ++i)
        if (p.kept[i].empty()) last_rendered = i;
    try {
        const size_t n = l.site.stacks.size();
        std::vector<char> wanted(n);  // (rendered; the others are kept)
        for (size_t i = 0; i < n; ++i) wanted[i] = p.kept[i].empty();
        // The kept stacks' files, all at once: shared out (a few threads: the steps are
        // lookups in memory), as add_kept() of each in stack order would, while the other
        // stacks render; a rendered stack is handed over after them (`handed`: add_kept_stacks
        // comes before any add()).
        std::atomic<bool> handed{false};
        const auto hand_over_kept = [&] {
            const SetOnExit done{handed};  // (even when handing over throws: delivering waits for it)
            const TraceSpan span("hand_over_kept");
            publisher.add_kept_stacks(p.kept, std::min(threads, 4u), diags);
            // And their state records: made in stack order (a map; each id goes after the one
            // before when the stacks come in its order), then filled on those threads (kept
            // stacks have ids of their own: kept_stacks keeps no two with one id).
            std::vector<std::pair<const std::string*, BuildState::StackRecord*>> records(n, {nullptr, nullptr});
            for (size_t i = 0; i < n; ++i)
                if (!wanted[i]) {
                    std::string id = p.ids.size() == n ? std::move(p.ids[i]) : l.site.stacks[i].module_full_name();
                    const auto it = next.stacks.try_emplace(next.stacks.end(), std::move(id));
                    records[i] = {&it->first, &it->second};
                }
            share_out_slices(n, 64, std::min(threads, 4u), [&](size_t i, unsigned) {
                const auto [id, record] = records[i];
                if (!record) return;
                *record = {p.keys[i], false, {}};
                record->files.reserve(p.kept[i].size());
                for (const KeptFile& k : p.kept[i]) record->files.push_back(k.path);  // (views into `last`)
                p.kept[i] = {};
                // Its state lines are the last state's: the same files (reusable keeps all of
                // them, in order), each with the stat that state gave it (as_last_built); its
                // record too when that is the one this state writes.
                record->same_record = last.kept_record(*id, record->key, record->files.size(), &record->same_lines);
            });
        };
        StackSteps steps;
        steps.wanted = [&](size_t i) { return wanted[i] != 0; };
        steps.render = [&](size_t i, OutputList& part) { emit_stack(l.site, l.site.stacks[i], p.options, part); };
        steps.deliver = [&](size_t i, RenderedStack* rendered) {
            if (!rendered) return;  // (kept: handed over and recorded by hand_over_kept)
            // Nothing reaches the tree that the Lmod recorder rejects (load and unload mode);
            // kept outputs passed it when they were rendered. It needs the modulefiles alone:
            // while the kept stacks are still being handed over, it is given copies before the
            // wait, so that the last stack's check runs in its child meanwhile; else the files
            // themselves once staged.
            const bool early = !handed.load(std::memory_order_acquire);
            const bool last = i == last_rendered && i + 1 < l.site.stacks.size();
            if (early) {
                for (const OutputFile& f : rendered->files)
                    if (is_self_checked(f.path)) self_check.add(f);
                if (last) self_check.flush();
            }
            handed.wait(false, std::memory_order_acquire);
            BuildState::StackRecord& record = next.stacks[l.site.stacks[i].module_full_name()];
            record = {p.keys[i], true, {}};
            for (size_t j = 0; j < rendered->files.size(); ++j) {
                OutputFile& f = rendered->files[j];
                record.files.push_back(next.own(f.path));
                publisher.add(f, std::move(rendered->hashes[j]), diags);
                if (!early && is_self_checked(f.path)) self_check.add(std::move(f));
            }
            if (!early && last) self_check.flush();
        };
        // (Without a second thread: the kept stacks first, then the others, one after the other.)
        run_beside(threads > 1, [&] {
            const TraceSpan span("render_stacks");
            render_stacks(n, threads, steps);
        }, hand_over_kept);
    } catch (const std::exception& e) {
        // Checks should have refused the input; never crash or write half a tree.
        diags.error(l.site.where(""), std::string("internal error while generating outputs: ") + e.what(),
                    "please report this with the site file");
        return;
    }
    // Two outputs at one path would silently lose one: refuse instead (in path order).
    std::vector<std::string> twice(publisher.added_twice().begin() + static_cast<std::ptrdiff_t>(twice_before),
                                   publisher.added_twice().end());
    std::sort(twice.begin(), twice.end());
    for (const auto& path : twice)
        diags.error(l.site.where("stacks"), "two outputs would be written to '" + path +
                                                "' (stacks with the same name and version?)");
    self_check.finish(diags);
}

// `path` holds `pieces`, one after the other, written beside it and renamed over it (a reader
// sees the old file or the new one, never half of one); a temporary file left by a failure is
// removed.
bool replace_file(FileSystem& fs, const std::string& path, const std::vector<std::string_view>& pieces,
                  std::string& error) {
    const std::string temp = path + ".new-" + std::to_string(::getpid());
    if (fs.write_pieces(temp, pieces, error) && fs.rename(temp, path, error)) return true;
    std::string ignored;
    fs.remove_all(temp, ignored);
    return false;
}

bool replace_file(FileSystem& fs, const std::string& path, const std::string& text, std::string& error) {
    return replace_file(fs, path, std::vector<std::string_view>{text}, error);
}

// Records a site's build state after its publish (a cache: replaced whole by write + rename;
// when it cannot be written the next build renders everything, so that is only a warning).
void record_state(FileSystem& fs, const Request& request, const std::string& state_dir, const Loaded& l,
                  BuildState& last, BuildState& state, PublishReport& report, Result& result) {
    const TraceSpan span("record_state");
    for (const std::string& root : {modules_root(l.site), easyconfigs_root(l.site)}) {
        if (report.manifest_stats.count(root)) state.manifests[root] = report.manifest_stats[root];
        if (const auto at = report.looked.find(root); at != report.looked.end()) state.looked[root] = at->second;
        if (const auto spare = report.spares.find(root); spare != report.spares.end())
            state.spares[root] = std::move(spare->second);
    }
    // Every directory of the roots, with its stat (a new or removed entry changes its mtime):
    // found from the stacks' files (or the last state's, when every stack is one of its stacks
    // with the same files) and statted on a second thread while the files' stats are gathered
    // (the file system allowing).
    bool dirs_complete = true;
    const auto same_files = [&] {
        if (last.dirs.empty() || last.stacks.size() != state.stacks.size()) return false;
        for (auto a = last.stacks.begin(), b = state.stacks.begin(); b != state.stacks.end(); ++a, ++b)
            if (a->first != b->first || (b->second.same_lines.empty() && a->second.files != b->second.files))
                return false;  // (a kept stack's files are the last state's: same_lines)
        return true;
    };
    const auto dirs_of_files = [&] {
        const std::string modules = modules_root(l.site), easyconfigs = easyconfigs_root(l.site);
        std::unordered_set<std::string_view> dirs;  // views into the stacks' file lists
        for (const auto& [id, record] : state.stacks)
            for (const std::string_view p : record.files)
                for (auto slash = p.rfind('/'); slash != std::string_view::npos && slash > 0;
                     slash = p.rfind('/', slash - 1)) {
                    const std::string_view dir = p.substr(0, slash);
                    if (!dirs.insert(dir).second) break;  // and its parents, already added
                    if (dir == modules || dir == easyconfigs) break;
                }
        for (const auto dir : dirs) state.dirs.emplace(std::string(dir), FileStat{});
    };
    const auto stat_dirs = [&] {
        if (same_files()) state.dirs = std::move(last.dirs);  // (their paths: each stat is found below)
        else dirs_of_files();
        auto known = report.dir_stats.begin();  // (both in path order: walked side by side)
        for (auto& [dir, stat] : state.dirs) {
            while (known != report.dir_stats.end() && known->first < dir) ++known;
            if (known != report.dir_stats.end() && known->first == dir) {
                stat = known->second;  // (as the publisher's look saw it, unchanged since)
                continue;
            }
            TreeEntry e;
            if (!fs.entry(under_out(request.out_dir, dir), e) || e.type != TreeEntry::Type::dir) dirs_complete = false;
            else stat = stat_of(e);
        }
    };
    // Each stack's files as the publish left them: the report's stats, which hold this site's
    // files alone when it is the only site built (moved whole, then), else taken out one by one.
    bool complete = true;
    // (A kept stack's lines are the last state's: its files' stats are not needed, nor reported.)
    const auto stat_files = [&] {
        size_t files = 0;
        for (const auto& [id, record] : state.stacks)
            if (record.same_lines.empty()) files += record.files.size();
        if (report.stats.size() == files) {  // (a stack file without a stat: state_text refuses the state)
            state.files = std::move(report.stats);
            report.stats.clear();
            return;
        }
        state.files.reserve(files);
        for (const auto& [id, record] : state.stacks) {
            if (!record.same_lines.empty()) continue;
            for (const auto& path : record.files) {
                auto node = report.stats.extract(std::string(path));  // (each path is one stack's)
                if (node.empty()) complete = false;
                else state.files.insert(std::move(node));
            }
        }
    };
    std::optional<TraceSpan> phase(std::in_place, "state_stats");
    run_beside(render_threads() > 1 && fs.concurrent_reads(), stat_dirs, stat_files);
    phase.reset();
    complete = complete && dirs_complete;
    // The inputs, when check's findings can be repeated exactly (none cut or left out).
    bool repeatable = l.findings_complete;
    for (const auto& d : l.findings)
        repeatable = repeatable && d.message.size() <= kMaxMessageBytes && d.hint.size() <= kMaxMessageBytes;
    if (repeatable) {
        state.inputs = inputs_digest(request, l.rule_dirs, l.answers);
        state.queries = l.queries;
        state.rule_dirs = l.rule_dirs;
        state.findings = l.findings;
    }
    phase.emplace("state_text");
    // (In pieces: views of the last state's text where this one's lines are those.)
    const StateText text = complete ? state_text_pieces(state, render_threads() > 1) : StateText{};
    complete = !text.pieces.empty();
    const std::string path = state_path(state_dir, l.site.site.name);
    std::string error;
    phase.emplace("state_write");
    const bool written = complete ? replace_file(fs, path, text.pieces, error) : fs.remove_all(path, error);
    if (!written)
        result.err += "sitegen: warning: cannot record the build state (the next build renders every stack): " +
                      error + "\n";
}

// Keeps the stacks this build loaded for the next load (`text`: stack_memo_pieces), beside the
// state and like it a cache: when it cannot be written the next build parses every entry, so
// that is only a warning.
void record_memo(FileSystem& fs, const std::string& state_dir, const Loaded& l, const TextPieces& text,
                 Result& result) {
    const TraceSpan span("record_memo");
    std::string error;
    if (l.memo && !text.same_as(l.memo->text.view()) &&
        !replace_file(fs, stack_memo_path(state_dir, l.name), text.pieces, error))
        result.err += "sitegen: warning: cannot record the stack memo (the next build parses every stack): " + error + "\n";
    // The rules' memo, when this run leaves one other than the one read (a run that cannot be
    // kept leaves the last one: it is used only where it still says what the rules would).
    const RulesMemo* rules = l.rules_memo.get();
    if (rules && !rules->next.empty() && rules->next != rules->text &&
        !replace_file(fs, rules_memo_path(state_dir, l.name), rules->next, error))
        result.err += "sitegen: warning: cannot record the rules' findings (the next build runs every rule): " + error + "\n";
}

}  // namespace

void prime_statics() {
    (void)site_schema();  // (walks every field table: fields_of<T> of each table type)
    (void)sha256_hex("");
    (void)lmod_default_property("", "");
    (void)ViewNeeds::nothing_below();
}

Result run_build(FileSystem& fs, const Request& request) {
    const TraceSpan span("build");
    Result result;
    auto working = std::make_unique<BuildWorkingSet>();
    struct Leave {  // the process exit frees it at once (main sets leave_working_set)
        std::unique_ptr<BuildWorkingSet>& w;
        bool leave;
        ~Leave() { if (leave) (void)w.release(); }
    } leave{working, request.leave_working_set};
    if (request.prefix && !usable_prefix(*request.prefix)) {
        result.err += "sitegen: error: --prefix must be an absolute path without ':', ',' or control characters\n";
        result.exit_code = kExitUsage;
        return result;
    }
    const std::string state_dir = state_dir_of(request.out_dir);
    auto& states_read = working->states_read;
    auto& texts_read = working->state_texts_read;
    if (up_to_date(fs, request, state_dir, result, states_read, texts_read)) return result;
    Request resolved = request;
    resolved.sites.clear();
    if (!resolve_sites(fs, request, resolved.sites, result)) return result;
    // The self-check's first child, forked now, while this process is small (EarlyChild): the
    // first modulefiles a build renders are checked in it; a build that renders none lets it go.
    std::optional<TraceSpan> forking(std::in_place, "early_child");
    EarlyChild early_check(early_self_check());
    forking.reset();

    // The publish is prepared from the site names alone (each site's roots are named after it,
    // as load checks): the last build's state, if it still describes the roots, and the
    // publisher's look (scans of the live roots and spares, read-only). On the real disk that
    // runs on a second thread (unless SITEGEN_THREADS=1) while the sites load and are checked,
    // which only read too; a site with errors still writes nothing (begin, which locks and
    // writes, comes after check). A pending journal (an interrupted publish) keeps the plain order.
    std::vector<std::string> roots;
    for (const auto& name : resolved.sites) {
        roots.push_back(modules_root(name));
        roots.push_back(easyconfigs_root(name));
    }
    auto& known = working->known;  // the last build's stats of every site's files
    auto& spares = working->spares;
    auto& last = working->last;    // the last build's states, where usable
    last.resize(resolved.sites.size());
    PublishOptions popts{request.out_dir, request.dry_run, request.force};
    popts.threads = render_threads() > 1;
    popts.known = &known;
    popts.known_lines = &working->known_lines;
    working->first_lines.assign(resolved.sites.size(), 0);
    popts.spares = &spares;
    popts.looked = &working->looked;
    for (const BuildState& state : last) popts.known_dirs.push_back(&state.dirs);  // (filled in place below)
    // (Set once prepare_publish has filled `known` and `spares`: the spares' half of the look,
    // on another thread, takes their listings only then and never waits for them; the live
    // half waits for it when another thread prepares.)
    std::atomic<bool> spares_ready{false};
    // (Below four CPUs: set once the look's thread has read the live manifests, whose lines
    // this thread then finds among the known files, find_known_lines, while it scans.)
    std::atomic<bool> manifests_read{false};
    Publisher& publisher = working->publisher.emplace(fs, roots, popts);
    // (With `heads`: set once every state's head is read, before their stacks are: what the
    // scans of the live roots wait for. The rest of each state is read meanwhile.)
    const auto prepare_publish = [&](std::atomic<bool>* heads) {
        for (size_t s = 0; s < resolved.sites.size(); ++s) {
            const std::string& name = resolved.sites[s];
            const auto read = states_read.find(name);
            const auto text = texts_read.find(name);
            last[s] = usable_state(fs, request.out_dir, state_dir, name, read == states_read.end() ? nullptr : &read->second,
                                   text == texts_read.end() ? nullptr : &text->second,
                                   heads ? StateParts::head : StateParts::all);
            working->looked.merge(last[s].looked);
        }
        if (heads) heads->store(true, std::memory_order_release), heads->notify_all();
        for (size_t s = 0; s < resolved.sites.size(); ++s) {
            {
                const TraceSpan span("last_stacks");
                parse_state_stacks(last[s]);  // (none when they are not a state's: nothing kept)
            }
            // (Paths are unique across sites: each has its own roots. The places of their
            // lines count on from the last site's.)
            uint32_t& lines = working->known_lines;
            working->first_lines[s] = lines;
            if (lines > 0)
                for (auto& [path, file] : last[s].files)
                    if (file.line != KnownFile::kNoLine) file.line += lines;
            if (known.empty()) known = std::move(last[s].files);
            else known.insert(last[s].files.begin(), last[s].files.end());
            lines += last[s].files_read;
            last[s].files.clear();
            spares.merge(last[s].spares);
        }
        if (heads) {
            manifests_read.wait(false, std::memory_order_acquire);
            publisher.find_known_lines();
        }
        spares_ready.store(true, std::memory_order_release);
    };
    TreeEntry journal;
    const bool overlap = render_threads() > 1 && fs.concurrent_reads() &&
                         !fs.entry(under_out(request.out_dir, ".sitegen-journal"), journal);
    Diagnostics diags;
    auto& sites = working->sites;
    std::vector<PreparedSite> prepared;
    // The look's two halves: the live roots on the look's thread from the start; the spares,
    // on four CPUs or more, after them on that thread (on 16 cores it ends ~50 ms before this
    // one has loaded, checked and keyed the sites), else on whichever thread is free first
    // once the sites are keyed (the rules then run in a child process). Below four CPUs this
    // thread also reads the last states first while the look's thread reads the live manifests
    // (it then waits for their heads: its scans take the directories they vouch for; the
    // stacks' lines, most of a state, are read while it scans): each thread's share is then
    // about the same (reading the states on the look's thread as well gave 231.8 against
    // 233.7 ms at 2,000 stacks on two cores).
    const bool states_on_main = overlap && stat_threads() == 1;
    std::atomic<bool> heads_ready{false};
    // Below four CPUs the two threads then share the spares' look and finding the kept stacks
    // (the sites keyed, the live roots looked at): whichever is free first looks at the spares
    // (the longer of the two: ~6,000 directory stats at 2,000 stacks), the other finds them,
    // then takes slices of those stats (share_out_helped) until the spares are looked at.
    std::atomic<bool> keyed{false}, live_looked{false}, spares_taken{false}, spares_looked{false};
    bool kept_beside = false;  // (set before `keyed`: whether the two threads share them so)
    const auto find_kept = [&] {
        for (size_t s = 0; s < sites.size(); ++s)
            prepared[s].kept =
                kept_stacks(publisher, last[s], working->first_lines[s], sites[s].site, prepared[s].keys, prepared[s].ids);
    };
    // (Below four CPUs, on each thread when its own part is done: the spares for the first
    // here, the kept stacks for the second once `other`, the other thread's part, is done.)
    const auto spares_or_kept = [&](const std::atomic<bool>& other) {
        if (!spares_taken.exchange(true)) {
            const WakeHelpersOnExit wake;  // (after `looked` is set, also when the look throws)
            const SetOnExit looked{spares_looked};
            publisher.look_spares(spares_ready.load(std::memory_order_acquire));
            return;
        }
        other.wait(false, std::memory_order_acquire);
        if (!kept_beside) return;
        find_kept();
        help_posted_until(spares_looked);
    };
    const auto load_check_and_key = [&] {
        {
            const SetOnExit keys_done{keyed};  // (even when the sites fail or preparing throws)
            if (states_on_main) {
                // (Even when preparing throws: the look's thread waits for them.)
                const SetOnExit ready{spares_ready}, heads{heads_ready};
                prepare_publish(&heads_ready);
            }
            load_and_check(fs, resolved, sites, diags, overlap, state_dir);
            // The build keys need the sites alone: made while the look may still be going on.
            if (diags.has_errors()) return;
            prepared.resize(sites.size());
            for (size_t s = 0; s < sites.size(); ++s) {
                const Loaded& l = sites[s];
                PreparedSite& p = prepared[s];
                p.options.prefix = request.prefix ? *request.prefix : l.site.site.install_prefix;
                p.options.hooks = l.hooks;
                p.keys = stack_keys(fs, l, p.options);
            }
            kept_beside = states_on_main;
        }
        if (kept_beside) {
            publisher.help_look_live();  // (a root the look's thread has not begun)
            spares_or_kept(live_looked);
            // Then, while the look goes on, this thread takes slices of its stats (the look's
            // thread posts them, share_out_helped) instead of waiting for it idle.
            help_posted_until(live_looked);
        }
    };
    const auto prepare_and_look = [&] {
        if (!overlap) return;  // (the plain order: prepared below, looked at by begin())
        if (states_on_main) {
            {
                const WakeHelpersOnExit wake;  // (after `looked` is set: the build's thread may wait for either)
                const SetOnExit looked{live_looked};  // (even when the look throws: this thread waits for it)
                const SetOnExit read{manifests_read};  // (the same)
                publisher.look_live([&] {
                                        manifests_read.store(true, std::memory_order_release);
                                        manifests_read.notify_all();
                                        heads_ready.wait(false, std::memory_order_acquire);
                                    },
                                    [&] { spares_ready.wait(false, std::memory_order_acquire); });
            }
            spares_or_kept(keyed);  // (the states are read by now: look_live waited for them)
        } else {
            publisher.look_live([&] { prepare_publish(nullptr); });  // (beside the scan on four CPUs or more)
            publisher.look_spares();  // (the states are read: their listings may be taken)
        }
    };
    if (overlap) publisher.look_start();
    run_beside(overlap, prepare_and_look, load_check_and_key);
    if (overlap) publisher.look_end();
    // Every site's findings, the rules' too, before saying why nothing is written.
    const auto refuse_site_errors = [&] {
        result.err += render_all(diags, reader_for(fs));
        result.err += "sitegen: nothing written\n";
        result.exit_code = kExitSiteErrors;
        return result;
    };
    if (diags.has_errors()) {
        join_checks(sites, diags);
        return refuse_site_errors();
    }
    if (!overlap) prepare_publish(nullptr);

    auto& next = working->next;  // what each site's state will record
    next.resize(sites.size());
    // The stacks kept as they are (unless found already), and beside that where the spares hold
    // the live files (for staging the kept ones; with no look yet, begin() looks and notes that).
    if (kept_beside) publisher.match_spares();
    else run_beside(overlap, [&] { publisher.match_spares(); }, find_kept);
    const unsigned looks = publisher.looks();
    // The rules ran meanwhile: nothing is written (begin locks and prepares the spare) for a
    // site they refuse.
    {
        const TraceSpan joining("join_checks");
        join_checks(sites, diags);
    }
    if (diags.has_errors()) return refuse_site_errors();
    PublishReport& report = working->report;
    if (!publisher.begin(diags)) {
        result.err += render_all(diags, reader_for(fs));
        result.err += "sitegen: nothing written\n";
        result.exit_code = kExitIo;
        return result;
    }
    // A look taken again (the tree changed since the first) may keep fewer stacks.
    if (publisher.looks() != looks) find_kept();
    // Each stack's files are handed to the publisher as they are rendered (it stages them in
    // the spare trees and keeps their hashes), so the build holds one stack's output at a time,
    // plus the modulefiles for the self-check.
    for (size_t s = 0; s < sites.size() && !diags.has_errors(); ++s)
        render_site(sites[s], prepared[s], publisher, last[s], next[s], diags, &early_check);
    // Errors of rendering or the self-check (a failed write is the publisher's: exit 3 below).
    if (diags.has_errors() && !publisher.io_error()) {
        publisher.discard();
        result.err += render_all(diags, reader_for(fs));
        result.err += "sitegen: nothing written\n";
        result.exit_code = kExitSiteErrors;
        return result;
    }
    // Each site's stack memo is made while the publish finishes (it needs the loaded site alone).
    const bool records = !request.dry_run && !state_dir.empty();
    std::vector<TextPieces> memo_texts(sites.size());  // (views into each site's memo as read)
    bool ok = false;
    run_beside(records && render_threads() > 1, [&] {
        for (size_t s = 0; records && s < sites.size(); ++s)
            if (sites[s].memo) {
                const TraceSpan memo("stack_memo_text");
                memo_texts[s] = stack_memo_pieces(*sites[s].memo, sites[s].site);
            }
    }, [&] { ok = publisher.finish(report, diags); });
    result.err += render_all(diags, reader_for(fs));
    if (!ok) {
        result.err += "sitegen: nothing written\n";
        result.exit_code = kExitIo;  // refused (hand edits) or failed writing
        return result;
    }
    // Each site's memos are written beside its state (other files: the file system allowing).
    if (records)
        for (size_t s = 0; s < sites.size(); ++s) {
            Result memo_result;
            run_beside(render_threads() > 1 && fs.concurrent_reads(),
                       [&] { record_memo(fs, state_dir, sites[s], memo_texts[s], memo_result); },
                       [&] { record_state(fs, request, state_dir, sites[s], last[s], next[s], report, result); });
            result.err += memo_result.err;
        }
    if (request.dry_run) {
        for (const auto& p : report.added) result.out += "add     " + p + "\n";
        for (const auto& p : report.changed) result.out += "change  " + p + "\n";
        for (const auto& p : report.removed) result.out += "remove  " + p + "\n";
    }
    std::string names;
    for (const auto& l : sites) names += (names.empty() ? "" : ", ") + l.name;
    result.out += std::string("sitegen: ") + (request.dry_run ? "would write " : "wrote ") + names + ": " +
                  plural(publisher.files(), "file") + " (" + std::to_string(report.added.size()) + " added, " +
                  std::to_string(report.changed.size()) + " changed, " +
                  std::to_string(report.removed.size()) + " removed, " +
                  std::to_string(report.unchanged) + " unchanged)\n";
    return result;
}

Result run_topology_import(const std::string& xml_path) {
    Result result;
    NodeTopology topo;
    std::string error;
    if (!load_hwloc_topology(xml_path, topo, error)) {
        result.err += "sitegen: error: " + error + "\n";
        result.exit_code = kExitIo;
        return result;
    }
    result.out = hardware_toml(topo);
    return result;
}

Result run_doctor(FileSystem& fs, const Request& request, const DoctorRequest& doctor_request) {
    Result result;
    if (request.sites.size() != 1) {
        result.err += "sitegen: error: doctor checks one site\n";
        result.exit_code = kExitUsage;
        return result;
    }
    std::error_code ec;
    const std::string& root = doctor_request.root;
    if (root.empty() || root[0] != '/' || !std::filesystem::is_directory(root, ec)) {
        result.err += "sitegen: error: --root must be an existing directory given as an absolute path: '" + root + "'\n";
        result.exit_code = kExitUsage;
        return result;
    }
    Diagnostics diags;
    std::vector<Loaded> sites;
    if (!checked_sites(fs, request, sites, diags, result)) return result;
    const Site& site = sites.front().site;
    NodeTopology topo;
    std::string error;
    if (!load_hwloc_topology(doctor_request.topology, topo, error)) {
        result.err += "sitegen: error: " + error + "\n";
        result.exit_code = kExitIo;
        return result;
    }
    const std::string prefix = request.prefix ? *request.prefix : site.site.install_prefix;
    DoctorOptions options;
    if (const DriverTraits& driver = driver_traits(site.hardware.gpu_vendor); driver.version_file) {
        options.driver_version_file = driver.version_file;
        options.driver = driver.driver;
    }
    for (const Stack& stack : site.stacks) {
        // Whether `image` is a file to find, from the runtime's and the layout's traits.
        const StackImage image = !runs_in_container(site, stack)                   ? StackImage::none
                                 : traits(site.container.runtime).image_is_name ? StackImage::named
                                                                                 : StackImage::file;
        options.stacks.push_back({stack_install_dir(prefix, stack),
                                  modulepath_of(prefix) + "/" + stack.name + "/" + stack.module_version() +
                                      traits(site.site.module_system).modulefile_suffix,
                                  image});
    }
    // Lmod searches what users `module use` (the site's paths, the stacks' tree), then the
    // MODULEPATH of this environment (the node's own, when run on the node).
    auto add_dir = [&](const std::string& dir) {
        if (!dir.empty() && std::find(options.modulepath.begin(), options.modulepath.end(), dir) == options.modulepath.end())
            options.modulepath.push_back(dir);
    };
    for (const auto& dir : site.site.module_use) add_dir(dir);
    add_dir(modulepath_of(prefix));
    if (const char* env = std::getenv("MODULEPATH")) {
        std::string list = env;
        size_t start = 0;
        while (start <= list.size()) {
            const size_t colon = list.find(':', start);
            add_dir(list.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
            if (colon == std::string::npos) break;
            start = colon + 1;
        }
    }
    options.lmod = find_lmod();
    options.run_programs = root == "/";
    auto probe = make_node_probe(root);
    std::vector<std::string> checked;
    doctor(site, topo, options, *probe, diags, checked);
    result.err += render_all(diags, reader_for(fs));
    const std::string what = site.site.name + " against " + (doctor_request.topology.empty() ? std::string("this node")
                                                                                             : doctor_request.topology) +
                             (root == "/" ? "" : " (files under " + root + ")");
    if (diags.has_errors()) {
        result.err += "sitegen doctor: " + what + ": " + plural(diags.error_count(), "mismatch", "mismatches") + "\n";
        result.exit_code = kExitSiteErrors;
        return result;
    }
    result.out += "sitegen doctor: " + what + ": no mismatches\n";
    for (const auto& line : checked) result.out += "  checked " + line + "\n";
    return result;
}

Result run_rules_list(const Request& request) {
    Result result;
    for (const auto& r : list_rules(request.rule_dirs))
        result.out += r.name + "\t" + r.description + "\t(" + r.file + ")\n";
    return result;
}

Result run_list(FileSystem& fs, const Request& request) {
    Result result;
    for (const auto& name : list_sites(fs, request.sites_dir)) {
        Site site;
        Diagnostics diags;
        load_site(fs, request.sites_dir, name, site, diags);
        result.out += name + (site.site.description.empty() ? "" : "\t" + site.site.description) + "\n";
    }
    return result;
}

}  // namespace sitegen
