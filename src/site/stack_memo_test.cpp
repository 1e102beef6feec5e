// stack_memo: a load that reads entries back from the last load's memo gives what a load
// without one gives (site, every region, findings), after every kind of edit, and never trusts
// a broken memo.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "site/load.h"
#include "site/model_text.h"
#include "site/stack_memo.h"
#include "site/toml_reader.h"

using namespace sitegen;

namespace {

const std::string kPath = SITEGEN_SOURCE_DIR "/sites/memo/site.toml";

// A site head (a container site: stacks start from its [python]) and `n` stacks, some with
// their own python, install steps, multi-line strings and comments, so entries differ in shape.
std::string head(const std::string& python_version = "3.12") {
    return "# a memo test site\n[site]\nname = \"memo\"\ndescription = \"d\"\nscheduler = \"slurm\"\n"
           "launcher = \"srun\"\ninstall_prefix = \"/appl/memo\"\n\n[hardware]\ngpu_vendor = \"amd\"\n"
           "devices_per_node = 2\ncores_per_node = 16\ndevice_cores = [\"0-7\", \"8-15\"]\n\n"
           "[collectives]\nlibrary = \"rccl\"\n\n[container]\nruntime = \"singularity\"\nimage_dir = \"/images\"\n\n"
           "[python]\nlayout = \"container-venv\"\nversion = \"" + python_version + "\"\nconda_root = \"/opt/conda\"\n"
           "conda_env = \"pytorch\"\nvenv = \"/user-software/venv\"\n";
}

std::string stack(int i) {
    const std::string n = std::to_string(i);
    std::string s = "\n[[stacks]]  # entry " + n + "\nname = \"PyTorch\"\nversion = \"2." + n + "\"\n" +
                    "versionsuffix = \"-rocm\"\nimage = \"pytorch-" + n + ".sif\"\n" +
                    "description = \"\"\"Stack " + n + "\n[[stacks]] in a string\"\"\"\n" + "keywords = [\"a\", \"b" + n +
                    "\"]\n\n[stacks.components]\ntorch = \"2." + n + "\"\nDeepSpeed = \"0.14\"\n\n[stacks.env]\nID = \"" + n +
                    "\"\n";
    if (i % 3 == 1) s += "\n[stacks.python]\nversion = \"3.1" + std::to_string(i % 10) + "\"\n";
    if (i % 4 == 2)
        s += "\n[[stacks.install]]\npackages = [\"torch\"]\nindex_url = \"https://example.org/" + n + "\"\n"
             "\n[[stacks.install]]\npackages = [\"DeepSpeed\"]\npip_flags = [\"--no-deps\"]\n";
    return s;
}

std::string site(int n, const std::string& python_version = "3.12") {
    std::string s = head(python_version);
    for (int i = 0; i < n; ++i) s += stack(i);
    return s;
}

// Everything a load gives: the site's text, every stack's, every region, the files, the
// environment files' bytes, and the findings in the order added.
struct Outcome {
    std::string site, findings;
    size_t taken = 0;
    std::string memo;  // the memo this load leaves
};

Outcome load(const std::string& text, const std::string* memo_text, const std::string& path = kPath) {
    auto fs = make_disk_fs();
    Site site;
    Diagnostics diags;
    StackMemo memo;
    memo.identity = "test";
    if (memo_text) read_stack_memo(*memo_text, memo);
    load_site_text(*fs, path, text, site, diags, memo_text ? &memo : nullptr);
    Outcome out;
    out.site = site_wide_text(site);
    for (const Stack& s : site.stacks) out.site += "\n" + stack_text(s) + " env:" + s.python.environment;
    for (const auto& [key, r] : site.regions.all())
        out.site += "\n" + key + "=" + r.file + ":" + std::to_string(r.line) + ":" + std::to_string(r.column);
    for (const auto& f : site.files) out.site += "\nfile " + f;
    for (const Diagnostic& d : diags.all())
        out.findings += d.where.file + ":" + std::to_string(d.where.line) + ":" + std::to_string(d.where.column) + " " +
                        std::to_string(static_cast<int>(d.severity)) + " " + d.message + " / " + d.hint + "\n";
    out.findings += std::to_string(diags.error_count()) + " " + std::to_string(diags.warning_count());
    out.taken = memo.taken;
    if (memo_text) out.memo = stack_memo_text(memo, site);
    // Each stack read back holds its text in its entry (a build key takes it from there).
    for (const StackMemo::Piece& p : memo.pieces)
        if (!p.entry.text.empty()) {
            REQUIRE(p.stack < site.stacks.size());
            CHECK(stack_memo_stack_text(p.entry.text) == stack_text(site.stacks[p.stack]));
        }
    return out;
}

// `text` loaded with the memo `memo_text` gives what it gives loaded without one; the count
// of entries read back from the memo.
size_t check_same(const std::string& text, const std::string& memo_text, const std::string& path = kPath) {
    const Outcome fresh = load(text, nullptr, path), memo = load(text, &memo_text, path);
    CHECK(memo.findings == fresh.findings);
    CHECK(memo.site == fresh.site);
    return memo.taken;
}

// The memo a load of `text` leaves (starting from none).
std::string memo_of(const std::string& text) {
    const std::string none;
    return load(text, &none).memo;
}

}  // namespace

TEST_CASE("stack memo: a stack's text reads back as the stack", "[stack_memo]") {
    auto fs = make_disk_fs();
    Site loaded;
    Diagnostics diags;
    REQUIRE(load_site_text(*fs, kPath, site(12), loaded, diags));
    REQUIRE(loaded.stacks.size() == 12);
    for (const Stack& s : loaded.stacks) {
        const std::string text = stack_text(s);
        Stack back;
        REQUIRE(read_stack_text(text, back));
        CHECK(stack_text(back) == text);
        // Cut short anywhere, or with a byte more, it is refused.
        for (size_t n = 0; n < text.size(); n += 7) CHECK_FALSE(read_stack_text(text.substr(0, n), back));
        CHECK_FALSE(read_stack_text(text + ")", back));
    }
}

TEST_CASE("stack memo: a load with the last load's memo gives the same site, regions and findings",
          "[stack_memo]") {
    const std::string text = site(30);
    const std::string memo = memo_of(text);
    // Every entry but the first (always parsed: the region of `stacks` is its array's) is read back.
    CHECK(check_same(text, memo) == 29);
    // Its memo is the same memo again.
    CHECK(load(text, &memo).memo == memo);
    // The edits a sysadmin makes, each against the memo of the text before it.
    CHECK(check_same("# a comment\n\n" + text, memo) == 29);  // every line moved
    std::string edited = text;
    edited.replace(edited.find("version = \"2.7\""), 15, "version = \"2.70\"");
    CHECK(check_same(edited, memo) == 28);  // one entry changed
    CHECK(check_same(head() + stack(99) + text.substr(head().size()), memo) == 30);  // one added first: all renumbered
    CHECK(check_same(head() + text.substr(head().size() + stack(0).size()), memo) == 28);  // the first removed
    CHECK(check_same(site(30, "3.11"), memo) == 0);  // the [python] every stack starts from changed
    // An entry with a finding is not kept; the finding comes again.
    std::string unknown = text;
    unknown.insert(unknown.find("version = \"2.9\""), "versoin = \"typo\"\n");
    const std::string with_finding = memo_of(unknown);
    CHECK(check_same(unknown, with_finding) == 28);
    CHECK(check_same(text, with_finding) == 28);
    // A later entry that does not parse: toml++'s own error, as without a memo.
    CHECK(check_same(text + "\n[[stacks]]\nname = \"x\nversion = 1\n", memo) == 0);
    CHECK(check_same(text + "\n[[stacks]]\nname = \"a\"\nname = \"b\"\n", memo) == 0);
    // Texts that do not split at their entries are loaded whole.
    CHECK(check_same(text + "\n[[profiles]]\nname = \"p\"\n", memo) == 0);
    CHECK(check_same("stacks = []\n" + text, memo) == 0);
    CHECK(check_same(text, memo, SITEGEN_SOURCE_DIR "/sites/other/site.toml") == 0);  // regions name the file
}

TEST_CASE("stack memo: a memo of another sitegen, cut short or with a byte changed, is not trusted", "[stack_memo]") {
    const std::string text = site(8);
    const std::string memo = memo_of(text);
    REQUIRE(check_same(text, memo) == 7);
    for (size_t n = 0; n < memo.size(); n += 13) check_same(text, memo.substr(0, n));
    for (size_t at = 0; at < memo.size(); at += 11) {
        std::string bent = memo;
        bent[at] = static_cast<char>(bent[at] ^ 0x01);
        check_same(text, bent);
        bent[at] = '9';
        check_same(text, bent);
    }
    // Another sitegen's entries never match (its identity is part of every key).
    StackMemo other;
    other.identity = "another";
    read_stack_memo(memo, other);
    CHECK(other.entries.size() == 8);  // (the first entry is kept too: it is read from the text)
    CHECK(stack_memo_key("another", kPath, "x") != stack_memo_key("test", kPath, "x"));
}

TEST_CASE("stack memo: every site and every fuzz corpus input loads as without a memo", "[stack_memo]") {
    size_t n = 0, taken = 0;
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(SITEGEN_SOURCE_DIR "/sites"))
        if (std::filesystem::exists(e.path() / "site.toml")) files.push_back(e.path() / "site.toml");
    for (const auto& e : std::filesystem::directory_iterator(SITEGEN_SOURCE_DIR "/tests/fuzz/corpus"))
        files.push_back(e.path());
    for (const auto& file : files) {
        std::ifstream in(file, std::ios::binary);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        INFO(file.string());
        const std::string path = file.extension() == ".toml" ? file.string() : kPath;
        const std::string none;
        taken += check_same(text, load(text, &none, path).memo, path);
        ++n;
    }
    CHECK(n > 1000);
    CHECK(taken > 100);  // (the memo path is taken: most corpus inputs hold one or two entries)
}

TEST_CASE("stack memo: a first load on several threads parses its entries in parts, as one parse", "[stack_memo]") {
    const std::string text = site(1200);  // ~500 KB: parts of at least 128 KiB
    ::setenv("SITEGEN_THREADS", "4", 1);
    const std::string none;
    const Outcome fresh = load(text, nullptr), first = load(text, &none);
    std::string edited = text;
    edited.replace(edited.find("version = \"2.700\""), 17, "version = \"2.7000\"");
    const size_t taken = check_same(edited, first.memo);
    ::unsetenv("SITEGEN_THREADS");
    CHECK(first.site == fresh.site);
    CHECK(first.findings == fresh.findings);
    CHECK(taken == 1198);
}

TEST_CASE("stack memo: written back, its entries are views of the memo read, as they were written", "[stack_memo]") {
    const std::string text = site(30);
    const std::string written = memo_of(text);
    auto fs = make_disk_fs();
    const auto pieces_of = [&](const std::string& memo_text, StackMemo& memo) {
        memo.identity = "test";
        read_stack_memo(memo_text, memo);
        Site site;
        Diagnostics diags;
        REQUIRE(load_site_text(*fs, kPath, text, site, diags, &memo));
        return stack_memo_pieces(memo, site);
    };
    StackMemo memo;
    const TextPieces pieces = pieces_of(written, memo);
    CHECK(pieces.joined() == written);
    CHECK(pieces.same_as(memo.text.view()));
    // The header, the first entry (always parsed: made again), then the other 29 entries' records
    // as one view of the memo's text.
    REQUIRE(pieces.pieces.size() == 3);
    const std::string_view read = memo.text.view();
    CHECK((pieces.pieces[2].data() > read.data() && pieces.pieces[2].data() + pieces.pieces[2].size() == read.data() + read.size()));
    // A record its reader takes but sitegen does not write so (a length with a leading zero) is
    // written anew as sitegen writes it.
    std::string bent = written;
    // (A record: key, space, digest, space, length, newline, the entry, newline.)
    const size_t first = bent.find('\n') + 1, first_length = first + 130;
    const size_t first_end = bent.find('\n', first_length);
    const size_t second = first_end + 1 + std::stoul(bent.substr(first_length, first_end - first_length)) + 1;
    REQUIRE(bent.substr(second + 64, 1) == " ");
    bent.insert(second + 130, "0");
    StackMemo bent_memo;
    const TextPieces again = pieces_of(bent, bent_memo);
    CHECK(bent_memo.taken == 29);
    CHECK(again.joined() == written);
    CHECK_FALSE(again.same_as(bent_memo.text.view()));
}
