// SPDX-License-Identifier: Apache-2.0
// src/blake3_batch.hpp — BLAKE3-256 of many independent messages at once
// (private to the library; the public entry point is cdc::compute_digests).
//
// One message of a content-defined chunk's size (~9 KiB = 9 BLAKE3 chunks)
// cannot fill the 8 or 16 SIMD lanes of blake3_hash_many: the official
// hasher compresses its 9 chunks 8 + 1 wide, then 4 + 2 + 1 + 1 parents one
// by one. Here the i-th 1 KiB chunks of all the messages of a group share the
// chunk counter i, so one blake3_hash_many call compresses them side by side;
// the parent nodes of all the messages are merged level by level, again
// side by side, and the root nodes of the whole group in one last call. The
// partial last chunks, which differ in counter and length, are compressed 16
// side by side by blake3_lanes.hpp on CPUs with AVX-512F, else one by one.
// The digests are exactly those of blake3_hasher_init/update/finalize with
// a 32-byte output.
#pragma once

#include <cdc/digest.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace cdc::detail {

/// How the partial last chunks are compressed: `side_by_side` when the CPU
/// can (the library's choice), `one_by_one` always (the fallback, which
/// tests compare with the other).
enum class LastChunks { side_by_side, one_by_one };

/// BLAKE3-256 of the consecutive messages of `data` whose lengths are
/// `lengths` (their sum must be <= data.size(); out.size() == lengths.size();
/// the caller checks both). Allocates nothing after its first call on a
/// thread (one scratch area of ~60 KiB per thread).
void blake3_digests(std::span<const std::byte> data, std::span<const std::uint32_t> lengths,
                    std::span<Digest> out, LastChunks last_chunks = LastChunks::side_by_side);

/// The same in BLAKE3's keyed mode (blake3_hasher_init_keyed with `key`, 32
/// bytes): the ids of an encrypted store (src/crypto, MasterKey::blob_ids).
void blake3_keyed_digests(std::span<const std::byte> data, std::span<const std::uint32_t> lengths,
                          const std::uint8_t* key, std::span<Digest> out,
                          LastChunks last_chunks = LastChunks::side_by_side);

}  // namespace cdc::detail
