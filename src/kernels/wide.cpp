// SPDX-License-Identifier: Apache-2.0
// Portable "wide" kernels (any CPU, baseline flags): the Gear families
// (FastCDC names, JC names, fastcdc4stadia) run FirstSeq (drivers.hpp), a
// sequential scan that advances its loop-carried hash two or four positions
// per dependent step, with scalar loads only (no gathers), continuing the
// running hash across the drivers' restarts; UltraCDC uses word-wide block
// comparisons and a byte-weight table.
#include "drivers.hpp"
#include "kernels.hpp"

namespace cdc::detail {
namespace {

struct UltraWord {
    static constexpr std::size_t kRegion = 8;
    static bool clean(const u8*, u8) noexcept { return false; }
};

}  // namespace

std::size_t fastcdc_wide(const FastCdcParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return fastcdc_run<FirstSeq>(p, w, n);
}
std::size_t jc_wide(const JcParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return jc_run<FirstSeq>(p, w, n);
}
std::size_t stadia_wide(const StadiaParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return stadia_lanes_run<FirstSeq, FirstSeq>(p, w, n);
}
std::size_t ultra_wide(const UltraParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return ultra_run<UltraWord>(p, w, n);
}

}  // namespace cdc::detail
