// SPDX-License-Identifier: Apache-2.0
// cdc/corpus/size_stats.hpp — the distribution of chunk sizes, exactly.
//
//   cdc::SizeStats stats;
//   stats.add(chunk.size());          // per worker, no locking
//   total.merge(stats);               // afterwards, in any order
//   stats.p50(); stats.stddev(); stats.histogram(); stats.cdf();
//
// Every size is counted exactly (a histogram with one counter per distinct
// size, in pages of 4096 sizes allocated on first use), and every figure is
// computed from that histogram in ascending size order. Hence merging is
// exact and order-independent: a corpus gives the same figures for any
// number of workers and any file order.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace cdc {

class SizeStats {
public:
    SizeStats() = default;
    SizeStats(const SizeStats& other);
    SizeStats& operator=(const SizeStats& other);
    SizeStats(SizeStats&&) noexcept = default;
    SizeStats& operator=(SizeStats&&) noexcept = default;
    ~SizeStats() = default;

    /// Records `n` chunks of `size` bytes (size < 2^32).
    void add(std::uint64_t size, std::uint64_t n = 1);
    /// Adds every chunk recorded by `other`.
    void merge(const SizeStats& other);
    void clear();

    std::uint64_t count() const noexcept { return count_; }
    std::uint64_t total_bytes() const noexcept { return total_; }
    /// 0 when empty.
    std::uint64_t min() const noexcept { return count_ ? min_ : 0; }
    std::uint64_t max() const noexcept { return max_; }
    double mean() const noexcept;
    /// Population standard deviation.
    double stddev() const;
    /// Nearest-rank percentile: the smallest size s such that at least
    /// q * count chunks are <= s (q in [0, 1]; q = 0 gives min). 0 when empty.
    std::uint64_t percentile(double q) const;
    std::uint64_t p50() const { return percentile(0.5); }
    std::uint64_t p95() const { return percentile(0.95); }

    /// (size, number of chunks of that size) for every size seen, ascending.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> histogram() const;
    /// The histogram in `bins` equal-width bins over [0, max()]: bin i counts
    /// chunks with size in [i * w, (i + 1) * w), w = max() / bins + 1.
    std::vector<std::uint64_t> binned(std::size_t bins) const;
    /// Cumulative distribution: (size, fraction of chunks <= size) for every
    /// size seen, ascending; the last fraction is 1.
    std::vector<std::pair<std::uint64_t, double>> cdf() const;

    friend bool operator==(const SizeStats& a, const SizeStats& b);

private:
    static constexpr unsigned kPageBits = 12;
    static constexpr std::size_t kPageSize = std::size_t{1} << kPageBits;
    using Page = std::array<std::uint64_t, kPageSize>;
    template <class F>
    void for_each_size(F&& f) const;  // f(size, n) ascending, n > 0

    std::vector<std::unique_ptr<Page>> pages_;
    std::uint64_t count_ = 0;
    std::uint64_t total_ = 0;
    std::uint64_t min_ = 0;
    std::uint64_t max_ = 0;
};

}  // namespace cdc
