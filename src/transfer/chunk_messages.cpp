// SPDX-License-Identifier: Apache-2.0
#include "chunk_messages.hpp"

#include "../store/codec.hpp"

#include <fmt/format.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>

namespace cdc::transfer {

void ChunkPacker::add(const store::ChunkId& id, std::uint32_t raw_size, bool raw, std::span<const std::byte> payload) {
    std::size_t offset = 0;
    do {
        if (filled_ >= kDataMessageBytes) flush();
        const std::size_t n = std::min(payload.size() - offset, kDataMessageBytes - filled_);
        auto* c = message_.add_chunks();
        if (with_ids_) c->set_id(id.data(), id.size());
        c->set_raw_size(raw_size);
        c->set_raw(raw);
        c->set_payload_size(static_cast<std::uint32_t>(payload.size()));
        c->set_offset(static_cast<std::uint32_t>(offset));
        c->set_piece(payload.data() + offset, n);
        offset += n;
        filled_ += n + 64;  // + the piece's fields
    } while (offset < payload.size());
    payload_bytes_ += payload.size();
}

void ChunkPacker::flush() {
    if (message_.chunks_size() == 0) return;
    emit_(message_);
    message_.Clear();
    filled_ = 0;
}

bool ChunkAssembler::add(const v1::ChunkData& c, const store::ChunkId& id, std::uint32_t raw_size) {
    if (c.piece().empty()) throw TransferError(Code::invalid_argument, "an empty chunk piece");
    // (no id: the chunk due, where the receiver said ids are optional)
    const store::ChunkId got = c.id().empty() ? id : id_from_bytes(c.id(), "chunk data");
    if (!busy_) {
        if (got != id)
            throw TransferError(Code::invalid_argument,
                                fmt::format("chunk {} arrived where chunk {} was due", short_id(got), short_id(id)));
        if (c.raw_size() != raw_size || raw_size == 0 || raw_size > max_raw_size_)
            throw TransferError(Code::invalid_argument, fmt::format("chunk {}: {} raw bytes announced, {} listed",
                                                                    short_id(id), c.raw_size(), raw_size));
        const std::uint64_t bound = c.raw() ? raw_size : static_cast<std::uint64_t>(ZSTD_compressBound(raw_size));
        if (c.payload_size() == 0 || c.payload_size() > bound || (c.raw() && c.payload_size() != raw_size))
            throw TransferError(Code::invalid_argument,
                                fmt::format("chunk {}: a payload of {} bytes for {} raw bytes{}", short_id(id),
                                            c.payload_size(), raw_size, c.raw() ? " sent raw" : ""));
        if (c.offset() != 0)
            throw TransferError(Code::invalid_argument,
                                fmt::format("chunk {}: its first piece starts at {}", short_id(id), c.offset()));
        if (c.piece().size() == c.payload_size()) {
            // The whole payload in one piece (most chunks): no copy, read in place.
            raw_ = c.raw();
            view_ = std::as_bytes(std::span(c.piece().data(), c.piece().size()));
            return true;
        }
        busy_ = true;
        id_ = id;
        raw_size_ = raw_size;
        raw_ = c.raw();
        payload_.resize(c.payload_size());
        filled_ = 0;
    } else if (got != id_ || c.raw_size() != raw_size_ || c.raw() != raw_ || c.payload_size() != payload_.size() ||
               c.offset() != filled_) {
        throw TransferError(Code::invalid_argument,
                            fmt::format("chunk {}: a piece that does not continue chunk {} at offset {}",
                                        short_id(got), short_id(id_), filled_));
    }
    if (c.piece().size() > payload_.size() - filled_)
        throw TransferError(Code::invalid_argument, fmt::format("chunk {}: pieces longer than its payload of {} bytes",
                                                                short_id(id_), payload_.size()));
    std::memcpy(payload_.data() + filled_, c.piece().data(), c.piece().size());
    filled_ += c.piece().size();
    if (filled_ < payload_.size()) return false;
    busy_ = false;
    view_ = payload_;
    return true;
}

void decode_chunk(store::detail::Decompressor& d, std::span<const std::byte> payload, bool raw,
                  std::uint32_t raw_size, const store::ChunkId& id, std::vector<std::byte>& out,
                  std::string_view what) {
    out.resize(raw_size);
    if (raw) {
        if (payload.size() != raw_size)
            throw TransferError(Code::data_loss, fmt::format("chunk {} of {}: {} raw bytes for {}", store::to_hex(id),
                                                             what, payload.size(), raw_size));
        std::memcpy(out.data(), payload.data(), raw_size);
    } else if (!d.decompress(payload, out)) {
        throw TransferError(Code::data_loss, fmt::format("chunk {} of {}: the zstd frame does not decode to {} bytes",
                                                         store::to_hex(id), what, raw_size));
    }
    if (store::chunk_id_of(out) != id)
        throw TransferError(Code::data_loss,
                            fmt::format("chunk {} of {}: its bytes have another BLAKE3 (damaged or forged)",
                                        store::to_hex(id), what));
}

std::string short_id(const store::ChunkId& id) { return store::to_hex(id).substr(0, 16); }

}  // namespace cdc::transfer
