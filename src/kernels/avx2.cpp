// AVX2 kernels (compiled with -mavx2, selected at run time only on CPUs that
// have it). Gear families: four hash lanes in one ymm register, each over its
// own segment of the range (64-bit gathers fetch the table entries);
// UltraCDC: 32 positions per step, as in avx512.cpp.
#include "drivers.hpp"
#include "kernels.hpp"

#include <immintrin.h>

namespace cdc::detail {
namespace {

struct First256 {
    static constexpr std::size_t kLanes = 4;

    static std::size_t run(const u64* g, const u8* w, std::size_t from, std::size_t to, u64 mask) noexcept {
        if (mask == 0) return from < to ? from : to;
        const unsigned t = top_bit(mask);
        const std::size_t warm = (t + 7u) & ~std::size_t{7};  // <= 64 <= from
        const std::size_t seg_max = segment_for(MaskZero{mask});
        const auto* table = reinterpret_cast<const long long*>(g);
        const auto* bytes = reinterpret_cast<const long long*>(w);
        const __m256i vmask = _mm256_set1_epi64x(static_cast<long long>(mask));
        const __m256i ff = _mm256_set1_epi64x(0xFF);
        const __m256i zero = _mm256_setzero_si256();
        const __m256i eight = _mm256_set1_epi64x(8);
        std::size_t pos = from;
        while (pos < to && to - pos >= kLanes * 64) {
            const std::size_t seg = min_size(seg_max, (to - pos) / kLanes) & ~std::size_t{7};
            const auto b0 = static_cast<long long>(pos - warm);
            const auto s = static_cast<long long>(seg);
            __m256i offs = _mm256_set_epi64x(b0 + 3 * s, b0 + 2 * s, b0 + s, b0);
            __m256i fp = zero;
            for (std::size_t k = 0; k < warm; k += 8) {
                __m256i q = _mm256_i64gather_epi64(bytes, offs, 1);
                offs = _mm256_add_epi64(offs, eight);
                for (int b = 0; b < 8; ++b) {
                    const __m256i gv = _mm256_i64gather_epi64(table, _mm256_and_si256(q, ff), 8);
                    fp = _mm256_add_epi64(_mm256_add_epi64(fp, fp), gv);
                    q = _mm256_srli_epi64(q, 8);
                }
            }
            LaneHits<kLanes> hits;
            const std::size_t groups = seg / 8;
            for (std::size_t gi = 0; gi < groups; ++gi) {
                __m256i q = _mm256_i64gather_epi64(bytes, offs, 1);
                offs = _mm256_add_epi64(offs, eight);
                __m256i acc = zero;
                for (int b = 0; b < 8; ++b) {
                    const __m256i gv = _mm256_i64gather_epi64(table, _mm256_and_si256(q, ff), 8);
                    fp = _mm256_add_epi64(_mm256_add_epi64(fp, fp), gv);
                    acc = _mm256_or_si256(acc, _mm256_cmpeq_epi64(_mm256_and_si256(fp, vmask), zero));
                    q = _mm256_srli_epi64(q, 8);
                }
                if (hits.add(static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(acc))), gi)) break;  // lane 0 holds the earliest match
            }
            if (hits.found) {
                const std::size_t a = hits.first(pos, seg);
                return first_scalar(g, w, a, a + 8, MaskZero{mask});
            }
            pos += kLanes * seg;
        }
        return first_scalar(g, w, pos, to, MaskZero{mask});
    }
};

struct Ultra256 {
    static constexpr std::size_t kRegion = 32;

    static __m256i weights(__m256i v) noexcept {
        const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1,
                                             2, 2, 3, 2, 3, 3, 4);
        const __m256i low4 = _mm256_set1_epi8(0x0F);
        const __m256i x = _mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(0xAA)));
        const __m256i lo = _mm256_and_si256(x, low4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), low4);
        return _mm256_add_epi8(_mm256_shuffle_epi8(lut, lo), _mm256_shuffle_epi8(lut, hi));
    }

    static bool clean(const u8* p, u8 m) noexcept {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        const __m256i vp = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p - 8));
        if (_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(v, vp))) != 0) return false;
        const __m256i wt = weights(v);
        const __m256i wtp = weights(vp);
        __m256i d = _mm256_sub_epi8(wt, wtp);
        d = _mm256_add_epi8(d, _mm256_slli_epi64(d, 8));
        d = _mm256_add_epi8(d, _mm256_slli_epi64(d, 16));
        d = _mm256_add_epi8(d, _mm256_slli_epi64(d, 32));
        d = _mm256_slli_epi64(d, 8);  // exclusive prefix
        const __m256i sums = _mm256_sad_epu8(wtp, _mm256_setzero_si256());
        const __m256i bcast = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0,
                                               8, 8, 8, 8, 8, 8, 8, 8);
        d = _mm256_add_epi8(d, _mm256_shuffle_epi8(sums, bcast));
        const __m256i hit = _mm256_cmpeq_epi8(_mm256_and_si256(d, _mm256_set1_epi8(static_cast<char>(m))),
                                              _mm256_setzero_si256());
        return _mm256_movemask_epi8(hit) == 0;
    }
};

}  // namespace

std::size_t fastcdc_avx2(const FastCdcParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return fastcdc_run<First256>(p, w, n);
}
std::size_t ultra_avx2(const UltraParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return ultra_run<Ultra256>(p, w, n);
}

}  // namespace cdc::detail
