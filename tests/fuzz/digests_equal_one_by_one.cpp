// SPDX-License-Identifier: Apache-2.0
// Property: compute_digests (BLAKE3 hashed side by side: full 1 KiB chunks
// in blake3_hash_many lanes, the partial last chunks in the 16-lane
// compression, parents and roots merged level by level) gives every message
// exactly the digest of compute_digest, the official hasher, one by one.
// The input chooses the lengths (0 to a little over 64 KiB: every path from
// one-chunk messages to those hashed whole), the start offset and the bytes;
// the hashing paths depend on the lengths, so most of the data is a fixed
// pseudo-random buffer that the input only patches.
#include "fuzz_input.hpp"

#include <array>
#include <cstdlib>

namespace {

constexpr std::size_t kMaxMessages = 300;
constexpr std::size_t kMaxLength = 66 * 1024 + 37;
constexpr std::size_t kBuffer = 6 * 1024 * 1024;

const std::vector<std::uint8_t>& base_bytes() {
    static const std::vector<std::uint8_t> bytes = [] {
        std::vector<std::uint8_t> b(kBuffer);
        std::uint64_t x = 0x9E3779B97F4A7C15ULL;
        for (auto& v : b) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v = static_cast<std::uint8_t>(x >> 56);
        }
        return b;
    }();
    return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    cdc::fuzz::Bytes in(data, size);
    const std::size_t start = in.u8() % 64;  // unaligned starts
    const std::size_t count = 1 + in.u16() % kMaxMessages;
    std::vector<std::uint32_t> lengths;
    std::size_t total = 0;
    for (std::size_t i = 0; i < count; ++i) {
        // Mostly chunk-sized lengths, with the edges around 64-byte blocks
        // and 1 KiB chunks as likely as any other value.
        const std::uint32_t raw = in.u16() | (static_cast<std::uint32_t>(in.u8()) << 16);
        const std::uint32_t len = static_cast<std::uint32_t>(raw % (kMaxLength + 1));
        if (start + total + len > kBuffer) break;
        lengths.push_back(len);
        total += len;
    }
    std::vector<std::uint8_t> buf(base_bytes().begin(), base_bytes().begin() + static_cast<std::ptrdiff_t>(start + total));
    const auto patch = in.rest();
    for (std::size_t i = 0; i < patch.size() && i < buf.size(); ++i) buf[i] ^= patch[i];

    const auto bytes = std::as_bytes(std::span(buf)).subspan(start);
    std::vector<cdc::Digest> got(lengths.size());
    cdc::compute_digests(cdc::DigestKind::blake3, bytes, lengths, got);
    std::size_t pos = 0;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
        const cdc::Digest want = cdc::compute_digest(cdc::DigestKind::blake3, bytes.subspan(pos, lengths[i]));
        if (got[i].size != want.size || got[i].bytes != want.bytes) std::abort();
        pos += lengths[i];
    }
    return 0;
}
