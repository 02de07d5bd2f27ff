// SPDX-License-Identifier: Apache-2.0
// The Rust crate fastcdc 4.0.1: fastcdc-rs-v2016, fastcdc-rs-v2020 and
// fastcdc-rs-ronomon (COMPAT.md sections 1-4). The crate has no default
// sizes; ours are 4 KiB / 16 KiB / 64 KiB (min = avg/4, max = 4 avg).
#include "compat_tables.hpp"
#include "family.hpp"

namespace cdc::detail {

namespace {

/// MASKS[k] of COMPAT.md section 1 (k one-bits for k >= 5, bit 63 never set).
constexpr std::array<std::uint64_t, 26> kMasks = {
    0, 0, 0, 0, 0,
    0x0000000001804110, 0x0000000001803110, 0x0000000018035100, 0x0000001800035300, 0x0000019000353000,
    0x0000590003530000, 0x0000d90003530000, 0x0000d90103530000, 0x0000d90303530000, 0x0000d90313530000,
    0x0000d90f03530000, 0x0000d90303537000, 0x0000d90703537000, 0x0000d90707537000, 0x0000d91707537000,
    0x0000d91747537000, 0x0000d91767537000, 0x0000d93767537000, 0x0000d93777537000, 0x0000d93777577000,
    0x0000db3777577000,
};

}  // namespace

int fastcdc_rs_bits(std::size_t avg) noexcept {
    // The b with 2^(2b-1) <= avg^2 < 2^(2b+1) (avg <= 2^28, so avg^2 fits).
    const std::uint64_t sq = static_cast<std::uint64_t>(avg) * avg;
    return (floor_log2(sq) + 1) / 2;
}

// Each rule takes n = R, the bytes left, and clamps it to max itself (the
// window a chunker passes is already min(max, R); a longer one is cut the same).

std::size_t fastcdc_rs_v2016_scalar(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    if (n <= p.min) return n;                 // final chunk, no hashing
    if (n > p.max) n = p.max;
    const std::size_t c = n < p.avg ? n : p.avg;  // a final window shorter than avg moves the centre
    std::uint64_t h = 0;
    for (std::size_t i = p.min; i < n; ++i) {
        h = (h << 1) + p.gear[w[i]];
        const std::uint64_t m = i < c ? p.mask_s : p.mask_l;
        if ((h & m) == 0) return i;           // cut BEFORE byte i
    }
    return n;
}

std::size_t fastcdc_rs_v2020_scalar(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    if (n <= p.min) return n;
    if (n > p.max) n = p.max;
    const std::size_t c = n < p.avg ? n : p.avg;
    // The crate hashes two bytes per step: every position is rounded down
    // to an even one, and a lone last byte is never hashed.
    const std::size_t even_c = c & ~std::size_t{1};
    const std::size_t even_n = n & ~std::size_t{1};
    std::uint64_t h = 0;
    for (std::size_t i = p.min & ~std::size_t{1}; i < even_n; ++i) {
        h = (h << 1) + p.gear[w[i]];
        const std::uint64_t m = i < even_c ? p.mask_s : p.mask_l;
        if ((h & m) == 0) return i;
    }
    return n;
}

std::size_t ronomon_scalar(const RonomonParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    if (n <= p.min) return n;
    if (n > p.max) n = p.max;
    std::uint32_t h = 0;  // (h >> 1) + T[b] < 2^32: never wraps
    for (std::size_t i = p.min; i < n; ++i) {
        h = (h >> 1) + p.table[w[i]];
        const std::uint32_t m = i < p.centre ? p.mask_s : p.mask_l;
        if ((h & m) == 0) return i + 1;  // cut AFTER byte i
    }
    return n;
}

namespace {

/// The crate's table XORed with `seed` and its shifted copies; seed 0 is
/// the crate's own table, built once.
std::shared_ptr<const KeyedGear> seeded_gear(std::uint64_t seed) {
    auto build = [](std::uint64_t s) {
        auto g = std::make_shared<KeyedGear>();
        for (std::size_t b = 0; b < 256; ++b) g->table[b] = fastcdc_rs_gear()[b] ^ s;
        g->shifted = shift_gear(g->table);
        return g;
    };
    if (seed != 0) return build(seed);
    static const std::shared_ptr<const KeyedGear> unseeded = build(0);
    return unseeded;
}

FastCdcRsParams gear_params(const Profile& p, const KeyedGear& g) {
    const int b = fastcdc_rs_bits(p.normal_size);
    return {g.table.data(), g.shifted.data(), p.min_size, p.normal_size, p.max_size,
            kMasks[static_cast<std::size_t>(b + p.normalization_level)],
            kMasks[static_cast<std::size_t>(b - p.normalization_level)]};
}

std::shared_ptr<const CutFinder> make_v2016(const AlgorithmInfo& info, const Profile& p, const Options&,
                                            KernelLevel level) {
    auto g = seeded_gear(0);
    return make_family_finder(info, p, level, gear_params(p, *g), &select_fastcdc_rs_v2016, g);
}

std::shared_ptr<const CutFinder> make_v2020(const AlgorithmInfo& info, const Profile& p, const Options&,
                                            KernelLevel level) {
    auto g = seeded_gear(p.seed);
    return make_family_finder(info, p, level, gear_params(p, *g), &select_fastcdc_rs_v2020, g);
}

std::shared_ptr<const CutFinder> make_ronomon(const AlgorithmInfo& info, const Profile& p, const Options&,
                                              KernelLevel level) {
    const int b = fastcdc_rs_bits(p.normal_size);
    const std::size_t offset = std::min(p.normal_size, p.min_size + (p.min_size + 1) / 2);
    const RonomonParams params{ronomon_table().data(), p.min_size, p.max_size, p.normal_size - offset,
                               (std::uint32_t{1} << (b + 1)) - 1, (std::uint32_t{1} << (b - 1)) - 1};
    return make_family_finder(info, p, level, params, &select_ronomon);
}

constexpr std::string_view kOrigin = "fastcdc-rs 4.0.1 (Rust crate fastcdc)";
constexpr SizeRule kGearMin{.low = 64, .high = 1 * MiB};
constexpr SizeRule kGearAvg{.low = 256, .high = 4 * MiB};
constexpr SizeRule kGearMax{.low = 1024, .high = 16 * MiB};
constexpr ParameterRule kLevel{.accepted = true, .default_value = 1, .low = 0, .high = 3};

}  // namespace

const std::array<AlgorithmRow, 3> kFastCdcRsRows = {{
    {.info = {.name = "fastcdc-rs-v2020",
              .summary = "FastCDC 2020 as the crate cuts it (two bytes a step); normalization level, 64-bit seed",
              .origin = kOrigin,
              .default_min = 4 * KiB, .default_normal = 16 * KiB, .default_max = 64 * KiB,
              .min_rule = kGearMin, .normal_rule = kGearAvg, .max_rule = kGearMax,
              .normalization_level = kLevel,
              .seed = {.accepted = true, .default_value = 0, .low = 0, .high = ~std::uint64_t{0}}},
     .make = &make_v2020},
    {.info = {.name = "fastcdc-rs-v2016",
              .summary = "FastCDC 2016 as the crate cuts it; normalization level",
              .origin = kOrigin,
              .default_min = 4 * KiB, .default_normal = 16 * KiB, .default_max = 64 * KiB,
              .min_rule = kGearMin, .normal_rule = kGearAvg, .max_rule = kGearMax,
              .normalization_level = kLevel},
     .make = &make_v2016},
    {.info = {.name = "fastcdc-rs-ronomon",
              .summary = "the crate's port of ronomon/deduplication: a 32-bit right-shift Gear hash",
              .origin = kOrigin,
              .default_min = 4 * KiB, .default_normal = 16 * KiB, .default_max = 64 * KiB,
              .min_rule = {.low = 64, .high = 64 * MiB},
              .normal_rule = {.low = 256, .high = 256 * MiB},
              .max_rule = {.low = 1024, .high = 1024 * MiB}},
     .make = &make_ronomon},
}};

}  // namespace cdc::detail
