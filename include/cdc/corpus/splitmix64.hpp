// SPDX-License-Identifier: Apache-2.0
// cdc/corpus/splitmix64.hpp — SplitMix64 (Steele, Lea, Flood 2014): the small,
// seedable generator behind the resync edits (cdc/corpus/resync.hpp) and the test
// inputs of the shared test vectors ("splitmix64:SEED:LEN"). The same seed
// gives the same stream everywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace cdc {

class SplitMix64 {
public:
    explicit constexpr SplitMix64(std::uint64_t seed) noexcept : state_(seed) {}

    constexpr std::uint64_t next() noexcept {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }

    /// Uniform in [0, n) for n > 0 (by modulo: the bias, below 2^-40 for the
    /// sizes used here, does not matter for edits and test data).
    constexpr std::uint64_t below(std::uint64_t n) noexcept { return next() % n; }

    /// Fills `out` with the byte stream: each output as 8 little-endian
    /// bytes, the last one cut to what is left.
    constexpr void fill(std::span<std::uint8_t> out) noexcept {
        std::size_t i = 0;
        while (i < out.size()) {
            const std::uint64_t z = next();
            for (int b = 0; b < 8 && i < out.size(); ++b, ++i) out[i] = static_cast<std::uint8_t>(z >> (8 * b));
        }
    }

private:
    std::uint64_t state_;
};

}  // namespace cdc
