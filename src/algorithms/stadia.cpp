// fastcdc4stadia (ALGORITHMS.md section 2): all-ones seeded hash, primed with
// the 64 bytes before MinSize, with regression to the best earlier candidate.
#include "params.hpp"

namespace cdc::detail {

std::size_t stadia_scalar(const StadiaParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    if (n <= p.min) return n;
    if (n >= p.max) n = p.max;
    std::size_t reg_len = n;
    std::uint64_t reg_mask = 0;
    std::uint64_t h = ~std::uint64_t{0};
    std::size_t i = p.min > 64 ? p.min - 64 : 0;
    for (; i < p.min; ++i) h = (h << 1) + p.gear[w[i]];
    for (; i < n; ++i) {
        if ((h & reg_mask) == 0) {
            if (h <= p.thresh) return i;
            reg_len = i;
            reg_mask = ~std::uint64_t{0};
            while ((h & reg_mask) != 0) reg_mask <<= 1;
        }
        h = (h << 1) + p.gear[w[i]];
    }
    if ((h & reg_mask) != 0) return reg_len;
    return i;
}

}  // namespace cdc::detail
