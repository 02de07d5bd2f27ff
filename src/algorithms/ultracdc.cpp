// SPDX-License-Identifier: Apache-2.0
// UltraCDC: ultracdc, ultracdc-v1.0.0 (ALGORITHMS.md section 3). Hash-free:
// the Hamming distance of an 8-byte window to 0xAA..AA.
#include "family.hpp"

#include <cstring>

namespace cdc::detail {

namespace {
inline std::uint64_t weight(std::uint8_t b) noexcept {
    return static_cast<std::uint64_t>(std::popcount(static_cast<unsigned>(b ^ 0xAAu)));
}
}  // namespace

std::size_t ultra_scalar(const UltraParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    if (n <= p.min) return n;
    const CutWindow window = cut_window(n, p.normal, p.max);
    n = window.n;
    const std::size_t normal = window.normal;
    if (n < p.min + 8) return n;
    std::uint64_t dist = 0;
    for (std::size_t k = p.min; k < p.min + 8; ++k) dist += weight(w[k]);
    const std::uint8_t* out = w + p.min;
    std::uint64_t mask = kUltraMaskS;
    unsigned low_count = 0;
    for (std::size_t i = p.min + 8; i + 8 <= n; i += 8) {
        if (i >= normal) mask = kUltraMaskL;
        const std::uint8_t* in = w + i;
        if (std::memcmp(in, out, 8) == 0) {
            if (++low_count >= kUltraLowEntropyRun) return i + 8;
            continue;
        }
        low_count = 0;
        for (std::size_t j = 0; j < 8; ++j) {
            if ((dist & mask) == 0) return p.cut_at_block_end ? i + 8 : i + j;
            dist = dist + weight(w[i + j]) - weight(w[i + j - 8]);
        }
        out = in;
    }
    return n;
}

namespace {

std::shared_ptr<const CutFinder> make(const AlgorithmInfo& info, const Profile& p, KernelLevel level,
                                      bool cut_at_block_end) {
    const UltraParams params{p.min_size, p.normal_size, p.max_size, cut_at_block_end};
    return make_family_finder(info, p, level, params, &select_ultra);
}
std::shared_ptr<const CutFinder> make_ultracdc(const AlgorithmInfo& i, const Profile& p, const Options&, KernelLevel l) {
    return make(i, p, l, false);
}
std::shared_ptr<const CutFinder> make_ultracdc_v1_0_0(const AlgorithmInfo& i, const Profile& p, const Options&,
                                                      KernelLevel l) {
    return make(i, p, l, true);
}

}  // namespace

const std::array<AlgorithmRow, 2> kUltraCdcRows = {{
    {.info = {.name = "ultracdc",
              .summary = "UltraCDC: hash-free Hamming-distance chunking, cuts inside the 8-byte block",
              .origin = kGoOrigin,
              .default_min = kGoMin, .default_normal = 10 * KiB, .default_max = kGoMax},
     .make = &make_ultracdc},
    {.info = {.name = "ultracdc-v1.0.0",
              .summary = "UltraCDC, cuts at the end of the matching 8-byte block",
              .origin = kGoOrigin,
              .default_min = kGoMin, .default_normal = 10 * KiB, .default_max = kGoMax},
     .make = &make_ultracdc_v1_0_0},
}};

}  // namespace cdc::detail
