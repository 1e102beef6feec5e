// The model as unambiguous text, walked from the field table: what the build keys hash, and
// what the stack memo keeps of a loaded stack and reads back.
#pragma once

#include <string>
#include <string_view>

#include "site/model.h"

namespace sitegen {

// Every row of the field table, in row order, each value length-prefixed (enum values by
// name): everything but the stacks, one stack, the site's [python].
std::string site_wide_text(const Site& site);
std::string stack_text(const Stack& stack);
std::string python_text(const Python& python);

// stack_text read back: every row of `out` set from `text`; false (and `out` unspecified) when
// the text is not exactly one stack's text of this field table.
bool read_stack_text(std::string_view text, Stack& out);

}  // namespace sitegen
