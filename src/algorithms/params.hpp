// Internal: the parameters each algorithm family scans with, and the scalar
// reference scanners that read like ALGORITHMS.md. Accelerated kernels in
// src/kernels/ take the same parameters and must return the same cut points.
#pragma once

#include <cdc/algorithms.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace cdc::detail {

/// `spaced(k)` of ALGORITHMS.md section 2: k one-bits spread from the top.
constexpr std::uint64_t spaced_mask(int k) noexcept {
    if (k >= 64) return ~std::uint64_t{0};
    if (k <= 0) return 0;
    const int step = 64 / k;
    std::uint64_t m = 0;
    for (int i = 0; i < k; ++i) m |= std::uint64_t{1} << (63 - i * step);
    return m;
}

/// `bits(x)` = floor(log2(x)), for x >= 1.
constexpr int floor_log2(std::size_t x) noexcept { return static_cast<int>(std::bit_width(x)) - 1; }

/// A Gear table's copies shifted left by 0..7 bits: entry s * 256 + b is
/// G[b] << s. The portable sequential scan (FirstSeq, src/kernels/drivers.hpp)
/// and the AVX-512 FastCDC lanes add these pre-shifted values instead of
/// shifting the hash at every position.
using ShiftedGear = std::array<std::uint64_t, 8 * 256>;
ShiftedGear shift_gear(const GearTable& g) noexcept;
/// shift_gear(gear_table()), built on first use.
const ShiftedGear& shifted_gear_table();

/// A keyed table and its shifted copies, derived once per key and shared
/// while anyone holds them (keyed_gear_table() hands out `table`).
struct KeyedGear {
    GearTable table;
    ShiftedGear shifted;
};
std::shared_ptr<const KeyedGear> keyed_gear(const Key& key);

struct FastCdcParams {
    const std::uint64_t* gear;
    const std::uint64_t* shifted;  // shift_gear(gear)
    std::size_t min, normal, max;
    std::uint64_t mask_s, mask_l;
};

struct JcParams {
    const std::uint64_t* gear;
    const std::uint64_t* shifted;  // shift_gear(gear)
    std::size_t min, normal, max;
    std::uint64_t mask_c, mask_j;
    std::size_t jump;
    bool final_shortcut;  // jc, jc-v1.0.0: a final window <= Normal is returned whole
};

struct StadiaParams {
    const std::uint64_t* gear;
    std::size_t min, normal, max;
    std::uint64_t thresh;
};

struct UltraParams {
    std::size_t min, normal, max;
    bool cut_at_block_end;  // ultracdc-v1.0.0 returns i + 8 instead of i + j
};

std::size_t fastcdc_scalar(const FastCdcParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t jc_scalar(const JcParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t stadia_scalar(const StadiaParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t ultra_scalar(const UltraParams& p, const std::uint8_t* w, std::size_t n) noexcept;

template <class Params>
using ScanFn = std::size_t (*)(const Params&, const std::uint8_t*, std::size_t) noexcept;

/// The kernel of each family for `level`: a forced level gives the family's
/// best kernel at or below it; KernelLevel::automatic the fastest on this
/// CPU, measured on `probe` (the family's default-profile parameters) on the
/// family's first automatic use and cached (src/kernels/dispatch.cpp).
/// `*used` receives the level actually chosen.
ScanFn<FastCdcParams> select_fastcdc(KernelLevel level, KernelLevel* used, const FastCdcParams& probe);
ScanFn<JcParams> select_jc(KernelLevel level, KernelLevel* used, const JcParams& probe);
ScanFn<StadiaParams> select_stadia(KernelLevel level, KernelLevel* used, const StadiaParams& probe);
ScanFn<UltraParams> select_ultra(KernelLevel level, KernelLevel* used, const UltraParams& probe);

/// The family's calibration (run now if it has not run yet).
const KernelCalibration& calibration_fastcdc(const FastCdcParams& probe);
const KernelCalibration& calibration_jc(const JcParams& probe);
const KernelCalibration& calibration_stadia(const StadiaParams& probe);
const KernelCalibration& calibration_ultra(const UltraParams& probe);

}  // namespace cdc::detail
