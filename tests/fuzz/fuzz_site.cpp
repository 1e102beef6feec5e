// libFuzzer target: arbitrary bytes as a site file -> parsed whole and in pieces (the same
// table or the same error) -> loaded with and without a stack memo of itself (the same site,
// regions and findings) -> load -> check -> the built-in Lua rules
// -> every emitter -> the self-check of the generated modulefiles -> rendering every finding
// (with excerpts of the input) -> publishing into memory, twice (the second must change
// nothing). Any crash, hang, sanitizer report or escaped exception is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "lua/rules.h"
#include "lua/selfcheck.h"
#include "lua/supervisor.h"
#include "out/publish.h"
#include "pipeline.h"
#include "render/emit.h"
#include "site/check.h"
#include "site/load.h"
#include "site/model_text.h"
#include "site/stack_memo.h"
#include "site/toml_pieces.h"

namespace {

// Lua runs in this process: libFuzzer sees only this process's coverage. (The hook limits
// still apply; what only the supervisor can stop, C calls on hostile rule code, is not in
// reach of a site file: the rules are the built-in ones.)
const bool in_process = [] {
    sitegen::set_lua_isolation(sitegen::LuaIsolation::in_process);
    return true;
}();

// toml++'s table or first error (message and position).
template <typename Parse>
std::pair<toml::table, std::string> outcome(Parse parse) {
    try {
        return {parse(), ""};
    } catch (const toml::parse_error& e) {
        return {toml::table{}, std::string(e.description()) + "@" + std::to_string(e.source().begin.line) + ":" +
                                   std::to_string(e.source().begin.column)};
    }
}

// The site file in pieces as small as they go gives what one parse gives.
void check_pieces(const std::string& text) {
    const sitegen::TomlOutline outline = sitegen::outline_toml(text, sitegen::kMaxDottedKeyDepth);
    if (outline.too_deep) return;  // (never parsed)
    const auto whole = outcome([&] { return toml::parse(text, std::string_view("f")); });
    const auto pieces = outcome([&] { return sitegen::parse_in_pieces(text, "f", outline, {0, 1, 2, false}); });
    if (whole.second != pieces.second || !(whole.first == pieces.first)) std::abort();
}

// Everything a load of `text` gives, as text: the model, every stack, every region, the
// findings in order; `site` keeps the model (for the memo the load leaves).
std::string loaded(sitegen::FileSystem& fs, const std::string& text, sitegen::StackMemo* memo, sitegen::Site& site) {
    using namespace sitegen;
    Diagnostics diags;
    load_site_text(fs, "sites/fuzz/site.toml", text, site, diags, memo);
    std::string out = site_wide_text(site);
    for (const Stack& s : site.stacks) out += "\n" + stack_text(s) + "|" + s.python.environment;
    for (const auto& [key, r] : site.regions.all())
        out += "\n" + key + "=" + r.file + ":" + std::to_string(r.line) + ":" + std::to_string(r.column);
    for (const Diagnostic& d : diags.all())
        out += "\n" + d.where.file + ":" + std::to_string(d.where.line) + ":" + std::to_string(d.where.column) + " " +
               d.message + " / " + d.hint;
    return out + "\n" + std::to_string(diags.error_count()) + " " + std::to_string(diags.warning_count());
}

// A load that reads entries back from the memo a load of the same text left gives what a load
// without a memo gives.
void check_memo(sitegen::FileSystem& fs, const std::string& text) {
    sitegen::Site plain_site, first_site, second_site;
    const std::string plain = loaded(fs, text, nullptr, plain_site);
    sitegen::StackMemo first, second;
    first.identity = second.identity = "fuzz";
    if (loaded(fs, text, &first, first_site) != plain) std::abort();
    sitegen::read_stack_memo(sitegen::stack_memo_text(first, first_site), second);
    if (loaded(fs, text, &second, second_site) != plain) std::abort();
}

// The rules run with the memo a run of the same site left report what a run without one
// reports, and a memo that was left is used.
void check_rules_memo(const sitegen::Site& site) {
    using namespace sitegen;
    const auto shown = [](const Diagnostics& d) {
        std::string out;
        for (const Diagnostic& x : d.all())
            out += x.where.file + ":" + std::to_string(x.where.line) + ":" + std::to_string(x.where.column) + " " +
                   x.message + "\n";
        return out;
    };
    Diagnostics plain, first, again;
    run_rules(site, {}, plain);
    RulesMemo memo;
    memo.identity = "fuzz";
    run_rules(site, {}, first, &memo);
    memo.text = memo.next;
    run_rules(site, {}, again, &memo);
    if (shown(first) != shown(plain) || shown(again) != shown(plain)) std::abort();
    if (!memo.text.empty() && !memo.reused) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace sitegen;
    (void)in_process;
    MemoryFs fs;
    // A fragment the input may extend, so the extends path is exercised too.
    fs.files["sites/shared/frag.toml"] = {"[hardware]\nnics = [\"hsn0\"]\n", false};
    const std::string text(reinterpret_cast<const char*>(data), size);
    check_pieces(text);
    fs.files["sites/fuzz/site.toml"] = {text, false};
    check_memo(fs, text);
    Site site;
    Diagnostics diags;
    const SourceReader reader = [&fs](const std::string& path, std::string& out) {
        std::string error;
        return fs.read(path, out, error);
    };
    if (load_site_text(fs, "sites/fuzz/site.toml", text, site, diags)) {
        check_site(site, site.site.name, diags);
        if (!diags.has_errors()) {
            check_rules_memo(site);
            run_rules(site, {}, diags);
        }
    }
    if (diags.has_errors()) {
        (void)render_all(diags, reader);
        return 0;
    }
    PlanOptions options;
    options.prefix = site.site.install_prefix;
    OutputList files = emit_all(site, options);
    self_check_modulefiles(files, diags);
    (void)render_all(diags, reader);
    if (diags.has_errors()) return 0;
    // Publish into memory, then again: the second publish must succeed and change nothing.
    const std::vector<std::string> roots = {modules_root(site), easyconfigs_root(site)};
    bool ok = true;
    for (int round = 0; round < 2 && ok; ++round) {
        PublishReport report;
        Diagnostics published;
        ok = publish(fs, roots, files, {"out", false, false}, report, published);
        (void)render_all(published, reader);
        if (round == 1 && (!ok || !report.added.empty() || !report.changed.empty() || !report.removed.empty())) std::abort();
    }
    return 0;
}
