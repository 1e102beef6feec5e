// SHA-256 of a byte string, hex-encoded (manifest hashes; no external crypto dependency).
#pragma once

#include <string>
#include <string_view>

namespace sitegen {

std::string sha256_hex(std::string_view data);

}  // namespace sitegen
