// SPDX-License-Identifier: Apache-2.0
// Invariants on random data and random valid profiles: chunks concatenate to
// the input; every chunk but the last lies in [min, max]; the last is at most
// max; streaming with random read sizes gives the same chunks.
#include "test_support.hpp"

#include <cdc/corpus/datagen.hpp>
#include "random_options.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <bit>

namespace cdc::test {
namespace {

struct Rng {
    SplitMix64 sm;
    explicit Rng(std::uint64_t seed) : sm(seed) {}
    std::uint64_t operator()(std::uint64_t lo, std::uint64_t hi) { return lo + sm.next() % (hi - lo + 1); }
};

Options random_options(const AlgorithmInfo& a, Rng& rng) {
    return random_valid_options(a, [&] { return rng.sm.next(); });
}

std::vector<std::uint8_t> random_data(Rng& rng) {
    const std::size_t n = rng(0, 600000);
    switch (rng(0, 3)) {
        case 0: return random_bytes(n, rng(0, 1u << 30));
        case 1: return generate_input(fmt::format("text:{}:{}", rng(0, 100), n));
        case 2: {  // runs of zeros and random bytes
            auto v = random_bytes(n, rng(0, 1000));
            for (std::size_t i = 0; i < n; i += 50000)
                std::fill(v.begin() + static_cast<std::ptrdiff_t>(i),
                          v.begin() + static_cast<std::ptrdiff_t>(std::min(n, i + 20000)), 0);
            return v;
        }
        default: return generate_input(fmt::format("repeat:xy{}:{}", rng(0, 9), n));
    }
}

TEST(Invariants, RandomProfilesAndData) {
    Rng rng(2024);
    for (int round = 0; round < 12; ++round) {
        for (const auto& a : algorithms()) {
            const Options o = random_options(a, rng);
            const auto f = make_cut_finder(a.name, o);
            const Profile& p = f->profile();
            const auto data = random_data(rng);
            SCOPED_TRACE(fmt::format("{} {}/{}/{} n={}", a.name, p.min_size, p.normal_size, p.max_size, data.size()));
            Chunker c(f, MemorySource(std::span<const std::uint8_t>(data)));
            std::vector<std::size_t> sizes;
            std::uint64_t offset = 0;
            for (const Chunk& ch : c) {
                ASSERT_EQ(ch.offset, offset);
                ASSERT_TRUE(std::equal(ch.bytes.begin(), ch.bytes.end(),
                                       reinterpret_cast<const std::byte*>(data.data()) + offset));
                offset += ch.size();
                sizes.push_back(ch.size());
            }
            ASSERT_EQ(offset, data.size());
            for (std::size_t i = 0; i < sizes.size(); ++i) {
                ASSERT_GE(sizes[i], 1u);
                ASSERT_LE(sizes[i], p.max_size);
                if (i + 1 < sizes.size()) {
                    ASSERT_GE(sizes[i], shortest_chunk(a, p)) << "chunk " << i;
                }
            }
            ScriptedReader r(data, {rng(1, 100), 0, rng(1, 100000), rng(1, 3000)}, rng(0, 1) == 1);
            EXPECT_EQ(lengths_stream(f, r), sizes);
        }
    }
}

}  // namespace
}  // namespace cdc::test
