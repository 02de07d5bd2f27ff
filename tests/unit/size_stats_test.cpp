// SPDX-License-Identifier: Apache-2.0
// SizeStats: exact percentiles, moments, merging in any order, plot accessors.
#include <cdc/corpus/size_stats.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace cdc {
namespace {

TEST(SizeStats, Empty) {
    SizeStats s;
    EXPECT_EQ(s.count(), 0u);
    EXPECT_EQ(s.min(), 0u);
    EXPECT_EQ(s.max(), 0u);
    EXPECT_EQ(s.p50(), 0u);
    EXPECT_EQ(s.mean(), 0.0);
    EXPECT_EQ(s.stddev(), 0.0);
    EXPECT_TRUE(s.histogram().empty());
    EXPECT_TRUE(s.cdf().empty());
}

TEST(SizeStats, KnownDistribution) {
    SizeStats s;
    for (std::uint64_t v = 1; v <= 100; ++v) s.add(v * 100);  // 100..10000
    EXPECT_EQ(s.count(), 100u);
    EXPECT_EQ(s.total_bytes(), 505000u);
    EXPECT_EQ(s.min(), 100u);
    EXPECT_EQ(s.max(), 10000u);
    EXPECT_EQ(s.p50(), 5000u);   // nearest rank: the 50th value
    EXPECT_EQ(s.p95(), 9500u);
    EXPECT_EQ(s.percentile(0), 100u);
    EXPECT_EQ(s.percentile(1), 10000u);
    EXPECT_DOUBLE_EQ(s.mean(), 5050.0);
    // Population stddev of 100*{1..100} = 100 * sqrt((100^2 - 1) / 12).
    EXPECT_NEAR(s.stddev(), 100.0 * std::sqrt((100.0 * 100.0 - 1.0) / 12.0), 1e-6);
}

TEST(SizeStats, WeightsAndPercentileRanks) {
    SizeStats s;
    s.add(10, 3);
    s.add(20, 1);
    EXPECT_EQ(s.count(), 4u);
    EXPECT_EQ(s.p50(), 10u);
    EXPECT_EQ(s.percentile(0.75), 10u);
    EXPECT_EQ(s.percentile(0.76), 20u);
    EXPECT_DOUBLE_EQ(s.mean(), 12.5);
}

TEST(SizeStats, MergeIsExactAndOrderIndependent) {
    std::mt19937_64 rng(7);
    std::vector<std::uint64_t> values;
    for (int i = 0; i < 20000; ++i) values.push_back(64 + rng() % 200000);
    values.push_back(0xffffffffu);  // the largest size, in the last page
    SizeStats all;
    for (auto v : values) all.add(v);

    std::vector<SizeStats> parts(4);
    for (std::size_t i = 0; i < values.size(); ++i) parts[i % 4].add(values[i]);
    SizeStats a, b;
    for (int i = 0; i < 4; ++i) a.merge(parts[static_cast<std::size_t>(i)]);
    for (int i = 3; i >= 0; --i) b.merge(parts[static_cast<std::size_t>(i)]);
    EXPECT_EQ(a, all);
    EXPECT_EQ(b, all);
    EXPECT_EQ(a.p50(), all.p50());
    EXPECT_EQ(a.stddev(), b.stddev());

    std::sort(values.begin(), values.end());
    EXPECT_EQ(all.min(), values.front());
    EXPECT_EQ(all.max(), values.back());
    EXPECT_EQ(all.p50(), values[static_cast<std::size_t>(std::ceil(0.5 * static_cast<double>(values.size()))) - 1]);
    EXPECT_EQ(all.p95(), values[static_cast<std::size_t>(std::ceil(0.95 * static_cast<double>(values.size()))) - 1]);

    SizeStats copy = all;
    EXPECT_EQ(copy, all);
    copy.add(5);
    EXPECT_FALSE(copy == all);
}

TEST(SizeStats, HistogramCdfAndBins) {
    SizeStats s;
    s.add(4096, 2);  // page boundary
    s.add(4095);
    s.add(8191, 1);
    const auto h = s.histogram();
    ASSERT_EQ(h.size(), 3u);
    EXPECT_EQ(h[0], (std::pair<std::uint64_t, std::uint64_t>{4095, 1}));
    EXPECT_EQ(h[1], (std::pair<std::uint64_t, std::uint64_t>{4096, 2}));
    EXPECT_EQ(h[2], (std::pair<std::uint64_t, std::uint64_t>{8191, 1}));
    const auto c = s.cdf();
    ASSERT_EQ(c.size(), 3u);
    EXPECT_DOUBLE_EQ(c[0].second, 0.25);
    EXPECT_DOUBLE_EQ(c[1].second, 0.75);
    EXPECT_DOUBLE_EQ(c[2].second, 1.0);
    const auto bins = s.binned(2);  // width 8191 / 2 + 1 = 4096
    ASSERT_EQ(bins.size(), 2u);
    EXPECT_EQ(bins[0], 1u);
    EXPECT_EQ(bins[1], 3u);
    s.clear();
    EXPECT_EQ(s.count(), 0u);
}

TEST(SizeStats, RejectsSizesOf4GiB) {
    SizeStats s;
    EXPECT_ANY_THROW(s.add(std::uint64_t{1} << 32));
}

}  // namespace
}  // namespace cdc
