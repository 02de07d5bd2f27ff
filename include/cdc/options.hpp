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

/// User-facing options. A size of zero means "the algorithm's default".
struct Options {
    std::size_t min_size = 0;
    std::size_t normal_size = 0;  ///< also called the average size
    std::size_t max_size = 0;
    std::optional<Key> key;       ///< only for Gear-based names; required by kfastcdc
};

/// The sizes an algorithm actually uses once defaults are applied and the
/// options validated.
struct Profile {
    std::size_t min_size = 0;
    std::size_t normal_size = 0;
    std::size_t max_size = 0;
    bool keyed = false;
};

/// Applies the defaults of `algorithm` to `options` and validates the result
/// against the rules of ALGORITHMS.md section 5. Throws OptionError (naming
/// the option, the value and the rule) on any violation, including an
/// unknown algorithm name (the message lists the known names).
Profile resolve_profile(std::string_view algorithm, const Options& options);

/// Smallest and largest sizes any profile may use (64 B .. 1 GiB).
inline constexpr std::size_t kMinChunkSizeLimit = 64;
inline constexpr std::size_t kMaxChunkSizeLimit = std::size_t{1} << 30;

}  // namespace cdc
