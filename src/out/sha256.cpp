// FIPS 180-4 SHA-256: the x86 SHA extensions where the CPU has them, else portable C++.
#include "out/sha256.h"

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define SITEGEN_SHA_NI 1
#endif

namespace sitegen {

namespace {

alignas(16) constexpr uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

inline uint32_t load_be32(const unsigned char* p) {
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// The schedule is a 16-word ring (w[i & 15]) and the loop is unrolled so the eight working
// variables' rotation is register renaming, not moves. Always inlined: compiled twice, below.
[[gnu::always_inline]] inline void compress_rounds(uint32_t h[8], const unsigned char* data, size_t blocks) {
    for (; blocks > 0; --blocks, data += 64) {
        uint32_t w[16];
        for (int i = 0; i < 16; ++i) w[i] = load_be32(data + 4 * i);
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
#pragma GCC unroll 64
        for (int i = 0; i < 64; ++i) {
            if (i >= 16) {
                const uint32_t x = w[(i + 1) & 15], y = w[(i + 14) & 15];
                w[i & 15] += (rotr(x, 7) ^ rotr(x, 18) ^ (x >> 3)) + w[(i + 9) & 15] +
                             (rotr(y, 17) ^ rotr(y, 19) ^ (y >> 10));
            }
            const uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + (g ^ (e & (f ^ g))) + K[i] + w[i & 15];
            const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) | (c & (a | b)));
            hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
        }
        h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
    }
}

void compress_portable(uint32_t h[8], const unsigned char* data, size_t blocks) { compress_rounds(h, data, blocks); }

#ifdef SITEGEN_SHA_NI
// The same C++ compiled for BMI2, whose rorx rotates into a new register: a third fewer
// instructions than x86-64's two-operand ror needs with its copies (CPUs without SHA-NI,
// such as Intel's Skylake and Cascade Lake servers, and valgrind's emulated CPU).
__attribute__((target("bmi2"))) void compress_bmi2(uint32_t h[8], const unsigned char* data, size_t blocks) {
    compress_rounds(h, data, blocks);
}

// The SHA-NI path (Intel, "New Instructions Supporting the Secure Hash Algorithm on Intel
// Architecture Processors", https://www.intel.com/content/www/us/en/developer/articles/technical/intel-sha-extensions.html).
// sha256rnds2 does two rounds on the state held as ABEF and CDGH (A in the top lane); after
// two rounds the old ABEF is the new CDGH, so the two registers swap roles each call.
// Only this function is compiled for the extensions; the rest of the build keeps its flags.
__attribute__((target("sha,sse4.1"))) void compress_sha_ni(uint32_t h[8], const unsigned char* data, size_t blocks) {
    const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);  // each word big-endian
    __m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)), 0xB1);      // B A D C
    __m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4)), 0x1B);  // H G F E
    __m128i abef = _mm_alignr_epi8(abcd, efgh, 8);      // lanes low to high: F E B A
    __m128i cdgh = _mm_blend_epi16(efgh, abcd, 0xF0);   // H G D C
    for (; blocks > 0; --blocks, data += 64) {
        const __m128i abef_in = abef, cdgh_in = cdgh;
        __m128i w[4];  // the last 16 schedule words; words 4g..4g+3 live in w[g % 4]
#pragma GCC unroll 16
        for (int g = 0; g < 16; ++g) {
            if (g < 4) {
                w[g] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 16 * g)), byte_swap);
            } else {  // W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16], four words at a time
                const __m128i w7 = _mm_alignr_epi8(w[(g + 3) % 4], w[(g + 2) % 4], 4);
                w[g % 4] = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(w[g % 4], w[(g + 1) % 4]), w7),
                                                w[(g + 3) % 4]);
            }
            const __m128i wk = _mm_add_epi32(w[g % 4], _mm_load_si128(reinterpret_cast<const __m128i*>(K + 4 * g)));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);                          // rounds 4g, 4g+1
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));  // rounds 4g+2, 4g+3
        }
        abef = _mm_add_epi32(abef, abef_in);
        cdgh = _mm_add_epi32(cdgh, cdgh_in);
    }
    const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);  // A B E F
    const __m128i ghcd = _mm_shuffle_epi32(cdgh, 0xB1);  // G H C D
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h), _mm_blend_epi16(feba, ghcd, 0xF0));       // A B C D
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), _mm_alignr_epi8(ghcd, feba, 8));     // E F G H
}
#endif

Sha256::CompressFn compress_of(Sha256Path path) {
    switch (path) {
        case Sha256Path::portable: return compress_portable;
#ifdef SITEGEN_SHA_NI
        case Sha256Path::bmi2: return compress_bmi2;
        case Sha256Path::sha_ni: return compress_sha_ni;
#else
        case Sha256Path::bmi2:
        case Sha256Path::sha_ni: return compress_portable;  // never available here
#endif
    }
    return compress_portable;
}

// Chosen once, at first use: the same CPU gives the same choice, and every path the same digest.
Sha256::CompressFn cpu_compress() {
    static const Sha256::CompressFn chosen = compress_of(sha256_path());
    return chosen;
}

}  // namespace

Sha256::Sha256() : compress_(cpu_compress()) {}

Sha256& Sha256::update(std::string_view data) {
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    size_t n = data.size();
    total_ += n;
    if (pending_len_ > 0) {  // complete the pending block first
        const size_t take = n < 64 - pending_len_ ? n : 64 - pending_len_;
        std::memcpy(pending_ + pending_len_, p, take);
        pending_len_ += take;
        p += take;
        n -= take;
        if (pending_len_ < 64) return *this;
        compress_(h_, pending_, 1);
        pending_len_ = 0;
    }
    if (n >= 64) {  // whole blocks straight from the input
        compress_(h_, p, n / 64);
        p += n / 64 * 64;
        n %= 64;
    }
    if (n > 0) std::memcpy(pending_, p, n);
    pending_len_ = n;
    return *this;
}

std::string Sha256::hex() const {
    uint32_t h[8];
    std::memcpy(h, h_, sizeof h);
    unsigned char tail[128] = {};  // padding: 0x80, zeros, the bit length big-endian
    std::memcpy(tail, pending_, pending_len_);
    tail[pending_len_] = 0x80;
    const size_t tail_len = pending_len_ + 1 + 8 <= 64 ? 64 : 128;
    const uint64_t bits = total_ * 8;
    for (int i = 0; i < 8; ++i) tail[tail_len - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
    compress_(h, tail, tail_len / 64);
    static constexpr char digits[] = "0123456789abcdef";
    std::string out(64, '0');
    for (int i = 0; i < 64; ++i) out[i] = digits[(h[i / 8] >> (28 - 4 * (i % 8))) & 0xf];
    return out;
}

std::string sha256_hex(std::string_view data) { return Sha256().update(data).hex(); }

#ifdef SITEGEN_SHA_NI
namespace {

// CPUID leaf 1's ECX and leaf 7's EBX (Intel SDM vol. 2A, CPUID), read directly: clang 14's
// __builtin_cpu_supports does not know "sha".
bool leaf1_ecx(unsigned bit) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c >> bit & 1u);
}
bool leaf7_ebx(unsigned bit) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> bit & 1u);
}

}  // namespace
#endif

bool sha256_path_available(Sha256Path path) {
    switch (path) {
        case Sha256Path::portable: return true;
#ifdef SITEGEN_SHA_NI
        case Sha256Path::bmi2: return leaf7_ebx(8);
        case Sha256Path::sha_ni: return leaf7_ebx(29) && leaf1_ecx(19);  // SHA, SSE4.1
#else
        case Sha256Path::bmi2:
        case Sha256Path::sha_ni: return false;
#endif
    }
    return false;
}

Sha256Path sha256_path() {
    for (Sha256Path p : {Sha256Path::sha_ni, Sha256Path::bmi2})
        if (sha256_path_available(p)) return p;
    return Sha256Path::portable;
}

std::string sha256_hex_on(Sha256Path path, std::string_view data) {
    return Sha256(compress_of(sha256_path_available(path) ? path : Sha256Path::portable)).update(data).hex();
}

}  // namespace sitegen
