// SPDX-License-Identifier: Apache-2.0
// AVX2 kernels (compiled with -mavx2, selected at run time only on CPUs that
// have it): UltraCDC, 32 positions per step, as in avx512.cpp. The Gear
// families have none: four-lane ymm gathers lost to the wide kernel's four
// scalar lanes in every measurement (docs/BENCHMARKS.md; removed with
// fastcdc_avx2 after the 48e8ae2 table), so AVX2 CPUs run the wide ones.
#include "drivers.hpp"
#include "kernels.hpp"

#include <immintrin.h>

namespace cdc::detail {
namespace {

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

std::size_t ultra_avx2(const UltraParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return ultra_run<Ultra256>(p, w, n);
}

}  // namespace cdc::detail
