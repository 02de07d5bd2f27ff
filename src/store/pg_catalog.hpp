// SPDX-License-Identifier: Apache-2.0
// The catalog in a PostgreSQL database (docs/STORE.md, "A PostgreSQL
// catalog"), shared by writers on many hosts: the tables of the SQLite
// catalog (schema: pg_catalog_schema.cpp, the one place that defines it),
// a read view is a REPEATABLE READ READ ONLY transaction, a flush one
// transaction (retried whole after a deadlock or a lost server), pack ids
// from a sequence, the store's lock a pair of advisory locks. Its SQL lives
// in pg_catalog.cpp (settings, lookups, manifests), pg_catalog_write.cpp
// (the flush, remove) and pg_catalog_gc.cpp (gc, verify, stats).
#pragma once

#include "catalog.hpp"
#include "pg_conn.hpp"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cdc::store::detail {

/// The schema of a PostgreSQL catalog (every table, index and sequence).
extern const char* const kPgSchema;
/// The settings row gc bumps when it has the store to itself: a writer's
/// flush reads it FOR SHARE (a gc that starts meanwhile waits for the flush)
/// and fails if it changed since the writer started (its lock across hosts
/// was lost, with the server, and a gc ran meanwhile).
inline constexpr const char* kGcEpochKey = "gc_epoch";
/// The advisory lock keys of the store's lock (pg_advisory_lock(int, int)).
inline constexpr int kPgLockClass = 0x63646373;  // "cdcs"
inline constexpr int kPgLockStore = 1;
/// gc's lock (pg_advisory_lock(kPgLockClass, kPgLockGc)): one gc at a time.
inline constexpr int kPgLockGc = 2;
/// The settings row of a mark waiting for its sweep: "S M P", the last
/// session id, manifest id and pack id there were at the mark.
inline constexpr const char* kGcMarkKey = "gc_mark";
/// The settings row a snapshot's commit bumps (Catalog::snapshot_commits).
inline constexpr const char* kSnapshotCommitsKey = "snapshot_commits";

/// Adds what gc beside writers needs (sessions, the condemned marks) to a
/// catalog made before it.
void ensure_gc_schema(PgConn& conn);

/// A writer's or reader's session (docs/STORE.md, "gc while writers
/// write"): a `sessions` row, the advisory lock on its id (held by a
/// connection of its own: gc sees a session whose process died at once)
/// and a thread that beats its heartbeat. gc waits for the sessions alive
/// at its mark; one it declared dead (no heartbeat) has no row any more,
/// and its writer's next flush fails.
class PgSession {
public:
    PgSession(const std::string& url, std::string_view kind);
    /// On a connection of the caller's (already checked by ensure_gc_schema).
    PgSession(PgConn conn, std::string_view kind);
    ~PgSession();
    /// Ends the session; its connection, for another session (nullopt if
    /// it is down).
    std::optional<PgConn> end();
    PgSession(const PgSession&) = delete;
    PgSession& operator=(const PgSession&) = delete;
    std::int64_t id() const noexcept { return id_; }

private:
    void register_once(std::string_view kind);
    void start(std::string_view kind);
    void beat_loop();
    PgConn conn_;
    bool ended_ = false;
    std::int64_t id_ = 0;
    std::mutex mutex_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::thread thread_;
};

class PgCatalog final : public Catalog {
public:
    /// Creates the schema and `settings` in the database at `url`, in one
    /// transaction; StoreError if it holds a store (or a table of its
    /// names) already.
    static std::unique_ptr<Catalog> create(const std::string& url,
                                           const std::vector<std::pair<std::string, std::string>>& settings);
    /// Opens the catalog at `url`: DamageError if the database holds no store.
    static std::unique_ptr<Catalog> open(const std::string& url);
    ~PgCatalog() override;

    std::string describe() const override { return conn_.url(); }
    std::unique_ptr<Catalog> connect() const override;

    std::unordered_map<std::string, std::string> settings() override;
    /// (Nothing to upgrade yet.) Reads the gc epoch: a writer calls it
    /// once it holds the store's lock, and each of its flushes checks that
    /// no gc ran since (docs/STORE.md, "A PostgreSQL catalog").
    void upgrade_for_writing() override;

    void begin_read() override;
    void end_read() override;
    void cancel_read() noexcept override;
    bool reading() const noexcept override { return reading_; }

    std::optional<Location> find_chunk(const ChunkId& id, std::string_view context) override;
    void find_chunks(std::span<const ChunkId> ids, std::string_view context,
                     const std::function<void(std::size_t, const std::optional<Location>&)>& f) override;
    std::optional<std::uint32_t> chunk_size(const ChunkId& id) override;
    void chunk_sizes(std::span<const ChunkId> ids, const std::function<void(std::size_t, std::uint32_t)>& f) override;
    void find_present(std::span<const ChunkId> ids, IdSet& found) override;
    void for_each_chunk(const std::function<void(const ChunkId&, const Location&)>& f,
                        const std::function<void(const ChunkId&, const std::string&)>& damaged,
                        std::string_view context, const std::set<std::uint64_t>* only_packs) override;

    std::map<std::uint64_t, std::uint64_t> packs() override;
    std::uint64_t max_pack_id() override;
    std::vector<std::uint64_t> packs_below(std::uint64_t below, std::size_t limit) override;
    std::optional<std::uint64_t> pack_length(std::uint64_t pack) override;

    std::vector<ManifestInfo> list(std::string_view prefix) override;
    std::optional<ManifestInfo> find(std::string_view name) override;
    void find_many(std::span<const std::string> names,
                   const std::function<void(std::size_t, std::optional<ManifestInfo>)>& f) override;
    std::optional<StoredFile> stored_file(std::string_view name, std::optional<std::uint64_t> size,
                                          std::string_view context) override;
    std::optional<StoredFile> stored_file(std::int64_t row) override;
    void stored_files_with_lists(
        std::span<const std::string> names, std::uint64_t max_chunks,
        const std::function<void(std::size_t, const std::optional<StoredFile>&, ListReader*)>& f) override;
    std::vector<StoredFile> files_starting_with(const ChunkId& first, std::size_t limit,
                                                std::optional<std::uint64_t> size,
                                                std::optional<std::uint64_t> chunks) override;
    std::vector<std::vector<StoredFile>> files_starting_with_each(std::span<const FirstQuery> queries,
                                                                  std::size_t limit) override;
    bool still_there(const StoredFile& file) override;
    std::unique_ptr<ListReader> read_list(std::int64_t row) override;
    std::unique_ptr<ListReader> read_list_if_there(const StoredFile& file) override;
    void remove(std::span<const std::string> names, std::string_view store_name) override;
    void rename(std::span<const Move> moves, std::string_view store_name) override;
    void for_each_manifest(
        const std::function<void(const std::string&, std::uint64_t, std::uint64_t, ListReader&)>& f) override;
    std::uint64_t pending_manifests() override;

    void commit(FlushBatch& batch) override;

    GcSweep sweep() override;
    std::map<std::uint64_t, std::uint64_t> live_bytes() override;
    void drop_packs(const std::set<std::uint64_t>& packs) override;
    void move_chunks(std::span<const std::pair<std::uint64_t, std::uint64_t>> pack_sizes,
                     std::span<const PendingRow> moved, std::span<const std::uint64_t> dropped) override;
    void compact() override;

    Totals totals() override;
    std::vector<std::string> check(bool full) override;

    std::unique_ptr<HostsLock> hosts_lock() const override;
    std::function<std::uint64_t()> pack_ids() const override;
    void pack_ids_above(std::uint64_t id) override;

    bool gc_marks() const override { return true; }
    std::uint64_t snapshot_commits() override;
    std::optional<std::uint64_t> gc_mark(std::span<const std::string> unreferenced, std::uint64_t listed_at) override;
    bool gc_marked() override;
    bool gc_wait(double seconds, double timeout) override;
    GcSweep gc_sweep(std::span<const std::string> named, bool named_complete, std::span<const std::string> dead_files,
                     std::uint64_t& quiet) override;

    /// Runs `body` in one transaction (BEGIN .. COMMIT), again from the
    /// start after a deadlock, a unique key another writer took meanwhile
    /// or a lost connection (reconnecting for up to kPgRetrySeconds); the
    /// last failure's StoreError after kPgAttempts.
    void transaction(const std::function<void()>& body, std::string_view what);
    PgConn& conn() { return conn_; }

    IdSet claim(std::span<const ChunkId> ids) override;
    bool round_trips() const override { return true; }

private:
    explicit PgCatalog(PgConn conn);
    /// The row checks, made at first use (they read the max chunk size).
    CatalogCheck& row_check();
    /// Runs a statement outside a transaction, reconnecting once after a
    /// lost server (a read outside a view is one statement: safe to repeat).
    PgResult query(const char* sql, const PgParams& params = {}, std::string_view what = {});
    /// The committed manifests of `names` (columns `columns`, the name in
    /// column `name_column`), in one statement; row_of: name -> its row.
    PgResult committed_named(std::span<const std::string> names, const char* columns, int name_column,
                             std::unordered_map<std::string, int>& row_of);
    /// The flush's statements (within transaction()); the rows a flush made
    /// for each manifest go to `rows` (applied to the drafts once committed).
    void write_batch(FlushBatch& batch, std::vector<std::int64_t>& rows, std::vector<bool>& kept);
    /// rename's moves in the open transaction, set-based (no name moved
    /// twice, none both a source and a target).
    void rename_batch(std::span<const Move> moves, std::string_view store_name);
    /// write_batch's manifests: kept ones, pending rows, chunk lists, the
    /// finished ones published (`swept`: their chunks checked first).
    void write_manifests(FlushBatch& batch, bool swept, std::vector<std::int64_t>& rows, std::vector<bool>& kept);
    /// In write_batch, while a gc's mark stands: clears the marks on the
    /// contents `batch.named` names and on the chunks they and the batch's
    /// finished manifests list.
    void clear_marks(const FlushBatch& batch, std::span<const std::int64_t> rows, const std::vector<bool>& kept);

    PgConn conn_;
    /// claim()'s own connection (its statements commit at once, whatever
    /// read view conn_ holds), made at first use.
    std::unique_ptr<PgConn> claims_;
    bool reading_ = false;
    /// The gc epoch when this writer took the store's lock (none: not a writer).
    std::optional<std::string> gc_epoch_;
    /// A writer's session: each flush beats it and fails if gc declared it dead.
    std::unique_ptr<PgSession> session_;
    std::unique_ptr<CatalogCheck> check_;
};

inline constexpr int kPgAttempts = 5;
inline constexpr double kPgRetrySeconds = 30;

}  // namespace cdc::store::detail
