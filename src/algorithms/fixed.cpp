// SPDX-License-Identifier: Apache-2.0
// fixed-v1.0.0 (ALGORITHMS.md section 4): chunks of exactly the normal size,
// the last one shorter. Not content-defined: the registry forces min and max
// to the normal size.
#include "family.hpp"

namespace cdc::detail {

namespace {

class FixedFinder final : public CutFinder {
public:
    FixedFinder(const AlgorithmInfo& info, const Profile& profile) : CutFinder(info, profile, KernelLevel::scalar) {}
    std::size_t find(const std::uint8_t*, std::size_t n) const noexcept override {
        return n < profile().normal_size ? n : profile().normal_size;
    }
};

std::shared_ptr<const CutFinder> make(const AlgorithmInfo& info, const Profile& p, const Options&, KernelLevel) {
    return std::make_shared<FixedFinder>(info, p);
}

}  // namespace

const std::array<AlgorithmRow, 1> kFixedRows = {{
    {.info = {.name = "fixed-v1.0.0",
              .summary = "fixed-size chunks of the average size (min and max are forced to it)",
              .origin = kGoOrigin,
              .default_min = 64 * KiB, .default_normal = 64 * KiB, .default_max = 64 * KiB,
              .normal_rule = {.power_of_two = true},
              .content_defined = false},
     .make = &make},
}};

}  // namespace cdc::detail
