// SPDX-License-Identifier: Apache-2.0
// A program linked with cdc::cdc alone: the link_interface tests inspect its
// link line and its dynamic dependencies for PLplot (tools only).
#include <cdc/cdc.hpp>

#include <cstdio>
#include <string>

int main() {
    const std::string text(100000, 'x');
    cdc::Chunker chunker("fastcdc", cdc::MemorySource(std::span<const char>(text)));
    std::size_t n = 0;
    for ([[maybe_unused]] const cdc::Chunk& c : chunker) ++n;
    std::printf("%zu\n", n);
    return n > 0 ? 0 : 1;
}
