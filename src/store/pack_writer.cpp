// SPDX-License-Identifier: Apache-2.0
#include "pack_writer.hpp"

#include "codec.hpp"
#include "seal.hpp"  // (src/crypto)

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::store::detail {

void RecordBatch::add(const ChunkId& id, Codec codec, std::uint32_t raw_size, std::span<const std::byte> payload) {
    const std::size_t at = bytes.size();
    if (sealer != nullptr) {
        // payload = nonce || seal(plain) || tag, with the header's first 48
        // bytes as associated data. The compact form seals the frame or raw
        // bytes themselves under a 16-byte nonce (the raw size is the form's
        // own: a frame that declares none takes the first form); the first
        // form seals [raw size u32 LE][frame or raw] under a 24-byte nonce.
        const bool short_form =
            compact && (codec == Codec::raw ? payload.size() == raw_size : frame_content_size(payload) == raw_size);
        std::span<const std::uint8_t> plain(reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size());
        thread_local std::vector<std::uint8_t> sized;
        if (!short_form) {
            sized.resize(kSealedSizeBytes + payload.size());
            for (std::size_t i = 0; i < kSealedSizeBytes; ++i) sized[i] = static_cast<std::uint8_t>(raw_size >> (8 * i));
            if (!payload.empty()) std::memcpy(sized.data() + kSealedSizeBytes, payload.data(), payload.size());
            plain = sized;
        }
        const std::size_t nonce = short_form ? crypto::kShortNonceBytes : crypto::kNonceBytes;
        const std::size_t stored = plain.size() + nonce + crypto::kTagBytes;
        bytes.resize(at + kRecordHeaderSize + stored);
        std::uint8_t* h = bytes.data() + at;
        encode_sealed_header(id, codec, short_form, static_cast<std::uint32_t>(stored), h);
        sealer->seal(crypto::SealKind::record, std::span(id), std::span<const std::uint8_t>(h, kRecordAuthenticatedBytes),
                     plain, std::span(h + kRecordHeaderSize, stored), nonce);
        set_record_checksum(h, std::as_bytes(std::span<const std::uint8_t>(h + kRecordHeaderSize, stored)));
        entries.push_back({id, at, raw_size, static_cast<std::uint32_t>(stored)});
        return;
    }
    bytes.resize(at + kRecordHeaderSize + payload.size());
    encode_record(id, codec, raw_size, payload, bytes.data() + at);
    if (!payload.empty()) std::memcpy(bytes.data() + at + kRecordHeaderSize, payload.data(), payload.size());
    entries.push_back({id, at, raw_size, static_cast<std::uint32_t>(payload.size())});
}

void RecordBatch::add_copy(const ChunkId& id, std::uint32_t raw_size, std::span<const std::byte> record) {
    const std::size_t at = bytes.size();
    bytes.resize(at + record.size());
    std::memcpy(bytes.data() + at, record.data(), record.size());
    entries.push_back({id, at, raw_size, static_cast<std::uint32_t>(record.size() - kRecordHeaderSize)});
}

PackAppender::PackAppender(PackStorage& storage, std::uint64_t pack_limit) : storage_(storage), limit_(pack_limit) {}

PackAppender::~PackAppender() = default;

void PackAppender::use_ids(std::function<std::uint64_t()> ids) { ids_ = std::move(ids); }

void PackAppender::start(Catalog& catalog) {
    next_id_ = catalog.max_pack_id() + 1;
    use_ids(catalog.pack_ids());
    // Continue a partly filled pack that no other writer holds: a store
    // written by many small puts does not become many small packs.
    for (const std::uint64_t id : catalog.packs_below(limit_ - limit_ / 8, 8)) {
        // Its committed length, read once the pack is ours.
        auto sink = storage_.reopen(id, [&] { return catalog.pack_length(id); });
        if (!sink) continue;
        current_.sink = std::move(sink);
        current_.dirty = false;
        return;
    }
}

void PackAppender::roll() {
    if (current_.sink) retired_.push_back(std::move(current_));
    current_ = Open{};
    for (;;) {
        auto sink = storage_.create(ids_ ? ids_() : next_id_++);
        if (!sink) continue;  // another writer's, or an orphan gc will reclaim
        current_.sink = std::move(sink);
        current_.dirty = true;
        return;
    }
}

void PackAppender::append(const RecordBatch& batch) {
    if (batch.entries.empty()) return;
    std::lock_guard lock(mutex_);
    const std::uint64_t n = batch.bytes.size();
    if (!current_.sink || (current_.sink->size() + n > limit_ && current_.sink->size() > kPackHeaderSize)) roll();
    const std::uint64_t base = current_.sink->size();
    const std::uint64_t id = current_.sink->id();
    try {
        current_.sink->append(batch.bytes);
    } catch (...) {
        // What was written of it lies beyond the committed length (cut off
        // later): the pack takes no more.
        current_.dirty = true;
        retired_.push_back(std::move(current_));
        current_ = Open{};
        throw;
    }
    current_.dirty = true;
    unsynced_ += n;
    for (const auto& e : batch.entries) rows_.push_back({e.id, id, base + e.offset, e.raw_size, e.stored_size});
}

std::pair<std::vector<std::pair<std::uint64_t, std::uint64_t>>, std::vector<PendingRow>> PackAppender::sync() {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> sizes;
    // A pack whose append failed is listed at its size before the failure:
    // sink->size() counts only whole appends.
    auto sync_one = [&](Open& p) {
        if (!p.sink || !p.dirty) return;
        p.sink->sync();
        p.dirty = false;
        sizes.emplace_back(p.sink->id(), p.sink->size());
    };
    for (auto& p : retired_) sync_one(p);
    sync_one(current_);
    // A pack that became an object takes no more: it is released with the
    // retired ones once its length is committed; the next append starts another.
    if (current_.sink && current_.sink->sealed()) {
        retired_.push_back(std::move(current_));
        current_ = Open{};
    }
    storage_.sync_names();
    synced_retired_ = retired_.size();
    unsynced_ = 0;
    return {std::move(sizes), std::exchange(rows_, {})};
}

void PackAppender::release_retired() {
    std::lock_guard lock(mutex_);
    retired_.erase(retired_.begin(), retired_.begin() + static_cast<std::ptrdiff_t>(synced_retired_));
    synced_retired_ = 0;
}

std::uint64_t PackAppender::unsynced_bytes() const {
    std::lock_guard lock(mutex_);
    return unsynced_;
}

std::size_t PackAppender::retired_count() const {
    std::lock_guard lock(mutex_);
    return retired_.size();
}

}  // namespace cdc::store::detail
