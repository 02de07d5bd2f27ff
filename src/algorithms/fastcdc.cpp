// FastCDC family: fastcdc, kfastcdc, fastcdc-v1.0.0 (ALGORITHMS.md section 2).
#include "params.hpp"

namespace cdc::detail {

std::size_t fastcdc_scalar(const FastCdcParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    if (n <= p.min) return n;
    std::size_t normal = p.normal;
    if (n >= p.max) {
        n = p.max;
    } else if (n <= normal) {
        normal = n;  // final window
    }
    std::uint64_t fp = 0;
    std::uint64_t mask = p.mask_s;
    for (std::size_t i = p.min; i < n; ++i) {
        if (i == normal) mask = p.mask_l;
        fp = (fp << 1) + p.gear[w[i]];
        if ((fp & mask) == 0) return i;
    }
    return n;
}

}  // namespace cdc::detail
