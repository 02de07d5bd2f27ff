// SPDX-License-Identifier: Apache-2.0
// BLAKE3 chunk chaining values, 16 chunks side by side (see blake3_lanes.hpp;
// compiled with -mavx512f, called only on CPUs that have AVX-512F).
//
// Written from the BLAKE3 specification. Each zmm register holds the same
// 32-bit word for the 16 lanes: the chaining value in 8 registers, the
// compression state v[0..15] in 16, and the message words m[0..15] in 16,
// which are the 16 lanes' current 64-byte blocks transposed. One step
// compresses block b of every lane; a lane whose chunk has fewer blocks
// keeps its chaining value (masked update) until the longest one is done.
#include "blake3_lanes.hpp"

// g++ 12's AVX-512 headers trip -W(maybe-)uninitialized on their own
// _mm512_undefined_* helpers (a known false positive). The warnings point
// into the headers, so they are silenced there only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <cstring>

namespace cdc::detail {
namespace {

constexpr std::size_t kBlockLen = 64;
constexpr std::size_t kLanes = kBlake3Lanes;
static_assert(kLanes == 16, "one 32-bit word per lane of a zmm register");

// The specification's constants: the IV (that of SHA-256), the domain flags
// a chunk needs, the number of rounds and the message word permutation
// applied between rounds.
constexpr std::uint32_t kIv[8] = {0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
                                  0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19};
constexpr std::uint32_t kChunkStart = 1u << 0;
constexpr std::uint32_t kChunkEnd = 1u << 1;
constexpr int kRounds = 7;
constexpr unsigned kPermutation[16] = {2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8};

// Which word of the block each round reads at each position: the
// permutation composed round after round, so that the message registers
// never move and every index below is a compile-time constant.
struct Schedule {
    unsigned word[kRounds][16];
};
constexpr Schedule make_schedule() {
    Schedule s{};
    for (unsigned i = 0; i < 16; ++i) s.word[0][i] = i;
    for (int r = 1; r < kRounds; ++r)
        for (unsigned i = 0; i < 16; ++i) s.word[r][i] = s.word[r - 1][kPermutation[i]];
    return s;
}
constexpr Schedule kSchedule = make_schedule();

inline __m512i add(__m512i a, __m512i b) noexcept { return _mm512_add_epi32(a, b); }

// The quarter-round mixing function G: rotations right by 16, 12, 8, 7.
inline void g(__m512i& a, __m512i& b, __m512i& c, __m512i& d, __m512i mx, __m512i my) noexcept {
    a = add(add(a, b), mx);
    d = _mm512_ror_epi32(_mm512_xor_si512(d, a), 16);
    c = add(c, d);
    b = _mm512_ror_epi32(_mm512_xor_si512(b, c), 12);
    a = add(add(a, b), my);
    d = _mm512_ror_epi32(_mm512_xor_si512(d, a), 8);
    c = add(c, d);
    b = _mm512_ror_epi32(_mm512_xor_si512(b, c), 7);
}

// One round: G on the four columns of the 4x4 state, then on its four
// diagonals, each reading the next two message words of the round's order.
template <int R>
inline void compress_round(__m512i v[16], const __m512i m[16]) noexcept {
    constexpr const unsigned* s = kSchedule.word[R];
    g(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);
    g(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);
    g(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);
    g(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);
    g(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);
    g(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);
    g(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);
    g(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);
}

// m[w] = word w of the 16 rows (lane l's block at row[l]): a 16x16
// transpose of 32-bit words. Within 128-bit blocks, two rounds of unpacks
// gather word 4q+k of four consecutive rows (k by register, q by block);
// two rounds of 128-bit block shuffles then put the four row groups of
// each word side by side.
inline void load_transposed(const std::uint8_t* const row[kLanes], __m512i m[16]) noexcept {
    __m512i r[16];
    for (std::size_t l = 0; l < kLanes; ++l) r[l] = _mm512_loadu_si512(row[l]);
    __m512i u[4][4];  // u[g][k], block q: word 4q+k of rows 4g..4g+3
    for (int grp = 0; grp < 4; ++grp) {
        const __m512i* x = r + 4 * grp;
        const __m512i ab_lo = _mm512_unpacklo_epi32(x[0], x[1]);
        const __m512i ab_hi = _mm512_unpackhi_epi32(x[0], x[1]);
        const __m512i cd_lo = _mm512_unpacklo_epi32(x[2], x[3]);
        const __m512i cd_hi = _mm512_unpackhi_epi32(x[2], x[3]);
        u[grp][0] = _mm512_unpacklo_epi64(ab_lo, cd_lo);
        u[grp][1] = _mm512_unpackhi_epi64(ab_lo, cd_lo);
        u[grp][2] = _mm512_unpacklo_epi64(ab_hi, cd_hi);
        u[grp][3] = _mm512_unpackhi_epi64(ab_hi, cd_hi);
    }
    for (int k = 0; k < 4; ++k) {
        // A 4x4 transpose of 128-bit blocks: word 4q+k gets block q of u[0..3][k].
        const __m512i s0 = _mm512_shuffle_i32x4(u[0][k], u[1][k], 0x44);  // u0.0 u0.1 u1.0 u1.1
        const __m512i s1 = _mm512_shuffle_i32x4(u[0][k], u[1][k], 0xEE);  // u0.2 u0.3 u1.2 u1.3
        const __m512i s2 = _mm512_shuffle_i32x4(u[2][k], u[3][k], 0x44);
        const __m512i s3 = _mm512_shuffle_i32x4(u[2][k], u[3][k], 0xEE);
        m[k] = _mm512_shuffle_i32x4(s0, s2, 0x88);       // block 0 of each
        m[4 + k] = _mm512_shuffle_i32x4(s0, s2, 0xDD);   // block 1
        m[8 + k] = _mm512_shuffle_i32x4(s1, s3, 0x88);   // block 2
        m[12 + k] = _mm512_shuffle_i32x4(s1, s3, 0xDD);  // block 3
    }
}

}  // namespace

void blake3_chunk_cvs_avx512(const Blake3LaneChunk* chunks, std::size_t n, const std::uint32_t* key,
                             std::uint32_t mode_flags) noexcept {
    // Per lane: the index of its last block, that block's length and, as
    // BLAKE3 pads it with zeros, a zero-padded copy of it. Lanes past n have
    // one block, zeros, whose result nobody reads.
    alignas(64) std::uint32_t last[kLanes] = {};
    alignas(64) std::uint32_t last_len[kLanes] = {};
    alignas(64) std::uint32_t counter_lo[kLanes] = {};
    alignas(64) std::uint32_t counter_hi[kLanes] = {};
    alignas(64) std::uint8_t tail[kLanes][kBlockLen] = {};
    const std::uint8_t* data[kLanes] = {};
    std::uint32_t last_max = 0;
    for (std::size_t l = 0; l < n; ++l) {
        const Blake3LaneChunk& c = chunks[l];
        last[l] = static_cast<std::uint32_t>((c.len - 1) / kBlockLen);
        last_len[l] = c.len - last[l] * static_cast<std::uint32_t>(kBlockLen);
        counter_lo[l] = static_cast<std::uint32_t>(c.counter);
        counter_hi[l] = static_cast<std::uint32_t>(c.counter >> 32);
        std::memcpy(tail[l], c.data + last[l] * kBlockLen, last_len[l]);
        data[l] = c.data;
        if (last[l] > last_max) last_max = last[l];
    }
    const __m512i last_v = _mm512_load_si512(last);
    const __m512i last_len_v = _mm512_load_si512(last_len);
    const __m512i lo = _mm512_load_si512(counter_lo);
    const __m512i hi = _mm512_load_si512(counter_hi);
    const __m512i full_len = _mm512_set1_epi32(static_cast<int>(kBlockLen));
    const __m512i chunk_end = _mm512_set1_epi32(static_cast<int>(kChunkEnd));

    __m512i cv[8];
    for (int i = 0; i < 8; ++i) cv[i] = _mm512_set1_epi32(static_cast<int>(key[i]));
    const __m512i mode = _mm512_set1_epi32(static_cast<int>(mode_flags));
    for (std::uint32_t b = 0; b <= last_max; ++b) {
        const __m512i b_v = _mm512_set1_epi32(static_cast<int>(b));
        const __mmask16 live = _mm512_cmple_epu32_mask(b_v, last_v);  // lanes with a block b
        const __mmask16 end = _mm512_cmpeq_epi32_mask(b_v, last_v);   // lanes at their last block
        // Each lane's block b, its last one from the padded copy (which the
        // lanes already done read again, to no effect).
        const std::uint8_t* row[kLanes];
        for (std::size_t l = 0; l < kLanes; ++l) row[l] = b < last[l] ? data[l] + b * kBlockLen : tail[l];
        __m512i m[16];
        load_transposed(row, m);

        __m512i flags = _mm512_or_si512(_mm512_maskz_mov_epi32(end, chunk_end), mode);
        if (b == 0) flags = _mm512_or_si512(flags, _mm512_set1_epi32(static_cast<int>(kChunkStart)));
        const __m512i block_len = _mm512_mask_mov_epi32(full_len, end, last_len_v);
        __m512i v[16] = {cv[0], cv[1], cv[2], cv[3], cv[4], cv[5], cv[6], cv[7],
                         _mm512_set1_epi32(static_cast<int>(kIv[0])), _mm512_set1_epi32(static_cast<int>(kIv[1])),
                         _mm512_set1_epi32(static_cast<int>(kIv[2])), _mm512_set1_epi32(static_cast<int>(kIv[3])),
                         lo, hi, block_len, flags};
        compress_round<0>(v, m);
        compress_round<1>(v, m);
        compress_round<2>(v, m);
        compress_round<3>(v, m);
        compress_round<4>(v, m);
        compress_round<5>(v, m);
        compress_round<6>(v, m);
        // The new chaining value is v[i] ^ v[i + 8], for the live lanes only.
        for (int i = 0; i < 8; ++i) cv[i] = _mm512_mask_xor_epi32(cv[i], live, v[i], v[i + 8]);
    }

    alignas(64) std::uint32_t words[8][kLanes];
    for (int i = 0; i < 8; ++i) _mm512_store_si512(words[i], cv[i]);
    for (std::size_t l = 0; l < n; ++l) {
        std::uint32_t out[8];
        for (int i = 0; i < 8; ++i) out[i] = words[i][l];
        std::memcpy(chunks[l].cv, out, sizeof out);  // x86: the little-endian words of the CV
    }
}

}  // namespace cdc::detail
