// SPDX-License-Identifier: Apache-2.0
// Internal: the parameters each algorithm family scans with, and the scalar
// reference scanners that read like ALGORITHMS.md. Accelerated kernels in
// src/kernels/ take the same parameters and must return the same cut points.
#pragma once

#include <cdc/algorithms.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
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
/// shifting the hash at every position. They are followed by the table's
/// byte planes (gear_planes): the AVX-512 VBMI kernels look entries up one
/// byte plane at a time with byte permutes instead of 64-bit gathers.
using ShiftedGear = std::array<std::uint64_t, 8 * 256 + 256>;
ShiftedGear shift_gear(const GearTable& g) noexcept;
/// Where every ShiftedGear is placed: on a page of its own. The AVX-512
/// gather lanes read the copies at random; at some offsets within a page
/// they ran 14% slower on 128 MiB (AMD Zen 5; the same in cache), at a page
/// boundary as fast as ever.
inline constexpr std::size_t kShiftedGearAlign = 4096;
/// shift_gear(gear_table()), built on first use.
const ShiftedGear& shifted_gear_table();
/// shift_gear(stadia_gear_table()), built on first use.
const ShiftedGear& shifted_stadia_gear_table();

/// The byte planes that follow the shifted copies of a ShiftedGear (given
/// its data()): byte k * 256 + b is byte k (bits 8k..8k+7) of G[b].
inline const std::uint8_t* gear_planes(const std::uint64_t* shifted) noexcept {
    return reinterpret_cast<const std::uint8_t*>(shifted + 8 * 256);
}

/// A keyed (or seeded) table and its shifted copies, derived once per key
/// and shared while anyone holds them (keyed_gear_table() hands out `table`).
struct KeyedGear {
    GearTable table;
    alignas(kShiftedGearAlign) ShiftedGear shifted;
};
std::shared_ptr<const KeyedGear> keyed_gear(const Key& key);

/// The window a Min/Normal/Max rule searches: `n` bytes clamped to Max, and
/// Normal moved to the end of a final window no longer than it (ALGORITHMS.md
/// section 1). Callers return `n` whole first when n <= Min.
struct CutWindow {
    std::size_t n, normal;
};
constexpr CutWindow cut_window(std::size_t n, std::size_t normal, std::size_t max) noexcept {
    if (n >= max) return {max, normal};
    return {n, n <= normal ? n : normal};
}

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
    const std::uint64_t* shifted;  // shift_gear(gear): its byte planes (the kernels)
    std::size_t min, normal, max;
    std::uint64_t thresh;
};

// UltraCDC's constants (ALGORITHMS.md section 3): the masks before and after
// Normal (kUltraMaskL is also the superset of both), and LEST, the number of
// equal 8-byte blocks in a row that ends a low-entropy chunk.
inline constexpr std::uint64_t kUltraMaskS = 0x2F;
inline constexpr std::uint64_t kUltraMaskL = 0x2C;
inline constexpr unsigned kUltraLowEntropyRun = 64;

struct UltraParams {
    std::size_t min, normal, max;
    bool cut_at_block_end;  // ultracdc-v1.0.0 returns i + 8 instead of i + j
};

// ---- the compatibility chunkers (COMPAT.md); the window n is always
// min(max, bytes left), so "R" of the spec is n whenever the rule can tell.

/// fastcdc-rs v2016 and v2020 (COMPAT.md sections 1-3). `gear` is the crate's
/// table, XORed with the seed for v2020; masks MASKS[bits(avg) +- level].
struct FastCdcRsParams {
    const std::uint64_t* gear;
    const std::uint64_t* shifted;  // shift_gear(gear)
    std::size_t min, avg, max;
    std::uint64_t mask_s, mask_l;
};

/// fastcdc-rs ronomon (COMPAT.md section 4).
struct RonomonParams {
    const std::uint32_t* table;
    std::size_t min, max;
    std::size_t centre;  // avg - min(avg, min + ceil(min/2)): where maskL takes over
    std::uint32_t mask_s, mask_l;
};

/// restic-rabin (COMPAT.md section 5): the Rabin fingerprint of the last 64
/// bytes modulo a polynomial of degree `degree`, rolled with two tables.
struct RabinParams {
    const std::uint64_t* out;     // out[b] = b * x^504 mod P: byte b leaving the 64-byte window
    const std::uint64_t* reduce;  // reduce[t] = t * x^degree mod P: the 8 bits that rose above the degree
    const std::uint64_t* out_x8;  // out[b] * x^8 mod P: the leaving byte's term after the shift (kernels)
    unsigned degree;
    std::size_t min, max;
    std::uint64_t mask;  // avg - 1
};

/// borg-buzhash (COMPAT.md section 6): the seeded table and its copy rotated
/// by the window size (the term of the byte leaving the window).
struct BorgParams {
    const std::uint32_t* table;    // B[b] ^ seed
    const std::uint32_t* leaving;  // rotl32(table[b], window mod 32)
    std::size_t min, max, window;
    std::uint32_t mask;  // avg - 1
};

/// casync-buzhash (COMPAT.md section 7): window 48, cut where H48 mod d == d - 1.
struct CasyncParams {
    const std::uint32_t* table;
    std::size_t min, max;
    std::uint64_t discriminator;  // d, in [min, max]
    std::uint64_t reciprocal;     // 2^64 / d rounded up: h mod d without a division (kernels)
};

inline constexpr std::size_t kRabinWindow = 64;
inline constexpr std::size_t kCasyncWindow = 48;

constexpr std::uint32_t rotl32(std::uint32_t x, unsigned k) noexcept { return std::rotl(x, static_cast<int>(k % 32)); }

/// casync's discriminator for `avg` (COMPAT.md section 7), before clamping.
std::uint64_t casync_discriminator(std::size_t avg) noexcept;
/// Whether the GF(2) polynomial `p` (bit k = coefficient of x^k) is irreducible.
bool rabin_polynomial_irreducible(std::uint64_t p) noexcept;
/// bits(avg) of COMPAT.md section 1: log2(avg) rounded to the nearest integer.
int fastcdc_rs_bits(std::size_t avg) noexcept;

std::size_t fastcdc_rs_v2016_scalar(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t fastcdc_rs_v2020_scalar(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t ronomon_scalar(const RonomonParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t rabin_scalar(const RabinParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t borg_scalar(const BorgParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t casync_scalar(const CasyncParams& p, const std::uint8_t* w, std::size_t n) noexcept;

std::size_t fastcdc_scalar(const FastCdcParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t jc_scalar(const JcParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t stadia_scalar(const StadiaParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t ultra_scalar(const UltraParams& p, const std::uint8_t* w, std::size_t n) noexcept;

template <class Params>
using ScanFn = std::size_t (*)(const Params&, const std::uint8_t*, std::size_t) noexcept;

/// The kernel of each family for `level`: a forced level gives the family's
/// best kernel at or below it; KernelLevel::automatic the fastest on this
/// CPU, measured on probe() on the family's first automatic use and cached
/// (src/kernels/dispatch.cpp). `*used` receives the level actually chosen,
/// `*measured` (automatic only) the calibration behind the choice.
/// The parameters a family's calibration measures its kernels on (the
/// family's probe: src/algorithms/registry.cpp make_probe_finder), made only
/// when the family has not been calibrated yet.
template <class Params>
using ProbeFn = std::function<Params()>;

ScanFn<FastCdcParams> select_fastcdc(KernelLevel level, KernelLevel* used, const ProbeFn<FastCdcParams>& probe,
                                     const KernelCalibration** measured);
ScanFn<JcParams> select_jc(KernelLevel level, KernelLevel* used, const ProbeFn<JcParams>& probe,
                           const KernelCalibration** measured);
ScanFn<StadiaParams> select_stadia(KernelLevel level, KernelLevel* used, const ProbeFn<StadiaParams>& probe,
                                   const KernelCalibration** measured);
ScanFn<UltraParams> select_ultra(KernelLevel level, KernelLevel* used, const ProbeFn<UltraParams>& probe,
                                 const KernelCalibration** measured);
ScanFn<FastCdcRsParams> select_fastcdc_rs_v2016(KernelLevel level, KernelLevel* used,
                                                const ProbeFn<FastCdcRsParams>& probe,
                                                const KernelCalibration** measured);
ScanFn<FastCdcRsParams> select_fastcdc_rs_v2020(KernelLevel level, KernelLevel* used,
                                                const ProbeFn<FastCdcRsParams>& probe,
                                                const KernelCalibration** measured);
ScanFn<RonomonParams> select_ronomon(KernelLevel level, KernelLevel* used, const ProbeFn<RonomonParams>& probe,
                                     const KernelCalibration** measured);
ScanFn<RabinParams> select_rabin(KernelLevel level, KernelLevel* used, const ProbeFn<RabinParams>& probe,
                                 const KernelCalibration** measured);
ScanFn<BorgParams> select_borg(KernelLevel level, KernelLevel* used, const ProbeFn<BorgParams>& probe,
                               const KernelCalibration** measured);
ScanFn<CasyncParams> select_casync(KernelLevel level, KernelLevel* used, const ProbeFn<CasyncParams>& probe,
                                   const KernelCalibration** measured);

}  // namespace cdc::detail
