// SPDX-License-Identifier: Apache-2.0
// What bounds the Gear kernels: how many 64-bit table lookups per second this
// CPU can do, by the means available (scalar loads, AVX-512 64-bit gathers,
// AVX-512 VBMI byte permutes over the table split into 8 byte planes — the
// latter gives the bytes of each entry in separate registers, before any
// transpose back to 64-bit lanes). Every Gear position needs one lookup, so
// these rates cap FastCDC/JC/fastcdc4stadia cutting speed.
// Run: build-bench/bench/cdc_bench --benchmark_filter=bounds
// (items_per_second = lookups per second; 1 MiB of input bytes, in cache.)
#include <cdc/corpus/datagen.hpp>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#if defined(__x86_64__)
// g++ 12's AVX-512 headers trip -W(maybe-)uninitialized on their own
// _mm256_undefined_* helpers (here through _mm512_reduce_add_epi64): a known
// false positive, as in src/kernels/avx512.cpp; nothing of ours is hidden.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#endif

namespace {

struct Input {
    std::vector<std::uint8_t> bytes;
    alignas(64) std::uint64_t table[256];
    alignas(64) std::uint8_t planes[8][256];
    alignas(64) std::uint64_t shifted[8][256];  // shifted[s][b] = table[b] << s
};

const Input& input() {
    static const Input in = [] {
        Input r;
        r.bytes.resize(std::size_t{1} << 20);
        cdc::fill_splitmix64(r.bytes, 3);
        std::vector<std::uint8_t> t(sizeof r.table);
        cdc::fill_splitmix64(t, 4);
        for (int i = 0; i < 256; ++i) {
            std::uint64_t v = 0;
            for (int b = 0; b < 8; ++b) v |= std::uint64_t{t[static_cast<std::size_t>(i * 8 + b)]} << (8 * b);
            r.table[i] = v;
            for (int b = 0; b < 8; ++b) r.planes[b][i] = static_cast<std::uint8_t>(v >> (8 * b));
            for (int b = 0; b < 8; ++b) r.shifted[b][i] = v << b;
        }
        return r;
    }();
    return in;
}

void finish(benchmark::State& state) {
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(input().bytes.size()));
}

void bounds_scalar(benchmark::State& state) {
    const Input& in = input();
    for (auto _ : state) {
        std::uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;  // independent sums: no dependency chain
        const std::uint8_t* p = in.bytes.data();
        for (std::size_t i = 0; i < in.bytes.size(); i += 4) {
            s0 += in.table[p[i]];
            s1 += in.table[p[i + 1]];
            s2 += in.table[p[i + 2]];
            s3 += in.table[p[i + 3]];
        }
        benchmark::DoNotOptimize(s0 + s1 + s2 + s3);
    }
    finish(state);
}
BENCHMARK(bounds_scalar)->Name("bounds/lookups/scalar");

#if defined(__x86_64__)
[[gnu::target("avx512f,avx512bw")]] std::uint64_t gather_qq(const Input& in) {
    __m512i acc = _mm512_setzero_si512();
    const auto* t = reinterpret_cast<const long long*>(in.table);
    for (std::size_t i = 0; i < in.bytes.size(); i += 8) {
        const __m512i idx = _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(in.bytes.data() + i)));
        acc = _mm512_add_epi64(acc, _mm512_i64gather_epi64(idx, t, 8));
    }
    return static_cast<std::uint64_t>(_mm512_reduce_add_epi64(acc));
}

void bounds_gather(benchmark::State& state) {
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw")) {
        state.SkipWithError("no AVX-512 on this CPU");
        return;
    }
    const Input& in = input();
    for (auto _ : state) benchmark::DoNotOptimize(gather_qq(in));
    finish(state);
}
BENCHMARK(bounds_gather)->Name("bounds/lookups/avx512_gather_qq");

// 64 lookups of all 8 byte planes per step: 2 vpermi2b (128-entry halves)
// + 1 blend on the index's top bit, per plane.
[[gnu::target("avx512f,avx512bw,avx512vbmi")]] std::uint64_t permute_planes(const Input& in) {
    __m512i lo[8], hi[8];
    for (int p = 0; p < 8; ++p) {
        lo[p] = _mm512_loadu_si512(in.planes[p]);
        hi[p] = _mm512_loadu_si512(in.planes[p] + 64);
    }
    __m512i lo2[8], hi2[8];
    for (int p = 0; p < 8; ++p) {
        lo2[p] = _mm512_loadu_si512(in.planes[p] + 128);
        hi2[p] = _mm512_loadu_si512(in.planes[p] + 192);
    }
    __m512i acc = _mm512_setzero_si512();
    for (std::size_t i = 0; i < in.bytes.size(); i += 64) {
        const __m512i v = _mm512_loadu_si512(in.bytes.data() + i);
        const __mmask64 top = _mm512_movepi8_mask(v);
        for (int p = 0; p < 8; ++p) {
            const __m512i a = _mm512_permutex2var_epi8(lo[p], v, hi[p]);
            const __m512i b = _mm512_permutex2var_epi8(lo2[p], v, hi2[p]);
            acc = _mm512_xor_si512(acc, _mm512_mask_blend_epi8(top, a, b));
        }
    }
    return static_cast<std::uint64_t>(_mm512_reduce_add_epi64(acc));
}

void bounds_permute(benchmark::State& state) {
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vbmi")) {
        state.SkipWithError("no AVX-512 VBMI on this CPU");
        return;
    }
    const Input& in = input();
    for (auto _ : state) benchmark::DoNotOptimize(permute_planes(in));
    finish(state);
}
BENCHMARK(bounds_permute)->Name("bounds/lookups/avx512vbmi_byte_planes_no_transpose");
#endif

// The pre-filter on the low 32 bits of the Gear hash (issue 40), before
// building it into a kernel: W(j) mod 2^32 depends only on the last 32
// bytes, so (W & mask & 0xFFFFFFFF) == 0 is a necessary condition for a
// FastCDC cut, computable in 16 lanes of 32 bits from 4 byte planes (half
// the lookups of the 64-bit VBMI lanes). Each lane runs over its own
// segment; a 16x16 dword transpose gives each lane 4 bytes per register,
// 4 planes of 2 vpermi2b and a blend look them up, two unpack stages (input
// bytes pre-shuffled so that they come out in position order) give one
// register of entries per position, and fp = 2 fp + entry per position.
// FastCDC's default MaskS 0x0003590703530000 has 6 bits below 32 (MaskL
// 0x0000d90003530000: 6; JC's MaskJ 6, MaskC 7): 1 position in 64 passes and
// needs its exact hash (bits up to 49: the 50 bytes before it).
//   filter_only: the filter, passes counted (an upper bound of any kernel
//   built on it);
//   filter_scalar_verify: each pass checked exactly from the bytes before it
//   (scalar, pre-shifted tables); the count of cuts is checked against the
//   scalar reference (an error if they differ).
#if defined(__x86_64__)
constexpr std::uint64_t kPrefilterMask = 0x0003590703530000ULL;
constexpr std::size_t kPrefilterLanes = 16;

/// How many positions j in [begin, end) have (W(j) & kPrefilterMask) == 0,
/// one at a time (begin >= 64).
std::size_t prefilter_reference(const Input& in, std::size_t begin, std::size_t end) {
    std::uint64_t fp = 0;
    std::size_t hits = 0;
    for (std::size_t j = begin - 64; j < end; ++j) {
        fp = (fp << 1) + in.table[in.bytes[j]];
        if (j >= begin && (fp & kPrefilterMask) == 0) ++hits;
    }
    return hits;
}

/// The exact test at j: bits 0..49 of W(j) from the 56 bytes before it, in
/// 7 groups of 8 over pre-shifted copies of the table (no shift per byte).
bool prefilter_exact(const Input& in, std::size_t j) {
    const std::uint8_t* q = in.bytes.data() + j - 55;
    std::uint64_t acc = 0;
    for (int g = 0; g < 7; ++g, q += 8) {
        std::uint64_t s = 0;
        for (int e = 0; e < 8; ++e) s += in.shifted[7 - e][q[e]];
        acc = (acc << 8) + s;
    }
    return (acc & kPrefilterMask) == 0;
}

/// r[q], 32-bit lane l <- dword q of r[l] (a 16x16 transpose of dwords).
[[gnu::target("avx512f,avx512bw")]] inline void transpose_dwords(__m512i r[16]) {
    __m512i t[16], s[16];
    for (int k = 0; k < 8; ++k) {
        t[2 * k] = _mm512_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
    }
    // s[4k + m]: 128-bit chunk c holds dword 4c + m of rows 4k .. 4k + 3.
    for (int k = 0; k < 4; ++k) {
        s[4 * k] = _mm512_unpacklo_epi64(t[4 * k], t[4 * k + 2]);
        s[4 * k + 1] = _mm512_unpackhi_epi64(t[4 * k], t[4 * k + 2]);
        s[4 * k + 2] = _mm512_unpacklo_epi64(t[4 * k + 1], t[4 * k + 3]);
        s[4 * k + 3] = _mm512_unpackhi_epi64(t[4 * k + 1], t[4 * k + 3]);
    }
    for (int m = 0; m < 4; ++m) {
        const __m512i u0 = _mm512_shuffle_i32x4(s[m], s[4 + m], 0x44), u1 = _mm512_shuffle_i32x4(s[m], s[4 + m], 0xEE);
        const __m512i u2 = _mm512_shuffle_i32x4(s[8 + m], s[12 + m], 0x44), u3 = _mm512_shuffle_i32x4(s[8 + m], s[12 + m], 0xEE);
        r[m] = _mm512_shuffle_i32x4(u0, u2, 0x88);
        r[4 + m] = _mm512_shuffle_i32x4(u0, u2, 0xDD);
        r[8 + m] = _mm512_shuffle_i32x4(u1, u3, 0x88);
        r[12 + m] = _mm512_shuffle_i32x4(u1, u3, 0xDD);
    }
}

/// Runs the filter over positions [64 + 32, 64 + 16 seg) of every lane's
/// segment (the first 32 of each lane warm its low 32 bits up); returns the
/// exact cuts (kVerify) or the passes. Lane l's segment: bytes [64 + l seg,
/// 64 + (l + 1) seg).
template <bool kVerify>
[[gnu::target("avx512f,avx512bw,avx512vbmi")]] std::size_t prefilter_lanes(const Input& in, std::size_t seg) {
    __m512i planes[4][4];
    for (int k = 0; k < 4; ++k)
        for (int h = 0; h < 4; ++h) planes[k][h] = _mm512_loadu_si512(in.planes[k] + 64 * h);
    // Byte 4r + e of a 128-bit chunk to byte 4e + r: after the unpacks,
    // register e holds position e of each lane's 4 bytes.
    const __m512i interleave =
        _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
    const __m512i mask = _mm512_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(kPrefilterMask)));
    const std::uint8_t* base = in.bytes.data() + 64;
    std::size_t count = 0;
    __m512i fp = _mm512_setzero_si512();
    for (std::size_t b = 0; b < seg; b += 64) {
        __m512i r[16];
        for (std::size_t l = 0; l < kPrefilterLanes; ++l) r[l] = _mm512_loadu_si512(base + l * seg + b);
        transpose_dwords(r);
        for (int q = 0; q < 16; ++q) {
            const __m512i x = _mm512_shuffle_epi8(r[q], interleave);
            const __mmask64 top = _mm512_movepi8_mask(x);
            __m512i p[4];
            for (int k = 0; k < 4; ++k)
                p[k] = _mm512_mask_blend_epi8(top, _mm512_permutex2var_epi8(planes[k][0], x, planes[k][1]),
                                              _mm512_permutex2var_epi8(planes[k][2], x, planes[k][3]));
            const __m512i a0 = _mm512_unpacklo_epi8(p[0], p[1]), a1 = _mm512_unpackhi_epi8(p[0], p[1]);
            const __m512i b0 = _mm512_unpacklo_epi8(p[2], p[3]), b1 = _mm512_unpackhi_epi8(p[2], p[3]);
            const __m512i c[4] = {_mm512_unpacklo_epi16(a0, b0), _mm512_unpackhi_epi16(a0, b0),
                                  _mm512_unpacklo_epi16(a1, b1), _mm512_unpackhi_epi16(a1, b1)};
            std::uint64_t pass = 0;
            for (int e = 0; e < 4; ++e) {
                fp = _mm512_add_epi32(_mm512_add_epi32(fp, fp), c[e]);
                pass |= std::uint64_t{_mm512_testn_epi32_mask(fp, mask)} << (16 * e);
            }
            if (b == 0 && q < 8) continue;  // the warm-up
            if constexpr (kVerify) {
                for (; pass != 0; pass &= pass - 1) {
                    const auto bit = static_cast<unsigned>(__builtin_ctzll(pass));
                    const std::size_t j = 64 + (bit & 15) * seg + b + 4 * static_cast<std::size_t>(q) + (bit >> 4);
                    if (prefilter_exact(in, j)) ++count;
                }
            } else {
                count += static_cast<std::size_t>(__builtin_popcountll(pass));
            }
        }
    }
    return count;
}

template <bool kVerify>
void bounds_prefilter(benchmark::State& state) {
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vbmi")) {
        state.SkipWithError("no AVX-512 VBMI on this CPU");
        return;
    }
    const Input& in = input();
    const std::size_t seg = (in.bytes.size() - 64) / kPrefilterLanes / 64 * 64;
    if constexpr (kVerify) {
        std::size_t expected = 0;
        for (std::size_t l = 0; l < kPrefilterLanes; ++l)
            expected += prefilter_reference(in, 64 + l * seg + 32, 64 + (l + 1) * seg);
        const std::size_t got = prefilter_lanes<true>(in, seg);
        if (got != expected) {
            state.SkipWithError("the pre-filter's cuts differ from the scalar reference");
            return;
        }
        state.counters["cuts"] = static_cast<double>(got);
    } else {
        state.counters["passes_per_position"] =
            static_cast<double>(prefilter_lanes<false>(in, seg)) / static_cast<double>(kPrefilterLanes * seg);
    }
    for (auto _ : state) benchmark::DoNotOptimize(prefilter_lanes<kVerify>(in, seg));
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kPrefilterLanes * seg));
}
BENCHMARK(bounds_prefilter<false>)->Name("bounds/prefilter_low32/filter_only");
BENCHMARK(bounds_prefilter<true>)->Name("bounds/prefilter_low32/filter_scalar_verify");
#endif

}  // namespace
