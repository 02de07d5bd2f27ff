// AVX-512 kernels (compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq,
// selected at run time only on CPUs that have them).
// Gear families: eight hash lanes in one zmm register, each over its own
// segment of the range (64-bit gathers fetch the table entries); UltraCDC:
// 64 positions per step, byte weights by nibble lookup, 8-byte window sums
// by in-word prefix sums, equal-block test by 64-bit compares.
#include "drivers.hpp"
#include "kernels.hpp"

// g++ 12's AVX-512 headers trip -Wmaybe-uninitialized on their own
// _mm512_undefined_* helpers (a known false positive); nothing of ours is hidden.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

namespace cdc::detail {
namespace {

// A full 64-bit gather into a freshly zeroed register. Written in asm because
// the compiler drops the zeroing, and then each gather waits for the previous
// one (the destination of a gather is also an input).
inline __m512i gather(__m512i idx, const long long* table) noexcept {
    __m512i r;
    __mmask8 k;
    asm("kxnorb %[k], %[k], %[k]\n\t"
        "vpxorq %[r], %[r], %[r]\n\t"
        "vpgatherqq (%[t],%[i],8), %[r]%{%[k]%}"
        : [r] "=&v"(r), [k] "=&Yk"(k)
        : [t] "r"(table), [i] "v"(idx)
        : "memory");
    return r;
}

struct First512 {
    static constexpr std::size_t kLanes = 8;

    static std::size_t run(const u64* g, const u8* w, std::size_t from, std::size_t to, u64 mask) noexcept {
        return find(g, w, from, to, MaskZero{mask});
    }

    // The lanes where `fp` passes the test.
    static __mmask8 passes(__m512i fp, __m512i operand, MaskZero) noexcept { return _mm512_testn_epi64_mask(fp, operand); }
    static __mmask8 passes(__m512i fp, __m512i operand, AtMost) noexcept { return _mm512_cmple_epu64_mask(fp, operand); }

    template <class Test>
    static std::size_t find(const u64* g, const u8* w, std::size_t from, std::size_t to, Test test) noexcept {
        if (test.always()) return from < to ? from : to;
        const unsigned t = test.top();
        const std::size_t warm = (t + 7u) & ~std::size_t{7};  // <= 64 <= from
        const std::size_t seg_max = segment_for(test);
        const auto* table = reinterpret_cast<const long long*>(g);
        const __m512i operand = _mm512_set1_epi64(static_cast<long long>(test.operand()));
        const __m512i lane_ids = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
        // byte b of each 64-bit lane, zero-extended, in one in-lane shuffle
        __m512i pick[8];
        for (int b = 0; b < 8; ++b) {
            const auto lo = static_cast<long long>(0x8080808080808000ULL | static_cast<unsigned>(b));
            const auto hi = static_cast<long long>(0x8080808080808000ULL | static_cast<unsigned>(8 + b));
            pick[b] = _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
        }
        std::size_t pos = from;
        while (pos < to && to - pos >= kLanes * 64) {
            const std::size_t seg = min_size(seg_max, (to - pos) / kLanes) & ~std::size_t{7};
            __m512i offs = _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(pos - warm)),
                                            _mm512_mullo_epi64(lane_ids, _mm512_set1_epi64(static_cast<long long>(seg))));
            __m512i fp = _mm512_setzero_si512();
            const __m512i eight = _mm512_set1_epi64(8);
            for (std::size_t k = 0; k < warm; k += 8) {
                const __m512i q = _mm512_i64gather_epi64(offs, w, 1);
                offs = _mm512_add_epi64(offs, eight);
                for (int b = 0; b < 8; ++b) {
                    const __m512i gv = gather(_mm512_shuffle_epi8(q, pick[b]), table);
                    fp = _mm512_add_epi64(_mm512_add_epi64(fp, fp), gv);
                }
            }
            LaneHits<kLanes> hits;
            const std::size_t groups = seg / 8;
            // The input bytes of each group are gathered one group ahead, so
            // that the table gathers of a group never wait for its own input.
            __m512i q_next = groups ? _mm512_i64gather_epi64(offs, w, 1) : _mm512_setzero_si512();
            for (std::size_t gi = 0; gi < groups; ++gi) {
                // one lane's next cache lines per group: each lane every 64
                // bytes, 4 KiB ahead (1 KiB, 2 KiB, 4 KiB and 8 KiB measured
                // on 1 GiB: 4 KiB was 1-5% faster than 1 KiB for FastCDC and
                // 7-10% for fastcdc4stadia, 8 KiB slower; docs/BENCHMARKS.md)
                __builtin_prefetch(w + pos + (gi & 7) * seg + gi * 8 + 4096);
                const __m512i q = q_next;
                offs = _mm512_add_epi64(offs, eight);
                if (gi + 1 < groups) q_next = _mm512_i64gather_epi64(offs, w, 1);
                __mmask8 acc = 0;
                for (int b = 0; b < 8; ++b) {
                    const __m512i gv = gather(_mm512_shuffle_epi8(q, pick[b]), table);
                    fp = _mm512_add_epi64(_mm512_add_epi64(fp, fp), gv);
                    acc = static_cast<__mmask8>(acc | passes(fp, operand, test));
                }
                if (hits.add(static_cast<unsigned>(acc), gi)) break;  // lane 0 holds the earliest match
            }
            if (hits.found) {
                const std::size_t a = hits.first(pos, seg);
                return first_scalar(g, w, a, a + 8, test);
            }
            pos += kLanes * seg;
        }
        return first_scalar(g, w, pos, to, test);
    }
};

/// First over consecutive positions, eight at a time: no per-lane warm-up
/// and no work past the match. With F = (W(j..j+7)), g = G[w[j..j+7]] and
/// P[e] = sum_{t<=e} g[t] << (e-t) (three shift-and-add steps across lanes),
/// F[e] = (W(j-1) << (e+1)) + P[e]; the carried W(j+7) = (W(j-1) << 8) + P[7]
/// is a two-instruction dependency chain.
struct First512Seq {
    /// Like run(), given fp = W(from-1) exact in the bits up to top_bit(mask)
    /// - 1 (or better); *hash receives W(result) (W(to-1) when there is no
    /// match), exact in the bits up to top_bit(mask) (or better).
    static std::size_t run_seeded(const u64* g, const u8* w, std::size_t from, std::size_t to, u64 mask, u64 fp,
                                  u64* hash) noexcept {
        const auto* table = reinterpret_cast<const long long*>(g);
        const __m512i vmask = _mm512_set1_epi64(static_cast<long long>(mask));
        const __m512i zero = _mm512_setzero_si512();
        const __m512i shifts = _mm512_set_epi64(8, 7, 6, 5, 4, 3, 2, 1);
        const __m512i last = _mm512_set1_epi64(7);
        __m512i b = _mm512_set1_epi64(static_cast<long long>(fp));
        std::size_t j = from;
        for (; j + 8 <= to; j += 8) {
            __builtin_prefetch(w + j + 2048);
            const __m512i idx = _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + j)));
            __m512i pv = gather(idx, table);
            pv = _mm512_add_epi64(pv, _mm512_slli_epi64(_mm512_alignr_epi64(pv, zero, 7), 1));
            pv = _mm512_add_epi64(pv, _mm512_slli_epi64(_mm512_alignr_epi64(pv, zero, 6), 2));
            pv = _mm512_add_epi64(pv, _mm512_slli_epi64(_mm512_alignr_epi64(pv, zero, 4), 4));
            const __m512i f = _mm512_add_epi64(_mm512_sllv_epi64(b, shifts), pv);
            const __mmask8 z = _mm512_testn_epi64_mask(f, vmask);
            if (z) [[unlikely]] {
                const unsigned e = lowest(static_cast<unsigned>(z));
                alignas(64) u64 lanes[8];
                _mm512_store_si512(lanes, f);
                *hash = lanes[e];
                return j + e;
            }
            b = _mm512_add_epi64(_mm512_slli_epi64(b, 8), _mm512_permutexvar_epi64(last, pv));
        }
        fp = static_cast<u64>(_mm_cvtsi128_si64(_mm512_castsi512_si128(b)));
        for (; j < to; ++j) {
            fp = (fp << 1) + g[w[j]];
            if ((fp & mask) == 0) {
                *hash = fp;
                return j;
            }
        }
        *hash = fp;
        return to;
    }

    static std::size_t run(const u64* g, const u8* w, std::size_t from, std::size_t to, u64 mask) noexcept {
        if (from >= to) return to;
        if (mask == 0) return from;
        u64 fp = 0;  // W(from-1), exact in the bits up to top_bit(mask)
        for (std::size_t k = from - 1 - top_bit(mask); k < from; ++k) fp = (fp << 1) + g[w[k]];
        u64 hash = 0;
        return run_seeded(g, w, from, to, mask, fp, &hash);
    }
};

struct Ultra512 {
    static constexpr std::size_t kRegion = 64;

    static __m512i weights(__m512i v) noexcept {
        const __m512i lut = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4));
        const __m512i low4 = _mm512_set1_epi8(0x0F);
        const __m512i x = _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0xAA)));
        const __m512i lo = _mm512_and_si512(x, low4);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(x, 4), low4);
        return _mm512_add_epi8(_mm512_shuffle_epi8(lut, lo), _mm512_shuffle_epi8(lut, hi));
    }

    static bool clean(const u8* p, u8 m) noexcept {
        const __m512i v = _mm512_loadu_si512(p);
        const __m512i vp = _mm512_loadu_si512(p - 8);
        if (_mm512_cmpeq_epi64_mask(v, vp) != 0) return false;
        const __m512i wt = weights(v);
        const __m512i wtp = weights(vp);
        __m512i d = _mm512_sub_epi8(wt, wtp);
        d = _mm512_add_epi8(d, _mm512_slli_epi64(d, 8));
        d = _mm512_add_epi8(d, _mm512_slli_epi64(d, 16));
        d = _mm512_add_epi8(d, _mm512_slli_epi64(d, 32));
        d = _mm512_slli_epi64(d, 8);  // exclusive prefix: byte j holds the change over bytes 0..j-1
        const __m512i sums = _mm512_sad_epu8(wtp, _mm512_setzero_si512());
        const __m512i bcast = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 8));
        d = _mm512_add_epi8(d, _mm512_shuffle_epi8(sums, bcast));
        return _mm512_testn_epi8_mask(d, _mm512_set1_epi8(static_cast<char>(m))) == 0;
    }
};

}  // namespace

std::size_t fastcdc_avx512(const FastCdcParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return fastcdc_run<First512, First512Seq>(p, w, n);
}
std::size_t jc_avx512(const JcParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return jc_run<First512Seq>(p, w, n);
}
std::size_t stadia_avx512(const StadiaParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return stadia_lanes_run<First512, First512Seq>(p, w, n);
}
std::size_t ultra_avx512(const UltraParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return ultra_run<Ultra512>(p, w, n);
}

}  // namespace cdc::detail
