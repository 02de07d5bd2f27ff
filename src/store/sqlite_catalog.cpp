// SPDX-License-Identifier: Apache-2.0
// SqliteCatalog: the schema and settings, chunk lookups, manifests and the
// flush's transaction (gc, verify and stats: sqlite_catalog_gc.cpp).
#include "sqlite_catalog.hpp"

#include "format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace cdc::store::detail {

namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE packs(id INTEGER PRIMARY KEY, size INTEGER NOT NULL);
CREATE TABLE chunks(id BLOB PRIMARY KEY, pack INTEGER NOT NULL, offset INTEGER NOT NULL,
                    raw_size INTEGER NOT NULL, stored_size INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE manifests(id INTEGER PRIMARY KEY, name TEXT UNIQUE, pending_name TEXT, size INTEGER, mode INTEGER,
                       mtime_ns INTEGER, digest BLOB, algorithm TEXT, min_size INTEGER, normal_size INTEGER,
                       max_size INTEGER, keyed INTEGER, chunk_count INTEGER, committed_ns INTEGER,
                       first_id BLOB, records BLOB);
CREATE TABLE manifest_chunks(manifest INTEGER NOT NULL, seq INTEGER NOT NULL, ids BLOB NOT NULL,
                             PRIMARY KEY(manifest, seq)) WITHOUT ROWID;
)sql";

/// Stored files by the first id of their chunk lists (manifests.first_id,
/// set for lists of two chunks or more): a file put under a new name finds
/// a stored file it may equal (a large one: base_list.hpp; a small one: the
/// same first id, size, chunk count and digest), the newest first, in the
/// index's order. An index of the manifests (small rows) rather than of
/// manifest_chunks: that table is WITHOUT ROWID with rows of up to 128 KiB,
/// and SQLite reads a candidate's row there (its overflow pages, and those
/// of the interior cells passed on the way) however little of it the query
/// needs, so the cost of a lookup would grow with the versions stored.
/// One-chunk files (most of a tree of small ones) are left out: indexing
/// every manifest costs such a put more CPU than the lookups save. Part of
/// the schema of new stores; a writer adds the column and the index to an
/// older store (upgrade_for_writing), dropping the earlier indexes of
/// manifest_chunks.
constexpr const char* kFirstIdIndexSql =
    "CREATE INDEX IF NOT EXISTS manifests_first_id ON manifests(first_id) WHERE first_id IS NOT NULL";
/// The first id of a list, in SQL (the first_id of a manifest with id `m`,
/// NULL for a list of fewer than two chunks).
constexpr const char* kFirstIdOfSql =
    "(SELECT substr(ids, 1, 32) FROM manifest_chunks c WHERE c.manifest = manifests.id AND c.seq = 0 AND "
    "length(c.ids) >= 64)";

// Chunk ids per lookup statement (find_present): one statement for many
// ids saves SQLite's per-statement bind/step/reset, which cost more than the
// B-tree seek itself when each chunk had a statement of its own.
constexpr int kLookupBatch = 64;
constexpr std::size_t kFewIds = 8;  // fewer left than this: looked up one by one

std::string lookup_sql() {
    std::string sql = "SELECT id FROM chunks WHERE id IN (?1";
    for (int i = 2; i <= kLookupBatch; ++i) sql += fmt::format(",?{}", i);
    return sql + ")";
}

constexpr const char* kManifestColumns =
    "name, size, mode, mtime_ns, digest, algorithm, min_size, normal_size, max_size, keyed, chunk_count, committed_ns";

ManifestInfo read_manifest_row(const Stmt& q, const std::string& context) {
    // Columns: kManifestColumns
    ManifestInfo m;
    m.name = q.text(0);
    m.size = static_cast<std::uint64_t>(q.i64(1));
    m.mode = static_cast<std::uint32_t>(q.i64(2));
    m.mtime_ns = q.i64(3);
    m.digest = to_id(q.blob(4), context);
    m.algorithm = q.text(5);
    m.profile.min_size = static_cast<std::size_t>(q.i64(6));
    m.profile.normal_size = static_cast<std::size_t>(q.i64(7));
    m.profile.max_size = static_cast<std::size_t>(q.i64(8));
    m.profile.keyed = q.i64(9) != 0;
    m.chunks = static_cast<std::uint64_t>(q.i64(10));
    m.committed_ns = q.i64(11);
    return m;
}

// Columns of a StoredFile, in read_stored's order.
constexpr const char* kStoredColumns = "id, name, digest, size, chunk_count, mode, mtime_ns";

StoredFile read_stored(const Stmt& q, std::string_view context) {
    StoredFile f;
    f.row = q.i64(0);
    f.name = q.text(1);
    f.digest = to_id(q.blob(2), context.empty() ? fmt::format("the digest of '{}'", f.name) : std::string(context));
    f.size = static_cast<std::uint64_t>(q.i64(3));
    f.chunks = static_cast<std::uint64_t>(q.i64(4));
    f.mode = static_cast<std::uint32_t>(q.i64(5));
    f.mtime_ns = q.i64(6);
    return f;
}

/// Prepares `s` at first use.
Stmt& prepared(Stmt& s, Db& db, const char* sql) {
    if (!s.prepared()) s = Stmt(db, sql);
    return s;
}

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

// ---------------------------------------------------------------- lists

/// A manifest's rows of ids, on the catalog's connection. Its statement is
/// the catalog's own when that is free (a list is read per file a writer
/// compares: no statement prepared each time), else one of its own.
class SqliteListReader final : public ListReader {
public:
    SqliteListReader(Db& db, std::int64_t manifest, Stmt* shared = nullptr, bool* shared_used = nullptr)
        : db_(db), manifest_(manifest), shared_used_(shared_used) {
        if (shared && shared_used && !*shared_used) {
            *shared_used = true;
            rows_ = shared;
        } else {
            shared_used_ = nullptr;
            rows_ = &own_;
        }
    }
    ~SqliteListReader() override {
        if (rows_->prepared()) rows_->reset();
        if (shared_used_) *shared_used_ = false;
    }
    SqliteListReader(const SqliteListReader&) = delete;
    SqliteListReader& operator=(const SqliteListReader&) = delete;

    bool next(std::uint32_t& seq, std::vector<std::uint8_t>& ids) override {
        if (done_) return false;
        Stmt& s = prepared(*rows_, db_, "SELECT seq, ids FROM manifest_chunks WHERE manifest = ?1 ORDER BY seq");
        if (!bound_) {
            s.bind(1, manifest_);
            bound_ = true;
        }
        if (!s.step()) {
            done_ = true;
            s.reset();
            return false;
        }
        seq = static_cast<std::uint32_t>(s.i64(0));
        const auto blob = s.blob(1);
        ids.assign(blob.begin(), blob.end());
        return true;
    }
    bool row(std::uint32_t seq, std::vector<std::uint8_t>& ids) override {
        Stmt& s = prepared(one_, db_, "SELECT ids FROM manifest_chunks WHERE manifest = ?1 AND seq = ?2");
        s.bind(1, manifest_).bind(2, std::int64_t{seq});
        const bool found = s.step();
        if (found) {
            const auto blob = s.blob(0);
            ids.assign(blob.begin(), blob.end());
        }
        s.reset();
        return found;
    }
    /// Reads manifest `manifest` from its first row on.
    void rebind(std::int64_t manifest) {
        if (rows_->prepared()) rows_->reset();
        manifest_ = manifest;
        bound_ = false;
        done_ = false;
    }

private:
    Db& db_;
    std::int64_t manifest_;
    bool* shared_used_;
    Stmt* rows_ = nullptr;
    Stmt own_;
    Stmt one_;
    bool bound_ = false;
    bool done_ = false;
};

// ---------------------------------------------------------------- open, settings

SqliteCatalog::SqliteCatalog(Db db) : db_(std::move(db)) {}
SqliteCatalog::~SqliteCatalog() = default;

std::unique_ptr<Catalog> SqliteCatalog::create(const std::filesystem::path& dir,
                                               const std::vector<std::pair<std::string, std::string>>& settings) {
    // Made here with the store's mode (SQLite's own would be 0644 less the
    // umask; its -wal and -shm files take the database's).
    const auto path = dir / kDbName;
    Fd made(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, store_file_mode(dir)));
    if (!made) throw StoreError(fmt::format("cannot create '{}': {}", path.string(), std::strerror(errno)));
    Db db(path.string(), true);
    db.exec(kSchema);
    db.exec(kFirstIdIndexSql);
    Transaction t(db, true);
    Stmt put(db, "INSERT INTO meta(key, value) VALUES(?1, ?2)");
    for (const auto& [k, v] : settings) {
        put.bind(1, k).bind(2, v);
        put.run();
    }
    t.commit();
    return std::unique_ptr<SqliteCatalog>(new SqliteCatalog(std::move(db)));
}

std::unique_ptr<Catalog> SqliteCatalog::open(const std::filesystem::path& dir) {
    if (!std::filesystem::exists(std::filesystem::symlink_status(dir / kDbName)))
        throw DamageError(fmt::format("the store '{}' has no database ({} is missing)", dir.string(), kDbName));
    return std::unique_ptr<SqliteCatalog>(new SqliteCatalog(Db((dir / kDbName).string(), false)));
}

std::unique_ptr<Catalog> SqliteCatalog::connect() const {
    return std::unique_ptr<SqliteCatalog>(new SqliteCatalog(Db(db_.path(), false)));
}

std::unordered_map<std::string, std::string> SqliteCatalog::settings() {
    std::unordered_map<std::string, std::string> meta;
    Stmt q(db_, "SELECT key, value FROM meta");
    while (q.step()) meta[q.text(0)] = q.text(1);
    return meta;
}

void SqliteCatalog::upgrade_for_writing() {
    auto has = [&](const char* column) {
        Stmt q(db_, "SELECT 1 FROM pragma_table_info('manifests') WHERE name = ?1");
        q.bind(1, std::string_view(column));
        return q.step();
    };
    // manifests.records (the ids of a manifest's catalog records in the
    // packs: catalog_records.hpp), NULL in the rows of older writers.
    if (!has("records")) {
        Transaction t(db_, true);
        if (!has("records")) {
            db_.exec("ALTER TABLE manifests ADD COLUMN records BLOB", "adding records to the store's manifests");
            t.commit();
        }
    }
    auto has_column = [&] { return has("first_id"); };
    // The earlier indexes, which an older writer adds back; a no-op without them.
    constexpr const char* kDropEarlier =
        "DROP INDEX IF EXISTS manifest_first_ids; DROP INDEX IF EXISTS manifest_first_chunk";
    if (has_column()) {
        db_.exec(kFirstIdIndexSql, "adding the first-id index to the store");
        db_.exec(kDropEarlier, "dropping the earlier first-chunk indexes");
        return;
    }
    Transaction t(db_, true);
    if (has_column()) return;  // another writer did it meanwhile
    db_.exec("ALTER TABLE manifests ADD COLUMN first_id BLOB", "adding first_id to the store's manifests");
    db_.exec(
        fmt::format("UPDATE manifests SET first_id = {} WHERE name IS NOT NULL AND chunk_count >= 2", kFirstIdOfSql)
            .c_str(),
        "filling in the manifests' first ids");
    db_.exec(kFirstIdIndexSql, "adding the first-id index to the store");
    db_.exec(kDropEarlier, "dropping the earlier first-chunk indexes");
    t.commit();
}

// ---------------------------------------------------------------- read views

void SqliteCatalog::begin_read() {
    if (view_) throw StoreError(fmt::format("the store's database '{}': a read view is open already", db_.path()));
    view_ = std::make_unique<Transaction>(db_, false);
    if (check_) check_->forget_lengths();
}

void SqliteCatalog::end_read() {
    if (!view_) return;
    const std::unique_ptr<Transaction> t = std::move(view_);
    t->commit();
}

void SqliteCatalog::cancel_read() noexcept { view_.reset(); }  // (a read transaction: rolled back)

// ---------------------------------------------------------------- chunks

CatalogCheck& SqliteCatalog::row_check() {
    if (!check_) {
        check_ = std::make_unique<CatalogCheck>(checked_max_chunk(settings()), [this](std::uint64_t pack) {
            Stmt& s = prepared(length_stmt_, db_, "SELECT size FROM packs WHERE id = ?1");
            s.bind(1, static_cast<std::int64_t>(pack));
            const std::int64_t n = s.step() ? s.i64(0) : 0;
            s.reset();
            return n > 0 ? static_cast<std::uint64_t>(n) : std::uint64_t{0};
        });
    }
    // Outside a view, each call sees the packs as they are now.
    if (!view_) check_->forget_lengths();
    return *check_;
}

std::optional<Location> SqliteCatalog::find_chunk(const ChunkId& id, std::string_view context) {
    CatalogCheck& check = row_check();
    Stmt& s = prepared(find_stmt_, db_, "SELECT pack, offset, raw_size, stored_size FROM chunks WHERE id = ?1");
    s.bind(1, std::span<const std::uint8_t>(id));
    std::optional<Location> r;
    try {
        if (s.step()) r = check.location(id, s.i64(0), s.i64(1), s.i64(2), s.i64(3), context);
    } catch (...) {
        s.reset();
        throw;
    }
    s.reset();
    return r;
}

std::optional<std::uint32_t> SqliteCatalog::chunk_size(const ChunkId& id) {
    Stmt& s = prepared(size_stmt_, db_, "SELECT raw_size FROM chunks WHERE id = ?1");
    s.bind(1, std::span<const std::uint8_t>(id));
    std::optional<std::uint32_t> r;
    if (s.step()) r = static_cast<std::uint32_t>(s.i64(0));
    s.reset();
    return r;
}

void SqliteCatalog::find_present(std::span<const ChunkId> ids, IdSet& found) {
    // Batches of kLookupBatch; a rest of fewer than kFewIds (a small file's
    // ids) one statement each: binding a padded batch for them costs more
    // than the lookups.
    const std::size_t rest = ids.size() % kLookupBatch;
    const std::size_t batched = rest < kFewIds ? ids.size() - rest : ids.size();
    if (batched < ids.size()) {
        Stmt& one = prepared(size_stmt_, db_, "SELECT raw_size FROM chunks WHERE id = ?1");
        for (std::size_t i = batched; i < ids.size(); ++i) {
            one.bind(1, std::span<const std::uint8_t>(ids[i]));
            if (one.step()) found.insert(ids[i]);
            one.reset();
        }
    }
    if (batched == 0) return;
    if (!batch_stmt_.prepared()) batch_stmt_ = Stmt(db_, lookup_sql().c_str());
    Stmt& many = batch_stmt_;
    for (std::size_t i = 0; i < batched; i += kLookupBatch) {
        const std::size_t n = std::min<std::size_t>(kLookupBatch, batched - i);
        for (std::size_t k = 0; k < std::size_t{kLookupBatch}; ++k)  // a short batch repeats its last id
            many.bind(static_cast<int>(k) + 1, std::span<const std::uint8_t>(ids[i + std::min(k, n - 1)]));
        while (many.step()) found.insert(to_id(many.blob(0), "a chunk row"));
        many.reset();
    }
}

// ---------------------------------------------------------------- packs

std::map<std::uint64_t, std::uint64_t> SqliteCatalog::packs() {
    std::map<std::uint64_t, std::uint64_t> out;
    Stmt q(db_, "SELECT id, size FROM packs");
    while (q.step()) out.emplace(q.i64(0), q.i64(1));
    return out;
}

std::uint64_t SqliteCatalog::max_pack_id() {
    Stmt q(db_, "SELECT coalesce(max(id), 0) FROM packs");
    return q.step() ? static_cast<std::uint64_t>(q.i64(0)) : 0;
}

std::vector<std::uint64_t> SqliteCatalog::packs_below(std::uint64_t below, std::size_t limit) {
    std::vector<std::uint64_t> out;
    Stmt q(db_, "SELECT id FROM packs WHERE size < ?1 ORDER BY size DESC LIMIT ?2");
    q.bind(1, static_cast<std::int64_t>(below)).bind(2, static_cast<std::int64_t>(limit));
    while (q.step()) out.push_back(static_cast<std::uint64_t>(q.i64(0)));
    return out;
}

std::optional<std::uint64_t> SqliteCatalog::pack_length(std::uint64_t pack) {
    Stmt q(db_, "SELECT size FROM packs WHERE id = ?1");
    q.bind(1, static_cast<std::int64_t>(pack));
    if (!q.step()) return std::nullopt;
    return static_cast<std::uint64_t>(q.i64(0));
}

// ---------------------------------------------------------------- manifests

std::vector<ManifestInfo> SqliteCatalog::list(std::string_view prefix) {
    // A range of the name index, compared bytewise (BINARY): length() and
    // substr() of SQLite stop at a NUL byte, which the snapshots' own names
    // start with (snapshot_names.hpp). The end is the prefix with its last
    // byte below 0xff incremented (none: no upper bound).
    std::string end(prefix);
    while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
    if (!end.empty()) end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
    Stmt q(db_, fmt::format("SELECT {} FROM manifests WHERE name IS NOT NULL AND name >= ?1{} ORDER BY name",
                            kManifestColumns, end.empty() ? "" : " AND name < ?2")
                    .c_str());
    q.bind(1, prefix);
    if (!end.empty()) q.bind(2, std::string_view(end));
    std::vector<ManifestInfo> out;
    while (q.step()) out.push_back(read_manifest_row(q, db_.path()));
    return out;
}

std::optional<ManifestInfo> SqliteCatalog::find(std::string_view name) {
    Stmt q(db_, fmt::format("SELECT {} FROM manifests WHERE name = ?1", kManifestColumns).c_str());
    q.bind(1, name);
    if (!q.step()) return std::nullopt;
    return read_manifest_row(q, db_.path());
}

std::optional<StoredFile> SqliteCatalog::stored_file(std::string_view name, std::optional<std::uint64_t> size,
                                                     std::string_view context) {
    Stmt& q = prepared(by_name_stmt_, db_,
                       fmt::format("SELECT {} FROM manifests WHERE name = ?1", kStoredColumns).c_str());
    q.bind(1, name);
    std::optional<StoredFile> r;
    try {
        if (q.step() && (!size || static_cast<std::uint64_t>(q.i64(3)) == *size)) r = read_stored(q, context);
    } catch (...) {
        q.reset();
        throw;
    }
    q.reset();
    return r;
}

std::optional<StoredFile> SqliteCatalog::stored_file(std::int64_t row) {
    Stmt q(db_, fmt::format("SELECT {} FROM manifests WHERE id = ?1 AND name IS NOT NULL", kStoredColumns).c_str());
    q.bind(1, row);
    if (!q.step()) return std::nullopt;
    return read_stored(q, {});
}

std::vector<StoredFile> SqliteCatalog::files_starting_with(const ChunkId& first, std::size_t limit,
                                                           std::optional<std::uint64_t> size,
                                                           std::optional<std::uint64_t> chunks) {
    Stmt& q = prepared(similar_stmt_, db_,
                       fmt::format("SELECT {} FROM manifests WHERE first_id = ?1 AND name IS NOT NULL ORDER BY id "
                                   "DESC LIMIT ?2",
                                   kStoredColumns)
                           .c_str());
    q.bind(1, std::span<const std::uint8_t>(first)).bind(2, static_cast<std::int64_t>(limit));
    std::vector<StoredFile> out;
    try {
        while (q.step()) {
            if (size && static_cast<std::uint64_t>(q.i64(3)) != *size) continue;
            if (chunks && static_cast<std::uint64_t>(q.i64(4)) != *chunks) continue;
            out.push_back(read_stored(q, {}));
        }
    } catch (...) {
        q.reset();
        throw;
    }
    q.reset();
    return out;
}

bool SqliteCatalog::still_there(const StoredFile& file) {
    Stmt& q = prepared(same_stmt_, db_, "SELECT 1 FROM manifests WHERE id = ?1 AND digest = ?2 AND chunk_count = ?3");
    q.bind(1, file.row)
        .bind(2, std::span<const std::uint8_t>(file.digest))
        .bind(3, static_cast<std::int64_t>(file.chunks));
    const bool there = q.step();
    q.reset();
    return there;
}

std::unique_ptr<ListReader> SqliteCatalog::read_list(std::int64_t row) {
    return std::make_unique<SqliteListReader>(db_, row, &list_stmt_, &list_stmt_used_);
}

void SqliteCatalog::remove(std::span<const std::string> names, std::string_view store_name) {
    Transaction t(db_, true);
    Stmt find_id(db_, "SELECT id FROM manifests WHERE name = ?1");
    Stmt drop_chunks(db_, "DELETE FROM manifest_chunks WHERE manifest = ?1");
    Stmt drop(db_, "DELETE FROM manifests WHERE id = ?1");
    for (const auto& name : names) {
        find_id.bind(1, name);
        if (!find_id.step())
            throw NotFoundError(
                fmt::format("no file named '{}' in the store '{}' (nothing removed)", name, store_name));
        const std::int64_t id = find_id.i64(0);
        find_id.reset();
        drop_chunks.bind(1, id);
        drop_chunks.run();
        drop.bind(1, id);
        drop.run();
    }
    t.commit();
}

void SqliteCatalog::rename(std::span<const Move> moves, std::string_view store_name) {
    Transaction t(db_, true);
    Stmt find_id(db_, "SELECT id FROM manifests WHERE name = ?1");
    Stmt drop_chunks(db_, "DELETE FROM manifest_chunks WHERE manifest = ?1");
    Stmt drop(db_, "DELETE FROM manifests WHERE id = ?1");
    Stmt move(db_, "UPDATE manifests SET name = ?2, digest = coalesce(?3, digest) WHERE id = ?1");
    auto id_of = [&](const std::string& name) -> std::optional<std::int64_t> {
        find_id.bind(1, name);
        std::optional<std::int64_t> id;
        if (find_id.step()) id = find_id.i64(0);
        find_id.reset();
        return id;
    };
    for (const auto& [from, to, digest] : moves) {
        const auto id = id_of(from);
        if (!id)
            throw NotFoundError(fmt::format("no file named '{}' in the store '{}' (nothing renamed)", from, store_name));
        if (id_of(to)) {
            drop_chunks.bind(1, *id);
            drop_chunks.run();
            drop.bind(1, *id);
            drop.run();
        } else {
            move.bind(1, *id);
            move.bind(2, to);
            if (digest)
                move.bind(3, std::span<const std::uint8_t>(*digest));
            else
                move.bind_null(3);
            move.run();
        }
    }
    t.commit();
}

void SqliteCatalog::for_each_manifest(
    const std::function<void(const std::string&, std::uint64_t, std::uint64_t, ListReader&)>& f) {
    Stmt ms(db_, "SELECT id, name, size, chunk_count FROM manifests WHERE name IS NOT NULL ORDER BY name");
    SqliteListReader list(db_, 0);
    while (ms.step()) {
        list.rebind(ms.i64(0));
        f(ms.text(1), static_cast<std::uint64_t>(ms.i64(2)), static_cast<std::uint64_t>(ms.i64(3)), list);
    }
}

std::uint64_t SqliteCatalog::pending_manifests() {
    Stmt q(db_, "SELECT count(*) FROM manifests WHERE name IS NULL");
    return q.step() && q.i64(0) > 0 ? static_cast<std::uint64_t>(q.i64(0)) : 0;
}

// ---------------------------------------------------------------- the flush

void SqliteCatalog::commit(FlushBatch& batch) {
    end_read();
    Transaction t(db_, true);
    {
        Stmt ins(db_, "INSERT OR IGNORE INTO chunks(id, pack, offset, raw_size, stored_size) VALUES(?1,?2,?3,?4,?5)");
        for (const auto& r : batch.chunks) {
            ins.bind(1, std::span<const std::uint8_t>(r.id))
                .bind(2, static_cast<std::int64_t>(r.pack))
                .bind(3, static_cast<std::int64_t>(r.offset))
                .bind(4, static_cast<std::int64_t>(r.raw_size))
                .bind(5, static_cast<std::int64_t>(r.stored_size));
            ins.run();
            if (db_.changes() == 0) {
                ++batch.raced_chunks;
                batch.raced_bytes += kRecordHeaderSize + r.stored_size;
            }
        }
    }
    {
        Stmt up(db_, "INSERT INTO packs(id, size) VALUES(?1, ?2) ON CONFLICT(id) DO UPDATE SET size = excluded.size");
        for (const auto& [id, size] : batch.pack_sizes) {
            up.bind(1, static_cast<std::int64_t>(id)).bind(2, static_cast<std::int64_t>(size));
            up.run();
        }
    }
    write_manifests(batch);
    if (!batch.remove.empty()) {
        Stmt find_id(db_, "SELECT id FROM manifests WHERE name = ?1");
        Stmt drop_chunks(db_, "DELETE FROM manifest_chunks WHERE manifest = ?1");
        Stmt drop(db_, "DELETE FROM manifests WHERE id = ?1");
        for (const auto& name : batch.remove) {
            find_id.bind(1, name);
            if (!find_id.step())
                throw NotFoundError(fmt::format("no file named '{}' in the store (nothing committed)", name));
            const std::int64_t id = find_id.i64(0);
            find_id.reset();
            drop_chunks.bind(1, id);
            drop_chunks.run();
            drop.bind(1, id);
            drop.run();
        }
    }
    t.commit();
}

void SqliteCatalog::write_manifests(FlushBatch& batch) {
    Stmt pending(db_, "INSERT INTO manifests(pending_name) VALUES(?1)");
    Stmt seg(db_, "INSERT INTO manifest_chunks(manifest, seq, ids) VALUES(?1, ?2, ?3)");
    Stmt old(db_, "SELECT id FROM manifests WHERE name = ?1");
    Stmt drop_chunks(db_, "DELETE FROM manifest_chunks WHERE manifest = ?1");
    Stmt drop(db_, "DELETE FROM manifests WHERE id = ?1");
    Stmt publish(db_,
                 "UPDATE manifests SET name = ?2, pending_name = NULL, size = ?3, mode = ?4, mtime_ns = ?5, "
                 "digest = ?6, algorithm = ?7, min_size = ?8, normal_size = ?9, max_size = ?10, keyed = ?11, "
                 "chunk_count = ?12, committed_ns = ?13, first_id = ?14, records = ?15 WHERE id = ?1");
    const std::int64_t now = now_ns();
    const Profile& p = batch.profile;
    Stmt same(db_,
              "SELECT 1 FROM manifests WHERE id = ?1 AND name = ?2 AND digest = ?3 AND size = ?4 AND mode = ?5 "
              "AND mtime_ns = ?6 AND chunk_count = ?7");
    for (ManifestDraft* mp : batch.manifests) {
        ManifestDraft& m = *mp;
        if (m.finished && m.keep_row != 0) {
            // Put again unchanged, metadata included: if the stored row is
            // still that file (no other writer replaced it meanwhile),
            // keep it rather than write the same list again.
            same.bind(1, m.keep_row)
                .bind(2, m.meta.name)
                .bind(3, std::span<const std::uint8_t>(m.digest))
                .bind(4, static_cast<std::int64_t>(m.size))
                .bind(5, std::int64_t{m.meta.mode})
                .bind(6, m.meta.mtime_ns)
                .bind(7, static_cast<std::int64_t>(m.chunks));
            const bool kept = same.step();
            same.reset();
            if (kept) {
                if (m.row != 0) {  // rows written as a pending manifest already
                    drop_chunks.bind(1, m.row);
                    drop_chunks.run();
                    drop.bind(1, m.row);
                    drop.run();
                }
                m.full.clear();
                continue;
            }
        }
        if (m.row == 0 && (m.finished || !m.full.empty())) {
            pending.bind(1, m.meta.name);
            pending.run();
            m.row = db_.last_insert_rowid();
        }
        for (const auto& [seq, ids] : m.full) {
            seg.bind(1, m.row).bind(2, std::int64_t{seq}).bind(3, std::span<const std::uint8_t>(ids));
            seg.run();
        }
        m.full.clear();
        if (!m.finished) continue;
        old.bind(1, m.meta.name);
        while (old.step()) {
            const std::int64_t id = old.i64(0);
            drop_chunks.bind(1, id);
            drop_chunks.run();
            drop.bind(1, id);
            drop.run();
        }
        old.reset();
        publish.bind(1, m.row)
            .bind(2, m.meta.name)
            .bind(3, static_cast<std::int64_t>(m.size))
            .bind(4, std::int64_t{m.meta.mode})
            .bind(5, m.meta.mtime_ns)
            .bind(6, std::span<const std::uint8_t>(m.digest))
            .bind(7, batch.algorithm)
            .bind(8, static_cast<std::int64_t>(p.min_size))
            .bind(9, static_cast<std::int64_t>(p.normal_size))
            .bind(10, static_cast<std::int64_t>(p.max_size))
            .bind(11, std::int64_t{p.keyed})
            .bind(12, static_cast<std::int64_t>(m.chunks))
            .bind(13, now);
        if (m.chunks >= 2)
            publish.bind(14, std::span<const std::uint8_t>(m.first));
        else
            publish.bind_null(14);
        if (m.records.empty())
            publish.bind_null(15);
        else
            publish.bind(15, std::span<const std::uint8_t>(m.records));
        publish.run();
    }
    for (const std::int64_t id : batch.abandoned) {
        drop_chunks.bind(1, id);
        drop_chunks.run();
        drop.bind(1, id);
        drop.run();
    }
}

}  // namespace cdc::store::detail
