// SPDX-License-Identifier: Apache-2.0
// Property: chunking a stream through any read pattern (and a caller buffer
// of exactly MaxSize) gives the same chunks as chunking it in memory.
#include "fuzz_input.hpp"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto c = cdc::fuzz::decode(data, size);
    std::vector<std::size_t> mem;
    cdc::Chunker m(c.finder, cdc::MemorySource(c.data));
    for (const auto& ch : m) mem.push_back(ch.size());

    cdc::fuzz::ScriptReader r(c.data, c.read_sizes);
    std::vector<std::byte> buffer(c.finder->profile().max_size);
    cdc::Chunker s(c.finder, cdc::ReaderSource(r), (c.read_sizes[0] & 1) ? std::span(buffer) : std::span<std::byte>());
    std::size_t i = 0;
    std::uint64_t offset = 0;
    for (const auto& ch : s) {
        if (i >= mem.size() || ch.size() != mem[i] || ch.offset != offset ||
            std::memcmp(ch.bytes.data(), c.data.data() + offset, ch.size()) != 0)
            std::abort();
        offset += ch.size();
        ++i;
    }
    if (i != mem.size()) std::abort();
    return 0;
}
