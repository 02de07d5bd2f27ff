// SPDX-License-Identifier: Apache-2.0
// fastcdc4stadia (ALGORITHMS.md section 2): all-ones seeded hash, primed with
// the 64 bytes before MinSize, with regression to the best earlier candidate.
#include "family.hpp"

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

namespace {

std::shared_ptr<const CutFinder> make(const AlgorithmInfo& info, const Profile& p, const Options&, KernelLevel level) {
    const StadiaParams params{stadia_gear_table().data(), shifted_stadia_gear_table().data(), p.min_size, p.normal_size, p.max_size,
                              ~std::uint64_t{0} / (p.normal_size - p.min_size + 1)};
    return make_family_finder(info, p, level, params, &select_stadia);
}

}  // namespace

const std::array<AlgorithmRow, 1> kStadiaRows = {{
    {.info = {.name = "fastcdc4stadia",
              .summary = "FastCDC variant with all-ones seed and regression to the best candidate",
              .origin = kGoOrigin,
              .default_min = kGoMin, .default_normal = kGoNormal, .default_max = kGoMax},
     .make = &make},
}};

}  // namespace cdc::detail
