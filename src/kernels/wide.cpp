// Portable "wide" kernels (any CPU, baseline flags): FastCDC and
// fastcdc4stadia run four independent hash lanes over four segments of the
// range, so that four dependency chains overlap; JC scans sequentially with read-ahead and
// carries its hash across the driver's restarts; UltraCDC uses word-wide
// block comparisons and a byte-weight table.
#include "drivers.hpp"
#include "kernels.hpp"

namespace cdc::detail {
namespace {

struct FirstWide {
    static constexpr std::size_t kLanes = 4;

    static std::size_t run(const u64* g, const u64* /*shifted*/, const u8* w, std::size_t from, std::size_t to,
                           u64 mask) noexcept {
        return find(g, w, from, to, MaskZero{mask});
    }

    template <class Test>
    static std::size_t find(const u64* g, const u8* w, std::size_t from, std::size_t to, Test test) noexcept {
        if (test.always()) return from < to ? from : to;
        const unsigned t = test.top();
        const std::size_t seg_max = segment_for(test);
        std::size_t pos = from;
        while (pos < to && to - pos >= kLanes * 64) {
            const std::size_t seg = min_size(seg_max, (to - pos) / kLanes);
            const u8* p0 = w + pos - t;
            const u8* p1 = p0 + seg;
            const u8* p2 = p1 + seg;
            const u8* p3 = p2 + seg;
            u64 f0 = 0, f1 = 0, f2 = 0, f3 = 0;
            for (std::size_t k = 0; k < t; ++k) {
                f0 = (f0 << 1) + g[p0[k]];
                f1 = (f1 << 1) + g[p1[k]];
                f2 = (f2 << 1) + g[p2[k]];
                f3 = (f3 << 1) + g[p3[k]];
            }
            unsigned found = 0;
            std::size_t first[kLanes] = {0, 0, 0, 0};
            for (std::size_t k = t; k < t + seg; ++k) {
                f0 = (f0 << 1) + g[p0[k]];
                f1 = (f1 << 1) + g[p1[k]];
                f2 = (f2 << 1) + g[p2[k]];
                f3 = (f3 << 1) + g[p3[k]];
                const unsigned z = static_cast<unsigned>(test.hit(f0)) | (static_cast<unsigned>(test.hit(f1)) << 1) |
                                   (static_cast<unsigned>(test.hit(f2)) << 2) | (static_cast<unsigned>(test.hit(f3)) << 3);
                if (z & ~found) [[unlikely]] {
                    if (z & 1u) return pos + (k - t);  // lane 0: nothing earlier can match
                    for (unsigned l = 1; l < kLanes; ++l)
                        if ((z & ~found) & (1u << l)) first[l] = k - t;
                    found |= z;
                }
            }
            if (found) {
                const unsigned l = lowest(found);
                return pos + l * seg + first[l];
            }
            pos += kLanes * seg;
        }
        return first_scalar(g, w, pos, to, test);
    }
};

struct UltraWord {
    static constexpr std::size_t kRegion = 8;
    static bool clean(const u8*, u8) noexcept { return false; }
};

}  // namespace

std::size_t fastcdc_wide(const FastCdcParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return fastcdc_run<FirstWide>(p, w, n);
}
std::size_t jc_wide(const JcParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return jc_run<FirstSeqScalar>(p, w, n);
}
std::size_t stadia_wide(const StadiaParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return stadia_lanes_run<FirstWide, FirstSeqScalar>(p, w, n);
}
std::size_t ultra_wide(const UltraParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return ultra_run<UltraWord>(p, w, n);
}

}  // namespace cdc::detail
