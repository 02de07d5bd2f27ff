// SPDX-License-Identifier: Apache-2.0
// Store::Impl and the helpers that the store's parts share (progress, ids;
// reading and checking records: records.hpp).
#pragma once

#include "catalog.hpp"
#include "format.hpp"
#include "pack_storage.hpp"
#include "pack_writer.hpp"
#include "records.hpp"
#include "../common/task_pool.hpp"
#include "key_ring.hpp"    // (src/crypto)
#include "master_key.hpp"  // (src/crypto)

#include <cdc/digest.hpp>
#include <cdc/store.hpp>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cdc::store::detail {

using common::TaskPool;

/// The chunk id a BLAKE3-256 digest is.
inline ChunkId id_of(const Digest& d) {
    ChunkId id;
    std::memcpy(id.data(), d.bytes.data(), id.size());
    return id;
}

/// Calls a ProgressFn at most every 200 ms, with the seconds since its start.
class ProgressTicker {
public:
    explicit ProgressTicker(const ProgressFn& fn) : fn_(fn), t0_(Clock::now()), last_(t0_) {}
    /// fill(Progress&) sets the figures; called only when a report is due.
    template <class Fill>
    void tick(Fill&& fill) {
        if (!fn_) return;
        const auto now = Clock::now();
        if (now - last_ < std::chrono::milliseconds(200)) return;
        last_ = now;
        Progress p;
        fill(p);
        p.seconds = std::chrono::duration<double>(now - t0_).count();
        fn_(p);
    }

private:
    using Clock = std::chrono::steady_clock;
    const ProgressFn& fn_;
    Clock::time_point t0_, last_;
};

/// The key ring of the encrypted store in `dir` opened with the caller's
/// password (wiped after use); its slots must be store `store_id`'s (empty:
/// whichever store they name). PasswordError when there is no password, it
/// is empty or it opens no slot; DamageError for slots that cannot be read.
crypto::UnlockedKey open_with_password(const std::filesystem::path& dir,
                                       const std::function<std::string()>& password, std::string_view store_id);

}  // namespace cdc::store::detail

namespace cdc::store {

struct UnlockedKey {
    std::string store_id;
    std::shared_ptr<const crypto::MasterKey> master;
};

struct Store::Impl {
    std::filesystem::path dir;
    StoreInfo info;
    std::optional<Key> key;
    std::string key_check;  ///< hex; empty for an unkeyed store
    /// The catalog (SQLite today): the store's own connection, for the
    /// readers of this Store object; a writer connects one of its own.
    std::unique_ptr<detail::Catalog> catalog;
    /// The packs (a directory today); shared by the store's readers and
    /// writers, each of which opens its own packs through it.
    std::unique_ptr<detail::PackStorage> packs;
    mutable detail::StoreLock lock;
    /// read_chunks' decoding threads (raw form), started on first use.
    mutable std::unique_ptr<detail::TaskPool> decode_pool;
    /// An encrypted store's master key, unwrapped at open with the
    /// password; null for a plain store.
    std::shared_ptr<const crypto::MasterKey> master;
    /// Records sealed in the compact form (the cipher's name says so).
    bool compact_records = false;

    Options chunking_options() const;
    /// The key records are sealed with, nullptr in a plain store.
    const crypto::Sealer* sealer() const noexcept { return master ? &master->sealer() : nullptr; }
    /// Store::for_each_chunk's work (in the catalog's current view, or one
    /// of its own).
    void list_chunks(std::string_view name, const std::function<void(const ChunkId&, std::uint32_t)>& f);
    /// A catalog connection of its own (catalog->connect()), an idle one
    /// given back by an earlier lease when there is one: a push looks at
    /// each changed file's stored list in a view of its own, and a login
    /// to a PostgreSQL catalog costs more than a small file's look.
    class Lease;
    Lease lease_connection() const;
    /// A batch made ready to seal as this store does (nothing in a plain one).
    void seal_records(detail::RecordBatch& batch) const noexcept {
        batch.sealer = sealer();
        batch.compact = compact_records;
    }
    /// The id of a chunk: its BLAKE3-256, which in an encrypted store is
    /// then hashed once more with the id key (keyed_id).
    ChunkId chunk_id(std::span<const std::byte> raw) const;
    /// An encrypted store's id of a chunk whose plain BLAKE3-256 is `plain`:
    /// BLAKE3 keyed with the id key over those 32 bytes (docs/STORE.md
    /// "Encryption": why of the digest and not of the bytes). `plain` itself
    /// in a plain store.
    ChunkId keyed_id(const ChunkId& plain) const noexcept;
    /// keyed_id of each digest, in place (the writer's batches).
    void key_digests(std::span<Digest> digests) const noexcept;

    /// Idle connections of lease_connection (at most kIdleConnections).
    static constexpr std::size_t kIdleConnections = 4;
    mutable std::mutex idle_mutex;
    mutable std::vector<std::unique_ptr<detail::Catalog>> idle;
};

/// A connection lent by Store::Impl::lease_connection, given back when the
/// lease ends: the holder must end its views first (a connection in a view
/// or a transaction is never given back) and must not outlive the store.
class Store::Impl::Lease {
public:
    Lease(const Impl& owner, std::unique_ptr<detail::Catalog> c) noexcept : owner_(&owner), c_(std::move(c)) {}
    Lease(Lease&& o) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    detail::Catalog& operator*() const noexcept { return *c_; }
    detail::Catalog* operator->() const noexcept { return c_.get(); }

private:
    const Impl* owner_;
    std::unique_ptr<detail::Catalog> c_;
};

}  // namespace cdc::store
