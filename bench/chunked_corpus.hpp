// SPDX-License-Identifier: Apache-2.0
// The corpus the digest and crypto benchmarks hash chunk by chunk: 64 MiB
// of splitmix64 (seed 7) with fastcdc's chunk lengths at its defaults
// (~9 KiB), built once per run, by whichever benchmark asks first.
#pragma once

#include <cdc/cdc.hpp>
#include <cdc/corpus/datagen.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cdc::bench {

struct ChunkedCorpus {
    std::vector<std::uint8_t> data;
    std::vector<std::uint32_t> lengths;  ///< fastcdc chunk lengths, in order
};

inline const ChunkedCorpus& fastcdc_corpus() {
    static const ChunkedCorpus c = [] {
        ChunkedCorpus r;
        r.data.resize(std::size_t{64} << 20);
        fill_splitmix64(r.data, 7);
        const auto finder = make_cut_finder("fastcdc", Options{});
        cut_lengths(*finder, std::as_bytes(std::span(r.data)), true, r.lengths);
        return r;
    }();
    return c;
}

}  // namespace cdc::bench
