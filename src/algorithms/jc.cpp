// Jump-based chunking: jc, jc-v1.0.0, jc-v1.1.0 (ALGORITHMS.md section 2).
#include "params.hpp"

#include <algorithm>

namespace cdc::detail {

std::size_t jc_scalar(const JcParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    if (p.final_shortcut && n <= p.normal) return n;  // historical final-window shortcut
    if (n >= p.max) n = p.max;
    std::uint64_t fp = 0;
    std::size_t i = p.min;
    while (i < n) {
        fp = (fp << 1) + p.gear[w[i]];
        if ((fp & p.mask_j) == 0) {
            if ((fp & p.mask_c) == 0) return i;
            fp = 0;
            i += p.jump;
        } else {
            ++i;
        }
    }
    return std::min(i, n);
}

}  // namespace cdc::detail
