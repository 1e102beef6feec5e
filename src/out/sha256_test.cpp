// SHA-256 against the FIPS 180-4 test vectors; every compress path (portable, BMI2, SHA-NI) and the incremental API agree.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "out/sha256.h"

namespace {

// Published digests: NIST's SHA-256 examples (FIPS 180-2 appendix B, "SHA256.pdf" at
// https://csrc.nist.gov/projects/cryptographic-standards-and-guidelines/example-values)
// and the pangram of https://en.wikipedia.org/wiki/SHA-2#Test_vectors.
struct Vector {
    std::string message;
    const char* digest;
};

std::vector<Vector> vectors() {
    return {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",  // 448 bits
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",  // 896 bits
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
        {"The quick brown fox jumps over the lazy dog", "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592"},
        {std::string(1000000, 'a'), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
    };
}

// Bytes 0..255 repeated: every byte value, no two neighbouring blocks alike.
using sitegen::Sha256Path;
constexpr Sha256Path kPaths[] = {Sha256Path::portable, Sha256Path::bmi2, Sha256Path::sha_ni};
const char* name_of(Sha256Path p) {
    switch (p) {
        case Sha256Path::portable: return "portable";
        case Sha256Path::bmi2: return "bmi2";
        case Sha256Path::sha_ni: return "sha_ni";
    }
    return "?";
}

std::string pattern(size_t n) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7 + i / 251) & 0xff);
    return s;
}

}  // namespace

TEST_CASE("sha256 matches the standard test vectors", "[sha256]") {
    for (const auto& v : vectors()) {
        INFO("message of " << v.message.size() << " bytes");
        CHECK(sitegen::sha256_hex(v.message) == v.digest);
        CHECK(sitegen::Sha256().update(v.message).hex() == v.digest);
        for (Sha256Path p : kPaths) {
            INFO("path " << name_of(p));
            CHECK(sitegen::sha256_hex_on(p, v.message) == v.digest);
        }
    }
}

TEST_CASE("sha256 takes the fastest path whose flags /proc/cpuinfo lists", "[sha256]") {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line, flags;
    while (std::getline(cpuinfo, line))
        if (line.rfind("flags", 0) == 0) {
            flags = line.substr(line.find(':') + 1) + " ";
            break;
        }
    const bool sha_ni = flags.find(" sha_ni ") != std::string::npos, bmi2 = flags.find(" bmi2 ") != std::string::npos;
#if defined(__x86_64__) || defined(__i386__)
    REQUIRE(!flags.empty());
    CHECK(sitegen::sha256_path_available(Sha256Path::sha_ni) == sha_ni);
    CHECK(sitegen::sha256_path_available(Sha256Path::bmi2) == bmi2);
    CHECK(sitegen::sha256_path() == (sha_ni ? Sha256Path::sha_ni : bmi2 ? Sha256Path::bmi2 : Sha256Path::portable));
#else
    CHECK(sitegen::sha256_path() == Sha256Path::portable);
#endif
    CHECK(sitegen::sha256_path_available(Sha256Path::portable));
    for (Sha256Path p : kPaths)
        if (!sitegen::sha256_path_available(p))
            WARN("this CPU cannot run the " << name_of(p) << " path: its tests here ran the portable one");
}

TEST_CASE("sha256's paths agree on lengths 0 to 300", "[sha256]") {
    const std::string data = pattern(300);
    for (size_t n = 0; n <= 300; ++n) {
        INFO("length " << n);
        const std::string_view m(data.data(), n);
        const std::string want = sitegen::sha256_hex_on(Sha256Path::portable, m);
        REQUIRE(sitegen::sha256_hex_on(Sha256Path::bmi2, m) == want);
        REQUIRE(sitegen::sha256_hex_on(Sha256Path::sha_ni, m) == want);
        REQUIRE(sitegen::sha256_hex(m) == want);
    }
}

TEST_CASE("sha256 at the padding's block boundaries: every path matches the digests written here", "[sha256]") {
    // 55 bytes: padding fits one block; 56: it needs a second; 64 and 128: whole blocks.
    // Digests from Python's hashlib (OpenSSL), an implementation independent of this one.
    const std::pair<size_t, const char*> cases[] = {
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
        {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
        {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
        {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
        {128, "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e"},
    };
    for (const auto& [n, digest] : cases) {
        INFO(n << " times 'a'");
        const std::string m(n, 'a');
        for (Sha256Path p : kPaths) {
            INFO("path " << name_of(p));
            CHECK(sitegen::sha256_hex_on(p, m) == digest);
        }
    }
}

TEST_CASE("Sha256 fed in pieces gives the digest of the whole", "[sha256]") {
    const std::string data = pattern(1000);
    const std::string whole = sitegen::sha256_hex_on(Sha256Path::portable, data);
    for (size_t cut : {0, 1, 55, 63, 64, 65, 127, 128, 500, 999, 1000}) {
        INFO("cut at " << cut);
        sitegen::Sha256 h;
        h.update(std::string_view(data).substr(0, cut));
        h.update(std::string_view(data).substr(cut));
        CHECK(h.hex() == whole);
    }
    sitegen::Sha256 bytewise;
    for (char c : data) bytewise.update(std::string_view(&c, 1));
    CHECK(bytewise.hex() == whole);
    sitegen::Sha256 growing;  // hex() in between leaves the state as it was
    growing.update("ab");
    CHECK(growing.hex() == sitegen::sha256_hex("ab"));
    growing.update("c");
    CHECK(growing.hex() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
