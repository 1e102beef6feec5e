// libFuzzer target: arbitrary bytes as a site file -> load -> check -> every emitter.
// Any crash, hang, sanitizer report or escaped exception is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "site/check.h"
#include "site/load.h"
#include "pipeline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace sitegen;
    MemoryFs fs;
    // A fragment the input may extend, so the extends path is exercised too.
    fs.files["sites/shared/frag.toml"] = {"[hardware]\nnics = [\"hsn0\"]\n", false};
    const std::string text(reinterpret_cast<const char*>(data), size);
    Site site;
    Diagnostics diags;
    if (!load_site_text(fs, "sites/fuzz/site.toml", text, site, diags)) return 0;
    check_site(site, site.site.name, diags);
    if (diags.has_errors()) return 0;
    PlanOptions options;
    options.prefix = site.site.install_prefix;
    OutputList files = emit_all(site, options);
    (void)files;
    return 0;
}
