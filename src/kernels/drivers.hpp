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
//   First::run(G, S, w, from, to, mask): the first j in [from, to) with
//   (W(j) & mask) == 0, or `to`. Requires from >= 64 (it reads from
//   w[from - 64] on). The JC and fastcdc4stadia drivers use
//   First::run_seeded(G, S, w, from, to, mask, W(from-1), &hash), which
//   continues from a known hash and also returns the hash at the result.
//   S is shift_gear(G) (params.hpp) or nullptr; a First may use it or not.
// The family drivers do the first top_bit positions after each restart
// sequentially and hand the rest to First, which is free to evaluate many
// positions at once.
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

/// Asks for the cache lines of [p, p + len) ahead of use. The kernels are
/// fast enough to be bound by memory once a buffer is out of cache, and JC's
/// jumps defeat the hardware prefetchers.
inline void prefetch_range(const u8* p, std::size_t len) noexcept {
    for (std::size_t k = 0; k < len; k += 64) __builtin_prefetch(p + k);
}

/// W(j), for j >= 63.
inline u64 window_hash(const u64* g, const u8* w, std::size_t j) noexcept {
    u64 fp = 0;
    for (std::size_t k = j - 63; k <= j; ++k) fp = (fp << 1) + g[w[k]];
    return fp;
}

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

/// The sequential First with the run_seeded interface (see above), reading
/// ahead of the scan: the portable JC and fastcdc4stadia kernels.
struct FirstSeqScalar {
    static std::size_t run_seeded(const u64* g, const u64* /*shifted*/, const u8* w, std::size_t from, std::size_t to,
                                  u64 mask, u64 fp, u64* hash) noexcept {
        for (std::size_t j = from; j < to; ++j) {
            if ((j & 63) == 0) __builtin_prefetch(w + j + 2048);
            fp = (fp << 1) + g[w[j]];
            if ((fp & mask) == 0) {
                *hash = fp;
                return j;
            }
        }
        *hash = fp;
        return to;
    }
};

/// Bookkeeping of the lane kernels (First over kLanes consecutive segments
/// of `seg` bytes, 8 positions per lane per group): the group where each
/// lane first matched; lane 0's first match is the earliest of all.
template <std::size_t kLanes>
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
    /// The first 8-byte group holding a match, as a position (found != 0).
    std::size_t first(std::size_t pos, std::size_t seg) const noexcept {
        const unsigned l = lowest(found);
        return pos + l * seg + first_group[l] * 8;
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
    std::size_t normal = p.normal;
    if (n >= p.max) {
        n = p.max;
    } else if (n <= normal) {
        normal = n;  // final window
    }
    const u64* g = p.gear;
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
        const std::size_t j = First::run(g, p.shifted, w, i, normal, p.mask_s);
        if (j < normal) return j;
        i = normal;
    }
    return FirstL::run(g, p.shifted, w, i, n, p.mask_l);
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
        // restart: fp = 0
        prefetch_range(w + i, min_size(n - i, 2048));
        u64 fp = 0;
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
        // fp = W(i-1) exact in the bits below t: First continues from it and
        // returns W(j) exact up to bit t, which covers MaskC.
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
    for (; i < p.min; ++i) h = (h << 1) + g[w[i]];
    // Sequential while the seed is still in H(i) (i < 64), and up to 65 so
    // that the lane scan starts at j >= 64.
    for (; i < end && i < 65; ++i) {
        if (h <= p.thresh) return i;
        h = (h << 1) + g[w[i]];
    }
    if (i < end) {
        // From here H(k) = W(k-1): the first j in [i-1, end-1) with W(j) <= thresh.
        const std::size_t j = Lanes::find(g, w, i - 1, end - 1, AtMost{p.thresh});
        if (j < end - 1) return j + 1;
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
    std::size_t normal = p.normal;
    if (n >= p.max) {
        n = p.max;
    } else if (n <= normal) {
        normal = n;  // final window
    }
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
