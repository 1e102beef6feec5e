// Build state and build-key text: round trip, what changes a key, and publish's use of kept
// files and recorded stats (in memory).
#include <catch2/catch.hpp>

#include <map>

#include "out/manifest.h"
#include "out/publish.h"
#include "out/sha256.h"

using namespace sitegen;

namespace {
// The stats of known files (without the places of their lines).
std::map<std::string, FileStat> stats_of(const KnownFiles& files) {
    std::map<std::string, FileStat> out;
    for (const auto& [path, file] : files) out[path] = file.stat;
    return out;
}
}  // namespace

TEST_CASE("a state's directories are in path order, also when its lines are not (edited by hand)", "[manifest]") {
    BuildState state;
    state.manifests["modules-out/s"] = {10, 20, 30};
    for (const char* dir : {"modules-out/s/b", "modules-out/s", "modules-out/s/a-b", "modules-out/s/a/b", "modules-out/s/a"})
        state.dirs[dir] = {1, 2, 3, 0755};
    const std::string text = state_text(state);
    const auto dir_lines = [](const std::string& t) {
        std::vector<std::string> out;
        for (size_t at = t.find("\ndir "); at != std::string::npos; at = t.find("\ndir ", at + 1))
            out.push_back(t.substr(at + 1, t.find('\n', at + 1) - at - 1));
        return out;
    };
    const std::vector<std::string> in_order = {
        "dir 1 2 3 493 modules-out/s", "dir 1 2 3 493 modules-out/s/a", "dir 1 2 3 493 modules-out/s/a-b",
        "dir 1 2 3 493 modules-out/s/a/b", "dir 1 2 3 493 modules-out/s/b"};
    CHECK(dir_lines(text) == in_order);
    // The lines reversed: read the same, written back in order.
    std::string reversed = text;
    const size_t first = reversed.find("dir "), end = reversed.rfind("dir ");
    const size_t last_end = reversed.find('\n', end) + 1;
    std::string block;
    for (auto it = in_order.rbegin(); it != in_order.rend(); ++it) block += *it + "\n";
    reversed.replace(first, last_end - first, block);
    REQUIRE(dir_lines(reversed) != in_order);
    BuildState back;
    REQUIRE(parse_state(reversed, back));
    CHECK(back.dirs == state.dirs);
    CHECK(state_text(back) == text);
}

TEST_CASE("the build state reads back as written", "[manifest]") {
    BuildState state;
    state.manifests["modules-out/s"] = {10, 20, 30};
    state.looked["modules-out/s"] = 1795506803154931015ULL;
    state.looked["easyconfigs-out/s"] = 7;
    state.dirs["modules-out/s"] = {100, 1795506803154931000ULL, 599980, 0755};
    state.stacks["PyTorch/2.3.1-x"] = {std::string(64, 'b'), true, {"modules-out/s/modulefiles/PyTorch/2.3.1-x.lua"}};
    state.stacks["PyTorch/2.4"] = {std::string(64, 'c'), false, {"modules-out/s/software/PyTorch/2.4/bin/a b"}};
    state.files["modules-out/s/modulefiles/PyTorch/2.3.1-x.lua"] = {4260, 1795506803154931015ULL, 599988, 0644};
    state.files["modules-out/s/software/PyTorch/2.4/bin/a b"] = {1, 2, 3};
    const std::string text = state_text(state);
    CHECK(text.find("stack bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb rebuilt PyTorch/2.3.1-x\n"
                    "file 4260 1795506803154931015 599988 420 modules-out/s/modulefiles/PyTorch/2.3.1-x.lua\n") !=
          std::string::npos);
    BuildState back;
    REQUIRE(parse_state(text, back));
    CHECK(back.manifests == state.manifests);
    CHECK(back.looked == state.looked);
    CHECK(back.dirs == state.dirs);
    CHECK(text.find("looked 1795506803154931015 modules-out/s\n") != std::string::npos);
    CHECK(stats_of(back.files) == stats_of(state.files));
    // Each file with the place of its line (in the text's order: stack by stack), which each
    // stack's first file gives its stack.
    CHECK(back.files_read == 2);
    CHECK(back.files.at("modules-out/s/modulefiles/PyTorch/2.3.1-x.lua").line == 0);
    CHECK(back.files.at("modules-out/s/software/PyTorch/2.4/bin/a b").line == 1);
    CHECK(back.stacks["PyTorch/2.3.1-x"].first_line == 0);
    CHECK(back.stacks["PyTorch/2.4"].first_line == 1);
    CHECK(state.files.at("modules-out/s/modulefiles/PyTorch/2.3.1-x.lua").line == KnownFile::kNoLine);
    // A stack whose file lines are not one run (a state edited by hand: its "stack" line twice)
    // gives no first line: its files are found by their paths.
    std::string twice = text;
    const std::string lines_of_24 = "stack " + std::string(64, 'c') + " kept PyTorch/2.4\nfile 1 2 3 0 modules-out/s/software/PyTorch/2.4/bin/a b\n";
    REQUIRE(twice.find(lines_of_24) != std::string::npos);
    twice.insert(twice.find("stack " + std::string(64, 'b')), lines_of_24);
    twice.replace(twice.find("bin/a b\n", twice.rfind(lines_of_24)), 8, "bin/c\n");
    BuildState edited;
    REQUIRE(parse_state(twice, edited));
    CHECK(edited.stacks["PyTorch/2.4"].files.size() == 2);
    CHECK(edited.stacks["PyTorch/2.4"].first_line == KnownFile::kNoLine);
    CHECK(edited.stacks["PyTorch/2.3.1-x"].first_line == 1);
    REQUIRE(back.stacks.size() == 2);
    CHECK(back.stacks["PyTorch/2.4"].files == std::vector<std::string_view>{"modules-out/s/software/PyTorch/2.4/bin/a b"});
    CHECK_FALSE(back.stacks["PyTorch/2.4"].rebuilt);
    CHECK(back.stacks["PyTorch/2.3.1-x"].rebuilt);
    CHECK_FALSE(parse_state(std::string_view("# something else\n"), back));
    CHECK(back.stacks.empty());
    CHECK_FALSE(parse_state(text + "garbage line\n", back));
}

TEST_CASE("a build state read up to its head, then its stacks, is the state read whole", "[manifest]") {
    BuildState state;
    state.manifests["modules-out/s"] = {10, 20, 30};
    state.looked["modules-out/s"] = 5;
    state.dirs["modules-out/s"] = {100, 200, 300, 0755};
    state.spares["modules-out/s"] = {{4, 5, 6, 0755}, "f 8 a.lua\n"};
    state.stacks["A/1"] = {std::string(64, 'a'), true, {"modules-out/s/a/1.lua", "modules-out/s/a/1/run"}};
    state.stacks["B/2"] = {std::string(64, 'b'), false, {"modules-out/s/b/2.lua"}};
    state.files["modules-out/s/a/1.lua"] = {1, 2, 3, 0644};
    state.files["modules-out/s/a/1/run"] = {4, 5, 6, 0755};
    state.files["modules-out/s/b/2.lua"] = {7, 8, 9, 0644};
    const std::string text = state_text(state);
    BuildState whole, staged;
    REQUIRE(parse_state(std::string(text), whole));
    REQUIRE(parse_state(std::string(text), staged, StateParts::head));
    // The head: all a look needs, and no stack yet.
    CHECK(staged.manifests == state.manifests);
    CHECK(staged.looked == state.looked);
    CHECK(staged.dirs == state.dirs);
    CHECK(staged.spares.at("modules-out/s").text() == "f 8 a.lua\n");
    // A listing read with the text kept is a view into it; else a copy (the text may go).
    CHECK(staged.spares.at("modules-out/s").text().data() > staged.text.data());
    CHECK(staged.spares.at("modules-out/s").lines.empty());
    BuildState copied;
    REQUIRE(parse_state(text, copied));
    CHECK(copied.spares.at("modules-out/s").read.empty());
    CHECK(copied.spares.at("modules-out/s").lines == "f 8 a.lua\n");
    CHECK(staged.stacks.empty());
    CHECK(staged.files.empty());
    // Then the stacks: as read whole, line spans included; once.
    REQUIRE(parse_state_stacks(staged));
    CHECK(staged.files == whole.files);
    REQUIRE(staged.stacks.size() == 2);
    for (const auto& [id, record] : whole.stacks) {
        const auto& other = staged.stacks.at(id);
        CHECK((other.key == record.key && other.rebuilt == record.rebuilt && other.files == record.files));
        CHECK((other.lines_at == record.lines_at && other.lines_size == record.lines_size));
        CHECK(other.first_line == record.first_line);
    }
    CHECK(staged.file_lines("A/1", 2) == whole.file_lines("A/1", 2));
    CHECK(parse_state_stacks(staged));
    CHECK(staged.stacks.size() == 2);
    CHECK(parse_state_stacks(whole));  // (read whole: nothing left)
    CHECK(whole.stacks.size() == 2);
    // A head line among the stacks is not a state's: the stacks are dropped, the head (another
    // thread may be reading it) stays.
    BuildState odd;
    REQUIRE(parse_state(text + "dir 1 2 3 493 modules-out/s/x\n", odd, StateParts::head));
    CHECK_FALSE(parse_state_stacks(odd));
    CHECK(odd.stacks.empty());
    CHECK(odd.files.empty());
    CHECK(odd.dirs == state.dirs);
    CHECK_FALSE(parse_state(text + "dir 1 2 3 493 modules-out/s/x\n", odd));
    // Only a state's parts are read.
    CHECK_FALSE(parse_state(std::string(text), odd, StateParts::stacks));
}

TEST_CASE("a spare's listing reads back as written, in the state too", "[manifest]") {
    TreeEntry dir{"modulefiles", TreeEntry::Type::dir, 0755, "", 60, 1795506803154931015ULL, 7};
    TreeEntry file{"modulefiles/a b.lua", TreeEntry::Type::file, 0, "", 0, 0, 8};
    std::string lines;
    REQUIRE(append_listing_line(lines, dir));
    REQUIRE(append_listing_line(lines, file));
    CHECK(lines == "d 60 1795506803154931015 7 493 modulefiles\nf 8 modulefiles/a b.lua\n");
    // What a listing cannot hold.
    std::string unchanged = lines;
    CHECK_FALSE(append_listing_line(unchanged, TreeEntry{"link", TreeEntry::Type::symlink}));
    CHECK_FALSE(append_listing_line(unchanged, TreeEntry{"a\nb", TreeEntry::Type::file}));
    CHECK(unchanged == lines);
    // Read back: the directories with their stat, the files as views into the lines; and
    // lines that are not a listing's.
    std::vector<TreeEntry> dirs;
    std::vector<ListedFile> files;
    REQUIRE(parse_listing(lines, dirs, files));
    REQUIRE(dirs.size() == 1);
    CHECK((dirs[0].path == dir.path && dirs[0].type == dir.type && stat_of(dirs[0]) == stat_of(dir)));
    REQUIRE(files.size() == 1);
    CHECK((files[0].path == file.path && files[0].ino == file.ino));
    CHECK((files[0].path.data() >= lines.data() && files[0].path.data() < lines.data() + lines.size()));
    CHECK_FALSE(parse_listing("x 1 a\n", dirs, files));
    CHECK_FALSE(parse_listing("f one a\n", dirs, files));
    CHECK_FALSE(parse_listing("f 1 a", dirs, files));
    CHECK_FALSE(parse_listing("f 1 \n", dirs, files));
    // In the state, after the manifests.
    BuildState state;
    state.manifests["modules-out/s"] = {10, 20, 30};
    state.spares["modules-out/s"] = {{4, 5, 6, 0755}, lines};
    BuildState read;
    REQUIRE(parse_state(state_text(state), read));
    REQUIRE(read.spares.count("modules-out/s"));
    CHECK(read.spares["modules-out/s"].top == state.spares["modules-out/s"].top);
    CHECK(read.spares["modules-out/s"].text() == lines);
    CHECK(read.manifests == state.manifests);
}

TEST_CASE("a kept stack's state lines are the last state's, copied as they were read", "[manifest]") {
    BuildState state;
    state.manifests["modules-out/s"] = {10, 20, 30};
    state.stacks["A/1"] = {std::string(64, 'a'), true, {"modules-out/s/a/1.lua", "modules-out/s/a/1/run"}};
    state.stacks["B/2"] = {std::string(64, 'b'), true, {"modules-out/s/b/2.lua"}};
    state.files["modules-out/s/a/1.lua"] = {1, 2, 3, 0644};
    state.files["modules-out/s/a/1/run"] = {4, 5, 6, 0755};
    state.files["modules-out/s/b/2.lua"] = {7, 8, 9, 0644};
    std::string text = state_text(state);
    BuildState last;
    REQUIRE(parse_state(std::move(text), last));  // (kept, with each stack's span of file lines)
    const auto& a = last.stacks.at("A/1");
    CHECK(last.text.view().substr(a.lines_at, a.lines_size) ==
          "file 1 2 3 420 modules-out/s/a/1.lua\nfile 4 5 6 493 modules-out/s/a/1/run\n");
    CHECK(last.file_lines("A/1", 2) == last.text.view().substr(a.lines_at, a.lines_size));
    CHECK(last.file_lines("A/1", 3).empty());  // (not a line per file: not what it seems)
    CHECK(last.file_lines("C/3", 0).empty());
    // The next state: A kept (its lines copied, its files' stats not given), B rebuilt.
    BuildState next;
    next.manifests = state.manifests;
    next.stacks["A/1"] = {std::string(64, 'a'), false, a.files};
    next.stacks["A/1"].same_lines = last.file_lines("A/1", a.files.size());
    next.stacks["B/2"] = {std::string(64, 'c'), true, {"modules-out/s/b/2.lua"}};
    next.files["modules-out/s/b/2.lua"] = {10, 11, 12, 0644};
    const std::string written = state_text(next);
    BuildState back;
    REQUIRE(parse_state(written, back));
    CHECK(back.files.at("modules-out/s/a/1/run").stat == FileStat{4, 5, 6, 0755});
    CHECK(back.files.at("modules-out/s/b/2.lua").stat == FileStat{10, 11, 12, 0644});
    CHECK(back.stacks.at("A/1").files == a.files);
    CHECK_FALSE(back.stacks.at("A/1").rebuilt);
    // The same text as the state written from every file's stat.
    next.stacks["A/1"].same_lines = {};
    next.files.insert(state.files.begin(), state.files.end());
    next.files["modules-out/s/b/2.lua"] = {10, 11, 12, 0644};
    CHECK(state_text(next) == written);
}

TEST_CASE("a big build state reads the same written on two threads as on one", "[manifest]") {
    BuildState state;
    state.manifests["modules-out/s"] = {10, 20, 30};
    for (int i = 0; i < 1001; ++i) {  // 5,005 files: over the threshold for the second thread
        BuildState::StackRecord& record = state.stacks["PyTorch/2." + std::to_string(i)];
        record.key = std::string(64, static_cast<char>('a' + i % 26));
        record.rebuilt = i % 3 == 0;
        for (int f = 0; f < 5; ++f) {
            const std::string path = "modules-out/s/software/PyTorch/2." + std::to_string(i) + "/bin/f" + std::to_string(f);
            record.files.push_back(state.own(path));
            state.files[path] = {static_cast<unsigned long long>(i), static_cast<unsigned long long>(f), 7, 0755};
        }
    }
    const std::string one = state_text(state), two = state_text(state, true);
    CHECK(one == two);
    BuildState back;
    REQUIRE(parse_state(two, back));
    CHECK(stats_of(back.files) == stats_of(state.files));
    CHECK(back.stacks.size() == 1001);
    // A file without its stat in the second half: nothing to write, on two threads as on one.
    state.files.erase("modules-out/s/software/PyTorch/2.999/bin/f3");
    CHECK(state_text(state).empty());
    CHECK(state_text(state, true).empty());
}

TEST_CASE("the build state keeps the inputs and findings an up-to-date build repeats", "[manifest]") {
    BuildState state;
    state.inputs = std::string(64, 'd');
    state.rule_dirs = {"/usr/share/sitegen/rules", "sites/s/hooks"};
    state.queries = {{InputQuery::Op::read, "sites/s/site.toml"}, {InputQuery::Op::is_dir, "sites/s/hooks"}};
    // A finding's text may hold anything, newlines included: it is stored by length.
    Diagnostic warning;
    warning.severity = Severity::warning;
    warning.where.file = "sites/s/site.toml";
    warning.where.line = 7;
    warning.where.column = 3;
    warning.message = "two\nlines 'x'";
    warning.hint = "did you mean 'y'?";
    state.findings.push_back(warning);
    Diagnostic note;
    note.severity = Severity::note;
    state.findings.push_back(note);
    state.dirs["modules-out/s"] = {4096, 5, 6, 0755};
    state.manifests["modules-out/s"] = {1, 2, 3, 0644};
    BuildState back;
    REQUIRE(parse_state(state_text(state), back));
    CHECK(back.inputs == state.inputs);
    CHECK(back.rule_dirs == state.rule_dirs);
    REQUIRE(back.queries.size() == 2);
    CHECK(back.queries[1].op == InputQuery::Op::is_dir);
    CHECK(back.queries[1].path == "sites/s/hooks");
    REQUIRE(back.findings.size() == 2);
    CHECK(back.findings[0].message == "two\nlines 'x'");
    CHECK(back.findings[0].hint == "did you mean 'y'?");
    CHECK(back.findings[0].where.line == 7);
    CHECK(back.findings[0].where.column == 3);
    CHECK(back.findings[1].severity == Severity::note);
    CHECK(back.dirs == state.dirs);
    // The inputs alone: the same inputs, rule dirs, queries and findings, none of the tree.
    state.stacks["PyTorch/2.4"] = {std::string(64, 'c'), false, {"modules-out/s/a"}};
    state.files["modules-out/s/a"] = {1, 2, 3};
    BuildState inputs;
    REQUIRE(parse_state(state_text(state), inputs, StateParts::inputs));
    CHECK(inputs.inputs == state.inputs);
    CHECK(inputs.rule_dirs == state.rule_dirs);
    CHECK(inputs.queries.size() == 2);
    CHECK(inputs.findings.size() == 2);
    CHECK(inputs.manifests.empty());
    CHECK(inputs.dirs.empty());
    CHECK(inputs.stacks.empty());
    CHECK(inputs.files.empty());
    CHECK_FALSE(parse_state(std::string_view("# something else\n"), inputs, StateParts::inputs));
    // A path with a newline cannot be a line of the state: it is not written at all.
    state.dirs["modules-out/s/a\nb"] = {};
    CHECK(state_text(state).empty());
    state.dirs.clear();
    CHECK_FALSE(state_text(state).empty());
    // Nor is a stack whose file has no stat, or one with a newline in its name.
    state.stacks["PyTorch/2.4"].files.push_back("modules-out/s/no-stat");
    CHECK(state_text(state).empty());
    state.stacks.erase("PyTorch/2.4");
    state.stacks["PyTorch/2\n5"] = {};
    CHECK(state_text(state).empty());
}

TEST_CASE("site-wide text covers every table but the stacks, a stack text one stack", "[manifest]") {
    Site site;
    site.stacks.push_back({});
    site.stacks[0].name = "PyTorch";
    const std::string wide = site_wide_text(site), stack = stack_text(site.stacks[0]);
    Site other = site;
    other.stacks[0].description = "changed";
    CHECK(site_wide_text(other) == wide);
    CHECK(stack_text(other.stacks[0]) != stack);
    other = site;
    other.collectives.env.push_back({"NCCL_DEBUG", "INFO"});
    CHECK(site_wide_text(other) != wide);
    other = site;
    other.container.binds.push_back({"/pfs", "", ""});
    CHECK(site_wide_text(other) != wide);
    other = site;
    other.hardware.device_cores = {{0, 1}};
    CHECK(site_wide_text(other) != wide);
    other = site;
    other.site.scheduler = Scheduler::pbs;
    CHECK(site_wide_text(other) != wide);
    other = site;
    other.stacks[0].python.version = "3.12";  // a nested table of the stack
    CHECK(stack_text(other.stacks[0]) != stack);
    // Length prefixes: moving a character from one value to the next changes the text.
    Stack a, b;
    a.name = "ab";
    a.version = "c";
    b.name = "a";
    b.version = "bc";
    CHECK(stack_text(a) != stack_text(b));
}

TEST_CASE("publish links kept files and trusts recorded stats", "[manifest][publish]") {
    MemoryFs fs;
    Diagnostics diags;
    const std::vector<std::string> roots = {"modules-out/s"};
    const OutputList first = {{"modules-out/s/a.lua", "a1\n", false}, {"modules-out/s/b.lua", "b1\n", false}};
    PublishReport report;
    REQUIRE(publish(fs, roots, first, {"out", false, false}, report, diags));
    REQUIRE(report.stats.size() == 2);
    const auto stamp_a = fs.files.at("out/modules-out/s/a.lua").stamp;
    CHECK(report.stats.at("modules-out/s/a.lua").stat == FileStat{3, stamp_a, stamp_a, 0644});

    // b changes, a is kept: the staged tree links a (same stamp), the manifest is a fresh one.
    PublishOptions options{"out", false, false};
    options.kept.push_back({"modules-out/s/a.lua", sha256_hex("a1\n"), false});
    options.known = &report.stats;
    PublishReport second;
    REQUIRE(publish(fs, roots, {{"modules-out/s/b.lua", "b2\n", false}}, options, second, diags));
    CHECK(fs.files.at("out/modules-out/s/a.lua").stamp == stamp_a);
    CHECK(fs.files.at("out/modules-out/s/b.lua").data == "b2\n");
    MemoryFs fresh;
    PublishReport ignored;
    REQUIRE(publish(fresh, roots, {{"modules-out/s/a.lua", "a1\n", false}, {"modules-out/s/b.lua", "b2\n", false}},
                    {"out", false, false}, ignored, diags));
    CHECK(fs.files.at("out/modules-out/s/.sitegen-manifest").data ==
          fresh.files.at("out/modules-out/s/.sitegen-manifest").data);
    CHECK(second.changed == std::vector<std::string>{"modules-out/s/b.lua"});

    // With the recorded stat a file is not read: bytes changed behind an unchanged stat go
    // unseen (the documented limit); without it the same change is a hand edit.
    fs.files.at("out/modules-out/s/a.lua").data = "zz\n";
    PublishReport trusted;
    options.known = &second.stats;
    REQUIRE(publish(fs, roots, {{"modules-out/s/b.lua", "b2\n", false}}, options, trusted, diags));
    CHECK(trusted.unchanged == 2);
    Diagnostics refused;
    PublishReport untrusted;
    options.known = nullptr;
    CHECK_FALSE(publish(fs, roots, {{"modules-out/s/b.lua", "b2\n", false}}, options, untrusted, refused));
    CHECK(refused.has_errors());
}

TEST_CASE("a state kept from the last one's records is written in pieces that join to the same text", "[manifest]") {
    // (Made anew for each copy: a state is not copied, its stacks' files are views into it.)
    const auto make_state = [] {
        BuildState state;
        state.manifests["modules-out/s"] = {10, 20, 30};
        state.spares["modules-out/s"] = {{1, 2, 3, 0755}, "d 0 1 2 493 a\nf 7 a/1.lua\n"};
        for (int i = 0; i < 6; ++i) {
            const std::string id = "A/" + std::to_string(i), path = "modules-out/s/a/" + std::to_string(i) + ".lua";
            state.stacks[id] = {std::string(64, static_cast<char>('a' + i)), i == 2, {state.own(path)}};
            state.files[path] = {static_cast<unsigned long long>(i), 2, 3, 0644};
        }
        state.dirs["modules-out/s"] = {0, 1, 2, 0755};
        return state;
    };
    const BuildState state = make_state();
    const std::string written = state_text(state);
    BuildState last;
    REQUIRE(parse_state(std::string(written), last));
    // The next state keeps every stack but A/4 (rebuilt, with a new stat), with the same keys.
    BuildState next = make_state();
    next.files.clear();
    next.files["modules-out/s/a/4.lua"] = {40, 2, 3, 0644};
    for (auto& [id, record] : next.stacks) {
        record.rebuilt = id == "A/4";
        if (record.rebuilt) continue;
        record.same_lines = last.file_lines(id, 1);
        record.same_record = last.kept_record(id, record.key, 1);
        CHECK(record.same_record.empty() == (id == "A/2"));  // (A/2's line said "rebuilt")
        std::string_view lines;  // (found on the way: the same as file_lines, record or not)
        CHECK(last.kept_record(id, record.key, 1, &lines) == record.same_record);
        CHECK(lines == record.same_lines);
    }
    const StateText pieces = state_text_pieces(next);
    // Views of `last`'s text, runs of consecutive kept stacks in one piece.
    size_t views = 0;
    for (const auto piece : pieces.pieces)
        views += piece.data() >= last.text.data() && piece.data() < last.text.data() + last.text.size();
    CHECK(views == 3);  // A/0 to A/1; A/2's file line with A/3 (adjacent); A/5 (after A/4's new lines)
    CHECK(pieces.joined() == state_text(next));
    CHECK(pieces.size() == pieces.joined().size());
    // The same text as the state written from every file's stat.
    BuildState whole = make_state();
    for (auto& [id, record] : whole.stacks) record.rebuilt = id == "A/4";
    whole.files["modules-out/s/a/4.lua"] = {40, 2, 3, 0644};
    CHECK(pieces.joined() == state_text(whole));
    // A stack line that cannot be written: no pieces.
    next.stacks["bad\nid"] = {std::string(64, 'z'), true, {}};
    CHECK(state_text_pieces(next).pieces.empty());
}
