// SPDX-License-Identifier: Apache-2.0
// Internal: the accelerated scanners of every family, one set per ISA level.
// Each is compiled in its own translation unit with its own flags
// (wide.cpp: baseline x86-64 / any CPU; avx2.cpp: -mavx2; avx512.cpp:
// -mavx512f -mavx512bw -mavx512vl -mavx512dq; avx512vbmi.cpp: the same and
// -mavx512vbmi) and chosen at run
// time by dispatch.cpp. Every one of them returns exactly the cut point of the
// scalar reference in src/algorithms/ for every input (tests/kernels_test.cpp,
// tests/fuzz/kernel_equals_reference.cpp).
//
// A level says what a CPU can run, not what runs fastest on it: dispatch.cpp
// times the kernels a CPU supports and keeps the fastest per family
// (calibrate.hpp). A family still has a kernel at a level only where it
// wins somewhere on this project's measurements (docs/BENCHMARKS.md): the
// portable sequential Gear scan (wide) serves every Gear family; the AVX-512
// gather lanes serve FastCDC's MaskS part and fastcdc4stadia, where they
// beat it on CPUs with fast gathers (and calibration leaves them out where
// gathers are slow); JC has no AVX-512 kernel (its sequential AVX-512 scan
// lost to the portable one), and no Gear family an AVX2 kernel (four-lane
// ymm gathers lost to scalar lanes).
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
std::size_t stadia_avx512(const StadiaParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t ultra_avx512(const UltraParams& p, const std::uint8_t* w, std::size_t n) noexcept;
// compat_avx512.cpp
std::size_t borg_avx512(const BorgParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t fastcdc_rs_v2016_avx512(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t fastcdc_rs_v2020_avx512(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept;

// avx512vbmi.cpp
std::size_t fastcdc_avx512vbmi(const FastCdcParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t stadia_avx512vbmi(const StadiaParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t fastcdc_rs_v2016_avx512vbmi(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept;
std::size_t fastcdc_rs_v2020_avx512vbmi(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept;
#endif

}  // namespace cdc::detail
