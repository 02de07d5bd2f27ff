// SPDX-License-Identifier: Apache-2.0
// Appending records to packs for one Writer: the current pack (reused from a
// partly filled one when its flock can be had, else a new file), rollover at
// the pack bound, and the sync that makes the appended bytes durable before
// the index names them (docs/STORE.md, "Durability").
#pragma once

#include "catalog.hpp"
#include "format.hpp"
#include "pack_storage.hpp"

#include <cdc/store.hpp>

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace cdc::crypto {
class Sealer;
}

namespace cdc::store::detail {

/// Records built in memory before one append: header + payload each.
struct RecordBatch {
    /// The store's data key in an encrypted store: add() seals each record
    /// (docs/STORE-V2.md "Records and packs"); nullptr in a plain store.
    const crypto::Sealer* sealer = nullptr;
    /// Seal in the compact form (format.hpp kRecordCompact) where the record
    /// allows it: a store whose cipher names that form.
    bool compact = false;
    std::vector<std::uint8_t> bytes;
    struct Entry {
        ChunkId id;
        std::size_t offset;  ///< in bytes
        std::uint32_t raw_size;
        std::uint32_t stored_size;
    };
    std::vector<Entry> entries;

    /// A record of `payload` (a zstd frame or the raw bytes, as `codec` says).
    void add(const ChunkId& id, Codec codec, std::uint32_t raw_size, std::span<const std::byte> payload);
    /// A record read and checked already, copied as it is (gc's rewrite: a
    /// sealed record stays sealed, never opened); `record` is header + payload.
    void add_copy(const ChunkId& id, std::uint32_t raw_size, std::span<const std::byte> record);
    void clear() {
        bytes.clear();
        entries.clear();
    }
};

/// Retired packs a writer holds before it flushes (each holds a descriptor
/// until its length is committed; with small packs a flush interval fills many).
inline constexpr std::size_t kMaxRetiredPacks = 16;

class PackAppender {
public:
    /// `storage` outlives the appender.
    PackAppender(PackStorage& storage, std::uint64_t pack_limit);
    ~PackAppender();
    PackAppender(const PackAppender&) = delete;
    PackAppender& operator=(const PackAppender&) = delete;

    /// Picks a partly filled pack to continue, if one can be locked (call
    /// once, from the thread that owns `catalog`, before appending).
    void start(Catalog& catalog);
    /// Takes new pack ids from `ids` (Catalog::pack_ids(); empty: counts on
    /// from the last id). start() calls it with its catalog's.
    void use_ids(std::function<std::uint64_t()> ids);
    /// Appends a batch (thread-safe); its rows go to the pending list.
    void append(const RecordBatch& batch);
    /// Makes everything appended durable (fdatasync; the packs directory is
    /// fsynced when a pack was created) and returns the packs' durable
    /// lengths and the rows appended since the last sync. Retired packs
    /// (full) stay open and locked until release_retired().
    std::pair<std::vector<std::pair<std::uint64_t, std::uint64_t>>, std::vector<PendingRow>> sync();
    /// Closes the retired packs synced so far, releasing their flocks: call
    /// once the lengths sync() returned are committed. Before, another
    /// writer could lock such a pack, take its older committed length for
    /// its end and cut off records this one is about to index.
    void release_retired();
    /// Bytes appended since the last sync.
    std::uint64_t unsynced_bytes() const;
    /// Full packs held open (each a descriptor) until release_retired().
    std::size_t retired_count() const;

private:
    struct Open {
        std::unique_ptr<PackSink> sink;
        bool dirty = false;
    };
    void roll();  // mutex held

    PackStorage& storage_;
    std::uint64_t limit_;
    mutable std::mutex mutex_;
    Open current_;
    std::vector<Open> retired_;
    std::size_t synced_retired_ = 0;  // the first ones of retired_, synced by the last sync()
    std::uint64_t next_id_ = 1;
    std::function<std::uint64_t()> ids_;
    std::uint64_t unsynced_ = 0;
    std::vector<PendingRow> rows_;
};

}  // namespace cdc::store::detail
