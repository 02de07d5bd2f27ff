// SPDX-License-Identifier: Apache-2.0
// AVX-512 kernels of the compatibility chunkers (compiled with -mavx512f
// -mavx512bw -mavx512vl -mavx512dq; chosen only on CPUs that have them).
//
// borg-buzhash, 16 consecutive candidates at a time. Rolling from candidate
// c to c + 1 is H(c+1) = rotl(H(c), 1) ^ X(c) with X(c) = rotl(Ts[D[c]], W) ^
// Ts[D[c+W]], a term that does not depend on H. So for a block c0 .. c0+15,
//   H(c0 + k) = rotl(H(c0), k) ^ Y(k),  Y(k) = XOR over j < k of rotl(X(c0+j), k-1-j),
// and Y is an inclusive prefix scan of X under "rotate by the distance"
// (four shift-rotate-xor steps), with X from two 16-lane gathers. The only
// chain from block to block is H(c0 + 16) = rotl(H(c0), 16) ^ Y(16).
#include "kernels.hpp"

// g++ 12's AVX-512 headers trip -Wmaybe-uninitialized on their own
// undefined-value placeholders (as in avx512.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace cdc::detail {

namespace {

// A rotate of our own, with internal linkage: an inline function with
// external linkage compiled here with AVX-512 could be the copy the linker
// keeps for baseline code (see drivers.hpp).
inline std::uint32_t rol(std::uint32_t x, unsigned k) noexcept {
    k &= 31;
    return k == 0 ? x : (x << k) | (x >> (32 - k));
}

/// Lanes moved up by S, zeros shifted in: lane k gets v[k - S].
template <int S>
inline __m512i lanes_up(__m512i v) noexcept {
    return _mm512_alignr_epi32(v, _mm512_setzero_si512(), 16 - S);
}

/// Z(k) = XOR over j <= k of rotl(X(j), k - j).
inline __m512i rotate_scan(__m512i x) noexcept {
    x = _mm512_xor_si512(x, _mm512_rol_epi32(lanes_up<1>(x), 1));
    x = _mm512_xor_si512(x, _mm512_rol_epi32(lanes_up<2>(x), 2));
    x = _mm512_xor_si512(x, _mm512_rol_epi32(lanes_up<4>(x), 4));
    x = _mm512_xor_si512(x, _mm512_rol_epi32(lanes_up<8>(x), 8));
    return x;
}

/// H of the W bytes at w (borg's start of every chunk: W is 4095 by
/// default, as long as half a chunk's scan), 16 bytes a step.
inline std::uint32_t window_hash(const std::uint32_t* table, const std::uint8_t* w, std::size_t window) noexcept {
    const int* t = reinterpret_cast<const int*>(table);
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i low5 = _mm512_set1_epi32(31);
    // byte j is rotated by (W - 1 - j) mod 32
    __m512i counts = _mm512_and_si512(_mm512_sub_epi32(_mm512_set1_epi32(static_cast<int>((window - 1) % 32)), lane), low5);
    __m512i acc = _mm512_setzero_si512();
    std::size_t j = 0;
    for (; j + 16 <= window; j += 16) {
        const __m512i idx = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + j)));
        acc = _mm512_xor_si512(acc, _mm512_rolv_epi32(_mm512_i32gather_epi32(idx, t, 4), counts));
        counts = _mm512_and_si512(_mm512_sub_epi32(counts, _mm512_set1_epi32(16)), low5);
    }
    __m256i a8 = _mm256_xor_si256(_mm512_castsi512_si256(acc), _mm512_extracti64x4_epi64(acc, 1));
    __m128i a4 = _mm_xor_si128(_mm256_castsi256_si128(a8), _mm256_extracti128_si256(a8, 1));
    a4 = _mm_xor_si128(a4, _mm_shuffle_epi32(a4, 0x4E));
    a4 = _mm_xor_si128(a4, _mm_shuffle_epi32(a4, 0xB1));
    auto h = static_cast<std::uint32_t>(_mm_cvtsi128_si32(a4));
    for (; j < window; ++j) h ^= rol(table[w[j]], static_cast<unsigned>((window - 1 - j) % 32));
    return h;
}

}  // namespace

std::size_t borg_avx512(const BorgParams& p, const std::uint8_t* w, std::size_t n) noexcept {
    if (n <= p.min + p.window) return n;
    const std::size_t end = n < p.max ? n : p.max;
    const std::size_t last = end - p.window - 1;  // the last candidate
    const int* table = reinterpret_cast<const int*>(p.table);
    const int* leaving = reinterpret_cast<const int*>(p.leaving);
    const __m512i mask = _mm512_set1_epi32(static_cast<int>(p.mask));
    const __m512i steps = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    std::uint32_t h = window_hash(p.table, w + p.min, p.window);
    std::size_t c = p.min;
    for (; c + 15 <= last; c += 16) {
        const __m512i out_bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + c)));
        const __m512i in_bytes =
            _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + c + p.window)));
        const __m512i x = _mm512_xor_si512(_mm512_i32gather_epi32(out_bytes, leaving, 4),
                                           _mm512_i32gather_epi32(in_bytes, table, 4));
        const __m512i z = rotate_scan(x);  // z(k) = Y(k + 1)
        const __m512i hv = _mm512_xor_si512(_mm512_rolv_epi32(_mm512_set1_epi32(static_cast<int>(h)), steps),
                                            lanes_up<1>(z));
        const __mmask16 hit = _mm512_testn_epi32_mask(hv, mask);
        if (hit != 0) return c + static_cast<std::size_t>(__builtin_ctz(hit));
        h = rol(h, 16) ^ static_cast<std::uint32_t>(_mm_extract_epi32(_mm512_extracti32x4_epi32(z, 3), 3));
    }
    // The steps may end one past the last candidate, whose hash is no candidate's.
    if (c > last) return end;
    for (;; ++c) {
        if ((h & p.mask) == 0) return c;
        if (c + 1 > last) return end;
        h = rol(h, 1) ^ p.leaving[w[c]] ^ p.table[w[c + p.window]];
    }
}

}  // namespace cdc::detail
