// SPDX-License-Identifier: Apache-2.0
// Jump-based chunking: jc, jc-v1.0.0, jc-v1.1.0 (ALGORITHMS.md section 2).
#include "family.hpp"

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

namespace {

// Masks that the Go library hard-codes for its default profile.
constexpr std::uint64_t kMaskC = 0x590003570000ULL;
constexpr std::uint64_t kMaskJ = 0x590003560000ULL;

/// How the three names differ: masks scaled with the average size outside
/// the default profile (jc-v1.0.0), and the final-window shortcut (all but
/// jc-v1.1.0).
struct Variant {
    bool scaled_masks;
    bool final_shortcut;
};

std::shared_ptr<const CutFinder> make(const AlgorithmInfo& info, const Profile& p, const Options& o, KernelLevel level,
                                      Variant v) {
    const int c_ones = floor_log2(p.normal_size) - 1;
    const int j_ones = c_ones - 1;
    const std::uint64_t jump =
        (std::uint64_t{1} << (c_ones + j_ones)) / ((std::uint64_t{1} << c_ones) - (std::uint64_t{1} << j_ones));
    const GoGear gear = go_gear(o);
    JcParams params{gear.table, gear.shifted, p.min_size, p.normal_size, p.max_size, kMaskC, kMaskJ,
                    static_cast<std::size_t>(jump), v.final_shortcut};
    if (v.scaled_masks && !is_go_default_profile(p)) {
        params.mask_c = spaced_mask(c_ones);
        params.mask_j = params.mask_c & (params.mask_c - 1);  // lowest set bit cleared
    }
    return make_family_finder(info, p, level, params, &select_jc, gear.keyed);
}

std::shared_ptr<const CutFinder> make_jc(const AlgorithmInfo& i, const Profile& p, const Options& o, KernelLevel l) {
    return make(i, p, o, l, {.scaled_masks = false, .final_shortcut = true});
}
std::shared_ptr<const CutFinder> make_jc_v1_0_0(const AlgorithmInfo& i, const Profile& p, const Options& o,
                                                KernelLevel l) {
    return make(i, p, o, l, {.scaled_masks = true, .final_shortcut = true});
}
std::shared_ptr<const CutFinder> make_jc_v1_1_0(const AlgorithmInfo& i, const Profile& p, const Options& o,
                                                KernelLevel l) {
    return make(i, p, o, l, {.scaled_masks = false, .final_shortcut = false});
}

}  // namespace

const std::array<AlgorithmRow, 3> kJcRows = {{
    {.info = {.name = "jc",
              .summary = "jump-based chunking, fixed masks, final window returned whole; optional key",
              .origin = kGoOrigin,
              .default_min = kGoMin, .default_normal = kGoNormal, .default_max = kGoMax,
              .key = KeyUse::optional},
     .make = &make_jc},
    {.info = {.name = "jc-v1.0.0",
              .summary = "jump-based chunking, masks scaled with the average size; optional key",
              .origin = kGoOrigin,
              .default_min = kGoMin, .default_normal = kGoNormal, .default_max = kGoMax,
              .key = KeyUse::optional},
     .make = &make_jc_v1_0_0},
    {.info = {.name = "jc-v1.1.0",
              .summary = "jump-based chunking as in the paper (final window scanned too); optional key",
              .origin = kGoOrigin,
              .default_min = kGoMin, .default_normal = kGoNormal, .default_max = kGoMax,
              .key = KeyUse::optional},
     .make = &make_jc_v1_1_0},
}};

}  // namespace cdc::detail
