// SPDX-License-Identifier: Apache-2.0
// Random valid options for any algorithm name, drawn from the rules its
// AlgorithmInfo states (size ranges, powers of two, which parameters it
// takes and their ranges), so that tests and fuzz targets cover every name,
// the compatibility ones included, without knowing them. Header-only: the
// fuzz targets link the library alone.
#pragma once

#include <cdc/algorithms.hpp>
#include <cdc/error.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>

namespace cdc::test {

/// Irreducible polynomials of degrees 8, 16, 31, 48, 53, 53 (restic-rabin;
/// the compat vectors use them).
inline constexpr std::uint64_t kIrreduciblePolynomials[] = {0x11b, 0x1002d, 0x83225a8b, 0x1a123aac67ef3,
                                                            0x20e7f3380b43fd, 0x3da3358b4dc173};

/// Random valid options for `a` with the average size at most about
/// `max_normal` (and max at most about 8x that): `next` returns random
/// 64-bit values. Gives up (returns the defaults) only if the name's rules
/// leave no room, which no registered name does.
inline Options random_valid_options(const AlgorithmInfo& a, const std::function<std::uint64_t()>& next,
                                    std::size_t max_normal = 65536) {
    auto in = [&](std::uint64_t lo, std::uint64_t hi) { return hi <= lo ? lo : lo + next() % (hi - lo + 1); };
    // A value of `rule` in [lo, hi]: a power of two when the rule says so.
    auto pick = [&](const SizeRule& rule, std::size_t lo, std::size_t hi) -> std::size_t {
        lo = std::max(lo, rule.low);
        hi = std::min(hi, rule.high);
        if (!rule.power_of_two) return static_cast<std::size_t>(in(lo, hi));
        const int e_lo = static_cast<int>(std::bit_width(lo - 1));  // smallest 2^e >= lo
        const int e_hi = static_cast<int>(std::bit_width(hi)) - 1;  // largest 2^e <= hi
        return std::size_t{1} << in(static_cast<std::uint64_t>(e_lo), static_cast<std::uint64_t>(std::max(e_lo, e_hi)));
    };
    for (int attempt = 0; attempt < 100; ++attempt) {
        Options o;
        if (!a.content_defined) {
            o.normal_size = pick(a.normal_rule, 64, max_normal);
        } else {
            o.min_size = pick(a.min_rule, 64, std::max<std::size_t>(max_normal / 2, 64));
            o.normal_size = pick(a.normal_rule, o.min_size + 1, std::max(max_normal, o.min_size * 2));
            o.max_size = pick(a.max_rule, o.normal_size + 1, o.normal_size * 8);
        }
        if (a.key == KeyUse::required || (a.key == KeyUse::optional && (next() & 1))) {
            Key k{};
            std::uint64_t bits = 0;
            for (std::size_t i = 0; i < k.size(); ++i) {
                if (i % 8 == 0) bits = next();
                k[i] = static_cast<std::uint8_t>(bits >> (8 * (i % 8)));
            }
            o.key = k;
        }
        const bool give = next() & 1;  // or leave the parameters at their defaults
        if (give && a.normalization_level.accepted)
            o.normalization_level = static_cast<int>(in(a.normalization_level.low, a.normalization_level.high));
        if (give && a.seed.accepted) o.seed = a.seed.high == ~std::uint64_t{0} ? next() : in(a.seed.low, a.seed.high);
        if (give && a.polynomial.accepted) o.polynomial = kIrreduciblePolynomials[next() % 6];
        if (give && a.window_size.accepted && o.max_size > o.min_size + 1)
            o.window_size = static_cast<std::size_t>(in(1, std::min<std::uint64_t>(o.max_size - o.min_size - 1, 8192)));
        try {
            (void)resolve_profile(a.name, o);
            return o;
        } catch (const OptionError&) {
        }
    }
    return {};
}

/// The shortest chunk but the last: min, except for fastcdc-rs-v2020, which
/// tests positions rounded down to even numbers (COMPAT.md section 3: an odd
/// min gives chunks of min - 1 bytes).
inline std::size_t shortest_chunk(const AlgorithmInfo& a, const Profile& p) {
    return a.name == "fastcdc-rs-v2020" ? p.min_size & ~std::size_t{1} : p.min_size;
}

}  // namespace cdc::test
