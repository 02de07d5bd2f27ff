// SPDX-License-Identifier: Apache-2.0
// FastCDC family: fastcdc, kfastcdc, fastcdc-v1.0.0 (ALGORITHMS.md section 2).
#include "family.hpp"

namespace cdc::detail {

std::size_t fastcdc_scalar(const FastCdcParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    if (n <= p.min) return n;
    const CutWindow window = cut_window(n, p.normal, p.max);
    n = window.n;
    const std::size_t normal = window.normal;
    std::uint64_t fp = 0;
    std::uint64_t mask = p.mask_s;
    for (std::size_t i = p.min; i < n; ++i) {
        if (i == normal) mask = p.mask_l;
        fp = (fp << 1) + p.gear[w[i]];
        if ((fp & mask) == 0) return i;
    }
    return n;
}

namespace {

// Masks that the Go library hard-codes for its default profile.
constexpr std::uint64_t kMaskS = 0x0003590703530000ULL;
constexpr std::uint64_t kMaskL = 0x0000d90003530000ULL;

std::shared_ptr<const CutFinder> make(const AlgorithmInfo& info, const Profile& p, const Options& o, KernelLevel level,
                                      bool scaled_masks) {
    const GoGear gear = go_gear(o);
    FastCdcParams params{gear.table, gear.shifted, p.min_size, p.normal_size, p.max_size, kMaskS, kMaskL};
    if (scaled_masks && !is_go_default_profile(p)) {
        const int b = floor_log2(p.normal_size);
        params.mask_s = spaced_mask(b + 2);
        params.mask_l = spaced_mask(b - 2);
    }
    return make_family_finder(info, p, level, params, &select_fastcdc, gear.keyed);
}

std::shared_ptr<const CutFinder> make_fixed_masks(const AlgorithmInfo& info, const Profile& p, const Options& o,
                                                  KernelLevel level) {
    return make(info, p, o, level, false);
}
std::shared_ptr<const CutFinder> make_scaled_masks(const AlgorithmInfo& info, const Profile& p, const Options& o,
                                                   KernelLevel level) {
    return make(info, p, o, level, true);
}

constexpr SizeRule kPowerOfTwo{.power_of_two = true};

}  // namespace

const std::array<AlgorithmRow, 3> kFastCdcRows = {{
    {.info = {.name = "fastcdc",
              .summary = "FastCDC with fixed masks (go-cdc-chunkers default); optional key",
              .origin = kGoOrigin,
              .default_min = kGoMin, .default_normal = kGoNormal, .default_max = kGoMax,
              .normal_rule = kPowerOfTwo,
              .key = KeyUse::optional},
     .make = &make_fixed_masks},
    {.info = {.name = "kfastcdc",
              .summary = "keyed FastCDC: Gear table derived from a 32-byte key with BLAKE3",
              .origin = kGoOrigin,
              .default_min = kGoMin, .default_normal = kGoNormal, .default_max = kGoMax,
              .normal_rule = kPowerOfTwo,
              .key = KeyUse::required},
     .make = &make_fixed_masks},
    {.info = {.name = "fastcdc-v1.0.0",
              .summary = "FastCDC, spec-faithful masks scaled with the average size; optional key",
              .origin = kGoOrigin,
              .default_min = kGoMin, .default_normal = kGoNormal, .default_max = kGoMax,
              .normal_rule = kPowerOfTwo,
              .key = KeyUse::optional},
     .make = &make_scaled_masks},
}};

}  // namespace cdc::detail
