// SPDX-License-Identifier: Apache-2.0
// fastcdc-rs v2016 and v2020 run on the FastCDC kernels (any ISA level):
// v2016's rule is exactly ALGORITHMS.md's FastCDC rule with the crate's
// table and masks, and v2020's is the same rule on positions rounded down to
// even numbers (COMPAT.md section 3), so a window of n & ~1 bytes with
// min and centre rounded down gives its cut, or "no match" (then n).
#include "kernels.hpp"

namespace cdc::detail {

namespace {

template <ScanFn<FastCdcParams> Scan>
std::size_t v2016_via(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return Scan(FastCdcParams{p.gear, p.shifted, p.min, p.avg, p.max, p.mask_s, p.mask_l}, w, n);
}

template <ScanFn<FastCdcParams> Scan>
std::size_t v2020_via(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    if (n <= p.min) return n;
    if (n > p.max) n = p.max;
    const std::size_t even_n = n & ~std::size_t{1};
    const std::size_t even_c = (n < p.avg ? n : p.avg) & ~std::size_t{1};
    // max = even_n: the FastCDC driver then scans [min, even_n) with MaskS
    // before even_c and MaskL from it, and returns even_n when nothing matched.
    const FastCdcParams q{p.gear, p.shifted, p.min & ~std::size_t{1}, even_c, even_n, p.mask_s, p.mask_l};
    const std::size_t cut = Scan(q, w, even_n);
    return cut < even_n ? cut : n;
}

}  // namespace

std::size_t fastcdc_rs_v2016_wide(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return v2016_via<&fastcdc_wide>(p, w, n);
}
std::size_t fastcdc_rs_v2020_wide(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return v2020_via<&fastcdc_wide>(p, w, n);
}
#if defined(CDC_X86_KERNELS)
std::size_t fastcdc_rs_v2016_avx512(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return v2016_via<&fastcdc_avx512>(p, w, n);
}
std::size_t fastcdc_rs_v2020_avx512(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return v2020_via<&fastcdc_avx512>(p, w, n);
}
std::size_t fastcdc_rs_v2016_avx512vbmi(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return v2016_via<&fastcdc_avx512vbmi>(p, w, n);
}
std::size_t fastcdc_rs_v2020_avx512vbmi(const FastCdcRsParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return v2020_via<&fastcdc_avx512vbmi>(p, w, n);
}
#endif

}  // namespace cdc::detail
