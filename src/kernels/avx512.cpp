// SPDX-License-Identifier: Apache-2.0
// AVX-512 kernels (compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq,
// selected at run time only on CPUs that have them).
// Gear families (FastCDC's MaskS part, fastcdc4stadia): eight hash lanes in
// one zmm register, each over its own segment of the range (64-bit gathers
// fetch the table entries; for the FastCDC masks, from the table's
// pre-shifted copies, so that each position costs one gather and one add);
// the sequential parts (FastCDC's MaskL part, the fastcdc4stadia replay) run
// the portable FirstSeq, which beat the AVX-512 sequential scan; UltraCDC:
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

#include <type_traits>
#include <utility>

namespace cdc::detail {
namespace {

// A full 64-bit gather of table[idx] (+ Disp bytes) into a freshly zeroed
// register. Written in asm because the compiler drops the zeroing, and then
// each gather waits for the previous one (the destination of a gather is
// also an input). No "memory" clobber: the tables are immutable while a
// kernel runs, and a clobber makes the compiler reload every value it keeps
// in memory (table pointers, shuffle constants) after each gather.
template <int Disp = 0>
inline __m512i gather(__m512i idx, const long long* table) noexcept {
    __m512i r;
    __mmask8 k;
    asm("kxnorb %[k], %[k], %[k]\n\t"
        "vpxorq %[r], %[r], %[r]\n\t"
        "vpgatherqq %c[d](%[t],%[i],8), %[r]%{%[k]%}"
        : [r] "=&v"(r), [k] "=&Yk"(k)
        : [t] "r"(table), [i] "v"(idx), [d] "i"(Disp));
    return r;
}

template <class F, int... E>
inline void each_position(F&& f, std::integer_sequence<int, E...>) noexcept {
    (f(std::integral_constant<int, E>{}), ...);
}

/// How the lanes carry their hashes through a group of eight positions, and
/// which lanes have not matched yet (a masked compare on the running set).
/// Plain: fp = W(j); fp = 2 fp + G[b] at each position; any Test.
template <class Test>
struct PlainLanes {
    const long long* table;
    __m512i operand;
    static __m512i begin_group(__m512i fp) noexcept { return fp; }
    template <int E>
    __m512i absorb(__m512i fp, __m512i idx) const noexcept {
        return _mm512_add_epi64(_mm512_add_epi64(fp, fp), gather(idx, table));
    }
    template <int E>
    __mmask8 unmatched(__mmask8 acc, __m512i fp) const noexcept {
        if constexpr (std::is_same_v<Test, AtMost>)
            return _mm512_mask_cmpgt_epu64_mask(acc, fp, operand);
        else
            return _mm512_mask_test_epi64_mask(acc, fp, operand);
    }
};
/// Shifted (MaskZero, shifted_fits): at the e-th position of a group u =
/// W(j) << (7 - e), so each position is one add of shifted[7-e][b] and the
/// test reads u & (mask << (7 - e)); u = W exactly at the group's end, and
/// moves on with one shift by 8 per group.
struct ShiftedLanes {
    const long long* shifted;
    __m512i masks[8];
    explicit ShiftedLanes(const u64* s, u64 mask) noexcept : shifted(reinterpret_cast<const long long*>(s)) {
        for (int e = 0; e < 8; ++e) masks[e] = _mm512_set1_epi64(static_cast<long long>(mask << (7 - e)));
    }
    static __m512i begin_group(__m512i u) noexcept { return _mm512_slli_epi64(u, 8); }
    template <int E>
    __m512i absorb(__m512i u, __m512i idx) const noexcept {
        return _mm512_add_epi64(u, gather<(7 - E) * 256 * 8>(idx, shifted));
    }
    template <int E>
    __mmask8 unmatched(__mmask8 acc, __m512i u) const noexcept {
        return _mm512_mask_test_epi64_mask(acc, u, masks[E]);
    }
};

struct First512 {
    static constexpr std::size_t kLanes = 8;
    static constexpr bool kContinues = false;  // lanes need exact window hashes

    static std::size_t run(const u64* g, const u64* shifted, const u8* w, std::size_t from, std::size_t to,
                           u64 mask, std::size_t /*readable*/ = 0) noexcept {
        if (shifted_fits(shifted, mask)) return scan(g, w, from, to, MaskZero{mask}, ShiftedLanes(shifted, mask));
        return find(g, shifted, w, from, to, MaskZero{mask});
    }

    template <class Test>
    static std::size_t find(const u64* g, const u64*, const u8* w, std::size_t from, std::size_t to, Test test,
                            std::size_t /*readable*/ = 0) noexcept {
        const PlainLanes<Test> lanes{reinterpret_cast<const long long*>(g),
                                     _mm512_set1_epi64(static_cast<long long>(test.operand()))};
        return scan(g, w, from, to, test, lanes);
    }

    template <class Test, class Lanes>
    static std::size_t scan(const u64* g, const u8* w, std::size_t from, std::size_t to, Test test,
                            const Lanes& lanes) noexcept {
        if (test.always()) return from < to ? from : to;
        const unsigned t = test.top();
        const std::size_t warm = (t + 7u) & ~std::size_t{7};  // <= 64 <= from
        // Segments twice segment_for's (up to its 1,024): a round's warm-up
        // (up to 64 positions a lane) costs these gather lanes more than it
        // costs the VBMI ones (fastcdc4stadia, 256 -> 512: +2-6% on 128 MiB;
        // the VBMI lanes 1-7% slower with it; docs/BENCHMARKS.md).
        const std::size_t seg_max = min_size(1024, 2 * segment_for(test));
        const __m512i lane_ids = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
        // byte b of each 64-bit lane, zero-extended, in one in-lane shuffle
        __m512i pick[8];
        for (int b = 0; b < 8; ++b) {
            const auto lo = static_cast<long long>(0x8080808080808000ULL | static_cast<unsigned>(b));
            const auto hi = static_cast<long long>(0x8080808080808000ULL | static_cast<unsigned>(8 + b));
            pick[b] = _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
        }
        constexpr auto group = std::make_integer_sequence<int, 8>{};
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
                fp = lanes.begin_group(fp);
                each_position(
                    [&](auto e) { fp = lanes.template absorb<e>(fp, _mm512_shuffle_epi8(q, pick[e])); }, group);
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
                // ... and a line a group from 4 KiB past the round on, as many
                // bytes as the round reads: for FastCDC's MaskS part, the next
                // chunk's MaskS part (past this chunk's MaskL part, ~2 KiB on
                // random data, and the next MinSize skip), which nothing else
                // asks for before its lanes start (+14-19% on 128 MiB in huge
                // pages; 2 KiB or 3 KiB past the round, or two lines a group,
                // less); for fastcdc4stadia, whose next round starts where this
                // one ends, from the round's end (+3-4%; docs/BENCHMARKS.md)
                constexpr std::size_t kNext = std::is_same_v<Test, AtMost> ? 0 : 4096;
                __builtin_prefetch(w + pos + kLanes * seg + kNext + gi * 64);
                const __m512i q = q_next;
                offs = _mm512_add_epi64(offs, eight);
                if (gi + 1 < groups) q_next = _mm512_i64gather_epi64(offs, w, 1);
                __mmask8 unmatched = 0xFF;
                fp = lanes.begin_group(fp);
                each_position(
                    [&](auto e) {
                        fp = lanes.template absorb<e>(fp, _mm512_shuffle_epi8(q, pick[e]));
                        unmatched = lanes.template unmatched<e>(unmatched, fp);
                    },
                    group);
                // lane 0 holds the earliest match
                if (hits.add(static_cast<unsigned>(static_cast<__mmask8>(~unmatched)), gi)) break;
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
    return fastcdc_run<First512, FirstSeq>(p, w, n);
}
std::size_t stadia_avx512(const StadiaParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return stadia_lanes_run<First512, FirstSeq>(p, w, n);
}
std::size_t ultra_avx512(const UltraParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return ultra_run<Ultra512>(p, w, n);
}

}  // namespace cdc::detail
