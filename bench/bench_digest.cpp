// SPDX-License-Identifier: Apache-2.0
// Chunk fingerprints: one compute_digest per chunk vs compute_digests over
// batches of chunks, on the fastcdc chunks (default profile, ~9 KiB) of
// 64 MiB of SplitMix64 data. Run: build-bench/bench/cdc_bench --benchmark_filter=digest
#include "chunked_corpus.hpp"

#include <cdc/cdc.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace {

using Corpus = cdc::bench::ChunkedCorpus;
const Corpus& corpus() { return cdc::bench::fastcdc_corpus(); }

void set_counters(benchmark::State& state, const Corpus& c) {
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(c.data.size()));
    state.counters["chunks"] = static_cast<double>(c.lengths.size());
}

void one_by_one(benchmark::State& state, cdc::DigestKind kind) {
    const Corpus& c = corpus();
    for (auto _ : state) {
        std::size_t pos = 0;
        for (const std::uint32_t len : c.lengths) {
            const auto d = cdc::compute_digest(kind, std::as_bytes(std::span(c.data.data() + pos, len)));
            benchmark::DoNotOptimize(d.bytes[0]);
            pos += len;
        }
    }
    set_counters(state, c);
}

void batched(benchmark::State& state, cdc::DigestKind kind, std::size_t batch) {
    const Corpus& c = corpus();
    std::vector<cdc::Digest> out(batch);
    for (auto _ : state) {
        std::size_t pos = 0;
        for (std::size_t i = 0; i < c.lengths.size(); i += batch) {
            const auto lengths = std::span(c.lengths).subspan(i, std::min(batch, c.lengths.size() - i));
            std::size_t bytes = 0;
            for (const std::uint32_t len : lengths) bytes += len;
            cdc::compute_digests(kind, std::as_bytes(std::span(c.data.data() + pos, bytes)), lengths,
                                 std::span(out).first(lengths.size()));
            benchmark::DoNotOptimize(out[0].bytes[0]);
            pos += bytes;
        }
    }
    set_counters(state, c);
}

int register_all() {
    for (const cdc::DigestKind kind : {cdc::DigestKind::blake3, cdc::DigestKind::xxh3}) {
        const std::string name = "digest/" + std::string(cdc::to_string(kind));
        benchmark::RegisterBenchmark((name + "/one_by_one").c_str(),
                                     [kind](benchmark::State& s) { one_by_one(s, kind); })
            ->Unit(benchmark::kMillisecond);
        for (const std::size_t batch : {8u, 16u, 64u, 256u}) {
            if (kind != cdc::DigestKind::blake3 && batch != 64) continue;
            benchmark::RegisterBenchmark((name + "/batch" + std::to_string(batch)).c_str(),
                                         [kind, batch](benchmark::State& s) { batched(s, kind, batch); })
                ->Unit(benchmark::kMillisecond);
        }
    }
    return 0;
}

const int registered = register_all();

}  // namespace
