// rules_memo: a run of the rules with the last run's memo reports what a run without one
// reports (same findings, at the same lines) after every kind of edit, also with the memo asked
// first on its own (rules_from_memo), and reuses the findings only while nothing the rules read
// changed; a memo cut short or changed is never trusted.
#include <catch2/catch.hpp>

#include "lua/read_log.h"
#include "lua/rules.h"
#include "lua/rules_memo.h"
#include "site/load.h"
#include "test_support.h"

using namespace sitegen;
using sitegen::test::TempDir;

namespace {

// A site of `n` stacks; stack 1 shares stack 0's name (a test rule warns about that).
std::string site_text(int n, const std::string& first_name = "PyTorch", const std::string& torch = "2.5") {
    std::string s =
        "[site]\nname = \"t\"\ndescription = \"d\"\nscheduler = \"slurm\"\nlauncher = \"srun\"\n"
        "install_prefix = \"/appl/t\"\n\n[hardware]\ngpu_vendor = \"amd\"\ndevices_per_node = 2\n"
        "cores_per_node = 16\ndevice_cores = [\"0-7\", \"8-15\"]\n\n[collectives]\nlibrary = \"rccl\"\n\n"
        "[container]\nruntime = \"singularity\"\nimage_dir = \"/images\"\n\n[python]\nlayout = \"container-venv\"\n"
        "version = \"3.12\"\nconda_root = \"/opt/conda\"\nconda_env = \"pytorch\"\nvenv = \"/user-software/venv\"\n";
    for (int i = 0; i < n; ++i) {
        const std::string v = std::to_string(i);
        s += "\n[[stacks]]\nname = \"" + (i <= 1 ? first_name : "Stack" + v) + "\"\nversion = \"2." + v +
             "\"\nimage = \"p" + v + ".sif\"\n\n[stacks.components]\ntorch = \"" + (i == 2 ? torch : "2." + v) + "\"\n";
    }
    return s;
}

// A rule file that reads every stack's name (and whether stack 0's version was written), and
// warns at each name seen twice.
const std::string kNamesRule = R"(-- Test rule: warns at stack names seen twice.
rule {
  name = "memo-names",
  check = function(site)
    local seen = {}
    for _, s in ipairs(site.stacks) do
      if seen[s.name] then warn_at(pathof(s, "name"), "name " .. s.name .. " again") end
      seen[s.name] = true
    end
    if declared("stacks.0.version") then report{severity = "note", path = "stacks.0", message = "declared"} end
  end,
}
)";

struct Outcome {
    std::string findings;
    bool reused = false;
    std::string next;
};

// The rules of the site dir `dir` (its rules/ beside site.toml) over `text`, with the memo
// `memo` (null: none). `split`: as a build does it, the memo asked first (rules_from_memo),
// then the rules run without asking it again when it does not hold.
Outcome run(const TempDir& dir, const std::string& text, const std::string* memo, const std::string& identity = "id",
            bool split = false) {
    auto fs = make_disk_fs();
    Site site;
    Diagnostics load_diags;
    REQUIRE(load_site_text(*fs, dir.file("site.toml"), text, site, load_diags));
    Diagnostics diags;
    RulesMemo m;
    m.identity = identity;
    if (memo) m.text = *memo;
    if (split && memo) {
        if (!rules_from_memo(site, {}, diags, m)) {
            CHECK(diags.all().empty());  // (nothing added when it does not hold)
            run_rules(site, {}, diags, &m, true);
        }
    } else {
        run_rules(site, {}, diags, memo ? &m : nullptr);
    }
    Outcome out;
    for (const Diagnostic& d : diags.all())
        out.findings += d.where.file + ":" + std::to_string(d.where.line) + ":" + std::to_string(d.where.column) + " " +
                        std::to_string(static_cast<int>(d.severity)) + " " + d.message + "\n";
    out.reused = m.reused;
    out.next = m.next;
    return out;
}

// `text` run with `memo` reports what a run without a memo reports; whether it reused it.
// (The memo asked first, as a build does, gives the same as run_rules with it.)
bool same_as_fresh(const TempDir& dir, const std::string& text, const std::string& memo) {
    const Outcome fresh = run(dir, text, nullptr), memoized = run(dir, text, &memo);
    CHECK(memoized.findings == fresh.findings);
    const Outcome split = run(dir, text, &memo, "id", true);
    CHECK(split.findings == fresh.findings);
    CHECK(split.reused == memoized.reused);
    CHECK(split.next == memoized.next);
    return memoized.reused;
}

}  // namespace

TEST_CASE("rules memo: its text reads back, and not when cut short or changed", "[rules_memo]") {
    RulesRecord r{"k", {"F.stacks", "F.stacks[].name", "D" + escape_key("a\nb")}, "digest", {}};
    r.findings.push_back({Severity::warning, "stacks.1.name", "line one\nline two [rule x]"});
    r.findings.push_back({Severity::note, "stacks", ""});
    const std::string text = rules_memo_text(r);
    RulesRecord back;
    REQUIRE(parse_rules_memo(text, back));
    CHECK(back.key == r.key);
    CHECK(back.reads == r.reads);
    CHECK(back.digest == r.digest);
    REQUIRE(back.findings.size() == 2);
    CHECK(back.findings[0].message == r.findings[0].message);
    CHECK(back.findings[1].severity == Severity::note);
    CHECK(rules_memo_text(back) == text);
    for (size_t n = 0; n < text.size(); n += 5) CHECK_FALSE(parse_rules_memo(text.substr(0, n), back));
    for (size_t i = 0; i < text.size(); i += 3) {
        std::string changed = text;
        changed[i] = static_cast<char>(changed[i] ^ 1);
        CHECK_FALSE(parse_rules_memo(changed, back));
    }
}

TEST_CASE("rules memo: findings are reused exactly while nothing the rules read changed", "[rules_memo]") {
    TempDir dir("rules-memo");
    dir.write("rules/names.lua", kNamesRule);
    const std::string text = site_text(6);
    const Outcome first = run(dir, text, nullptr);
    REQUIRE(first.next.empty());  // (no memo given: none made)
    const std::string none;
    const Outcome made = run(dir, text, &none);
    CHECK_FALSE(made.reused);
    REQUIRE_FALSE(made.next.empty());
    CHECK(made.findings == first.findings);
    CHECK(made.findings.find("name PyTorch again [rule memo-names]") != std::string::npos);
    CHECK(made.findings.find("declared [rule memo-names]") != std::string::npos);
    const std::string& memo = made.next;
    // The same site: reused, and the same memo kept.
    CHECK(same_as_fresh(dir, text, memo));
    CHECK(run(dir, text, &memo).next == memo);
    // What the rules do not read: a component's version; lines moved (the findings move too).
    CHECK(same_as_fresh(dir, site_text(6, "PyTorch", "9.9"), memo));
    CHECK(same_as_fresh(dir, "# moved\n\n\n" + text, memo));
    // What they read: a name, the number of stacks, whether a key was written.
    CHECK_FALSE(same_as_fresh(dir, site_text(6, "Other"), memo));
    CHECK_FALSE(same_as_fresh(dir, site_text(7), memo));
    std::string undeclared = text;
    undeclared.erase(undeclared.find("version = \"2.0\"\n"), 16);
    CHECK_FALSE(same_as_fresh(dir, undeclared, memo));
    // Another sitegen, a changed rule file, or a memo with a byte changed: run again.
    CHECK_FALSE(run(dir, text, &memo, "another sitegen").reused);
    std::string flipped = memo;
    flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 1);
    CHECK_FALSE(same_as_fresh(dir, text, flipped));
    dir.write("rules/names.lua", kNamesRule + "-- one more line\n");
    CHECK_FALSE(same_as_fresh(dir, text, memo));
}

TEST_CASE("rules memo: a run in which a rule failed is not kept", "[rules_memo]") {
    TempDir dir("rules-memo");
    dir.write("rules/fails.lua", "-- Test rule: fails.\nrule { name = \"memo-fails\", check = function(site) error(\"no\") end }\n");
    const std::string none;
    const Outcome o = run(dir, site_text(3), &none);
    CHECK(o.findings.find("rule failed") != std::string::npos);
    CHECK(o.next.empty());
}
