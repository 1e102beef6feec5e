// did-you-mean suggestions for misspelt keys and values.
#include <catch2/catch.hpp>

#include "site/suggest.h"

using namespace sitegen;

TEST_CASE("close typos get a suggestion, unrelated words none", "[suggest]") {
    const std::vector<std::string> keys = {"devices_per_node", "cores_per_node", "gpu_vendor", "nics"};
    CHECK(did_you_mean("devices_per_nod", keys) == "did you mean 'devices_per_node'?");
    CHECK(did_you_mean("gpu_vedner", keys) == "did you mean 'gpu_vendor'?");
    CHECK(did_you_mean("nisc", keys) == "did you mean 'nics'?");  // adjacent swap
    CHECK(did_you_mean("zzzqqq", keys).empty());
    CHECK(edit_distance("slrum", "slurm") == 1);
}
