// SPDX-License-Identifier: Apache-2.0
// Gear tables against the spec files; keyed derivation against the shared
// keyed table; mask helpers against the spec's definitions.
#include "test_support.hpp"

#include "algorithms/params.hpp"  // (src/: the library's internals)

#include <gtest/gtest.h>

#include <sstream>
#include <thread>

namespace cdc::test {
namespace {

std::vector<std::uint64_t> parse_table(const std::filesystem::path& path) {
    std::istringstream in(read_text(path));
    std::vector<std::uint64_t> out;
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(std::stoull(line, nullptr, 16));
    return out;
}

TEST(Tables, GearTableMatchesSpec) {
    const auto expected = parse_table(spec_dir() / "gear-plakar.txt");
    ASSERT_EQ(expected.size(), 256u);
    for (std::size_t i = 0; i < 256; ++i) EXPECT_EQ(gear_table()[i], expected[i]) << i;
}

TEST(Tables, StadiaTableMatchesSpec) {
    const auto expected = parse_table(spec_dir() / "gear-stadia.txt");
    ASSERT_EQ(expected.size(), 256u);
    for (std::size_t i = 0; i < 256; ++i) EXPECT_EQ(stadia_gear_table()[i], expected[i]) << i;
}

TEST(Tables, KeyedTableMatchesSharedVector) {
    const auto j = nlohmann::json::parse(read_text(vectors_dir() / "keyed_gear_table.json"));
    const Key key = parse_key_hex(j["key_hex"].get<std::string>());
    const auto table = keyed_gear_table(key);
    ASSERT_EQ(j["table"].size(), 256u);
    for (std::size_t i = 0; i < 256; ++i)
        EXPECT_EQ((*table)[i], std::stoull(j["table"][i].get<std::string>(), nullptr, 16)) << i;
}

TEST(Tables, KeyedTableIsSharedPerKeyAndDiffersBetweenKeys) {
    Key a{};
    Key b{};
    b[31] = 1;
    const auto t1 = keyed_gear_table(a);
    const auto t2 = keyed_gear_table(a);
    const auto t3 = keyed_gear_table(b);
    EXPECT_EQ(t1.get(), t2.get());
    EXPECT_NE(*t1, *t3);
    EXPECT_NE(*t1, gear_table());
}

TEST(Tables, KeyedTableIsThreadSafe) {
    Key k{};
    k[0] = 0x5a;
    std::vector<std::shared_ptr<const GearTable>> got(8);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < got.size(); ++t) threads.emplace_back([&, t] { got[t] = keyed_gear_table(k); });
    for (auto& th : threads) th.join();
    for (const auto& g : got) EXPECT_EQ(g.get(), got[0].get());
}

TEST(Tables, ShiftedCopiesOfStaticAndKeyedTables) {
    const detail::ShiftedGear& s = detail::shifted_gear_table();
    Key k{};
    k[7] = 3;
    const auto keyed = detail::keyed_gear(k);
    for (std::size_t shift = 0; shift < 8; ++shift)
        for (std::size_t b = 0; b < 256; ++b) {
            ASSERT_EQ(s[shift * 256 + b], gear_table()[b] << shift) << shift << " " << b;
            ASSERT_EQ(keyed->shifted[shift * 256 + b], keyed->table[b] << shift) << shift << " " << b;
        }
    // the public table is the entry's own, and keeps the whole entry alive
    const auto table = keyed_gear_table(k);
    EXPECT_EQ(table.get(), &keyed->table);
    EXPECT_EQ(keyed_gear_table(k).get(), table.get());
}

TEST(Masks, SpacedFollowsTheSpec) {
    EXPECT_EQ(detail::spaced_mask(0), 0u);
    EXPECT_EQ(detail::spaced_mask(-3), 0u);
    EXPECT_EQ(detail::spaced_mask(64), ~0ULL);
    EXPECT_EQ(detail::spaced_mask(70), ~0ULL);
    EXPECT_EQ(detail::spaced_mask(1), 1ULL << 63);
    EXPECT_EQ(detail::spaced_mask(2), (1ULL << 63) | (1ULL << 31));
    EXPECT_EQ(detail::spaced_mask(3), (1ULL << 63) | (1ULL << 42) | (1ULL << 21));
    for (int k = 1; k < 64; ++k) EXPECT_EQ(std::popcount(detail::spaced_mask(k)), k) << k;
    EXPECT_EQ(detail::floor_log2(8192), 13);
    EXPECT_EQ(detail::floor_log2(10240), 13);
    EXPECT_EQ(detail::floor_log2(1), 0);
}

}  // namespace
}  // namespace cdc::test
