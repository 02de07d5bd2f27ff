// SPDX-License-Identifier: Apache-2.0
// Portable kernels of the compatibility chunkers (baseline flags, any CPU).
//
// restic-rabin: the Rabin fingerprint of position L depends only on the 64
// bytes before L, so it can be computed at several positions at once: four
// lanes scan four consecutive segments of the range, each starting from the
// fingerprint of the 64 bytes before its segment (one warm-up per segment),
// so that four dependency chains (shift, table load, xor: ~7 cycles a byte)
// overlap. The leaving byte's term is folded into one table (out_x8): the
// reduction is linear, so append(F ^ out[o], b) = append(F, b) ^ out_x8[o].
//
// casync-buzhash: the scalar rule divides at every byte (H mod d); here the
// remainder comes from two multiplications by 2^64/d rounded up (Lemire,
// Kaser and Kurz, "Faster remainder by direct computation", exact for every
// 32-bit H and 32-bit d).
#include "kernels.hpp"

namespace cdc::detail {

namespace {

using u8 = std::uint8_t;
using u64 = std::uint64_t;
__extension__ typedef unsigned __int128 u128;

struct Rabin {
    const u64* reduce;
    const u64* out_x8;
    unsigned shift;  // degree - 8
    u64 low;         // 2^degree - 1

    u64 append(u64 f, u8 b) const noexcept { return (((f << 8) | b) & low) ^ reduce[f >> shift]; }
    u64 slide(u64 f, u8 leaving, u8 b) const noexcept { return append(f, b) ^ out_x8[leaving]; }
    /// F of the 64 bytes before p.
    u64 window(const u8* p) const noexcept {
        u64 f = 0;
        for (const u8* q = p - kRabinWindow; q < p; ++q) f = append(f, *q);
        return f;
    }
};

/// The first length L in [from, to) whose fingerprint (of w[L-64 .. L))
/// passes the mask, or `to`; one lane.
std::size_t rabin_first(const Rabin& r, u64 mask, const u8* w, std::size_t from, std::size_t to) noexcept {
    u64 f = r.window(w + from);
    for (std::size_t len = from; len < to; ++len) {
        if ((f & mask) == 0) return len;
        f = r.slide(f, w[len - kRabinWindow], w[len]);
    }
    return to;
}

}  // namespace

std::size_t rabin_wide(const RabinParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    if (n > p.max) n = p.max;
    if (n < p.min) return n;
    const Rabin r{p.reduce, p.out_x8, p.degree - 8, (u64{1} << p.degree) - 1};
    constexpr std::size_t kLanes = 4;
    // Segments of about a sixteenth of the average distance between cuts:
    // the lanes past a cut waste little, the warm-ups (64 bytes) cost little.
    std::size_t seg = (p.mask + 1) / 16;
    seg = seg < 256 ? 256 : seg > 16384 ? 16384 : seg;
    std::size_t pos = p.min;  // the lengths still to test: [pos, n); n itself never needs the test
    while (n - pos >= kLanes * seg) {
        const std::size_t a0 = pos, a1 = pos + seg, a2 = pos + 2 * seg, a3 = pos + 3 * seg;
        u64 f0 = r.window(w + a0), f1 = r.window(w + a1), f2 = r.window(w + a2), f3 = r.window(w + a3);
        std::size_t hit1 = seg, hit2 = seg, hit3 = seg;  // first match of lanes 1..3 (seg: none)
        for (std::size_t k = 0; k < seg; ++k) {
            const bool z0 = (f0 & p.mask) == 0, z1 = (f1 & p.mask) == 0, z2 = (f2 & p.mask) == 0,
                       z3 = (f3 & p.mask) == 0;
            if (z0 | z1 | z2 | z3) [[unlikely]] {
                if (z0) return a0 + k;  // lane 0: nothing earlier can match
                if (z1 && hit1 == seg) hit1 = k;
                if (z2 && hit2 == seg) hit2 = k;
                if (z3 && hit3 == seg) hit3 = k;
            }
            f0 = r.slide(f0, w[a0 + k - kRabinWindow], w[a0 + k]);
            f1 = r.slide(f1, w[a1 + k - kRabinWindow], w[a1 + k]);
            f2 = r.slide(f2, w[a2 + k - kRabinWindow], w[a2 + k]);
            f3 = r.slide(f3, w[a3 + k - kRabinWindow], w[a3 + k]);
        }
        if (hit1 < seg) return a1 + hit1;
        if (hit2 < seg) return a2 + hit2;
        if (hit3 < seg) return a3 + hit3;
        pos += kLanes * seg;
    }
    return rabin_first(r, p.mask, w, pos, n);  // n: the stream ended, or the chunk reached max
}

std::size_t casync_wide(const CasyncParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    if (n > p.max) n = p.max;
    if (n < p.min) return n;
    const u64 d = p.discriminator;
    const u64 m = p.reciprocal;
    const std::uint32_t* t = p.table;
    std::uint32_t h = 0;
    for (std::size_t j = p.min - kCasyncWindow; j < p.min; ++j)
        h ^= rotl32(t[w[j]], static_cast<unsigned>(p.min - 1 - j));
    // Lengths [min, n) are tested; at n the chunk ends either way (the
    // stream ended, or it reached max).
    for (std::size_t len = p.min; len < n; ++len) {
        const u64 remainder = static_cast<u64>((static_cast<u128>(m * h) * d) >> 64);
        if (remainder == d - 1) return len;
        h = rotl32(h, 1) ^ rotl32(t[w[len - kCasyncWindow]], kCasyncWindow) ^ t[w[len]];
    }
    return n;
}

}  // namespace cdc::detail
