// site: the checks' text patterns as small hand-written matchers (std::regex cost a check of
// a 2,000-stack site more than its rules: compiling and running an NFA per value).
#pragma once

#include <optional>
#include <string_view>

namespace sitegen {

// Each accepts exactly the language of the regex in its comment (patterns_test compares them).

// ^[A-Za-z0-9][A-Za-z0-9_.+-]*$  (a module name or version)
bool is_module_word(std::string_view s);
// ^([-_.][A-Za-z0-9_.+-]*)?$
bool is_version_suffix(std::string_view s);
// search ^[/.~]|\.(sif|sqsh|squashfs|simg)$  (an image given as a file)
bool looks_like_image_file(std::string_view s);
// [0-9a-f]{64}
bool is_sha256_hex(std::string_view s);
// ^https://[A-Za-z0-9.-]+(:[0-9]+)?(/[!-~]*)?$
bool is_https_url(std::string_view s);
// ^(git\+)?https://[A-Za-z0-9.-]+(:[0-9]+)?/[!-~]*$
bool is_pip_source_url(std::string_view s);
// ^-[!-~]*$
bool is_option_word(std::string_view s);
// search \$(?!\{[A-Za-z_][A-Za-z0-9_]*\})  (a '$' that does not start a ${NAME})
bool has_stray_dollar(std::string_view s);
// search \$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*): the first match, as the regex finds it
std::optional<std::string_view> first_shell_variable(std::string_view s);
// ^[0-9]{1,9}(\.[0-9]{1,9}){0,5}$  (a driver version)
bool is_driver_version(std::string_view s);

}  // namespace sitegen
