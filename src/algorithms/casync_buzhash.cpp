// SPDX-License-Identifier: Apache-2.0
// casync-buzhash (COMPAT.md section 7): casync's buzhash over the last 48
// bytes of the chunk; a cut where H48 mod d == d - 1, d derived from avg.
#include "compat_tables.hpp"
#include "family.hpp"

#include <cmath>

namespace cdc::detail {

std::uint64_t casync_discriminator(std::size_t avg) noexcept {
    // IEEE-754 doubles, each operation rounded on its own: the volatile
    // keeps a compiler from fusing the multiply and the add (FMA).
    volatile double product = -1.42888852e-7 * static_cast<double>(avg);
    const double t = product + 1.33237515;
    return static_cast<std::uint64_t>(std::trunc(static_cast<double>(avg) / t));  // t > 0 for avg <= 9324556
}

std::size_t casync_scalar(const CasyncParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    if (n < p.min) return n;  // the stream ends before any length can be tested (min >= 64 > 48)
    const std::uint64_t d = p.discriminator;
    std::uint32_t h = 0;  // H48 of the 48 bytes ending at the first length tested, L = min
    for (std::size_t j = p.min - kCasyncWindow; j < p.min; ++j)
        h ^= rotl32(p.table[w[j]], static_cast<unsigned>(p.min - 1 - j));
    for (std::size_t len = p.min;; ++len) {
        if (len >= p.max) return len;
        if (h % d == d - 1) return len;  // the window ends with the chunk's last byte
        if (len == n) return n;          // the stream ended
        h = rotl32(h, 1) ^ rotl32(p.table[w[len - kCasyncWindow]], kCasyncWindow) ^ p.table[w[len]];
    }
}

namespace {

std::shared_ptr<const CutFinder> make(const AlgorithmInfo& info, const Profile& p, const Options&, KernelLevel level) {
    const std::uint64_t d =
        std::clamp<std::uint64_t>(casync_discriminator(p.normal_size), p.min_size, p.max_size);
    const CasyncParams params{casync_buzhash_table().data(), p.min_size, p.max_size, d, ~std::uint64_t{0} / d + 1};
    return make_family_finder(info, p, level, params, &select_casync);
}

}  // namespace

const std::array<AlgorithmRow, 1> kCasyncRows = {{
    {.info = {.name = "casync-buzhash",
              .summary = "buzhash of the last 48 bytes; cut where H mod d = d - 1, d from the average",
              .origin = "casync 2+20201210 (casync make)",
              .default_min = 16 * KiB, .default_normal = 64 * KiB, .default_max = 256 * KiB,
              // casync refuses max > 128 MiB; above avg 9324556 its discriminator divides by zero or a
              // negative number (undefined behaviour in C)
              .normal_rule = {.low = 64, .high = 9324556},
              .max_rule = {.low = 64, .high = 128 * MiB}},
     .make = &make},
}};

}  // namespace cdc::detail
