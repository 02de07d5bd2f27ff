// Internal: the accelerated scanners of every family, one set per ISA level.
// Each is compiled in its own translation unit with its own flags
// (wide.cpp: baseline x86-64 / any CPU; avx2.cpp: -mavx2; avx512.cpp:
// -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bitalg) and chosen at run
// time by dispatch.cpp. Every one of them returns exactly the cut point of the
// scalar reference in src/algorithms/ for every input (tests/kernels_test.cpp,
// tests/fuzz/kernel_equals_reference.cpp).
//
// A family has a kernel at a level only where it beats the level below on
// this project's measurements (docs/BENCHMARKS.md): the jump-based JC
// scanner hashes few bytes between restarts, and the lane kernels' warm-up
// after each restart eats their gain, so JC has a portable kernel (the
// sequential scan with read-ahead, continuing across restarts) and an
// AVX-512 one (consecutive positions, no warm-up). fastcdc4stadia needs no
// restart (its cut is the first hash at most the threshold; see
// stadia_lanes_run in drivers.hpp), so it uses the lane kernels, wide and
// AVX-512, as FastCDC does. No Gear family has an AVX2 kernel: four-lane
// ymm gathers lost to the wide kernel's four scalar lanes.
#pragma once

#include "../algorithms/params.hpp"

namespace cdc::detail {

std::size_t fastcdc_wide(const FastCdcParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t jc_wide(const JcParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t stadia_wide(const StadiaParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t ultra_wide(const UltraParams& p, const std::uint8_t* w, std::size_t n) noexcept;
// compat_wide.cpp: restic-rabin in four lanes, casync-buzhash without division.
std::size_t rabin_wide(const RabinParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t casync_wide(const CasyncParams& p, const std::uint8_t* w, std::size_t n) noexcept;
// fastcdc_rs.cpp: fastcdc-rs v2016 / v2020 through the FastCDC kernels.
std::size_t fastcdc_rs_v2016_wide(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t fastcdc_rs_v2020_wide(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept;

#if defined(CDC_X86_KERNELS)
std::size_t ultra_avx2(const UltraParams& p, const std::uint8_t* w, std::size_t n) noexcept;

std::size_t fastcdc_avx512(const FastCdcParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t jc_avx512(const JcParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t stadia_avx512(const StadiaParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t ultra_avx512(const UltraParams& p, const std::uint8_t* w, std::size_t n) noexcept;
// compat_avx512.cpp
std::size_t borg_avx512(const BorgParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t fastcdc_rs_v2016_avx512(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t fastcdc_rs_v2020_avx512(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept;
#endif

}  // namespace cdc::detail
