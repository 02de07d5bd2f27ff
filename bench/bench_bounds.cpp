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

}  // namespace
