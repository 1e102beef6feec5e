// The schema reference in docs/ must be exactly what `sitegen schema` prints.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "site/schema.h"

TEST_CASE("docs/site-schema.md is up to date with the loader's schema", "[schema]") {
    std::ifstream in(SITEGEN_SOURCE_DIR "/docs/site-schema.md", std::ios::binary);
    REQUIRE(in.good());
    std::stringstream text;
    text << in.rdbuf();
    INFO("regenerate with: build/sitegen schema > docs/site-schema.md");
    CHECK(text.str() == sitegen::schema_markdown());
}

TEST_CASE("every schema table documents its keys", "[schema]") {
    for (const auto& t : sitegen::site_schema()) {
        INFO(t.path);
        CHECK_FALSE(t.meaning.empty());
        CHECK((t.free_keys || !t.keys.empty()));
    }
}
