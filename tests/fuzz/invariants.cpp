// SPDX-License-Identifier: Apache-2.0
// Property: chunks concatenate to the input; every chunk but the last lies
// in [min, max] (min - 1 for fastcdc-rs-v2020 with an odd min); the last is
// in [1, max].
#include "fuzz_input.hpp"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto c = cdc::fuzz::decode(data, size);
    const cdc::Profile& p = c.finder->profile();
    const std::size_t shortest = cdc::test::shortest_chunk(c.finder->info(), p);
    cdc::Chunker m(c.finder, cdc::MemorySource(c.data));
    std::uint64_t offset = 0;
    std::size_t prev = 0;
    bool have_prev = false;
    for (const auto& ch : m) {
        if (ch.offset != offset || ch.bytes.data() != reinterpret_cast<const std::byte*>(c.data.data()) + offset)
            std::abort();
        if (ch.size() < 1 || ch.size() > p.max_size) std::abort();
        if (have_prev && prev < shortest) std::abort();  // only the last may be short
        prev = ch.size();
        have_prev = true;
        offset += ch.size();
    }
    if (offset != c.data.size()) std::abort();
    return 0;
}
