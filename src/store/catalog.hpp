// SPDX-License-Identifier: Apache-2.0
// The catalog: a store's index and metadata (docs/STORE.md, "Database").
// All of the store's SQL lives behind this interface: the chunk index (chunk
// id -> pack, offset, sizes), the packs' committed lengths, the manifests
// (a file's metadata and chunk list), the settings, the schema and its
// migrations. SQLite in the store's directory is the first implementation
// (sqlite_catalog.hpp); a shared PostgreSQL database is the next, so calls
// come in batches (lookups of many ids, one commit per flush), a read view
// is an explicit scope, and nothing here names an engine's types.
//
// A Catalog is one connection: used by one thread at a time. Each reader or
// writer of a store that needs a connection of its own asks connect().
#pragma once

#include <cdc/store.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace cdc::store::detail {

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
using IdSet = std::unordered_set<ChunkId, IdHash>;

/// A record appended to a pack, to be indexed at the next flush (or a
/// record gc moved, at its new place).
struct PendingRow {
    ChunkId id{};
    std::uint64_t pack = 0;
    std::uint64_t offset = 0;
    std::uint32_t raw_size = 0;
    std::uint32_t stored_size = 0;
};

/// A chunk id read from the catalog (32 bytes), or DamageError naming
/// `context` and the length found.
ChunkId to_id(std::span<const std::uint8_t> bytes, const std::string& context);

/// A committed file as a writer compares with it: its catalog row (a
/// handle, valid while the file stays as it is) and what a new version is
/// checked against.
struct StoredFile {
    std::int64_t row = 0;
    std::string name;
    ChunkId digest{};
    std::uint64_t size = 0;
    std::uint64_t chunks = 0;
    std::uint32_t mode = 0;
    std::int64_t mtime_ns = 0;
};

/// The chunk list of a manifest, in rows of up to kIdsPerSegment ids (32
/// bytes each), read within the catalog's current read view (or, outside
/// one, as its statements see it). Used by the thread of its catalog only,
/// and dropped before that catalog.
class ListReader {
public:
    virtual ~ListReader() = default;
    /// The next row in file order (its sequence number and ids); false at
    /// the end.
    virtual bool next(std::uint32_t& seq, std::vector<std::uint8_t>& ids) = 0;
    /// Row `seq` (any order), or false if there is none.
    virtual bool row(std::uint32_t seq, std::vector<std::uint8_t>& ids) = 0;
};

/// A list of no rows.
class EmptyListReader final : public ListReader {
public:
    bool next(std::uint32_t&, std::vector<std::uint8_t>&) override { return false; }
    bool row(std::uint32_t, std::vector<std::uint8_t>&) override { return false; }
};

/// A manifest a writer fills across flushes (the writer owns them).
struct ManifestDraft {
    FileMeta meta;
    std::int64_t row = 0;  ///< its pending row, once a flush wrote one (set by commit)
    std::uint32_t next_seq = 0;
    std::vector<std::uint8_t> current;  ///< ids of the row being filled
    std::vector<std::pair<std::uint32_t, std::vector<std::uint8_t>>> full;  ///< rows waiting for a flush
    std::uint64_t chunks = 0;
    std::uint64_t size = 0;
    bool finished = false;
    ChunkId digest{};
    ChunkId first{};  ///< its first chunk's id (the first-id index of a list of two or more)
    /// The row of the stored file this one equals (chunks, digest, mode,
    /// mtime): kept as it is at the flush if it is still there unchanged.
    std::int64_t keep_row = 0;
    // Its catalog records in the packs (catalog_records.hpp), written at
    // each flush before the packs are synced: its random uid, the pieces
    // written so far, the stream bytes not yet in a piece, and the ids of
    // the records it names once published (the settings record, then its
    // pieces in order: manifests.records, which gc keeps).
    std::array<std::uint8_t, 16> uid{};
    std::uint32_t pieces = 0;
    std::vector<std::uint8_t> stream;
    std::vector<std::uint8_t> records;
};

/// What one flush makes durable and visible, in one transaction
/// (docs/STORE.md, "Durability"): chunk rows (a chunk another writer
/// indexed first keeps that copy), packs' committed lengths, the rows of
/// every manifest written so far, finished manifests published (replacing
/// older ones of their names), abandoned pending manifests dropped.
struct FlushBatch {
    std::span<const PendingRow> chunks;
    std::span<const std::pair<std::uint64_t, std::uint64_t>> pack_sizes;
    /// Finished ones and the open one: commit sets `row` and empties `full`.
    std::vector<ManifestDraft*> manifests;
    std::span<const std::int64_t> abandoned;
    /// Committed manifests removed in the same transaction (NotFoundError
    /// for a name that is not there: nothing of the batch is committed).
    std::span<const std::string> remove;
    /// Committed manifests that what this batch commits names (a snapshot's
    /// contents): a gc mark on them, or on the chunks they list, is cleared
    /// in the same transaction (catalogs without marks ignore it).
    std::span<const std::string> named;
    std::string algorithm;  ///< the chunking the finished manifests record
    Profile profile;
    /// Set by commit: chunks of `chunks` another writer had indexed first
    /// (committed meanwhile), and their records' bytes (header included):
    /// stored twice because two writers stored them at once, garbage in
    /// this writer's packs until gc rewrites them.
    std::uint64_t raced_chunks = 0;
    std::uint64_t raced_bytes = 0;
};

/// What gc's sweep found and dropped.
struct GcSweep {
    std::uint64_t manifests_dropped = 0;
    std::uint64_t chunks_removed = 0;
    std::uint64_t stored_bytes_removed = 0;  ///< their payloads (headers not counted)
};

/// The checks of a chunk's index row (the catalog, which a damaged or
/// crafted database may fill with anything) before anything is allocated
/// for it or read: a raw size the store's chunks may have (its max chunk
/// size), a stored size within the compressor's bound of it, a record that
/// lies inside its pack's committed length. Every reader of locations goes
/// through it (lookups, verify, gc). Engine-neutral: a catalog gives it the
/// max chunk size and a way to read a pack's committed length.
class CatalogCheck {
public:
    /// `length(pack)`: the committed length, 0 if the pack is not indexed.
    CatalogCheck(std::uint64_t max_raw, std::function<std::uint64_t(std::uint64_t)> length);
    /// The row's values as a Location, or DamageError naming the chunk
    /// (after `context`, e.g. "'name': ") and what is wrong.
    Location location(const ChunkId& id, std::int64_t pack, std::int64_t offset, std::int64_t raw_size,
                      std::int64_t stored_size, std::string_view context);
    std::uint64_t max_raw_size() const noexcept { return max_raw_; }
    /// Forgets the lengths read (a new read view may see longer packs, or
    /// packs gc rewrote).
    void forget_lengths() { lengths_.clear(); }

private:
    /// A pack's committed length (0: no such pack), cached; `fresh` asks again.
    std::uint64_t pack_length(std::uint64_t pack, bool fresh);
    std::uint64_t max_raw_;
    std::function<std::uint64_t(std::uint64_t)> length_;
    std::unordered_map<std::uint64_t, std::uint64_t> lengths_;
};

/// The store's max chunk size as the checks use it: the setting
/// `max_size`, bounded by the library's limit (a crafted setting must not
/// let any size through); the limit if the setting is absent or unreadable.
std::uint64_t checked_max_chunk(const std::unordered_map<std::string, std::string>& settings);

/// A lock on a store across hosts (a shared catalog's): writers and readers
/// hold it shared, gc exclusive, as they hold DIR/lock's flock on one host.
class HostsLock {
public:
    virtual ~HostsLock() = default;
    /// Blocks until held; `waiting` is called once if it has to wait.
    virtual void lock(bool exclusive, const std::function<void()>& waiting) = 0;
    virtual void unlock() noexcept = 0;
    /// Whether gc runs beside writers and readers (its exclusive lock only
    /// keeps other gcs out): then DIR/lock is taken shared by gc too.
    virtual bool gc_beside_writers() const { return false; }
};

class Catalog {
public:
    virtual ~Catalog() = default;
    /// Names the catalog in messages (the database file, the server).
    virtual std::string describe() const = 0;
    /// Another connection to the same catalog (for a reader or writer of
    /// its own, or one that holds a read view while this one writes).
    virtual std::unique_ptr<Catalog> connect() const = 0;

    // ---- settings (written once, by init)
    virtual std::unordered_map<std::string, std::string> settings() = 0;
    /// Brings the schema of a store made by an earlier version up to what a
    /// writer needs (one transaction; a crash leaves it as it was or done).
    virtual void upgrade_for_writing() = 0;

    // ---- read views
    /// Starts a read view: what the calls see until end_read() is one
    /// committed state. Not nested; a commit needs none open.
    virtual void begin_read() = 0;
    virtual void end_read() = 0;
    /// Ends a read view if one is open, ignoring errors (unwinding).
    virtual void cancel_read() noexcept = 0;
    virtual bool reading() const noexcept = 0;

    // ---- the chunk index (rows are checked: CatalogCheck)
    /// Where chunk `id` is; DamageError (after `context`) for a row that
    /// fails the checks.
    virtual std::optional<Location> find_chunk(const ChunkId& id, std::string_view context = {}) = 0;
    /// f(i, where ids[i] is) for each of `ids` in order (nullopt: not
    /// indexed), each row checked as find_chunk's just before its call (a
    /// damaged one throws there). Any number of ids: the default asks
    /// find_chunk for each; a catalog over a network answers each
    /// kFindChunksBatch of them in one round trip (so a caller wanting one
    /// consistent answer for more opens a view).
    static constexpr std::size_t kFindChunksBatch = 4096;
    virtual void find_chunks(std::span<const ChunkId> ids, std::string_view context,
                             const std::function<void(std::size_t, const std::optional<Location>&)>& f);
    /// The raw size of chunk `id`, if indexed (not checked against its pack).
    virtual std::optional<std::uint32_t> chunk_size(const ChunkId& id) = 0;
    /// f(i, raw size) for each of `ids` the index holds (chunk_size's), in
    /// order. Any number of ids: the default asks chunk_size for each; a
    /// catalog over a network answers kFindChunksBatch of them in one round
    /// trip (a caller wanting one consistent answer for more opens a view).
    virtual void chunk_sizes(std::span<const ChunkId> ids, const std::function<void(std::size_t, std::uint32_t)>& f);
    /// Adds to `found` those of `ids` the index holds.
    virtual void find_present(std::span<const ChunkId> ids, IdSet& found) = 0;
    /// Every indexed chunk (only those in `only_packs` if given) in pack
    /// order. A row that fails the checks goes to `damaged` with its reason
    /// (after `context`), not to `f`. With `only_packs`, the rows are those
    /// indexed when the call began: `f` may call move_chunks meanwhile.
    virtual void for_each_chunk(const std::function<void(const ChunkId&, const Location&)>& f,
                                const std::function<void(const ChunkId&, const std::string&)>& damaged,
                                std::string_view context = {},
                                const std::set<std::uint64_t>* only_packs = nullptr) = 0;

    // ---- packs
    virtual std::map<std::uint64_t, std::uint64_t> packs() = 0;  ///< id -> committed length
    virtual std::uint64_t max_pack_id() = 0;
    /// Up to `limit` packs shorter than `below`, the fullest first (a writer
    /// continues one rather than start a new file).
    virtual std::vector<std::uint64_t> packs_below(std::uint64_t below, std::size_t limit) = 0;
    /// A pack's committed length, if it has one.
    virtual std::optional<std::uint64_t> pack_length(std::uint64_t pack) = 0;

    // ---- manifests (committed ones, unless said otherwise)
    /// Manifests whose name starts with `prefix`, by name.
    virtual std::vector<ManifestInfo> list(std::string_view prefix) = 0;
    virtual std::optional<ManifestInfo> find(std::string_view name) = 0;
    /// f(i, find(names[i])) for each of `names` in order. The default asks
    /// find for each; a catalog over a network answers a few thousand names
    /// a round trip.
    virtual void find_many(std::span<const std::string> names,
                           const std::function<void(std::size_t, std::optional<ManifestInfo>)>& f);
    /// The file `name` (if its size is `size`, when given). A damaged
    /// digest is a DamageError naming `context` (default: "the digest of 'NAME'").
    virtual std::optional<StoredFile> stored_file(std::string_view name, std::optional<std::uint64_t> size = {},
                                                  std::string_view context = {}) = 0;
    /// The file of row `row`, if that row is a committed file.
    virtual std::optional<StoredFile> stored_file(std::int64_t row) = 0;
    /// stored_file(names[i]) for each of `names`, with its chunk list:
    /// f(i, file, list), `list` null when the file is absent or lists more
    /// than `max_chunks` chunks (and valid during the call only). The
    /// default asks for each file and list; a catalog over a network answers
    /// the files at once and the small lists at once.
    virtual void stored_files_with_lists(
        std::span<const std::string> names, std::uint64_t max_chunks,
        const std::function<void(std::size_t, const std::optional<StoredFile>&, ListReader*)>& f);
    /// Of the newest `limit` files whose lists start with `first` (and hold
    /// two chunks or more), newest first, those of `size` and `chunks` when
    /// given (the index's order: no sort, a bounded scan however many files
    /// start alike).
    virtual std::vector<StoredFile> files_starting_with(const ChunkId& first, std::size_t limit,
                                                        std::optional<std::uint64_t> size = {},
                                                        std::optional<std::uint64_t> chunks = {}) = 0;
    /// files_starting_with for each (first, size, chunks), in one go where
    /// the catalog can (a PostgreSQL catalog: one round trip for them all).
    struct FirstQuery {
        ChunkId first{};
        std::uint64_t size = 0, chunks = 0;
    };
    virtual std::vector<std::vector<StoredFile>> files_starting_with_each(std::span<const FirstQuery> queries,
                                                                          std::size_t limit) {
        std::vector<std::vector<StoredFile>> out;
        out.reserve(queries.size());
        for (const FirstQuery& q : queries) out.push_back(files_starting_with(q.first, limit, q.size, q.chunks));
        return out;
    }
    /// Whether row `file.row` is still that file (its digest and chunk count).
    virtual bool still_there(const StoredFile& file) = 0;
    /// The chunk list of manifest row `row` (committed or pending).
    virtual std::unique_ptr<ListReader> read_list(std::int64_t row) = 0;
    /// The chunk list of `file` (found before this read view began) if,
    /// in this view, row file.row is still that file (still_there), else
    /// an empty list: over a network one statement instead of two.
    virtual std::unique_ptr<ListReader> read_list_if_there(const StoredFile& file) {
        if (!still_there(file)) return std::make_unique<EmptyListReader>();
        return read_list(file.row);
    }
    /// Removes these manifests in one transaction (NotFoundError naming the
    /// first unknown name and `store_name`, removing none).
    virtual void remove(std::span<const std::string> names, std::string_view store_name) = 0;
    /// Gives committed manifests new names in one transaction, each (from,
    /// to); where a manifest named `to` exists already it is kept and `from`
    /// is removed: for names that say the content (equal names, equal
    /// content). `digest`, when set, is stored as the renamed manifest's
    /// digest (a wrapper that keeps digests bound to names sets it).
    /// NotFoundError naming a missing `from`, renaming none.
    struct Move {
        std::string from, to;
        std::optional<ChunkId> digest;
    };
    virtual void rename(std::span<const Move> moves, std::string_view store_name) = 0;
    /// f(name, size, chunk count, its list) for every committed manifest, by
    /// name (verify: nothing else of the row is read).
    virtual void for_each_manifest(
        const std::function<void(const std::string&, std::uint64_t, std::uint64_t, ListReader&)>& f) = 0;
    /// Pending manifests (of writers that have not finished them).
    virtual std::uint64_t pending_manifests() = 0;

    // ---- writing
    virtual void commit(FlushBatch& batch) = 0;

    // ---- gc (the caller holds the store exclusively)
    /// Drops pending manifests, then every chunk row no manifest lists.
    virtual GcSweep sweep() = 0;
    /// Live record bytes (payload + header) per pack that has any.
    virtual std::map<std::uint64_t, std::uint64_t> live_bytes() = 0;
    /// Drops these packs' rows (packs no chunk row names) in one transaction.
    virtual void drop_packs(const std::set<std::uint64_t>& packs) = 0;
    /// One transaction: packs' new lengths, moved chunks at their new
    /// places, the rewritten packs' rows dropped.
    virtual void move_chunks(std::span<const std::pair<std::uint64_t, std::uint64_t>> pack_sizes,
                             std::span<const PendingRow> moved, std::span<const std::uint64_t> dropped) = 0;
    /// Gives space back after gc.
    virtual void compact() = 0;

    // ---- stats, verify
    struct Totals {
        std::uint64_t files = 0, logical_bytes = 0, references = 0;
        std::uint64_t chunks = 0, chunk_bytes = 0, stored_payload = 0;
        std::uint64_t packs = 0, pack_bytes = 0;
        std::uint64_t size_on_disk = 0;      ///< the catalog's own bytes
        std::uint64_t chunk_table_bytes = 0; ///< 0 if unknown
        /// Of `chunks`: the catalog records committed manifests name (not
        /// file data), their raw bytes.
        std::uint64_t catalog_records = 0, catalog_record_bytes = 0;
    };
    /// One read view.
    virtual Totals totals() = 0;
    /// The engine's own consistency check: a line per problem (none: fine).
    virtual std::vector<std::string> check(bool full) = 0;

    // ---- writers on many hosts (a shared catalog)
    /// The store's lock across hosts, held besides DIR/lock (a connection of
    /// its own); nullptr for a catalog only one host uses.
    virtual std::unique_ptr<HostsLock> hosts_lock() const { return nullptr; }

    // ---- gc beside writers (docs/STORE.md, "gc while writers write"); a
    // catalog whose hosts_lock() says gc_beside_writers() has them.
    /// Whether gc marks what it will drop (then a commit names what it
    /// refers to: FlushBatch::named).
    virtual bool gc_marks() const { return false; }
    /// How many snapshots naming contents have committed (a count their
    /// commits bump, FlushBatch::named): read before gc lists what the
    /// snapshots name.
    virtual std::uint64_t snapshot_commits() { return 0; }
    /// Phase 1, one transaction: records the mark (the sessions, manifests
    /// and pack ids there are), marks `condemned` the manifests named in
    /// `unreferenced` (no snapshot names them) and then every chunk no
    /// other manifest lists. Returns the chunks marked; std::nullopt, with
    /// nothing marked, if `unreferenced` is not empty and a snapshot
    /// committed since snapshot_commits() was `listed_at` (it may name some
    /// of them: list them again).
    virtual std::optional<std::uint64_t> gc_mark(std::span<const std::string> unreferenced, std::uint64_t listed_at) {
        (void)unreferenced;
        (void)listed_at;
        throw StoreError("this catalog has no gc beside writers");
    }
    /// Whether a mark waits for its sweep.
    virtual bool gc_marked() { return false; }
    /// Waits up to `seconds` for every session alive at the mark to end
    /// (a session whose connection is gone, or without a heartbeat for
    /// `timeout` seconds, is declared dead and dropped); true once they have.
    virtual bool gc_wait(double seconds, double timeout) {
        (void)seconds;
        (void)timeout;
        return false;
    }
    /// Phase 2, one transaction (after gc_wait): drops the pending
    /// manifests made before the mark, the condemned manifests (contents)
    /// not in `named` (the contents the snapshots name; none dropped unless
    /// `named_complete`), the condemned chunks nothing lists now; clears the
    /// other marks; `dead_files` (file manifests of backups that never
    /// committed) go if they are from before the mark. Sets `quiet` to the last pack id taken before the mark
    /// (no writer appends to those any more).
    virtual GcSweep gc_sweep(std::span<const std::string> named, bool named_complete,
                             std::span<const std::string> dead_files, std::uint64_t& quiet) {
        (void)named;
        (void)named_complete;
        (void)dead_files;
        (void)quiet;
        throw StoreError("this catalog has no gc beside writers");
    }
    /// Where new pack ids come from when writers on several hosts must never
    /// pick the same one (a database sequence): a function that may be
    /// called from any thread, one call at a time; empty: a writer counts on
    /// from max_pack_id() + 1 and the pack storage's exclusive create
    /// settles a collision.
    virtual std::function<std::uint64_t()> pack_ids() const { return {}; }
    /// Makes pack_ids() hand out ids above `id` from now on (a catalog
    /// rebuilt from packs its sequence did not number; gc beside writers
    /// touches only the packs up to the sequence's value at its mark).
    virtual void pack_ids_above(std::uint64_t id) { (void)id; }
    /// Claims chunks this writer is about to store (none indexed yet): of
    /// `ids`, returns those another live writer claimed first (it stores
    /// them; this writer refers to them once they are indexed), and claims
    /// the others. Claims older than a minute are a dead writer's: taken
    /// over. Default: nothing claimed by others (every writer stores what
    /// the index lacks; racing copies are garbage for gc).
    virtual IdSet claim(std::span<const ChunkId> ids) {
        (void)ids;
        return {};
    }
    /// Whether each call is a round trip to a server (a PostgreSQL
    /// catalog): a writer then waits for more files read ahead to look
    /// them up together.
    virtual bool round_trips() const { return false; }
};

/// begin_read() .. end_read() for a scope (cancelled by the destructor if
/// not ended by end()).
class ReadView {
public:
    /// (Inside a view already open, a Store::ReadSession's, it opens none:
    /// its reads belong to that one.)
    explicit ReadView(Catalog& c) : c_(c), open_(!c.reading()) {
        if (open_) c_.begin_read();
    }
    ~ReadView() {
        if (open_) c_.cancel_read();
    }
    ReadView(const ReadView&) = delete;
    ReadView& operator=(const ReadView&) = delete;
    void end() {
        if (open_) {
            open_ = false;
            c_.end_read();
        }
    }

private:
    Catalog& c_;
    bool open_;
};

/// Calls f(id, location, index in the file) for each chunk of manifest row
/// `row` (of the file `name`, for messages), its first `limit` chunks at
/// most, in file order, each looked up (checked) in `catalog`; returns how
/// many were listed. DamageError naming the file and the chunk for one
/// missing from the index.
std::uint64_t for_each_listed_chunk(Catalog& catalog, std::int64_t row, std::string_view name, std::uint64_t limit,
                                    const std::function<void(const ChunkId&, const Location&, std::uint64_t)>& f);

}  // namespace cdc::store::detail
