// SPDX-License-Identifier: Apache-2.0
// Internal, included only by the kernel translation units (wide.cpp,
// avx2.cpp, avx512.cpp): the exact family logic, written once, around two
// fast primitives that each ISA level supplies.
//
// Everything here has internal linkage (anonymous namespace) on purpose: each
// kernel TU is compiled with different -m flags, and an inline function with
// external linkage compiled with AVX-512 could be picked by the linker for
// the baseline code.
//
// Gear primitive.  W(j) = sum_{k=0..63} G[w[j-k]] << k (mod 2^64) is the Gear
// hash of the 64 bytes ending at j. After a hash restart at r (fp = 0, first
// byte absorbed at r) the running fp equals W(j) at every j >= r + 63, and
// (fp & mask) equals (W(j) & mask) already at j >= r + top_bit(mask), since
// the bits up to the mask's top bit only depend on that many last bytes.
//   First::run(G, S, w, from, to, mask, readable): the first j in [from, to)
//   with (W(j) & mask) == 0, or `to`. Requires from >= 64 (it reads from
//   w[from - 64] on); it may read up to w[readable - 1] (readable >= to; a
//   lane First may then scan past `to` instead of over positions twice).
//   First::run_seeded(G, S, w, from, to, mask, fp, &hash) continues from a
//   known hash fp (at from - 1) and also returns the hash at the result.
//   S is shift_gear(G) (params.hpp) or nullptr; a First may use it or not.
// A sequential First (FirstSeq, kContinues) takes the running hash from
// each restart as it is; for a lane First (kContinues false: its lanes
// start in the middle of the range and need exact window hashes) the
// drivers do the first top_bit positions after each restart sequentially
// and hand it the rest.
//
// UltraCDC primitive.  Filter::clean(p, m): true when none of the 8-byte
// blocks at p, p+8, ... (Filter::kRegion bytes) equals the block before it,
// and no position q in [p, p + kRegion) has (d(q) & m) == 0, where d(q) is the
// sum of popcount(b ^ 0xAA) over the 8 bytes before q. Reads p[-8 ..
// kRegion). A clean region cannot end a chunk and leaves lowCount at 0, so
// the driver skips it; any other region is replayed with the exact logic.
#pragma once

#include "../algorithms/params.hpp"

#include <bit>
#include <cstring>

namespace cdc::detail {
namespace {

using u8 = std::uint8_t;
using u64 = std::uint64_t;

// Bit helpers as compiler builtins rather than std:: templates: those have
// external linkage, and a copy compiled with -mavx512f could be the one the
// linker keeps for baseline code in an unoptimised build.
inline unsigned top_bit(u64 mask) noexcept { return mask ? 63u - static_cast<unsigned>(__builtin_clzll(mask)) : 0u; }
inline int ones(u64 x) noexcept { return __builtin_popcountll(x); }
inline unsigned lowest(unsigned x) noexcept { return static_cast<unsigned>(__builtin_ctz(x)); }  // x != 0
inline std::size_t min_size(std::size_t a, std::size_t b) noexcept { return a < b ? a : b; }
inline std::size_t max_size(std::size_t a, std::size_t b) noexcept { return a > b ? a : b; }

/// What a lane First looks for at position j: the Gear families'
/// (W(j) & mask) == 0, or fastcdc4stadia's W(j) <= limit. top(): the highest
/// bit of W(j) the test reads (the bits up to it only depend on that many
/// last bytes plus one); operand(): the mask or the limit, to broadcast.
struct MaskZero {
    u64 mask;
    bool hit(u64 fp) const noexcept { return (fp & mask) == 0; }
    bool always() const noexcept { return mask == 0; }
    unsigned top() const noexcept { return top_bit(mask); }
    int rarity() const noexcept { return ones(mask); }  ///< log2 of the distance between hits on random data
    u64 operand() const noexcept { return mask; }
};
struct AtMost {
    u64 limit;
    bool hit(u64 fp) const noexcept { return fp <= limit; }
    bool always() const noexcept { return limit == ~u64{0}; }
    unsigned top() const noexcept { return 63; }
    int rarity() const noexcept { return 63 - static_cast<int>(top_bit(limit)); }
    u64 operand() const noexcept { return limit; }
};

/// The plain sequential First (also the tail of every wide one).
template <class Test>
std::size_t first_scalar(const u64* g, const u8* w, std::size_t from, std::size_t to, Test test) noexcept {
    if (from >= to) return to;
    if (test.always()) return from;
    u64 fp = 0;
    for (std::size_t k = from - test.top(); k < from; ++k) fp = (fp << 1) + g[w[k]];
    for (std::size_t j = from; j < to; ++j) {
        fp = (fp << 1) + g[w[j]];
        if (test.hit(fp)) return j;
    }
    return to;
}

/// Hides a value from the optimiser. g++ re-associates 4 fp + (2a + b) into
/// 2 (2 fp + a) + b, which puts every position back on the loop-carried
/// chain that the multi-step scans below exist to shorten.
inline u64 opaque(u64 x) noexcept {
    asm("" : "+r"(x));
    return x;
}

/// The shifted tables (shift_gear) serve a mask test exactly while the
/// mask's top bit shifted left by 7 (8 between groups) stays in the word:
/// the scans keep W << 8 between groups of eight, i.e. W's bits up to 55.
inline bool shifted_fits(const u64* shifted, u64 mask) noexcept { return shifted && top_bit(mask) + 8 < 64; }

/// The portable sequential First: consecutive positions, no lanes (so no
/// warm-up and no work past the match), the loop-carried hash advanced
/// several positions per dependent step. The scalar reference is bound by
/// its chain fp -> (fp << 1) + G[b] (two dependent operations per byte);
/// here the positions of a step are computed off that chain, so the scan is
/// bound by the number of operations instead (loads of bytes and table
/// entries, adds, one fused test-and-branch per position) and gains as much
/// as the CPU has ports: no gathers, scalar loads and ALU work only, which
/// every x86-64 (and any other 64-bit CPU) runs well.
///  - Shifted (a mask test with shifted_fits): pairs. With u = W(j-1) << 8
///    at the start of a group of eight and S = shift_gear(G), the e-th
///    position is u_e = W(j+e) << (7 - e) = u_{e-1} + S[7-e][w[j+e]],
///    tested against mask << (7 - e). Per pair the carried u takes one add
///    of a + b (both looked up off the chain), the first position of the
///    pair u + a off the chain.
///  - Plain (any Test: spaced masks reaching bit 63, fastcdc4stadia's
///    W <= limit): quads, W(j+e) = (W(j-1) << (e+1)) + P_e with P_e = 2
///    P_{e-1} + G[w[j+e]]; the carried W(j+3) = (W(j-1) << 4) + P_3 is two
///    dependent operations per four positions.
/// It continues whatever hash it is given (kContinues): the drivers hand it
/// the running hash right from each restart, with no warm-up and no
/// re-hashing. Reads ahead (prefetch, once per 64 bytes, 4 KiB ahead: past a
/// chunk's MinSize skip, into the next window; 2 KiB measured 3-7% slower
/// on 128 MiB, 8 KiB the same): JC's jumps defeat the hardware prefetchers.
struct FirstSeq {
    static constexpr bool kContinues = true;

    /// First::run (the FastCDC driver): from > top_bit(mask).
    static std::size_t run(const u64* g, const u64* shifted, const u8* w, std::size_t from, std::size_t to,
                           u64 mask, std::size_t /*readable*/ = 0) noexcept {
        if (from >= to) return to;
        if (mask == 0) return from;
        u64 fp = 0;  // W(from-1), exact in the bits up to top_bit(mask)
        for (std::size_t k = from - 1 - top_bit(mask); k < from; ++k) fp = (fp << 1) + g[w[k]];
        u64 hash = 0;
        return run_seeded(g, shifted, w, from, to, mask, fp, &hash);
    }

    /// First::run_seeded (see the file comment): fp = the hash at from - 1
    /// (W(from-1), or the running hash since a restart), exact in the bits
    /// up to top_bit(mask) - 1 (or better); *hash receives the hash at the
    /// result (at to - 1 when there is no match), exact in the bits up to
    /// top_bit(mask) (or better; as exact as fp when there is no match).
    static std::size_t run_seeded(const u64* g, const u64* shifted, const u8* w, std::size_t from, std::size_t to,
                                  u64 mask, u64 fp, u64* hash) noexcept {
        if (shifted_fits(shifted, mask)) return pairs(g, shifted, w, from, to, mask, fp, hash);
        return quads(g, w, from, to, MaskZero{mask}, fp, hash);
    }

    /// The first j in [from, to) whose hash, continued from fp = the hash
    /// at from - 1, passes `test` (the fastcdc4stadia driver); `to` if none.
    template <class Test>
    static std::size_t find_seeded(const u64* g, const u8* w, std::size_t from, std::size_t to, Test test,
                                   u64 fp) noexcept {
        u64 hash = 0;
        return quads(g, w, from, to, test, fp, &hash);
    }

    static std::size_t pairs(const u64* g, const u64* s, const u8* w, std::size_t from, std::size_t to, u64 mask,
                             u64 fp, u64* hash) noexcept {
        u64 m[8];
        for (unsigned e = 0; e < 8; ++e) m[e] = mask << (7 - e);
        std::size_t j = from;
        u64 u = fp;
        for (; to - j >= 8; j += 8) {
            if ((j & 63) < 8) __builtin_prefetch(w + j + 4096);
            const u8* q = w + j;
            u <<= 8;
#pragma GCC unroll 4
            for (unsigned e = 0; e < 8; e += 2) {
                const u64 a = s[(7 - e) * 256 + q[e]];
                const u64 ab = opaque(a + s[(6 - e) * 256 + q[e + 1]]);
                const u64 first = u + a;
                u += ab;
                if ((first & m[e]) == 0) [[unlikely]] {
                    *hash = first >> (7 - e);
                    return j + e;
                }
                if ((u & m[e + 1]) == 0) [[unlikely]] {
                    *hash = u >> (6 - e);
                    return j + e + 1;
                }
            }
        }
        return tail(g, w, j, to, MaskZero{mask}, u, hash);
    }

    template <class Test>
    static std::size_t quads(const u64* g, const u8* w, std::size_t from, std::size_t to, Test test, u64 fp,
                             u64* hash) noexcept {
        std::size_t j = from;
        for (; to - j >= 4; j += 4) {
            if ((j & 63) < 4) __builtin_prefetch(w + j + 4096);
            const u8* q = w + j;
            const u64 a = g[q[0]], b = g[q[1]], c = g[q[2]], d = g[q[3]];
            const u64 p1 = 2 * a + b, p2 = 2 * p1 + c, p3 = opaque(2 * p2 + d);
            const u64 f0 = 2 * fp + a, f1 = 4 * fp + p1, f2 = 8 * fp + p2;
            fp = (fp << 4) + p3;
            u64 hit;
            std::size_t e;
            if (test.hit(f0)) [[unlikely]] {
                hit = f0, e = 0;
            } else if (test.hit(f1)) [[unlikely]] {
                hit = f1, e = 1;
            } else if (test.hit(f2)) [[unlikely]] {
                hit = f2, e = 2;
            } else if (test.hit(fp)) [[unlikely]] {
                hit = fp, e = 3;
            } else {
                continue;
            }
            *hash = hit;
            return j + e;
        }
        return tail(g, w, j, to, test, fp, hash);
    }

    /// One position at a time, from fp = W(from-1).
    template <class Test>
    static std::size_t tail(const u64* g, const u8* w, std::size_t from, std::size_t to, Test test, u64 fp,
                            u64* hash) noexcept {
        for (std::size_t j = from; j < to; ++j) {
            fp = (fp << 1) + g[w[j]];
            if (test.hit(fp)) {
                *hash = fp;
                return j;
            }
        }
        *hash = fp;
        return to;
    }
};

/// Bookkeeping of the lane kernels (First over kLanes consecutive segments
/// of `seg` bytes, kGroup positions per lane per group): the group where
/// each lane first matched; lane 0's first match is the earliest of all.
template <std::size_t kLanes, std::size_t kGroup = 8>
struct LaneHits {
    unsigned found = 0;
    std::size_t first_group[kLanes] = {};

    /// Records the lanes in `hits` (bit l = lane l matched in group gi) not
    /// seen before. Returns true when the scan can stop (lane 0 matched).
    bool add(unsigned hits, std::size_t gi) noexcept {
        const unsigned fresh = hits & ~found;
        if (fresh == 0) [[likely]]
            return false;
        for (unsigned l = 0; l < kLanes; ++l)
            if (fresh & (1u << l)) first_group[l] = gi;
        found |= fresh;
        return (found & 1u) != 0;
    }
    /// The first group holding a match, as a position (found != 0).
    std::size_t first(std::size_t pos, std::size_t seg) const noexcept {
        const unsigned l = lowest(found);
        return pos + l * seg + first_group[l] * kGroup;
    }
};

/// Lane segment length for a test: about an eighth of the expected distance
/// between hits on random data, a multiple of 8, in [64, 1024].
template <class Test>
std::size_t segment_for(Test test) noexcept {
    const int k = test.rarity();
    if (k >= 16) return 1024;
    std::size_t s = (std::size_t{1} << k) / 16;
    if (s < 64) s = 64;
    if (s > 1024) s = 1024;
    return s & ~std::size_t{7};
}

// ---------------------------------------------------------------- FastCDC

/// `First` scans the MaskS part [Min, Normal) (long, rarely matched);
/// `FirstL` the MaskL part (matched after ~2 KiB on random data).
template <class First, class FirstL = First>
std::size_t fastcdc_run(const FastCdcParams& p, const u8* w, std::size_t n) noexcept {
    if (n <= p.min) return n;
    const CutWindow window = cut_window(n, p.normal, p.max);
    n = window.n;
    const std::size_t normal = window.normal;
    const u64* g = p.gear;
    if constexpr (First::kContinues && FirstL::kContinues) {
        // The running hash from the restart at Min, carried from the MaskS
        // part into the MaskL part (exact at the end of a part).
        u64 fp = 0;
        const std::size_t j = First::run_seeded(g, p.shifted, w, p.min, normal, p.mask_s, fp, &fp);
        if (j < normal) return j;
        return FirstL::run_seeded(g, p.shifted, w, normal, n, p.mask_l, fp, &fp);
    } else {
        u64 fp = 0;
        u64 mask = p.mask_s;
        std::size_t i = p.min;
        const std::size_t seq_end = min_size(n, p.min + top_bit(p.mask_s | p.mask_l));
        for (; i < seq_end; ++i) {
            if (i == normal) mask = p.mask_l;
            fp = (fp << 1) + g[w[i]];
            if ((fp & mask) == 0) return i;
        }
        if (i >= n) return n;
        if (i < normal) {
            const std::size_t j = First::run(g, p.shifted, w, i, normal, p.mask_s, n);
            if (j < normal) return j;
            i = normal;
        }
        return FirstL::run(g, p.shifted, w, i, n, p.mask_l, n);
    }
}

// --------------------------------------------------------------------- JC

template <class First>
std::size_t jc_run(const JcParams& p, const u8* w, std::size_t n) noexcept {
    if (p.final_shortcut && n <= p.normal) return n;
    if (n >= p.max) n = p.max;
    const u64* g = p.gear;
    const unsigned t = top_bit(p.mask_j | p.mask_c);
    std::size_t i = p.min;
    while (i < n) {
        // restart: fp = 0. Its first line asked for (the scan reads ahead
        // from there): the 2 KiB after it, asked for at once, cost 10-13%
        // on 128 MiB in huge pages and gained nothing in 4 KiB pages
        // (docs/BENCHMARKS.md).
        __builtin_prefetch(w + i);
        u64 fp = 0;
        if constexpr (!First::kContinues) {
            // A lane First needs exact window hashes: the first t positions
            // after the restart are done here.
            const std::size_t seq_end = min_size(n, i + t);
            bool jumped = false;
            while (i < seq_end) {
                fp = (fp << 1) + g[w[i]];
                if ((fp & p.mask_j) == 0) {
                    if ((fp & p.mask_c) == 0) return i;
                    i += p.jump;
                    jumped = true;
                    break;
                }
                ++i;
            }
            if (jumped) continue;
            if (i >= n) break;
        }
        // fp: the running hash before i (exact in the bits below t); First
        // continues from it and returns the hash at the match, exact up to
        // bit t, which covers MaskC.
        u64 h = 0;
        const std::size_t j = First::run_seeded(g, p.shifted, w, i, n, p.mask_j, fp, &h);
        if (j >= n) return n;
        if ((h & p.mask_c) == 0) return j;
        i = j + p.jump;
    }
    return min_size(i, n);
}

// ---------------------------------------------------------- fastcdc4stadia

/// The spec's `regMask = ~0; while h & regMask != 0: regMask <<= 1` in
/// constant time: ones above the bit length of h (none for 64 bits).
inline u64 regression_mask(u64 h) noexcept {
    const unsigned len = h ? 64u - static_cast<unsigned>(__builtin_clzll(h)) : 0u;
    return len == 64 ? 0 : ~u64{0} << len;
}

template <class First>
std::size_t stadia_run(const StadiaParams& p, const u8* w, std::size_t n) noexcept {
    if (n <= p.min) return n;
    if (n >= p.max) n = p.max;
    const u64* g = p.gear;
    std::size_t reg_len = n;
    u64 reg_mask = 0;
    u64 h = ~u64{0};
    std::size_t i = p.min > 64 ? p.min - 64 : 0;
    for (; i < p.min; ++i) h = (h << 1) + g[w[i]];
    // Sequential until the loop-top hash H(i-1) is a pure 64-byte window
    // hash (i >= 64; i >= 65 keeps First's from >= 64).
    // Also while candidates are frequent (fewer than 6 bits in the
    // regression mask, a candidate every ~64 bytes or more often): a fresh
    // First for each would cost more than it saves. (The bound was 10, a
    // candidate per ~1 KiB; 6 measured 5-8% faster with cdc_bench, 3 the
    // same as 6.)
    const std::size_t seq_end = min_size(n, max_size(p.min + 1, 65));
    for (; i < n && (i < seq_end || ones(reg_mask) < 6); ++i) {
        if ((h & reg_mask) == 0) {
            if (h <= p.thresh) return i;
            reg_len = i;
            reg_mask = regression_mask(h);
        }
        h = (h << 1) + g[w[i]];
    }
    // From here on the loop-top hash h = H(i-1) is the exact W(i-1).
    while (i < n) {
        if ((h & reg_mask) == 0) {
            if (h <= p.thresh) return i;
            reg_len = i;
            reg_mask = regression_mask(h);
        }
        // The next loop positions i+1 .. n-1 test W(i) .. W(n-2).
        u64 hh = 0;
        const std::size_t k = First::run_seeded(g, nullptr, w, i, n - 1, reg_mask, h, &hh);
        if (k >= n - 1) {  // no candidate: hh = W(n-2)
            h = (hh << 1) + g[w[n - 1]];
            i = n;
            break;
        }
        h = hh;
        i = k + 1;
    }
    if ((h & reg_mask) != 0) return reg_len;
    return i;
}

/// fastcdc4stadia over a lane First (`Lanes::find`, any test). The cut is
/// the first position i in [Min, n) whose loop-top hash H(i) <= thresh, when
/// there is one: every earlier position had H > thresh, hence a bit length
/// at least that of thresh, so the regression mask (the bit length k of the
/// last candidate: a candidate is H < 2^k) still admits H(i) < 2^k, and i is
/// a candidate that passes the threshold. Only a window without such a
/// position needs the regression: stadia_run<First> replays it (rare on
/// random data: 1 window in ~30,000 at the defaults; every window of
/// low-entropy data, and the last one of a stream).
template <class Lanes, class First>
std::size_t stadia_lanes_run(const StadiaParams& p, const u8* w, std::size_t n) noexcept {
    if (n <= p.min) return n;
    const std::size_t end = min_size(n, p.max);
    const u64* g = p.gear;
    std::size_t i = p.min > 64 ? p.min - 64 : 0;
    u64 h = ~u64{0};
    if constexpr (Lanes::kContinues) {
        // H(k), the hash tested at loop position k >= Min, is the hash after
        // absorbing w[k-1]: the first j in [Min-1, end-1) whose hash passes.
        for (; i + 1 < p.min; ++i) h = (h << 1) + g[w[i]];
        const std::size_t j = Lanes::find_seeded(g, w, p.min - 1, end - 1, AtMost{p.thresh}, h);
        if (j < end - 1) return j + 1;
    } else {
        for (; i < p.min; ++i) h = (h << 1) + g[w[i]];
        // Sequential while the seed is still in H(i) (i < 64), and up to 65 so
        // that the lane scan starts at j >= 64.
        for (; i < end && i < 65; ++i) {
            if (h <= p.thresh) return i;
            h = (h << 1) + g[w[i]];
        }
        if (i < end) {
            // From here H(k) = W(k-1): the first j in [i-1, end-1) with W(j) <= thresh.
            const std::size_t j = Lanes::find(g, p.shifted, w, i - 1, end - 1, AtMost{p.thresh}, n);
            if (j < end - 1) return j + 1;
        }
    }
    return stadia_run<First>(p, w, n);
}

// ---------------------------------------------------------------- UltraCDC

// (kUltraMaskS, kUltraMaskL, kUltraLowEntropyRun: params.hpp)
struct UltraWeights {
    u8 v[256];
    constexpr UltraWeights() : v{} {
        for (unsigned b = 0; b < 256; ++b) v[b] = static_cast<u8>(std::popcount(b ^ 0xAAu));
    }
};
constexpr UltraWeights kUltraWeights{};

inline u64 ultra_weight8(const u8* p) noexcept {
    u64 d = 0;
    for (int k = 0; k < 8; ++k) d += kUltraWeights.v[p[k]];
    return d;
}

inline bool same8(const u8* a, const u8* b) noexcept {
    u64 x, y;
    std::memcpy(&x, a, 8);
    std::memcpy(&y, b, 8);
    return x == y;
}

template <class Filter>
std::size_t ultra_run(const UltraParams& p, const u8* w, std::size_t n) noexcept {
    if (n <= p.min) return n;
    const CutWindow window = cut_window(n, p.normal, p.max);
    n = window.n;
    const std::size_t normal = window.normal;
    if (n < p.min + 8) return n;
    u64 dist = ultra_weight8(w + p.min);
    const u8* out = w + p.min;
    u64 mask = kUltraMaskS;
    unsigned low = 0;
    bool stale = false;  // dist/out must be rebuilt from the block before i
    std::size_t i = p.min + 8;
    constexpr std::size_t R = Filter::kRegion;
    while (i + 8 <= n) {
        std::size_t end = i + 8;
        if (i + R <= n) {
            const u8 m = static_cast<u8>(i + R <= normal ? kUltraMaskS : kUltraMaskL);
            __builtin_prefetch(w + i + 2048);
            if (Filter::clean(w + i, m)) {
                i += R;
                low = 0;
                stale = true;
                continue;
            }
            end = i + R;
        }
        if (stale) {
            out = w + i - 8;
            dist = ultra_weight8(out);
            stale = false;
        }
        for (; i < end; i += 8) {
            if (i >= normal) mask = kUltraMaskL;
            const u8* in = w + i;
            if (same8(in, out)) {
                if (++low >= kUltraLowEntropyRun) return i + 8;
                continue;
            }
            low = 0;
            for (std::size_t j = 0; j < 8; ++j) {
                if ((dist & mask) == 0) return p.cut_at_block_end ? i + 8 : i + j;
                dist = dist + kUltraWeights.v[in[j]] - kUltraWeights.v[w[i + j - 8]];
            }
            out = in;
        }
    }
    return n;
}

}  // namespace
}  // namespace cdc::detail
