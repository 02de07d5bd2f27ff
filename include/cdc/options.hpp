// SPDX-License-Identifier: Apache-2.0
// cdc/options.hpp — chunking options and their validation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cdc {

/// A 32-byte key for keyed Gear tables (kfastcdc and the other Gear names).
using Key = std::array<std::uint8_t, 32>;

/// Parses 64 hexadecimal digits into a Key; throws OptionError otherwise.
Key parse_key_hex(std::string_view hex);

/// User-facing options. A size of zero means "the algorithm's default"; an
/// empty optional parameter means "the algorithm's default" too, and giving
/// one to a name that does not take it is an OptionError (never ignored).
/// `cdc::algorithms()` says which name takes what, with its default.
struct Options {
    std::size_t min_size = 0;
    std::size_t normal_size = 0;  ///< also called the average size
    std::size_t max_size = 0;
    std::optional<Key> key;       ///< only for Gear-based names; required by kfastcdc
    /// fastcdc-rs-v2016/v2020: how strongly chunk sizes are pulled towards
    /// the average (0 = one mask, 1..3 = masks bits(avg)+-level); default 1.
    std::optional<int> normalization_level;
    /// fastcdc-rs-v2020 (64 bits, XORed into the Gear table) and borg-buzhash
    /// (32 bits, XORed into the buzhash table); default 0.
    std::optional<std::uint64_t> seed;
    /// restic-rabin: the irreducible polynomial over GF(2) of degree 8..53,
    /// bit k = coefficient of x^k (restic picks one per repository).
    std::optional<std::uint64_t> polynomial;
    /// borg-buzhash: bytes in the rolling hash window (borg's
    /// hash_window_size); default 4095.
    std::optional<std::size_t> window_size;
};

/// The parameters an algorithm actually uses once defaults are applied and
/// the options validated. Parameters a name does not take are 0.
struct Profile {
    std::size_t min_size = 0;
    std::size_t normal_size = 0;
    std::size_t max_size = 0;
    bool keyed = false;
    int normalization_level = 0;
    std::uint64_t seed = 0;
    std::uint64_t polynomial = 0;
    std::size_t window_size = 0;
};

/// Applies the defaults of `algorithm` to `options` and validates the result
/// against the rules of ALGORITHMS.md section 5 (and COMPAT.md section 8 for
/// the names that reproduce other projects' chunkers). Throws OptionError (naming
/// the option, the value and the rule) on any violation, including an
/// unknown algorithm name (the message lists the known names).
Profile resolve_profile(std::string_view algorithm, const Options& options);

/// Smallest and largest sizes any profile may use (64 B .. 1 GiB).
inline constexpr std::size_t kMinChunkSizeLimit = 64;
inline constexpr std::size_t kMaxChunkSizeLimit = std::size_t{1} << 30;

}  // namespace cdc
