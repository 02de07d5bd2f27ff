// SPDX-License-Identifier: Apache-2.0
// Property: cut_lengths_parallel gives cut_lengths' lengths and consumed
// bytes for any name, profile, thread count and segment size, at the end of
// the stream or not (short inputs: segments of a few bytes to a few KiB).
#include "fuzz_input.hpp"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto c = cdc::fuzz::decode(data, size);
    const auto bytes = std::as_bytes(c.data);
    const bool at_end = (c.read_sizes[0] & 1) == 0;
    const unsigned threads = 2 + static_cast<unsigned>(c.read_sizes[0] % 5);
    const std::size_t segment = 1 + c.read_sizes.back() % 4096;
    std::vector<std::uint32_t> expected;
    const std::size_t consumed = cdc::cut_lengths(*c.finder, bytes, at_end, expected);
    std::vector<std::uint32_t> got;
    if (cdc::cut_lengths_parallel(*c.finder, bytes, at_end, got, threads, segment) != consumed) std::abort();
    if (got != expected) std::abort();
    return 0;
}
