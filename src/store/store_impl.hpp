// Store::Impl and the helpers that the store's parts share (index lookups,
// reading and checking records).
#pragma once

#include "format.hpp"
#include "pack_storage.hpp"
#include "sqlite.hpp"
#include "../common/task_pool.hpp"

#include <cdc/store.hpp>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace cdc::store::detail {

using common::TaskPool;

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

/// Where a chunk's record is.
struct Location {
    std::uint64_t pack = 0;
    std::uint64_t offset = 0;
    std::uint32_t raw_size = 0;
    std::uint32_t stored_size = 0;
};

/// Hash of a chunk id for unordered containers (ids are uniform already).
struct IdHash {
    std::size_t operator()(const ChunkId& id) const noexcept {
        std::size_t h;
        std::memcpy(&h, id.data(), sizeof h);
        return h;
    }
};

ChunkId to_id(std::span<const std::uint8_t> blob, const std::string& context);

/// The checks of a chunk's index row (the catalog, which a damaged or
/// crafted index.db may fill with anything) before anything is allocated
/// for it or read: a raw size the store's chunks may have (its max chunk
/// size), a stored size within the compressor's bound of it, a record that
/// lies inside its pack's committed length. Every reader of locations goes
/// through it (lookups, verify, gc).
class CatalogCheck {
public:
    /// Reads the store's max chunk size from `db`.
    explicit CatalogCheck(Db& db);
    /// The row's columns as a Location, or DamageError naming the chunk
    /// (after `context`, e.g. "'name': ") and what is wrong.
    Location location(const ChunkId& id, std::int64_t pack, std::int64_t offset, std::int64_t raw_size,
                      std::int64_t stored_size, std::string_view context);
    std::uint64_t max_raw_size() const noexcept { return max_raw_; }

private:
    /// A pack's committed length (0: no such pack), cached; `fresh` asks again.
    std::uint64_t pack_length(std::uint64_t pack, bool fresh);
    Stmt lengths_stmt_;
    std::uint64_t max_raw_;
    std::unordered_map<std::uint64_t, std::uint64_t> lengths_;
};

/// "SELECT pack, offset, raw_size, stored_size FROM chunks WHERE id = ?",
/// the row checked (CatalogCheck).
class ChunkLookup {
public:
    explicit ChunkLookup(Db& db);
    /// DamageError for a row that fails the checks (`context` before the chunk).
    std::optional<Location> find(const ChunkId& id, std::string_view context = {});

private:
    Stmt stmt_;
    CatalogCheck check_;
};

/// Calls f(id, location, index in the file) for each chunk of the committed
/// manifest `name`, in file order, inside the caller's read transaction.
/// NotFoundError for an unknown name; DamageError naming the file and the
/// chunk for one missing from the index.
void for_each_listed_chunk(Db& db, const std::filesystem::path& dir, std::string_view name,
                           const std::function<void(const ChunkId&, const Location&, std::uint64_t)>& f);
/// The same for the manifest row `manifest` (of the file `name`, for
/// messages), its first `limit` chunks at most; returns how many were listed.
std::uint64_t for_each_listed_chunk(Db& db, std::int64_t manifest, std::string_view name, std::uint64_t limit,
                                    const std::function<void(const ChunkId&, const Location&, std::uint64_t)>& f);

/// Gives a store made before manifests.first_id the column, filled in for
/// its committed lists, and the index kFirstIdIndexSql, and drops the
/// earlier first-chunk indexes of manifest_chunks; nothing if it has them.
/// One write transaction: a crash leaves the store as it was or done.
/// Called by a writer (put, push), which is what looks files up by it.
void add_first_ids(Db& db);

/// Pack files one reader keeps open at once by default: an eighth of the
/// soft RLIMIT_NOFILE, at most 512 (a file can span thousands of packs, a
/// server runs several readers). Beyond, a reader finishes what is in flight
/// and closes them.
std::size_t default_max_open_packs();

/// The packs one operation reads, opened on demand, at most `max_open` at
/// once: a reader whose reads are still in flight asks needs_room() first
/// and, if so, waits for them and calls close_all(); one that reads each
/// pack at once uses read().
class PackFiles {
public:
    explicit PackFiles(const PackStorage& storage, std::size_t max_open = default_max_open_packs())
        : storage_(storage), max_open_(std::max<std::size_t>(max_open, 1)) {}
    /// DamageError if the pack is missing, StoreError if it cannot be
    /// opened otherwise (EMFILE: needs_room() was not asked).
    const PackReader& reader(std::uint64_t pack);
    /// Whether opening `pack` would pass the bound.
    bool needs_room(std::uint64_t pack) const { return open_.size() >= max_open_ && !open_.contains(pack); }
    /// reader() for a caller done with every pack it got before: at the
    /// bound, closes them first.
    const PackReader& read(std::uint64_t pack) {
        if (needs_room(pack)) close_all();
        return reader(pack);
    }
    void close_all() { open_.clear(); }
    std::size_t open_count() const noexcept { return open_.size(); }

private:
    const PackStorage& storage_;
    std::size_t max_open_;
    std::unordered_map<std::uint64_t, std::unique_ptr<PackReader>> open_;
};
/// Reads the record of `id` at `loc` into buf (header + payload) and checks
/// it: header, id, sizes, checksum. Throws DamageError("<context>chunk <id>
/// (pack P, offset O): <reason>"). Returns the codec.
Codec read_record(const PackReader& pack, const Location& loc, const ChunkId& id, std::vector<std::byte>& buf,
                  std::string_view context);
/// The checks of read_record on a record read already (its bytes from
/// loc.offset; fewer than the record: truncated).
Codec check_record(std::span<const std::byte> record, const Location& loc, const ChunkId& id,
                   std::string_view context);
/// check_record, then the raw bytes into `out` (out.size() == loc.raw_size).
void decode_record_into(std::span<const std::byte> record, const Location& loc, const ChunkId& id,
                        std::span<std::byte> out, std::string_view context);
/// read_record, then the raw bytes into `out` (out.size() == loc.raw_size).
void read_chunk_into(const PackReader& pack, const Location& loc, const ChunkId& id, std::vector<std::byte>& buf,
                     std::span<std::byte> out, std::string_view context);
/// The DamageError text for a chunk.
std::string chunk_problem(std::string_view context, const ChunkId& id, const Location& loc, std::string_view reason);

}  // namespace cdc::store::detail

namespace cdc::store {

struct Store::Impl {
    std::filesystem::path dir;
    StoreInfo info;
    std::optional<Key> key;
    std::string key_check;  ///< hex; empty for an unkeyed store
    mutable detail::Db db;
    /// The packs (a directory today); shared by the store's readers and
    /// writers, each of which opens its own packs through it.
    std::unique_ptr<detail::PackStorage> packs;
    mutable detail::StoreLock lock;
    /// read_chunks' decoding threads (raw form), started on first use.
    mutable std::unique_ptr<detail::TaskPool> decode_pool;

    Options chunking_options() const;
    std::string db_path() const { return (dir / detail::kDbName).string(); }
};

}  // namespace cdc::store
