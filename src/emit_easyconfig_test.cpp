// Easyconfig naming and EasyBuild %-escaping of literal values.
#include <catch2/catch.hpp>

#include "emit_easyconfig.h"

using namespace sitegen;

namespace {

Site one_stack_site(const std::string& description) {
    Site site;
    site.site.name = "s";
    site.site.install_prefix = "/opt/s";
    Stack stack;
    stack.name = "PyTorch";
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

}  // namespace

TEST_CASE("easyconfigs follow EasyBuild's file naming and repository layout", "[easyconfig]") {
    const auto files = emit_easyconfigs(one_stack_site("d"), {"/opt/s"});
    REQUIRE(files.size() == 1);
    CHECK(files[0].path == "easyconfigs-out/s/p/PyTorch/PyTorch-2.3.1-rocm-6.0.3.eb");
    CHECK(line_starting(files[0].contents, "toolchain") == "toolchain = SYSTEM");
    CHECK(line_starting(files[0].contents, "versionsuffix") == "versionsuffix = '-rocm-6.0.3'");
}

TEST_CASE("literal percent signs survive EasyBuild's templating", "[easyconfig]") {
    // EasyBuild doubles every % that does not start %(name)s, then %-formats: so only a
    // literal "%(name)s" needs escaping, and a lone "100%" must stay as it is.
    const auto files = emit_easyconfigs(one_stack_site("100% of %(name)s, it's \"q\" \\ %%"), {"/opt/s"});
    CHECK(line_starting(files[0].contents, "description") ==
          "description = '100% of %%(name)s, it\\'s \"q\" \\\\ %%'");
}
