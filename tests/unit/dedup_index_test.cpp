// SPDX-License-Identifier: Apache-2.0
// DedupIndex: set semantics, growth, probing collisions, concurrency, memory.
#include <cdc/corpus/dedup_index.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <vector>

namespace cdc {
namespace {

Digest digest_of(std::uint64_t i) {
    const std::uint64_t v = i;
    return compute_digest(DigestKind::blake3, std::as_bytes(std::span<const std::uint64_t>(&v, 1)));
}

TEST(DedupIndex, InsertReportsNewAndCounts) {
    DedupIndex index;
    EXPECT_EQ(index.distinct_chunks(), 0u);
    EXPECT_TRUE(index.insert(digest_of(1), 100));
    EXPECT_FALSE(index.insert(digest_of(1), 100));
    EXPECT_TRUE(index.insert(digest_of(2), 50));
    EXPECT_TRUE(index.contains(digest_of(1)));
    EXPECT_FALSE(index.contains(digest_of(3)));
    EXPECT_EQ(index.distinct_chunks(), 2u);
    EXPECT_EQ(index.distinct_bytes(), 150u);
    EXPECT_EQ(index.inserted_chunks(), 3u);
    EXPECT_EQ(index.inserted_bytes(), 250u);
    index.clear();
    EXPECT_EQ(index.distinct_chunks(), 0u);
    EXPECT_FALSE(index.contains(digest_of(1)));
    EXPECT_TRUE(index.insert(digest_of(1), 100));
}

TEST(DedupIndex, ForEachVisitsEveryDistinctEntryOnce) {
    DedupIndex index;
    std::map<std::array<std::uint8_t, DedupIndex::kKeyBytes>, std::uint32_t> want;
    for (std::uint64_t i = 0; i < 5000; ++i) {
        const Digest d = digest_of(i % 3000);  // 2000 repeats
        const auto size = static_cast<std::uint32_t>(i % 3000 + 1);
        index.insert(d, size);
        std::array<std::uint8_t, DedupIndex::kKeyBytes> key{};
        std::memcpy(key.data(), d.bytes.data(), key.size());
        want[key] = size;
    }
    std::map<std::array<std::uint8_t, DedupIndex::kKeyBytes>, std::uint32_t> seen;
    std::uint64_t visits = 0;
    index.for_each([&](const DedupIndex::Entry& e) {
        ++visits;
        seen[e.key] = e.size;
    });
    EXPECT_EQ(visits, 3000u);
    EXPECT_EQ(seen, want);
    // Re-inserting what for_each gives rebuilds the same set.
    DedupIndex copy;
    index.for_each([&](const DedupIndex::Entry& e) {
        Digest d;
        std::memcpy(d.bytes.data(), e.key.data(), e.key.size());
        d.size = DedupIndex::kKeyBytes;
        EXPECT_TRUE(copy.insert(d, e.size));
    });
    EXPECT_EQ(copy.distinct_chunks(), index.distinct_chunks());
    EXPECT_EQ(copy.distinct_bytes(), index.distinct_bytes());
}

TEST(DedupIndex, GrowthKeepsEveryEntry) {
    DedupIndex index;
    constexpr std::uint64_t n = 200000;
    std::uint64_t bytes = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(index.insert(digest_of(i), static_cast<std::uint32_t>(i % 5000 + 1)));
        bytes += i % 5000 + 1;
    }
    for (std::uint64_t i = 0; i < n; i += 7) ASSERT_FALSE(index.insert(digest_of(i), static_cast<std::uint32_t>(i % 5000 + 1)));
    for (std::uint64_t i = n; i < n + 1000; ++i) ASSERT_FALSE(index.contains(digest_of(i)));
    EXPECT_EQ(index.distinct_chunks(), n);
    EXPECT_EQ(index.distinct_bytes(), bytes);
}

TEST(DedupIndex, MemoryPerDistinctChunkAtMost40Bytes) {
    // Measured at several fill levels (just after and just before growth).
    DedupIndex index;
    for (std::uint64_t i = 0; i < 1'000'000; ++i) {
        index.insert(digest_of(i), 8192);
        if (i + 1 == 100'000 || i + 1 == 300'000 || i + 1 == 1'000'000) {
            EXPECT_LE(index.bytes_per_distinct_chunk(), 40.0) << "after " << i + 1 << " chunks";
            EXPECT_GE(index.bytes_per_distinct_chunk(), 20.0);
        }
    }
}

TEST(DedupIndex, ProbingCollisionsAreResolved) {
    // Digests with the same shard bits (bytes 8..11) and the same home slot
    // (bytes 0..7) that differ elsewhere in the first 12 bytes: impossible
    // here, as those ARE the 12 bytes. So collide the shard and the low slot
    // bits only: equal bytes 0..3 and 8..11, different bytes 4..7.
    DedupIndex index;
    std::vector<Digest> ds;
    for (std::uint32_t i = 0; i < 5000; ++i) {
        Digest d;
        d.size = 32;
        std::memset(d.bytes.data(), 0xab, 32);
        std::memcpy(d.bytes.data() + 4, &i, 4);
        ds.push_back(d);
    }
    for (const auto& d : ds) ASSERT_TRUE(index.insert(d, 10));
    for (const auto& d : ds) ASSERT_FALSE(index.insert(d, 10));
    EXPECT_EQ(index.distinct_chunks(), ds.size());
    EXPECT_EQ(index.distinct_bytes(), 10u * ds.size());
    // An all-zero digest is a valid key too (emptiness is marked in the size).
    Digest zero;
    zero.size = 32;
    EXPECT_TRUE(index.insert(zero, 1));
    EXPECT_FALSE(index.insert(zero, 1));
}

TEST(DedupIndex, KeyIsTheFirst12Bytes) {
    DedupIndex index;
    Digest a = digest_of(9), b = a;
    b.bytes[20] ^= 1;  // beyond the key: documented as the same chunk
    EXPECT_TRUE(index.insert(a, 5));
    EXPECT_FALSE(index.insert(b, 5));
    Digest c = a;
    c.bytes[11] ^= 1;  // inside the key
    EXPECT_TRUE(index.insert(c, 5));
}

TEST(DedupIndex, RejectsOversizedChunks) {
    DedupIndex index;
    EXPECT_THROW(index.insert(digest_of(1), 0x80000000u), OptionError);
    EXPECT_TRUE(index.insert(digest_of(1), DedupIndex::kMaxSize));
}

TEST(DedupIndex, ConcurrentInsertsGiveTheSameCounts) {
    // 4 threads insert overlapping ranges; the union is [0, 250000).
    DedupIndex index;
    std::vector<std::thread> threads;
    std::vector<std::uint64_t> news(4, 0);
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (std::uint64_t i = static_cast<std::uint64_t>(t) * 50000; i < static_cast<std::uint64_t>(t) * 50000 + 100000; ++i)
                if (index.insert(digest_of(i), static_cast<std::uint32_t>(i % 100 + 1))) ++news[static_cast<std::size_t>(t)];
        });
    for (auto& th : threads) th.join();
    std::uint64_t bytes = 0;
    for (std::uint64_t i = 0; i < 250000; ++i) bytes += i % 100 + 1;
    EXPECT_EQ(index.distinct_chunks(), 250000u);
    EXPECT_EQ(news[0] + news[1] + news[2] + news[3], 250000u);
    EXPECT_EQ(index.distinct_bytes(), bytes);
    EXPECT_EQ(index.inserted_chunks(), 400000u);
}

TEST(DedupIndex, PresizedIndexWorks) {
    DedupIndex index(100000);
    for (std::uint64_t i = 0; i < 1000; ++i) index.insert(digest_of(i), 1);
    EXPECT_EQ(index.distinct_chunks(), 1000u);
    EXPECT_GT(index.memory_bytes(), 100000u * 16u);
}

}  // namespace
}  // namespace cdc
