// SPDX-License-Identifier: Apache-2.0
// AVX-512 VBMI kernels (compiled with -mavx512f -mavx512bw -mavx512vl
// -mavx512dq -mavx512vbmi, selected at run time only on CPUs that have them).
// Gear families (FastCDC's MaskS and MaskL parts, fastcdc4stadia): eight hash
// lanes in one zmm register, each over its own segment, as in avx512.cpp, but
// with the table looked up without gathers, which cost about a cycle per
// entry on some CPUs (AMD Zen 5: one 8-entry vpgatherqq per ~8 cycles):
//  - each lane's segment is read 64 bytes at a time (eight plain loads and
//    an 8x8 transpose of 64-bit words give, per step, 8 bytes of each lane);
//  - the 256-entry table of 64-bit values is kept as 8 byte planes (plane k
//    holds byte k of every entry: gear_planes), and the 64 bytes of a step
//    are looked up in each plane with two 128-byte permutes (vpermi2b) and
//    a blend on the index's top bit;
//  - an 8x8 byte transpose inside each 64-bit lane turns the 8 planes back
//    into the lanes' 64-bit entries, one register per position of the step
//    (its input bytes are interleaved first, so that the unpack network's
//    output comes out in position order);
//  - the hashes advance as in FirstSeq: for a mask test (MaskZero with
//    shifted_fits) u = W << (7 - e) inside a group of eight, one add per
//    position off the pre-shifted value, and pairs of positions summed off
//    the loop-carried chain; for any other test (fastcdc4stadia's
//    W <= limit, spaced masks reaching bit 63) W(j+e) = (W(j-1) << (e+1)) +
//    P_e with the prefix P_e off the chain.
// JC has no kernel here: its scans between jumps are ~1 KiB on random data,
// shorter than what eight lanes and their 64-byte warm-up need to pay off.
#include "drivers.hpp"
#include "kernels.hpp"

// g++ 12's AVX-512 headers trip -Wmaybe-uninitialized (and at -O1
// -Wuninitialized) on their own _mm512_undefined_* helpers (a known false
// positive); nothing of ours is hidden.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <type_traits>
#include <utility>

namespace cdc::detail {
namespace {

constexpr std::size_t kLanes = 8;
constexpr std::size_t kBlock = 64;                // bytes of each lane per step of the loop
constexpr std::size_t kRound = kLanes * kBlock;  // the shortest round of lanes

template <class F, int... E>
inline void each_position(F&& f, std::integer_sequence<int, E...>) noexcept {
    (f(std::integral_constant<int, E>{}), ...);
}
constexpr auto kEight = std::make_integer_sequence<int, 8>{};

/// The table as byte planes in registers: plane k in four 64-byte quarters;
/// only the kPlanes low planes (a test that reads bits up to 8 kPlanes - 1
/// of the hash only needs those bits of the entries).
template <int kPlanes>
struct Planes {
    __m512i q[static_cast<std::size_t>(kPlanes)][4];
    explicit Planes(const u8* planes) noexcept {
        for (int k = 0; k < kPlanes; ++k)
            for (int h = 0; h < 4; ++h) q[k][h] = _mm512_loadu_si512(planes + 256 * static_cast<std::size_t>(k) + 64 * static_cast<std::size_t>(h));
    }
};

/// Transposes the 64 bytes at p, p + seg, ..., p + 7 seg (one row per lane)
/// into y[0..7]: 64-bit lane l of y[q] = word q of row l.
inline void load_rows(const u8* p, std::size_t seg, __m512i y[8]) noexcept {
    __m512i r[8], t[8], s[8];
    for (int l = 0; l < 8; ++l) r[l] = _mm512_loadu_si512(p + static_cast<std::size_t>(l) * seg);
    for (int k = 0; k < 4; ++k) {
        t[2 * k] = _mm512_unpacklo_epi64(r[2 * k], r[2 * k + 1]);      // words 0, 2, 4, 6 of two rows
        t[2 * k + 1] = _mm512_unpackhi_epi64(r[2 * k], r[2 * k + 1]);  // words 1, 3, 5, 7
    }
    for (int k = 0; k < 2; ++k) {
        s[4 * k] = _mm512_shuffle_i64x2(t[4 * k], t[4 * k + 2], 0x88);      // words 0, 4 of four rows
        s[4 * k + 1] = _mm512_shuffle_i64x2(t[4 * k], t[4 * k + 2], 0xDD);  // words 2, 6
        s[4 * k + 2] = _mm512_shuffle_i64x2(t[4 * k + 1], t[4 * k + 3], 0x88);  // words 1, 5
        s[4 * k + 3] = _mm512_shuffle_i64x2(t[4 * k + 1], t[4 * k + 3], 0xDD);  // words 3, 7
    }
    constexpr int word_of[4][2] = {{0, 4}, {2, 6}, {1, 5}, {3, 7}};
    for (int k = 0; k < 4; ++k) {
        y[word_of[k][0]] = _mm512_shuffle_i64x2(s[k], s[k + 4], 0x88);
        y[word_of[k][1]] = _mm512_shuffle_i64x2(s[k], s[k + 4], 0xDD);
    }
}

/// The table entries of the 64 bytes of y: c[e] holds, in 64-bit lane l,
/// G[byte e of lane l of y] (its kPlanes low bytes; the others zero).
template <int kPlanes>
inline void lookup(const Planes<kPlanes>& t, __m512i y, __m512i c[8]) noexcept {
    // Bytes e and 8 + e of each 128-bit lane side by side: after the three
    // unpack stages below, byte e of lane l lands in lane l of c[e].
    const __m512i interleave =
        _mm512_broadcast_i32x4(_mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15));
    const __m512i x = _mm512_shuffle_epi8(y, interleave);
    const __mmask64 high = _mm512_movepi8_mask(x);  // index >= 128: the upper half of a plane
    __m512i p[8];
    for (int k = kPlanes; k < 8; ++k) p[k] = _mm512_setzero_si512();
    for (int k = 0; k < kPlanes; ++k) {
        const __m512i lo = _mm512_permutex2var_epi8(t.q[k][0], x, t.q[k][1]);
        const __m512i hi = _mm512_permutex2var_epi8(t.q[k][2], x, t.q[k][3]);
        p[k] = _mm512_mask_blend_epi8(high, lo, hi);
    }
    __m512i a[8], b[8];
    for (int k = 0; k < 4; ++k) {
        a[2 * k] = _mm512_unpacklo_epi8(p[2 * k], p[2 * k + 1]);
        a[2 * k + 1] = _mm512_unpackhi_epi8(p[2 * k], p[2 * k + 1]);
    }
    for (int k = 0; k < 2; ++k) {
        b[4 * k] = _mm512_unpacklo_epi16(a[4 * k], a[4 * k + 2]);
        b[4 * k + 1] = _mm512_unpackhi_epi16(a[4 * k], a[4 * k + 2]);
        b[4 * k + 2] = _mm512_unpacklo_epi16(a[4 * k + 1], a[4 * k + 3]);
        b[4 * k + 3] = _mm512_unpackhi_epi16(a[4 * k + 1], a[4 * k + 3]);
    }
    for (int k = 0; k < 4; ++k) {
        c[2 * k] = _mm512_unpacklo_epi32(b[k], b[k + 4]);
        c[2 * k + 1] = _mm512_unpackhi_epi32(b[k], b[k + 4]);
    }
}

/// A mask test with shifted_fits: inside a group of eight, u = W << (7 - e)
/// is tested against mask << (7 - e); u = W at the end of a group.
struct ShiftedChain {
    __m512i m[8];
    explicit ShiftedChain(u64 mask) noexcept {
        for (int e = 0; e < 8; ++e) m[e] = _mm512_set1_epi64(static_cast<long long>(mask << (7 - e)));
    }
    /// Absorbs the group's entries c[0..7]; the lanes without a match.
    template <bool kTest>
    __mmask8 group(__m512i& u, const __m512i c[8]) const noexcept {
        __mmask8 unmatched = 0xFF;
        u = _mm512_slli_epi64(u, 8);
        each_position(
            [&](auto e) {
                if constexpr (e % 2 == 0) {
                    const __m512i a = _mm512_slli_epi64(c[e], 7 - e);
                    const __m512i b = _mm512_slli_epi64(c[e + 1], 6 - e);
                    const __m512i first = _mm512_add_epi64(u, a);
                    u = _mm512_add_epi64(u, _mm512_add_epi64(a, b));
                    if constexpr (kTest) {
                        unmatched = _mm512_mask_test_epi64_mask(unmatched, first, m[e]);
                        unmatched = _mm512_mask_test_epi64_mask(unmatched, u, m[e + 1]);
                    }
                }
            },
            kEight);
        return unmatched;
    }
};

/// Any test: W(j+e) = (W(j-1) << (e+1)) + P_e, P_e = 2 P_{e-1} + G[b_{j+e}].
template <class Test>
struct PlainChain {
    __m512i operand;
    explicit PlainChain(Test test) noexcept : operand(_mm512_set1_epi64(static_cast<long long>(test.operand()))) {}
    __mmask8 unmatched(__mmask8 acc, __m512i fp) const noexcept {
        if constexpr (std::is_same_v<Test, AtMost>)
            return _mm512_mask_cmpgt_epu64_mask(acc, fp, operand);
        else
            return _mm512_mask_test_epi64_mask(acc, fp, operand);
    }
    template <bool kTest>
    __mmask8 group(__m512i& fp, const __m512i c[8]) const noexcept {
        __mmask8 acc = 0xFF;
        __m512i prefix = _mm512_setzero_si512();
        __m512i last = fp;
        each_position(
            [&](auto e) {
                prefix = _mm512_add_epi64(_mm512_add_epi64(prefix, prefix), c[e]);
                last = _mm512_add_epi64(_mm512_slli_epi64(fp, e + 1), prefix);
                if constexpr (kTest) acc = unmatched(acc, last);
            },
            kEight);
        fp = last;
        return acc;
    }
};

/// The exact sequential First (FirstSeq) from `from`, its hash warmed up
/// over the bytes before (from >= 64).
template <class Test>
std::size_t sequential(const u64* g, const u64* shifted, const u8* w, std::size_t from, std::size_t to,
                       Test test) noexcept {
    if (from >= to) return to;
    if constexpr (std::is_same_v<Test, MaskZero>) {
        return FirstSeq::run(g, shifted, w, from, to, test.mask);
    } else {
        if (test.always()) return from;
        u64 fp = 0;
        for (std::size_t k = from - 1 - test.top(); k < from; ++k) fp = (fp << 1) + g[w[k]];
        return FirstSeq::find_seeded(g, w, from, to, test, fp);
    }
}

struct FirstVbmi {
    static constexpr bool kContinues = false;  // lanes need exact window hashes

    static std::size_t run(const u64* g, const u64* shifted, const u8* w, std::size_t from, std::size_t to,
                           u64 mask, std::size_t readable) noexcept {
        // shifted_fits: the mask's top bit is at most 55, and bits up to 55
        // of the hash only need the 7 low bytes of the entries.
        if (shifted_fits(shifted, mask))
            return scan<7>(g, shifted, w, from, to, readable, MaskZero{mask}, ShiftedChain(mask));
        return find(g, shifted, w, from, to, MaskZero{mask}, readable);
    }

    template <class Test>
    static std::size_t find(const u64* g, const u64* shifted, const u8* w, std::size_t from, std::size_t to,
                            Test test, std::size_t readable) noexcept {
        return scan<8>(g, shifted, w, from, to, readable, test, PlainChain<Test>(test));
    }

    /// Rounds of eight lanes over eight consecutive segments of [pos, pos +
    /// 8 seg), each lane warmed up over the 64 bytes before its segment (the
    /// test reads at most bit 63, which depends on the last 64 bytes only);
    /// a round stops when lane 0 matches, and the earliest lane's first
    /// matching block is scanned again exactly. The last round of a range
    /// that is not a whole number of rounds runs past `to` where the bytes
    /// are there (`readable`; matches past `to` do not count: only the last
    /// lanes reach there, after every position of the range), else ends at
    /// `to`, going over positions the rounds before found without a match.
    template <int kPlanes, class Test, class Chain>
    static std::size_t scan(const u64* g, const u64* shifted, const u8* w, std::size_t from, std::size_t to,
                            std::size_t readable, Test test, const Chain& chain) noexcept {
        if (from >= to) return to;
        if (test.always()) return from;
        if (to - from < kRound) return sequential(g, shifted, w, from, to, test);
        const Planes<kPlanes> planes(gear_planes(shifted));
        const std::size_t seg_max = max_size(kBlock, segment_for(test) & ~(kBlock - 1));
        std::size_t pos = from;
        while (pos < to) {
            std::size_t seg = min_size(seg_max, ((to - pos) / kLanes) & ~(kBlock - 1));
            const std::size_t whole = ((to - pos + kRound - 1) / kRound) * kBlock;  // rounded up
            if (whole <= seg_max && pos + kLanes * whole <= readable) {
                seg = whole;  // the rest of the range in one round
            } else if (seg == 0) {
                seg = kBlock;
                pos = to - kRound;  // >= from: the first round was a whole one
            }
            const u8* base = w + pos;
            const std::size_t blocks = seg / kBlock;
            // The whole round is asked for now, in the order it is read: a
            // round is often the first read of its bytes (a chunk's MaskS
            // part), a block of the lanes takes far less time than a read
            // from memory, and eight short streams give the hardware
            // prefetchers little to learn from.
            for (std::size_t b = 0; b <= blocks; ++b)
                for (std::size_t l = 0; l < kLanes; ++l) __builtin_prefetch(base + l * seg + b * kBlock - kBlock);
            __m512i u = _mm512_setzero_si512();
            __m512i y[8], c[8];
            load_rows(base - kBlock, seg, y);
            for (int q = 0; q < 8; ++q) {
                lookup<kPlanes>(planes, y[q], c);
                chain.template group<false>(u, c);
            }
            LaneHits<kLanes, kBlock> hits;
            for (std::size_t b = 0; b < blocks; ++b) {
                // ... and as many bytes after the round as it reads: the next
                // round, or the next chunk's bytes past its MinSize skip.
                const u8* after = base + kLanes * seg + b * kLanes * kBlock;
                for (std::size_t l = 0; l < kLanes; ++l) __builtin_prefetch(after + l * kBlock);
                load_rows(base + b * kBlock, seg, y);
                __mmask8 unmatched = 0xFF;
                for (int q = 0; q < 8; ++q) {
                    lookup<kPlanes>(planes, y[q], c);
                    unmatched &= chain.template group<true>(u, c);
                }
                if (hits.add(static_cast<unsigned>(static_cast<__mmask8>(~unmatched)), b)) break;
            }
            if (hits.found) {
                const std::size_t a = hits.first(pos, seg);
                if (a >= to) return to;
                return sequential(g, shifted, w, a, min_size(a + kBlock, to), test);
            }
            pos += kLanes * seg;
        }
        return to;
    }
};

}  // namespace

std::size_t fastcdc_avx512vbmi(const FastCdcParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return fastcdc_run<FirstVbmi, FirstVbmi>(p, w, n);
}
std::size_t stadia_avx512vbmi(const StadiaParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    return stadia_lanes_run<FirstVbmi, FirstSeq>(p, w, n);
}

}  // namespace cdc::detail
