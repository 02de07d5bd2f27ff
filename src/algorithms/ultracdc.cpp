// UltraCDC: ultracdc, ultracdc-v1.0.0 (ALGORITHMS.md section 3). Hash-free:
// the Hamming distance of an 8-byte window to 0xAA..AA.
#include "params.hpp"

#include <cstring>

namespace cdc::detail {

namespace {
constexpr std::uint64_t kMaskS = 0x2F;
constexpr std::uint64_t kMaskL = 0x2C;
constexpr unsigned kLowEntropyRun = 64;  // LEST

inline std::uint64_t weight(std::uint8_t b) noexcept {
    return static_cast<std::uint64_t>(std::popcount(static_cast<unsigned>(b ^ 0xAAu)));
}
}  // namespace

std::size_t ultra_scalar(const UltraParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    if (n <= p.min) return n;
    std::size_t normal = p.normal;
    if (n >= p.max) {
        n = p.max;
    } else if (n <= normal) {
        normal = n;  // final window
    }
    if (n < p.min + 8) return n;
    std::uint64_t dist = 0;
    for (std::size_t k = p.min; k < p.min + 8; ++k) dist += weight(w[k]);
    const std::uint8_t* out = w + p.min;
    std::uint64_t mask = kMaskS;
    unsigned low_count = 0;
    for (std::size_t i = p.min + 8; i + 8 <= n; i += 8) {
        if (i >= normal) mask = kMaskL;
        const std::uint8_t* in = w + i;
        if (std::memcmp(in, out, 8) == 0) {
            if (++low_count >= kLowEntropyRun) return i + 8;
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

}  // namespace cdc::detail
