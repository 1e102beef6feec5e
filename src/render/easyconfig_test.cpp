// Easyconfig naming, EasyBuild %-escaping, and hostile values read back by python3 as EasyBuild would.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include "plan/stack_plan.h"
#include "render/easyconfig.h"
#include "text/python_writer.h"

using namespace sitegen;

namespace {

// The site's easyconfigs, rendered from its plan.
OutputList emit_easyconfigs(const Site& site, const PlanOptions& options) {
    return render_easyconfigs(plan_site(site, options));
}

Site one_stack_site(const std::string& name, const std::string& description) {
    Site site;
    site.site.name = "s";
    site.site.install_prefix = "/opt/s";
    Stack stack;
    stack.name = name;
    stack.version = "2.3.1";
    stack.versionsuffix = "-rocm-6.0.3";
    stack.description = description;
    stack.homepage = "https://pytorch.org/";
    site.stacks.push_back(stack);
    return site;
}

std::string line_starting(const std::string& text, const std::string& prefix) {
    size_t at = text.find("\n" + prefix);
    REQUIRE(at != std::string::npos);
    return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

// Runs python3 on `script` with the easyconfig text in a temp file as argv[1]; stdout.
std::string run_python(const std::string& script, const std::string& easyconfig) {
    char eb_path[] = "/tmp/sitegen-eb-test.XXXXXX";
    int fd = mkstemp(eb_path);
    REQUIRE(fd >= 0);
    close(fd);
    std::ofstream(eb_path, std::ios::binary) << easyconfig;
    char py_path[] = "/tmp/sitegen-eb-check.XXXXXX";
    fd = mkstemp(py_path);
    REQUIRE(fd >= 0);
    close(fd);
    std::ofstream(py_path, std::ios::binary) << script;
    std::string out;
    FILE* p = popen(("python3 " + std::string(py_path) + " " + eb_path + " 2>&1").c_str(), "r");
    REQUIRE(p != nullptr);
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    const int status = pclose(p);
    std::remove(eb_path);
    std::remove(py_path);
    INFO("python3 said: " << out);
    REQUIRE(status == 0);  // python3 missing or the easyconfig does not parse: fail loudly
    return out;
}

// Reads the easyconfig as EasyBuild does (exec with its constants), applies EasyBuild's
// templating to a string value (double every % not starting %(name)s, then `% dict`), and
// prints it as hex so every byte is compared.
const char* kReadBack = R"PY(
import re, sys
env = {"SYSTEM": {"name": "system", "version": "system"}, "EXTERNAL_MODULE": "EXTERNAL_MODULE"}
exec(compile(open(sys.argv[1], encoding="utf-8").read(), sys.argv[1], "exec"), env)
def resolve(v):
    return re.sub(r"(%)(?!%*\(\w+\)s)", r"\1\1", v) % {"installdir": "/inst", "name": env["name"], "version": env["version"]}
for key in ("description", "homepage", "usage", "modluafooter", "modtclfooter"):
    print(key, resolve(env.get(key, "")).encode().hex())
for key, value in sorted(env.get("modextravars", {}).items()):
    print("modextravars", key, resolve(value).encode().hex())
print("dependencies", env.get("dependencies"))
)PY";

std::string hex(const std::string& s) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) { out += digits[c >> 4]; out += digits[c & 15]; }
    return out;
}

}  // namespace

TEST_CASE("easyconfigs follow EasyBuild's file naming and repository layout", "[easyconfig]") {
    const auto files = emit_easyconfigs(one_stack_site("PyTorch", "d"), {"/opt/s"});
    REQUIRE(files.size() == 1);
    CHECK(files[0].path == "easyconfigs-out/s/p/PyTorch/PyTorch-2.3.1-rocm-6.0.3.eb");
    CHECK(line_starting(files[0].contents, "toolchain") == "toolchain = SYSTEM");
    CHECK(line_starting(files[0].contents, "versionsuffix") == "versionsuffix = '-rocm-6.0.3'");
    CHECK(line_starting(files[0].contents, "easyblock") == "easyblock = 'Bundle'");
}

TEST_CASE("the SYSTEM toolchain adds nothing to the file name: no suffix, no dash", "[easyconfig]") {
    Stack stack;
    stack.name = "Torch-Box";
    stack.version = "2.4.0";
    CHECK(easyconfig_file_name(stack) == "Torch-Box-2.4.0.eb");
    stack.versionsuffix = "-cpu";
    CHECK(easyconfig_file_name(stack) == "Torch-Box-2.4.0-cpu.eb");
    // The letter directory is the lower-cased first letter, the name keeps its case.
    const auto files = emit_easyconfigs(one_stack_site("Zeta", "d"), {"/opt/s"});
    CHECK(files[0].path == "easyconfigs-out/s/z/Zeta/Zeta-2.3.1-rocm-6.0.3.eb");
}

TEST_CASE("EasyBuild escaping doubles only % runs that would start a template", "[easyconfig]") {
    // EasyBuild doubles every % that does not start %(name)s, then %-formats.
    CHECK(easybuild_escape("100%") == "100%");
    CHECK(easybuild_escape("%s %d %%") == "%s %d %%");
    CHECK(easybuild_escape("%(name)s") == "%%(name)s");
    CHECK(easybuild_escape("%%(name)s") == "%%%%(name)s");
    CHECK(easybuild_escape("%(not a template)s %()s %(x)d") == "%(not a template)s %()s %(x)d");
    CHECK(easybuild_template("%(installdir)s/", "50% %(version)s") == "'%(installdir)s/50% %%(version)s'");
}

TEST_CASE("literal percent signs survive EasyBuild's templating", "[easyconfig]") {
    const auto files = emit_easyconfigs(one_stack_site("PyTorch", "100% of %(name)s, it's \"q\" \\ %%"), {"/opt/s"});
    CHECK(line_starting(files[0].contents, "description") == "description = '100% of %%(name)s, it\\'s \"q\" \\\\ %%'");
}

TEST_CASE("site modules become EXTERNAL_MODULE dependencies, not module loads", "[easyconfig]") {
    Site site = one_stack_site("PyTorch", "d");
    site.site.base_modules = {"PrgEnv-gnu/8.5.0"};
    site.stacks[0].base_modules = {"rocm/6.0.0"};
    const std::string eb = emit_easyconfigs(site, {"/opt/s"})[0].contents;
    CHECK(eb.find("dependencies = [\n    ('PrgEnv-gnu/8.5.0', EXTERNAL_MODULE),\n    ('rocm/6.0.0', EXTERNAL_MODULE),\n]\n") !=
          std::string::npos);
    // No postinstallcmd loads them (the job scripts, in local_ variables, still do).
    const size_t cmds = eb.find("\npostinstallcmds = [");
    REQUIRE(cmds != std::string::npos);
    CHECK(eb.substr(cmds, eb.find("\n]\n", cmds) - cmds).find("module load") == std::string::npos);
    CHECK(eb.find("depends_on(") == std::string::npos);  // EasyBuild writes those itself
}

TEST_CASE("hostile values round-trip through python3 and EasyBuild's templating", "[easyconfig]") {
    const std::string description = "it's '''triple''' and \"\"\"double\"\"\" \\ \\n \\\\ 100% %% %s %(name)s %%(version)s\n"
                                    "second line\r\n\ttab $(rm -rf /) `x` ${HOME} ]] \xc3\xa9 \xe2\x80\xae end";
    const std::string homepage = "https://example.org/?q=%(installdir)s&r=100%";
    Site site = one_stack_site("PyTorch", description);
    site.stacks[0].homepage = homepage;
    site.stacks[0].env = {{"SAFE_VAR", "plain,value:1"}, {"HOSTILE_VAR", "a'b\"c\\d $HOME %(installdir)s"}};
    site.stacks[0].base_modules = {"x'y\"/1.0"};
    const std::string out = run_python(kReadBack, emit_easyconfigs(site, {"/opt/s"})[0].contents);
    CHECK(out.find("description " + hex(description) + "\n") != std::string::npos);
    CHECK(out.find("homepage " + hex(homepage) + "\n") != std::string::npos);
    // A value EasyBuild's setenv() writes back unchanged goes to modextravars; one it would
    // mangle (quotes, backslash, $VAR) stays in the footer, quoted by sitegen for Lua.
    CHECK(out.find("modextravars SAFE_VAR " + hex("plain,value:1") + "\n") != std::string::npos);
    CHECK(out.find("modextravars HOSTILE_VAR") == std::string::npos);
    CHECK(out.find(hex("setenv(\"HOSTILE_VAR\", \"a'b\\\"c\\\\d $HOME %(installdir)s\")\n")) != std::string::npos);
    CHECK(out.find("dependencies [('x\\'y\"/1.0', 'EXTERNAL_MODULE')]") != std::string::npos);
}

TEST_CASE("long values are split into lines of at most 120 characters with the same value", "[easyconfig]") {
    std::string description;
    for (int i = 0; i < 40; ++i) description += "word\\'s \xc3\xa9\t100% %(name)s \"q\" ";
    description += std::string(300, 'x');
    Site site = one_stack_site("PyTorch", description);
    site.stacks[0].homepage = "https://example.org/" + std::string(200, 'h');
    site.stacks[0].env = {{"LONG_VAR", std::string(150, 'v') + " " + std::string(150, 'w')}};
    site.stacks[0].image = "torch.sif";
    site.stacks[0].image_sha256 = std::string(64, 'a');
    const std::string ec = emit_easyconfigs(site, {"/opt/s"})[0].contents;
    size_t start = 0;
    for (size_t nl; (nl = ec.find('\n', start)) != std::string::npos; start = nl + 1) {
        size_t cols = 0;
        for (size_t i = start; i < nl; ++i) cols += (static_cast<unsigned char>(ec[i]) & 0xc0) != 0x80;
        INFO(ec.substr(start, nl - start));
        CHECK(cols <= 120);
    }
    CHECK(ec.find("\nname = 'PyTorch'\n") != std::string::npos);
    CHECK(ec.find("\neasybuild_version = '5.2.1'\n") != std::string::npos);
    const std::string out = run_python(kReadBack, ec);
    CHECK(out.find("description " + hex(description) + "\n") != std::string::npos);
    CHECK(out.find("homepage " + hex(site.stacks[0].homepage) + "\n") != std::string::npos);
    CHECK(out.find("modextravars LONG_VAR " + hex(site.stacks[0].env[0].second) + "\n") != std::string::npos);
}

TEST_CASE("the image's sha256 becomes the easyconfig's checksums, none without it", "[easyconfig]") {
    Site site = one_stack_site("PyTorch", "d");
    site.container.enabled = true;
    site.container.image_dir = "/images";
    site.python.layout = PythonLayout::container_system;
    site.stacks[0].python.layout = PythonLayout::container_system;
    site.stacks[0].image = "torch.sif";
    CHECK(emit_easyconfigs(site, {"/opt/s"})[0].contents.find("checksums") == std::string::npos);
    site.stacks[0].image_sha256 = std::string(64, 'a');
    CHECK(emit_easyconfigs(site, {"/opt/s"})[0].contents.find("\nchecksums = [\n    '" + std::string(64, 'a') + "',\n]\n") !=
          std::string::npos);
}
