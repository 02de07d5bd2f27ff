// SPDX-License-Identifier: Apache-2.0
// src/blake3_lanes.hpp — BLAKE3 chunk chaining values, up to 16 chunks side
// by side (private to the library; blake3_batch.cpp uses it).
//
// blake3_hash_many compresses inputs side by side only when they share the
// chunk counter and the number of blocks, all full. The partial last chunks
// of a batch of messages share none of these: here each SIMD lane has its
// own chunk counter, its own number of blocks (a lane that has fewer keeps
// its chaining value while the others go on) and its own final block length.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cdc::detail {

inline constexpr std::size_t kBlake3Lanes = 16;

/// One lane's chunk: `len` bytes (1..1024) at `data`, compressed with the
/// chunk counter `counter`, CHUNK_START on its first block and CHUNK_END on
/// its last (zero-padded, its real length as block length); its 32-byte
/// chaining value goes to `cv`.
struct Blake3LaneChunk {
    const std::uint8_t* data;
    std::uint8_t* cv;
    std::uint64_t counter;
    std::uint32_t len;
};

#if defined(CDC_X86_KERNELS)
/// The chaining values of chunks[0..n), n = 1..kBlake3Lanes, in the 32-bit
/// lanes of AVX-512F registers (blake3_lanes_avx512.cpp), starting from
/// `key` (8 words: BLAKE3's IV, or the key words of keyed hashing) with
/// `flags` (0, or KEYED_HASH) added to every block's. Call it only on a
/// CPU that has AVX-512F. Plain pointers, no std:: template in the
/// signature: an inline function instantiated in that -mavx512f translation
/// unit could be the copy the linker keeps for the whole library.
void blake3_chunk_cvs_avx512(const Blake3LaneChunk* chunks, std::size_t n, const std::uint32_t* key,
                             std::uint32_t flags) noexcept;
#endif

}  // namespace cdc::detail
