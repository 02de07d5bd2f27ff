// SPDX-License-Identifier: Apache-2.0
// Chunking throughput of every algorithm at every kernel level the CPU has
// and with the kernel the calibration chooses (NAME/auto),
// on one in-memory buffer (random by default), beside a memory-read
// baseline over the same buffer. Bytes/s are reported by Google Benchmark
// from CPU time (as cdc speed), so that other load on a shared machine does
// not count.
//   build-bench/bench/cdc_bench [--benchmark_filter=REGEX]
// Environment: CDC_BENCH_SIZE (bytes, default 256 MiB), CDC_BENCH_DATA
// (random, text or zeros).
#include <cdc/corpus/datagen.hpp>

#include <cdc/cdc.hpp>

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const std::vector<std::uint8_t>& buffer() {
    static const std::vector<std::uint8_t> buf = [] {
        std::size_t size = std::size_t{256} << 20;
        if (const char* s = std::getenv("CDC_BENCH_SIZE")) size = std::strtoull(s, nullptr, 10);
        const std::string kind = std::getenv("CDC_BENCH_DATA") ? std::getenv("CDC_BENCH_DATA") : "random";
        std::vector<std::uint8_t> b(size);
        if (kind == "random") cdc::fill_splitmix64(b, 1);
        else if (kind == "text") cdc::fill_text(b, 1);
        return b;
    }();
    return buf;
}

void memory_read(benchmark::State& state) {
    const auto& buf = buffer();
    for (auto _ : state) {
        std::uint64_t a = 0, b = 0, c = 0, d = 0;
        for (std::size_t i = 0; i + 32 <= buf.size(); i += 32) {
            std::uint64_t w[4];
            std::memcpy(w, buf.data() + i, 32);
            a += w[0];
            b += w[1];
            c += w[2];
            d += w[3];
        }
        benchmark::DoNotOptimize(a + b + c + d);
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(buf.size()));
}

cdc::Options options_for(const std::string& name) {
    cdc::Options o;
    if (cdc::find_algorithm(name)->key == cdc::KeyUse::required) {
        cdc::Key k{};
        for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::uint8_t>(i);
        o.key = k;
    }
    return o;
}

void chunking(benchmark::State& state, const std::string& name, cdc::KernelLevel level) {
    const auto finder = cdc::make_cut_finder(name, options_for(name), level);
    const auto& buf = buffer();
    std::uint64_t chunks = 0;
    std::vector<std::uint32_t> lengths;
    for (auto _ : state) {
        lengths.clear();
        cdc::cut_lengths(*finder, std::as_bytes(std::span(buf)), true, lengths);
        chunks += lengths.size();
    }
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(buf.size()));
    state.counters["chunks"] = benchmark::Counter(static_cast<double>(chunks) / static_cast<double>(state.iterations()));
}

int register_all() {
    benchmark::RegisterBenchmark("memory_read", memory_read)->Unit(benchmark::kMillisecond);
    for (const auto& a : cdc::algorithms()) {
        if (!a.content_defined) continue;
        for (cdc::KernelLevel level :
             {cdc::KernelLevel::scalar, cdc::KernelLevel::wide, cdc::KernelLevel::avx2, cdc::KernelLevel::avx512}) {
            const std::string name = std::string(a.name);
            // Only the levels this CPU has and this family has a kernel for.
            if (cdc::make_cut_finder(name, options_for(name), level)->kernel_level() != level) continue;
            benchmark::RegisterBenchmark((name + "/" + std::string(cdc::to_string(level))).c_str(),
                                         [name, level](benchmark::State& s) { chunking(s, name, level); })
                ->Unit(benchmark::kMillisecond);
        }
        // The kernel the calibration chooses (measured on first use).
        const std::string name = std::string(a.name);
        benchmark::RegisterBenchmark((name + "/auto").c_str(), [name](benchmark::State& s) {
            chunking(s, name, cdc::KernelLevel::automatic);
        })->Unit(benchmark::kMillisecond);
    }
    return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
