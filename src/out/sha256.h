// SHA-256 of a byte string, hex-encoded (manifest hashes; no external crypto dependency).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sitegen {

std::string sha256_hex(std::string_view data);

// The compress paths, fastest last: portable C++; the same compiled for BMI2 (x86 CPUs since
// 2013, and valgrind's); the x86 SHA extensions (SHA-NI). Sha256 uses the fastest this CPU has.
enum class Sha256Path : uint8_t { portable, bmi2, sha_ni };
Sha256Path sha256_path();
bool sha256_path_available(Sha256Path path);
// For tests and measurements: the digest by one path (the portable one where `path` is not available).
std::string sha256_hex_on(Sha256Path path, std::string_view data);

// Incremental SHA-256: update() any number of times, then hex() (which leaves the state as
// it was, so more update() calls may follow and hex() gives the digest of everything so far).
class Sha256 {
public:
    Sha256();
    Sha256& update(std::string_view data);
    std::string hex() const;

    // Hashes `blocks` 64-byte blocks into the state h.
    using CompressFn = void (*)(uint32_t h[8], const unsigned char* data, size_t blocks);

private:
    explicit Sha256(CompressFn compress) : compress_(compress) {}
    friend std::string sha256_hex_on(Sha256Path path, std::string_view data);

    CompressFn compress_;
    uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    unsigned char pending_[64] = {};  // the bytes of an incomplete block
    size_t pending_len_ = 0;
    uint64_t total_ = 0;  // bytes hashed so far
};

}  // namespace sitegen
