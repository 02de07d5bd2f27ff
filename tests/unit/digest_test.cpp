// SPDX-License-Identifier: Apache-2.0
// Fingerprints against published test values, and one-shot == incremental.
#include "test_support.hpp"

#include <cdc/corpus/datagen.hpp>

#include "digest/blake3_batch.hpp"  // (src/: the library's internals)

#include <blake3.h>
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

// compute_digests (batched BLAKE3) against one compute_digest per chunk.
std::vector<std::uint32_t> kEdgeLengths() {
    return {0,    1,    63,   64,   65,   1023, 1024,  1025,  2047,  2048,  2049,         3072,
            4095, 4096, 4097, 8192, 9354, 16384, 16385, 65536, 65537, (1u << 20) + 1};
}

constexpr std::array<std::uint8_t, 32> kTestKey = {
    0x42, 0x01, 0x99, 0xfe, 0x13, 0x37, 0x00, 0x7f, 0x80, 0x55, 0xaa, 0x10, 0x20, 0x30, 0x40, 0x50,
    0x60, 0x70, 0x81, 0x92, 0xa3, 0xb4, 0xc5, 0xd6, 0xe7, 0xf8, 0x09, 0x1a, 0x2b, 0x3c, 0x4d, 0x5e};

// Checks compute_digests(kind, lengths) == compute_digest per chunk, with the
// chunks starting at offset 0 and at offset 1 (unaligned) of a buffer; for
// BLAKE3, also with the partial last chunks compressed one by one (the
// fallback of CPUs without the 16-lane compression), and both ways in keyed
// mode against the official keyed hasher.
void expect_batch_equals_one_shot(DigestKind kind, const std::vector<std::uint32_t>& lengths, std::uint64_t seed,
                                  const std::string& what) {
    std::size_t total = 0;
    for (const auto len : lengths) total += len;
    const auto buf = random_bytes(total + 1, seed);
    for (std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
        const auto data = std::as_bytes(std::span(buf)).subspan(offset, total);
        std::vector<Digest> want(lengths.size());
        std::size_t pos = 0;
        for (std::size_t i = 0; i < lengths.size(); ++i) {
            want[i] = compute_digest(kind, data.subspan(pos, lengths[i]));
            pos += lengths[i];
        }
        std::vector<Digest> got(lengths.size());
        const auto expect_got = [&](std::string_view how) {
            for (std::size_t i = 0; i < lengths.size(); ++i)
                ASSERT_EQ(got[i], want[i]) << to_string(kind) << how << ", " << what << ", offset " << offset
                                           << ", chunk " << i << " of " << lengths.size() << ", length " << lengths[i];
        };
        compute_digests(kind, data, lengths, got);
        expect_got("");
        if (kind == DigestKind::blake3) {
            detail::blake3_digests(data, lengths, got, detail::LastChunks::one_by_one);
            expect_got(" (last chunks one by one)");
            // Keyed mode (an encrypted store's ids): the official keyed hasher, chunk by chunk.
            pos = 0;
            for (std::size_t i = 0; i < lengths.size(); ++i) {
                blake3_hasher h;
                blake3_hasher_init_keyed(&h, kTestKey.data());
                blake3_hasher_update(&h, data.data() + pos, lengths[i]);
                want[i].size = 32;
                blake3_hasher_finalize(&h, want[i].bytes.data(), 32);
                pos += lengths[i];
            }
            detail::blake3_keyed_digests(data, lengths, kTestKey.data(), got);
            expect_got(" (keyed)");
            detail::blake3_keyed_digests(data, lengths, kTestKey.data(), got, detail::LastChunks::one_by_one);
            expect_got(" (keyed, last chunks one by one)");
        }
    }
}

TEST(DigestBatch, EmptyInputKnownValue) {
    std::vector<Digest> out(3);
    const std::vector<std::uint32_t> lengths{0, 0, 0};
    compute_digests(DigestKind::blake3, {}, lengths, out);
    for (const Digest& d : out) EXPECT_EQ(d.hex(), "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262");
    compute_digests(DigestKind::blake3, {}, {}, {});  // no chunk: nothing to do
}

TEST(DigestBatch, EdgeLengthsMixedInEveryBatchSize) {
    const auto edges = kEdgeLengths();
    for (const std::size_t batch : {1u, 2u, 7u, 16u, 17u, 100u}) {
        // The edge lengths cycled, then in a shuffled order.
        std::vector<std::uint32_t> cycled(batch), shuffled(batch);
        SplitMix64 rng(batch);
        for (std::size_t i = 0; i < batch; ++i) {
            cycled[i] = edges[i % edges.size()];
            shuffled[i] = edges[rng.next() % edges.size()];
        }
        expect_batch_equals_one_shot(DigestKind::blake3, cycled, batch, "cycled edges, batch " + std::to_string(batch));
        expect_batch_equals_one_shot(DigestKind::blake3, shuffled, batch + 1,
                                     "shuffled edges, batch " + std::to_string(batch));
        // All zero lengths.
        expect_batch_equals_one_shot(DigestKind::blake3, std::vector<std::uint32_t>(batch, 0), 0,
                                     "zero lengths, batch " + std::to_string(batch));
    }
}

TEST(DigestBatch, EqualLengthsInEveryBatchSize) {
    for (const std::uint32_t len : kEdgeLengths())
        for (const std::size_t batch : {1u, 2u, 7u, 16u, 17u, 100u}) {
            if (std::uint64_t{len} * batch > (std::uint64_t{16} << 20)) continue;  // keep the test quick
            expect_batch_equals_one_shot(DigestKind::blake3, std::vector<std::uint32_t>(batch, len), len + batch,
                                         "all " + std::to_string(len) + " bytes, batch " + std::to_string(batch));
        }
    // A big batch of 1 MiB + 1 (one-shot path) between small chunks.
    std::vector<std::uint32_t> lengths;
    for (int i = 0; i < 20; ++i) {
        lengths.push_back((1u << 20) + 1);
        lengths.push_back(9354);
    }
    expect_batch_equals_one_shot(DigestKind::blake3, lengths, 3, "1 MiB + 1 between 9354");
}

TEST(DigestBatch, RandomLengthsAndGroupLimits) {
    SplitMix64 rng(42);
    for (int round = 0; round < 12; ++round) {
        const std::size_t batch = 1 + rng.next() % 400;
        std::vector<std::uint32_t> lengths(batch);
        for (auto& len : lengths) {
            switch (rng.next() % 4) {
                case 0: len = static_cast<std::uint32_t>(rng.next() % 70000); break;          // any, up to 68 chunks
                case 1: len = static_cast<std::uint32_t>(2048 + rng.next() % 14000); break;   // CDC-like
                case 2: len = static_cast<std::uint32_t>(rng.next() % 1100); break;           // around one chunk
                default: len = static_cast<std::uint32_t>(1024 * (1 + rng.next() % 64)); break;  // whole chunks
            }
        }
        expect_batch_equals_one_shot(DigestKind::blake3, lengths, 100 + static_cast<std::uint64_t>(round),
                                     "random round " + std::to_string(round));
    }
    // More messages (300 x 2 chunks) and more chunks (40 x 64) than one group holds.
    expect_batch_equals_one_shot(DigestKind::blake3, std::vector<std::uint32_t>(300, 1500), 7, "300 x 1500");
    expect_batch_equals_one_shot(DigestKind::blake3, std::vector<std::uint32_t>(40, 65536), 8, "40 x 64 KiB");
    expect_batch_equals_one_shot(DigestKind::blake3, std::vector<std::uint32_t>(40, 64511), 9, "40 x 64511");
}

// The partial last chunks of a group go 16 side by side (on CPUs with
// AVX-512F) in the order of their number of blocks, each lane with its own
// chunk counter, number of blocks and final block length; below 4 of them,
// and on other CPUs, one by one.
TEST(DigestBatch, PartialLastChunksOfEveryBlockCount) {
    // Every block count 1..16: one byte into the last block, one byte short
    // of its end and (1..15 blocks) exactly whole blocks.
    std::vector<std::uint32_t> rests;
    for (std::uint32_t blocks = 1; blocks <= 16; ++blocks) {
        rests.push_back(64 * (blocks - 1) + 1);
        rests.push_back(64 * blocks - 1);
        if (blocks < 16) rests.push_back(64 * blocks);
    }
    // After 1..63 whole chunks (2..64 in all; more than one group), in side
    // by side calls whose lanes finish at different blocks.
    std::vector<std::uint32_t> lengths;
    for (std::size_t i = 0; i < rests.size(); ++i)
        lengths.push_back(1024 * static_cast<std::uint32_t>(1 + i * 13 % 63) + rests[i]);
    expect_batch_equals_one_shot(DigestKind::blake3, lengths, 21, "every last chunk after 1..63 chunks");
    // Groups of 1..40 messages with a partial last chunk (one by one below 4,
    // else 16 per call and a remainder), between messages without one.
    for (const std::size_t count : {1u, 2u, 3u, 4u, 5u, 15u, 16u, 17u, 20u, 31u, 32u, 33u, 40u}) {
        lengths.clear();
        for (std::size_t i = 0; i < count; ++i) {
            lengths.push_back(1024 * static_cast<std::uint32_t>(2 + i % 3) + rests[i * 7 % rests.size()]);
            if (i % 4 == 0) lengths.push_back(3072);
        }
        expect_batch_equals_one_shot(DigestKind::blake3, lengths, 22 + count,
                                     std::to_string(count) + " partial last chunks in a group");
    }
}

TEST(DigestBatch, OtherKindsLoop) {
    const std::vector<std::uint32_t> lengths{0, 1, 1025, 9354, 3, 65537};
    for (DigestKind k : {DigestKind::sha256, DigestKind::xxh3, DigestKind::none})
        expect_batch_equals_one_shot(k, lengths, 11, "mixed");
}

TEST(DigestBatch, RejectsBadSpans) {
    const auto buf = random_bytes(100, 1);
    const auto data = std::as_bytes(std::span(buf));
    std::vector<Digest> out(2);
    const std::vector<std::uint32_t> too_long{60, 41};
    EXPECT_THROW(compute_digests(DigestKind::blake3, data, too_long, out), OptionError);
    const std::vector<std::uint32_t> three{1, 2, 3};
    EXPECT_THROW(compute_digests(DigestKind::blake3, data, three, out), OptionError);
    const std::vector<std::uint32_t> exact{60, 40};
    EXPECT_NO_THROW(compute_digests(DigestKind::xxh3, data, exact, out));
}

TEST(Digest, ParseNames) {
    EXPECT_EQ(parse_digest_kind("sha256"), DigestKind::sha256);
    EXPECT_THROW((void)parse_digest_kind("md5"), OptionError);
}

}  // namespace
}  // namespace cdc::test
