// SPDX-License-Identifier: Apache-2.0
// Chunk bytes in messages, both directions (push: client to server; pull:
// server to client): packing chunks into data messages of about
// kDataMessageBytes (a larger payload in pieces), assembling them back with
// every check a receiver owes (the chunk due, sizes, piece order, bounds),
// and decoding a payload with its BLAKE3 checked against the id.
#pragma once

#include "cdc_transfer.pb.h"
#include "protocol.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace cdc::store::detail {
class Decompressor;
}

namespace cdc::transfer {

/// Packs chunks into Chunks messages and hands each full one to `emit`.
class ChunkPacker {
public:
    using Emit = std::function<void(v1::Chunks&)>;
    /// `with_ids` false: pieces go without the chunk's id (a receiver that
    /// knows which chunk is due: Info's data_ids_optional).
    explicit ChunkPacker(Emit emit, bool with_ids = true) : emit_(std::move(emit)), with_ids_(with_ids) {}
    /// One chunk's payload (a zstd frame, or the raw bytes when `raw`).
    void add(const store::ChunkId& id, std::uint32_t raw_size, bool raw, std::span<const std::byte> payload);
    /// Emits the message being filled, if any.
    void flush();
    /// Payload bytes added so far.
    std::uint64_t payload_bytes() const noexcept { return payload_bytes_; }

private:
    Emit emit_;
    bool with_ids_ = true;
    v1::Chunks message_;
    std::size_t filled_ = 0;
    std::uint64_t payload_bytes_ = 0;
};

/// Reassembles the chunk due from its pieces.
class ChunkAssembler {
public:
    /// `max_raw_size`: the largest chunk the receiver accepts.
    explicit ChunkAssembler(std::uint64_t max_raw_size) : max_raw_size_(max_raw_size) {}
    /// Takes the next piece, which must belong to the chunk due (`id`,
    /// `raw_size`); true when that chunk's payload is complete. TransferError
    /// (invalid_argument) for a piece that is not the one due.
    bool add(const v1::ChunkData& piece, const store::ChunkId& id, std::uint32_t raw_size);
    /// True between the first and the last piece of a chunk.
    bool busy() const noexcept { return busy_; }
    /// The completed payload: valid until the next add, and while the piece
    /// given to the last add lives (a payload in one piece is not copied).
    std::span<const std::byte> payload() const noexcept { return view_; }
    bool raw() const noexcept { return raw_; }

private:
    std::uint64_t max_raw_size_;
    bool busy_ = false;
    bool raw_ = false;
    store::ChunkId id_{};
    std::uint32_t raw_size_ = 0;
    std::vector<std::byte> payload_;
    std::span<const std::byte> view_;
    std::size_t filled_ = 0;
};

/// Decodes a chunk's payload into `out` (resized to raw_size) and checks its
/// BLAKE3 against `id`. TransferError(data_loss) naming `what` and the chunk
/// otherwise.
void decode_chunk(store::detail::Decompressor& d, std::span<const std::byte> payload, bool raw,
                  std::uint32_t raw_size, const store::ChunkId& id, std::vector<std::byte>& out,
                  std::string_view what);

/// The first 16 hex digits of an id, for messages.
std::string short_id(const store::ChunkId& id);

}  // namespace cdc::transfer
