// "did you mean ...?": the closest known name to a misspelt one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sitegen {

// Edit distance (insert, delete, substitute, adjacent swap).
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, if it is close enough to be a plausible typo; else "".
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

// "did you mean 'x'?" or "" when nothing is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace sitegen
