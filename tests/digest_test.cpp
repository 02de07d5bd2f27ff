// Fingerprints against published test values, and one-shot == incremental.
#include "test_support.hpp"

#include <gtest/gtest.h>

namespace cdc::test {
namespace {

std::span<const std::byte> bytes_of(std::string_view s) { return std::as_bytes(std::span(s.data(), s.size())); }

TEST(Digest, KnownValues) {
    EXPECT_EQ(compute_digest(DigestKind::blake3, {}).hex(),
              "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262");
    EXPECT_EQ(compute_digest(DigestKind::sha256, bytes_of("abc")).hex(),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(compute_digest(DigestKind::xxh3, {}).hex(), "99aa06d3014798d86001c324468d497f");
    EXPECT_EQ(compute_digest(DigestKind::none, bytes_of("abc")).hex(), "");
    EXPECT_EQ(digest_size(DigestKind::xxh3), 16u);
}

TEST(Digest, IncrementalEqualsOneShot) {
    const auto data = random_bytes(300001, 5);
    const auto all = std::as_bytes(std::span(data));
    for (DigestKind k : {DigestKind::blake3, DigestKind::sha256, DigestKind::xxh3}) {
        Hasher h(k);
        for (std::size_t pos = 0; pos < all.size(); pos += 7777) h.update(all.subspan(pos, std::min<std::size_t>(7777, all.size() - pos)));
        EXPECT_EQ(h.finish(), compute_digest(k, all)) << to_string(k);
        h.update(all.first(10));  // finish() resets
        EXPECT_EQ(h.finish(), compute_digest(k, all.first(10))) << to_string(k);
    }
}

TEST(Digest, ParseNames) {
    EXPECT_EQ(parse_digest_kind("sha256"), DigestKind::sha256);
    EXPECT_THROW((void)parse_digest_kind("md5"), OptionError);
}

}  // namespace
}  // namespace cdc::test
