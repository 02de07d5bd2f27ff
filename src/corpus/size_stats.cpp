// SPDX-License-Identifier: Apache-2.0
// Exact chunk-size distribution; see cdc/corpus/size_stats.hpp.
#include <cdc/error.hpp>
#include <cdc/corpus/size_stats.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace cdc {

SizeStats::SizeStats(const SizeStats& other) { *this = other; }

SizeStats& SizeStats::operator=(const SizeStats& other) {
    if (this == &other) return *this;
    pages_.clear();
    pages_.resize(other.pages_.size());
    for (std::size_t i = 0; i < other.pages_.size(); ++i)
        if (other.pages_[i]) pages_[i] = std::make_unique<Page>(*other.pages_[i]);
    count_ = other.count_;
    total_ = other.total_;
    min_ = other.min_;
    max_ = other.max_;
    return *this;
}

void SizeStats::add(std::uint64_t size, std::uint64_t n) {
    if (n == 0) return;
    if (size > 0xffffffffu) throw OptionError(fmt::format("size statistics: size {} is invalid: must be < 2^32", size));
    const std::size_t page = static_cast<std::size_t>(size >> kPageBits);
    if (page >= pages_.size()) pages_.resize(page + 1);
    if (!pages_[page]) pages_[page] = std::make_unique<Page>(Page{});
    (*pages_[page])[size & (kPageSize - 1)] += n;
    if (count_ == 0 || size < min_) min_ = size;
    if (size > max_) max_ = size;
    count_ += n;
    total_ += size * n;
}

void SizeStats::merge(const SizeStats& other) {
    if (other.count_ == 0) return;
    if (other.pages_.size() > pages_.size()) pages_.resize(other.pages_.size());
    for (std::size_t p = 0; p < other.pages_.size(); ++p) {
        if (!other.pages_[p]) continue;
        if (!pages_[p]) pages_[p] = std::make_unique<Page>(Page{});
        for (std::size_t i = 0; i < kPageSize; ++i) (*pages_[p])[i] += (*other.pages_[p])[i];
    }
    if (count_ == 0 || other.min_ < min_) min_ = other.min_;
    max_ = std::max(max_, other.max_);
    count_ += other.count_;
    total_ += other.total_;
}

void SizeStats::clear() {
    pages_.clear();
    count_ = total_ = min_ = max_ = 0;
}

template <class F>
void SizeStats::for_each_size(F&& f) const {
    for (std::size_t p = 0; p < pages_.size(); ++p) {
        if (!pages_[p]) continue;
        const Page& page = *pages_[p];
        for (std::size_t i = 0; i < kPageSize; ++i)
            if (page[i] != 0) f((std::uint64_t{p} << kPageBits) | i, page[i]);
    }
}

double SizeStats::mean() const noexcept {
    return count_ == 0 ? 0.0 : static_cast<double>(total_) / static_cast<double>(count_);
}

double SizeStats::stddev() const {
    if (count_ == 0) return 0.0;
    const long double m = static_cast<long double>(total_) / static_cast<long double>(count_);
    long double acc = 0;
    for_each_size([&](std::uint64_t s, std::uint64_t n) {
        const long double d = static_cast<long double>(s) - m;
        acc += d * d * static_cast<long double>(n);
    });
    return static_cast<double>(std::sqrt(acc / static_cast<long double>(count_)));
}

std::uint64_t SizeStats::percentile(double q) const {
    if (count_ == 0) return 0;
    q = std::clamp(q, 0.0, 1.0);
    // Nearest rank: the rank-th smallest chunk, rank = ceil(q * count) >= 1.
    std::uint64_t rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
    rank = std::clamp<std::uint64_t>(rank, 1, count_);
    std::uint64_t seen = 0;
    std::uint64_t result = max_;
    bool done = false;
    for_each_size([&](std::uint64_t s, std::uint64_t n) {
        if (done) return;
        seen += n;
        if (seen >= rank) {
            result = s;
            done = true;
        }
    });
    return result;
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> SizeStats::histogram() const {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    for_each_size([&](std::uint64_t s, std::uint64_t n) { out.emplace_back(s, n); });
    return out;
}

std::vector<std::uint64_t> SizeStats::binned(std::size_t bins) const {
    std::vector<std::uint64_t> out(bins, 0);
    if (bins == 0) return out;
    const std::uint64_t w = max_ / bins + 1;
    for_each_size([&](std::uint64_t s, std::uint64_t n) { out[static_cast<std::size_t>(s / w)] += n; });
    return out;
}

std::vector<std::pair<std::uint64_t, double>> SizeStats::cdf() const {
    std::vector<std::pair<std::uint64_t, double>> out;
    std::uint64_t seen = 0;
    for_each_size([&](std::uint64_t s, std::uint64_t n) {
        seen += n;
        out.emplace_back(s, seen == count_ ? 1.0 : static_cast<double>(seen) / static_cast<double>(count_));
    });
    return out;
}

bool operator==(const SizeStats& a, const SizeStats& b) {
    if (a.count_ != b.count_ || a.total_ != b.total_ || a.min() != b.min() || a.max_ != b.max_) return false;
    return a.histogram() == b.histogram();
}

}  // namespace cdc
