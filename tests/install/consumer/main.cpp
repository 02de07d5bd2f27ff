// SPDX-License-Identifier: Apache-2.0
// Chunks a fixed buffer and prints "<chunks> <bytes> <blake3 of first chunk>".
#include <cdc/cdc.hpp>

#include <cstdio>
#include <vector>

int main() {
    std::vector<unsigned char> data(1 << 20);
    unsigned x = 1;
    for (auto& b : data) b = static_cast<unsigned char>((x = x * 1103515245u + 12345u) >> 24);
    cdc::Chunker chunker("fastcdc", cdc::MemorySource(std::span<const unsigned char>(data)));
    unsigned long chunks = 0, bytes = 0;
    std::string first;
    for (const cdc::Chunk& c : chunker) {
        if (chunks++ == 0) first = cdc::compute_digest(cdc::DigestKind::blake3, c.bytes).hex();
        bytes += c.size();
    }
    std::printf("%lu %lu %s\n", chunks, bytes, first.c_str());
    return bytes == data.size() ? 0 : 1;
}
