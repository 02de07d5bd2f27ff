// SPDX-License-Identifier: Apache-2.0
// PgCatalog: the schema, opening, settings, read views, chunk lookups and
// manifests (the flush: pg_catalog_write.cpp; gc, verify, stats, the lock:
// pg_catalog_gc.cpp).
#include "pg_catalog.hpp"

#include "catalog_factory.hpp"
#include "format.hpp"

#include <cdc/store_pg.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <unordered_map>

namespace cdc::store {

void enable_pg_catalog() {
    detail::set_pg_catalog_maker(
        [](const std::string& url,
           const std::vector<std::pair<std::string, std::string>>* settings) -> std::unique_ptr<detail::Catalog> {
            return settings ? detail::PgCatalog::create(url, *settings) : detail::PgCatalog::open(url);
        });
}

}  // namespace cdc::store

namespace cdc::store::detail {

// The tables of the SQLite catalog (docs/STORE.md, "Database"), in
// PostgreSQL's types: names are bytea (a name is any bytes but NUL, not
// always UTF-8; ordered bytewise as SQLite orders them), sizes bigint.
// Pack ids come from a sequence (writers on several hosts never pick the
// same one) bounded as the pack header's 32-bit field is. A list's ids are
// random bytes: stored out of line uncompressed (STORAGE EXTERNAL) rather
// than tried with pglz each time.
const char* const kPgSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE packs(id BIGINT PRIMARY KEY, size BIGINT NOT NULL);
CREATE SEQUENCE pack_ids AS BIGINT MINVALUE 1 MAXVALUE 4294967295 NO CYCLE;
CREATE TABLE chunks(id BYTEA PRIMARY KEY, pack BIGINT NOT NULL, "offset" BIGINT NOT NULL,
                    raw_size BIGINT NOT NULL, stored_size BIGINT NOT NULL, condemned TIMESTAMPTZ);
CREATE TABLE manifests(id BIGSERIAL PRIMARY KEY, name BYTEA UNIQUE, pending_name BYTEA, size BIGINT, mode BIGINT,
                       mtime_ns BIGINT, digest BYTEA, algorithm TEXT, min_size BIGINT, normal_size BIGINT,
                       max_size BIGINT, keyed BIGINT, chunk_count BIGINT, committed_ns BIGINT, first_id BYTEA,
                       records BYTEA, condemned TIMESTAMPTZ);
CREATE INDEX manifests_first_id ON manifests(first_id) WHERE first_id IS NOT NULL;
CREATE TABLE manifest_chunks(manifest BIGINT NOT NULL, seq BIGINT NOT NULL, ids BYTEA NOT NULL,
                             PRIMARY KEY(manifest, seq));
ALTER TABLE manifest_chunks ALTER COLUMN ids SET STORAGE EXTERNAL;
CREATE UNLOGGED TABLE claims(id BYTEA PRIMARY KEY, at TIMESTAMPTZ NOT NULL);
CREATE TABLE sessions(id BIGSERIAL PRIMARY KEY, host TEXT NOT NULL, pid BIGINT NOT NULL, kind TEXT NOT NULL,
                      started TIMESTAMPTZ NOT NULL, heartbeat TIMESTAMPTZ NOT NULL);
)sql";

namespace {

constexpr const char* kManifestColumns =
    "name, size, mode, mtime_ns, digest, algorithm, min_size, normal_size, max_size, keyed, chunk_count, committed_ns";

std::string as_string(std::span<const std::uint8_t> b) { return std::string(reinterpret_cast<const char*>(b.data()), b.size()); }

ManifestInfo read_manifest_row(const PgResult& q, int r, const std::string& context) {
    // Columns: kManifestColumns
    ManifestInfo m;
    m.name = as_string(q.bytes(r, 0));
    m.size = static_cast<std::uint64_t>(q.i64(r, 1));
    m.mode = static_cast<std::uint32_t>(q.i64(r, 2));
    m.mtime_ns = q.i64(r, 3);
    m.digest = to_id(q.bytes(r, 4), context);
    m.algorithm = q.text(r, 5);
    m.profile.min_size = static_cast<std::size_t>(q.i64(r, 6));
    m.profile.normal_size = static_cast<std::size_t>(q.i64(r, 7));
    m.profile.max_size = static_cast<std::size_t>(q.i64(r, 8));
    m.profile.keyed = q.i64(r, 9) != 0;
    m.chunks = static_cast<std::uint64_t>(q.i64(r, 10));
    m.committed_ns = q.i64(r, 11);
    return m;
}

constexpr const char* kStoredColumns = "id, name, digest, size, chunk_count, mode, mtime_ns";

// The kStoredColumns of row r, from column `at` on.
StoredFile read_stored(const PgResult& q, int r, std::string_view context, int at = 0) {
    StoredFile f;
    f.row = q.i64(r, at);
    f.name = as_string(q.bytes(r, at + 1));
    f.digest =
        to_id(q.bytes(r, at + 2), context.empty() ? fmt::format("the digest of '{}'", f.name) : std::string(context));
    f.size = static_cast<std::uint64_t>(q.i64(r, at + 3));
    f.chunks = static_cast<std::uint64_t>(q.i64(r, at + 4));
    f.mode = static_cast<std::uint32_t>(q.i64(r, at + 5));
    f.mtime_ns = q.i64(r, at + 6);
    return f;
}

std::span<const std::uint8_t> id_bytes(const ChunkId& id) { return {id.data(), id.size()}; }

/// q(offset, ids, params) for each Catalog::kFindChunksBatch of `all`, the
/// params holding those ids as one bytea[] ($1): a round trip a batch.
template <class Q>
void each_id_batch(std::span<const ChunkId> all, Q&& q) {
    for (std::size_t from = 0; from < all.size(); from += Catalog::kFindChunksBatch) {
        const auto ids = all.subspan(from, std::min(Catalog::kFindChunksBatch, all.size() - from));
        std::vector<std::span<const std::uint8_t>> items;
        items.reserve(ids.size());
        for (const auto& id : ids) items.push_back(id_bytes(id));
        PgParams p;
        p.add_bytea_array(items);
        q(from, ids, p);
    }
}

// Rows of a list fetched per statement: a bounded buffer (16 x 128 KiB)
// however long the list.
constexpr int kListRowsPerFetch = 16;

}  // namespace

// ---------------------------------------------------------------- lists

/// A manifest's rows of ids, fetched a page at a time (by seq, so a page
/// needs no cursor and no transaction of its own).
class PgListReader final : public ListReader {
public:
    /// `if_there`: rows only while row `manifest` is still that file (its
    /// digest and chunk count, not condemned), checked in each page's
    /// statement (read_list_if_there).
    PgListReader(PgCatalog& c, std::int64_t manifest, const StoredFile* if_there = nullptr)
        : c_(c),
          manifest_(manifest),
          page_sql_(fmt::format("SELECT seq, ids FROM manifest_chunks WHERE manifest = $1 AND seq > $2{} ORDER BY seq "
                                "LIMIT $3",
                                if_there ? " AND EXISTS (SELECT 1 FROM manifests WHERE id = $1 AND digest = $4 AND "
                                           "chunk_count = $5 AND condemned IS NULL)"
                                         : "")) {
        if (if_there) there_ = std::make_pair(if_there->digest, if_there->chunks);
    }
    bool next(std::uint32_t& seq, std::vector<std::uint8_t>& ids) override {
        if (at_ >= page_.rows()) {
            if (done_) return false;
            PgParams p;
            p.add(manifest_).add(last_seq_);
            p.add(std::int64_t{kListRowsPerFetch});
            if (there_) p.add_bytes(id_bytes(there_->first)).add(there_->second);
            page_ = c_.conn().exec(page_sql_.c_str(), p, "reading a chunk list");
            at_ = 0;
            done_ = page_.rows() < kListRowsPerFetch;
            if (page_.rows() == 0) return false;
        }
        seq = static_cast<std::uint32_t>(page_.i64(at_, 0));
        last_seq_ = page_.i64(at_, 0);
        const auto b = page_.bytes(at_, 1);
        ids.assign(b.begin(), b.end());
        ++at_;
        return true;
    }
    bool row(std::uint32_t seq, std::vector<std::uint8_t>& ids) override {
        PgParams p;
        p.add(manifest_).add(std::int64_t{seq});
        const PgResult r =
            c_.conn().exec("SELECT ids FROM manifest_chunks WHERE manifest = $1 AND seq = $2", p, "reading a chunk list");
        if (r.rows() == 0) return false;
        const auto b = r.bytes(0, 0);
        ids.assign(b.begin(), b.end());
        return true;
    }

private:
    PgCatalog& c_;
    std::int64_t manifest_;
    std::string page_sql_;  // (with read_list_if_there's check of the manifest's row)
    std::optional<std::pair<ChunkId, std::uint64_t>> there_;
    std::int64_t last_seq_ = -1;
    PgResult page_;
    int at_ = 0;
    bool done_ = false;
};

/// The rows of a small manifest, fetched with other manifests' rows.
class PgFetchedListReader final : public ListReader {
public:
    PgFetchedListReader(const PgResult& rows, int begin, int end) : rows_(rows), at_(begin), begin_(begin), end_(end) {}
    bool next(std::uint32_t& seq, std::vector<std::uint8_t>& ids) override {
        if (at_ >= end_) return false;
        seq = static_cast<std::uint32_t>(rows_.i64(at_, 1));
        const auto b = rows_.bytes(at_, 2);
        ids.assign(b.begin(), b.end());
        ++at_;
        return true;
    }
    bool row(std::uint32_t seq, std::vector<std::uint8_t>& ids) override {
        for (int k = begin_; k < end_; ++k)
            if (rows_.i64(k, 1) == std::int64_t{seq}) {
                const auto b = rows_.bytes(k, 2);
                ids.assign(b.begin(), b.end());
                return true;
            }
        return false;
    }

private:
    const PgResult& rows_;
    int at_, begin_, end_;
};

// ---------------------------------------------------------------- open, settings

PgCatalog::PgCatalog(PgConn conn) : conn_(std::move(conn)) {}
PgCatalog::~PgCatalog() { cancel_read(); }

std::unique_ptr<Catalog> PgCatalog::create(const std::string& url,
                                           const std::vector<std::pair<std::string, std::string>>& settings) {
    auto c = std::unique_ptr<PgCatalog>(new PgCatalog(PgConn(url)));
    const PgResult there = c->conn_.exec("SELECT to_regclass('meta') IS NOT NULL OR to_regclass('chunks') IS NOT NULL");
    if (there.rows() == 1 && there.boolean(0, 0))
        throw StoreError(fmt::format("the database '{}' holds a store already (or tables of its names): a new store "
                                     "needs a database of its own; nothing was created",
                                     url));
    c->transaction(
        [&] {
            c->conn_.run(kPgSchema, "creating the store's tables");
            PgParams epoch;
            epoch.add_text(kGcEpochKey);
            c->conn_.exec("INSERT INTO meta(key, value) VALUES($1, '0')", epoch, "writing the store's settings");
            for (const auto& [k, v] : settings) {
                PgParams p;
                p.add_text(k).add_text(v);
                c->conn_.exec("INSERT INTO meta(key, value) VALUES($1, $2)", p,
                              "writing the store's settings");
            }
        },
        "creating the store");
    return c;
}

std::unique_ptr<Catalog> PgCatalog::open(const std::string& url) {
    auto c = std::unique_ptr<PgCatalog>(new PgCatalog(PgConn(url)));
    const PgResult there = c->conn_.exec("SELECT to_regclass('meta') IS NOT NULL AND to_regclass('chunks') IS NOT "
                                         "NULL AND to_regclass('manifests') IS NOT NULL");
    if (there.rows() != 1 || !there.boolean(0, 0))
        throw DamageError(fmt::format("the database '{}' holds no store (its tables are missing)", url));
    ensure_gc_schema(c->conn_);  // (its lookups name the marks' columns)
    return c;
}

std::unique_ptr<Catalog> PgCatalog::connect() const {
    return std::unique_ptr<PgCatalog>(new PgCatalog(PgConn(conn_.url())));
}

PgResult PgCatalog::query(const char* sql, const PgParams& params, std::string_view what) {
    try {
        return conn_.exec(sql, params, what);
    } catch (const StoreError&) {
        // A lost server outside a read view: one statement, safe to repeat
        // once the server answers again. Within a view, the view is gone.
        if (reading_ || !conn_.broken() || !conn_.reconnect(kPgRetrySeconds)) throw;
        return conn_.exec(sql, params, what);
    }
}

std::unordered_map<std::string, std::string> PgCatalog::settings() {
    std::unordered_map<std::string, std::string> meta;
    const PgResult r = query("SELECT key, value FROM meta", {}, "reading the store's settings");
    for (int i = 0; i < r.rows(); ++i) meta[r.text(i, 0)] = r.text(i, 1);
    return meta;
}

void PgCatalog::upgrade_for_writing() {
    // This writer's session (its lookups follow): gc waits for it, and
    // each flush fails if gc declared it dead.
    if (!session_) session_ = std::make_unique<PgSession>(conn_.url(), "writer");
    PgParams p;
    p.add_text(kGcEpochKey);
    const PgResult r = query("SELECT value FROM meta WHERE key = $1", p, "reading the gc epoch");
    if (r.rows() == 0) throw DamageError(fmt::format("the catalog '{}' has no '{}' setting", conn_.url(), kGcEpochKey));
    gc_epoch_ = r.text(0, 0);
    // manifests.records (catalog_records.hpp) and claims (claim()) in a
    // catalog made before them; one look at the system catalogs
    // (information_schema's views took ~7 ms to plan on every open).
    const PgResult has = query("SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('manifests') "
                               "AND attname = 'records' AND NOT attisdropped), to_regclass('claims') IS NOT NULL",
                               {}, "reading the schema");
    if (!has.boolean(0, 0))
        transaction([&] { conn_.run("ALTER TABLE manifests ADD COLUMN IF NOT EXISTS records BYTEA", "adding records"); },
                    "adding records to the manifests");
    if (!has.boolean(0, 1))
        transaction([&] { conn_.run("CREATE UNLOGGED TABLE IF NOT EXISTS claims(id BYTEA PRIMARY KEY, at TIMESTAMPTZ NOT NULL)",
                                    "adding claims"); },
                    "adding the claims table");
}

IdSet PgCatalog::claim(std::span<const ChunkId> ids) {
    IdSet others;
    if (ids.empty()) return others;
    if (!claims_) claims_ = std::make_unique<PgConn>(conn_.url());
    if (claims_->broken() && !claims_->reconnect(kPgRetrySeconds)) return others;  // (then this writer stores them)
    std::vector<ChunkId> sorted(ids.begin(), ids.end());
    std::sort(sorted.begin(), sorted.end());  // one lock order for writers claiming alike
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    std::vector<std::span<const std::uint8_t>> list;
    list.reserve(sorted.size());
    for (const ChunkId& id : sorted) list.emplace_back(id.data(), id.size());
    PgParams p;
    p.add_bytea_array(list);
    // Inserted, or taken over from a claim a minute old: this writer's. Not
    // those indexed meanwhile (a claim is dropped when its chunk is indexed:
    // the writer's lookup view may be older than that commit).
    // (A failure only means this writer stores the chunks itself.)
    for (int attempt = 1;; ++attempt) try {
        const PgResult mine = claims_->exec(
            // (NOT IN an index scan of the ids, not NOT EXISTS: that was
            // planned as a hash anti-join over a scan of every chunk row,
            // 15-18 ms a claim at 32,000 chunks, against 3 ms)
            "INSERT INTO claims(id, at) SELECT u.id, now() FROM unnest($1::bytea[]) AS u(id) "
            "WHERE u.id NOT IN (SELECT id FROM chunks WHERE id = ANY($1::bytea[]) AND condemned IS NULL) "
            "ON CONFLICT (id) DO UPDATE SET at = now() WHERE claims.at < now() - interval '60 seconds' RETURNING id",
            p, "claiming chunks");
        IdSet got;
        for (int i = 0; i < mine.rows(); ++i) got.insert(to_id(mine.bytes(i, 0), conn_.url()));
        if (!got.empty()) {
            // A claim the statement waited for was dropped by its writer's
            // flush, which indexed the chunk: a new statement sees it.
            std::vector<std::span<const std::uint8_t>> won;
            for (const ChunkId& id : got) won.emplace_back(id.data(), id.size());
            PgParams q;
            q.add_bytea_array(won);
            const PgResult indexed =
                claims_->exec("SELECT id FROM chunks WHERE id = ANY($1::bytea[]) AND condemned IS NULL", q,
                              "claiming chunks");
            for (int i = 0; i < indexed.rows(); ++i) got.erase(to_id(indexed.bytes(i, 0), conn_.url()));
        }
        for (const ChunkId& id : sorted)
            if (!got.contains(id)) others.insert(id);
        return others;
    } catch (const StoreError&) {
        // A deadlock with a flush dropping claims, a lost server: again, then
        // nothing claimed by others.
        if (attempt >= 3 || claims_->broken()) return {};
        std::this_thread::sleep_for(std::chrono::milliseconds(10 * attempt));
    }
}

// ---------------------------------------------------------------- read views

void PgCatalog::begin_read() {
    if (reading_) throw StoreError(fmt::format("the catalog '{}': a read view is open already", conn_.url()));
    if (conn_.broken() && !conn_.reconnect(kPgRetrySeconds))
        throw StoreError(fmt::format("the catalog '{}': the server does not answer", conn_.url()));
    query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", {}, "starting a read view");
    reading_ = true;
    if (check_) check_->forget_lengths();
}

void PgCatalog::end_read() {
    if (!reading_) return;
    reading_ = false;
    try {
        conn_.exec("COMMIT", {}, "ending a read view");
    } catch (const StoreError&) {
        // What the view read was read (a read-only transaction has nothing
        // to commit): a server lost since is the next statement's concern.
        if (!conn_.broken()) throw;
    }
}

void PgCatalog::cancel_read() noexcept {
    if (!reading_) return;
    reading_ = false;
    try {
        conn_.exec("ROLLBACK");
    } catch (...) {
        // (the connection is gone: so is the view)
    }
}

// ---------------------------------------------------------------- chunks

CatalogCheck& PgCatalog::row_check() {
    if (!check_) {
        check_ = std::make_unique<CatalogCheck>(checked_max_chunk(settings()), [this](std::uint64_t pack) {
            return pack_length(pack).value_or(0);
        });
    }
    if (!reading_) check_->forget_lengths();
    return *check_;
}

std::optional<Location> PgCatalog::find_chunk(const ChunkId& id, std::string_view context) {
    CatalogCheck& check = row_check();
    PgParams p;
    p.add_bytes(id_bytes(id));
    const PgResult r = query("SELECT pack, \"offset\", raw_size, stored_size FROM chunks WHERE id = $1", p,
                             "looking a chunk up");
    if (r.rows() == 0) return std::nullopt;
    return check.location(id, r.i64(0, 0), r.i64(0, 1), r.i64(0, 2), r.i64(0, 3), context);
}

void PgCatalog::find_chunks(std::span<const ChunkId> all, std::string_view context,
                            const std::function<void(std::size_t, const std::optional<Location>&)>& f) {
    if (all.empty()) return;
    CatalogCheck& check = row_check();
    each_id_batch(all, [&](std::size_t from, std::span<const ChunkId> ids, const PgParams& p) {
        const PgResult r = query(
            "SELECT id, pack, \"offset\", raw_size, stored_size FROM chunks WHERE id = ANY($1::bytea[])", p,
            "looking chunks up");
        std::unordered_map<ChunkId, int, IdHash> at;
        for (int k = 0; k < r.rows(); ++k) at.emplace(to_id(r.bytes(k, 0), "a chunk row"), k);
        for (std::size_t i = 0; i < ids.size(); ++i) {
            const auto it = at.find(ids[i]);
            if (it == at.end()) {
                f(from + i, std::nullopt);
                continue;
            }
            const int k = it->second;
            f(from + i, check.location(ids[i], r.i64(k, 1), r.i64(k, 2), r.i64(k, 3), r.i64(k, 4), context));
        }
    });
}

std::optional<std::uint32_t> PgCatalog::chunk_size(const ChunkId& id) {
    PgParams p;
    p.add_bytes(id_bytes(id));
    const PgResult r = query("SELECT raw_size FROM chunks WHERE id = $1", p, "looking a chunk up");
    if (r.rows() == 0) return std::nullopt;
    return static_cast<std::uint32_t>(r.i64(0, 0));
}

void PgCatalog::chunk_sizes(std::span<const ChunkId> all, const std::function<void(std::size_t, std::uint32_t)>& f) {
    each_id_batch(all, [&](std::size_t from, std::span<const ChunkId> ids, const PgParams& p) {
        const PgResult r = query("SELECT id, raw_size FROM chunks WHERE id = ANY($1::bytea[])", p, "looking chunks up");
        std::unordered_map<ChunkId, std::uint32_t, IdHash> size;
        for (int k = 0; k < r.rows(); ++k)
            size.emplace(to_id(r.bytes(k, 0), "a chunk row"), static_cast<std::uint32_t>(r.i64(k, 1)));
        for (std::size_t i = 0; i < ids.size(); ++i)
            if (const auto it = size.find(ids[i]); it != size.end()) f(from + i, it->second);
    });
}

void PgCatalog::find_present(std::span<const ChunkId> all, IdSet& found) {
    each_id_batch(all, [&](std::size_t, std::span<const ChunkId>, const PgParams& p) {
        // (A condemned row is gc's to drop: a writer stores that chunk again.)
        const PgResult r = query("SELECT id FROM chunks WHERE id = ANY($1::bytea[]) AND condemned IS NULL", p,
                                 "looking chunks up");
        for (int k = 0; k < r.rows(); ++k) found.insert(to_id(r.bytes(k, 0), "a chunk row"));
    });
}

// ---------------------------------------------------------------- packs

std::map<std::uint64_t, std::uint64_t> PgCatalog::packs() {
    std::map<std::uint64_t, std::uint64_t> out;
    const PgResult r = query("SELECT id, size FROM packs", {}, "listing packs");
    for (int i = 0; i < r.rows(); ++i)
        out.emplace(static_cast<std::uint64_t>(r.i64(i, 0)), static_cast<std::uint64_t>(r.i64(i, 1)));
    return out;
}

std::uint64_t PgCatalog::max_pack_id() {
    const PgResult r = query("SELECT coalesce(max(id), 0)::bigint FROM packs", {}, "listing packs");
    return r.rows() ? static_cast<std::uint64_t>(r.i64(0, 0)) : 0;
}

std::vector<std::uint64_t> PgCatalog::packs_below(std::uint64_t below, std::size_t limit) {
    // A writer never continues a pack here: gc beside writers cuts, rewrites
    // and deletes the packs taken before its mark, which no writer may be
    // appending to (writers then start new packs, as in object storage).
    (void)below;
    (void)limit;
    return {};
}

std::optional<std::uint64_t> PgCatalog::pack_length(std::uint64_t pack) {
    PgParams p;
    p.add(pack);
    const PgResult r = query("SELECT size FROM packs WHERE id = $1", p, "reading a pack's length");
    if (r.rows() == 0) return std::nullopt;
    const std::int64_t n = r.i64(0, 0);
    return n > 0 ? static_cast<std::uint64_t>(n) : 0;
}

// ---------------------------------------------------------------- manifests

std::vector<ManifestInfo> PgCatalog::list(std::string_view prefix) {
    PgParams p;
    p.add_bytes(prefix);
    const PgResult r = query(fmt::format("SELECT {} FROM manifests WHERE name IS NOT NULL AND condemned IS NULL AND "
                                         "substring(name FROM 1 FOR length($1::bytea)) = $1::bytea ORDER BY name",
                                         kManifestColumns)
                                 .c_str(),
                             p, "listing files");
    std::vector<ManifestInfo> out;
    for (int i = 0; i < r.rows(); ++i) out.push_back(read_manifest_row(r, i, conn_.url()));
    return out;
}

std::optional<ManifestInfo> PgCatalog::find(std::string_view name) {
    PgParams p;
    p.add_bytes(name);
    const PgResult r =
        query(fmt::format("SELECT {} FROM manifests WHERE name = $1 AND condemned IS NULL", kManifestColumns).c_str(), p, "finding a file");
    if (r.rows() == 0) return std::nullopt;
    return read_manifest_row(r, 0, conn_.url());
}

PgResult PgCatalog::committed_named(std::span<const std::string> names, const char* columns, int name_column,
                                    std::unordered_map<std::string, int>& row_of) {
    std::vector<std::span<const std::uint8_t>> items;
    items.reserve(names.size());
    for (const auto& n : names) items.emplace_back(reinterpret_cast<const std::uint8_t*>(n.data()), n.size());
    PgParams p;
    p.add_bytea_array(items);
    PgResult r = query(
        fmt::format("SELECT {} FROM manifests WHERE name = ANY($1::bytea[]) AND condemned IS NULL", columns).c_str(),
        p, "finding files");
    for (int k = 0; k < r.rows(); ++k) row_of.emplace(as_string(r.bytes(k, name_column)), k);
    return r;
}

void PgCatalog::find_many(std::span<const std::string> all,
                          const std::function<void(std::size_t, std::optional<ManifestInfo>)>& f) {
    constexpr std::size_t kBatch = 4096;  // names a statement
    for (std::size_t from = 0; from < all.size(); from += kBatch) {
        const auto names = all.subspan(from, std::min(kBatch, all.size() - from));
        std::unordered_map<std::string, int> at;
        const PgResult r = committed_named(names, kManifestColumns, 0, at);
        for (std::size_t i = 0; i < names.size(); ++i) {
            const auto it = at.find(names[i]);
            f(from + i,
              it == at.end() ? std::nullopt : std::optional<ManifestInfo>(read_manifest_row(r, it->second, conn_.url())));
        }
    }
}

std::optional<StoredFile> PgCatalog::stored_file(std::string_view name, std::optional<std::uint64_t> size,
                                                 std::string_view context) {
    PgParams p;
    p.add_bytes(name);
    const PgResult r =
        query(fmt::format("SELECT {} FROM manifests WHERE name = $1 AND condemned IS NULL", kStoredColumns).c_str(), p, "finding a file");
    if (r.rows() == 0 || (size && static_cast<std::uint64_t>(r.i64(0, 3)) != *size)) return std::nullopt;
    return read_stored(r, 0, context);
}

std::optional<StoredFile> PgCatalog::stored_file(std::int64_t row) {
    PgParams p;
    p.add(row);
    const PgResult r = query(
        fmt::format("SELECT {} FROM manifests WHERE id = $1 AND name IS NOT NULL", kStoredColumns).c_str(), p,
        "finding a file");
    if (r.rows() == 0) return std::nullopt;
    return read_stored(r, 0, {});
}

void PgCatalog::stored_files_with_lists(
    std::span<const std::string> names, std::uint64_t max_chunks,
    const std::function<void(std::size_t, const std::optional<StoredFile>&, ListReader*)>& f) {
    if (names.empty()) return;
    // The files in one statement, the lists of those of at most max_chunks
    // chunks in another (up to kFetchIds ids; a list past it is paged on
    // its own): a restore of small files is then two round trips for many
    // files and one for their chunks, not three a file.
    constexpr std::uint64_t kFetchIds = 65536;
    std::unordered_map<std::string, int> at;
    const PgResult r = committed_named(names, kStoredColumns, 1, at);
    std::vector<std::optional<StoredFile>> files(names.size());
    std::vector<std::int64_t> fetched;
    std::uint64_t ids = 0;
    for (std::size_t i = 0; i < names.size(); ++i) {
        const auto it = at.find(names[i]);
        if (it == at.end()) continue;
        files[i] = read_stored(r, it->second, {});
        const std::uint64_t n = files[i]->chunks;
        if (n <= max_chunks && ids + n <= kFetchIds) {
            fetched.push_back(files[i]->row);
            ids += n;
        }
    }
    PgResult rows;
    std::unordered_map<std::int64_t, std::pair<int, int>> range;  // manifest -> its rows
    if (!fetched.empty()) {
        PgParams q;
        q.add_int_array(fetched);
        rows = query("SELECT manifest, seq, ids FROM manifest_chunks WHERE manifest = ANY($1::bigint[]) "
                     "ORDER BY manifest, seq",
                     q, "reading chunk lists");
        for (int k = 0; k < rows.rows(); ++k) {
            auto [it, added] = range.try_emplace(rows.i64(k, 0), k, k + 1);
            if (!added) it->second.second = k + 1;
        }
    }
    std::sort(fetched.begin(), fetched.end());
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (!files[i] || files[i]->chunks > max_chunks) {
            f(i, files[i], nullptr);
        } else if (std::binary_search(fetched.begin(), fetched.end(), files[i]->row)) {
            const auto it = range.find(files[i]->row);
            PgFetchedListReader list(rows, it == range.end() ? 0 : it->second.first,
                                     it == range.end() ? 0 : it->second.second);
            f(i, files[i], &list);
        } else {
            PgListReader list(*this, files[i]->row);
            f(i, files[i], &list);
        }
    }
}

std::vector<StoredFile> PgCatalog::files_starting_with(const ChunkId& first, std::size_t limit,
                                                       std::optional<std::uint64_t> size,
                                                       std::optional<std::uint64_t> chunks) {
    PgParams p;
    p.add_bytes(id_bytes(first)).add(static_cast<std::uint64_t>(limit));
    const PgResult r = query(fmt::format("SELECT {} FROM manifests WHERE first_id = $1 AND name IS NOT NULL AND condemned IS NULL "
                                         "ORDER BY id DESC LIMIT $2",
                                         kStoredColumns)
                                 .c_str(),
                             p, "finding files by their first chunk");
    std::vector<StoredFile> out;
    for (int i = 0; i < r.rows(); ++i) {
        if (size && static_cast<std::uint64_t>(r.i64(i, 3)) != *size) continue;
        if (chunks && static_cast<std::uint64_t>(r.i64(i, 4)) != *chunks) continue;
        out.push_back(read_stored(r, i, {}));
    }
    return out;
}

std::vector<std::vector<StoredFile>> PgCatalog::files_starting_with_each(std::span<const FirstQuery> queries,
                                                                         std::size_t limit) {
    std::vector<std::vector<StoredFile>> out(queries.size());
    if (queries.empty()) return out;
    std::vector<std::span<const std::uint8_t>> firsts;
    firsts.reserve(queries.size());
    for (const FirstQuery& q : queries) firsts.push_back(id_bytes(q.first));
    PgParams p;
    p.add_bytea_array(firsts).add(static_cast<std::uint64_t>(limit));
    // (each query's own bounded scan of the index, as files_starting_with)
    const PgResult r = query(fmt::format("SELECT u.k, f.* FROM unnest($1::bytea[]) WITH ORDINALITY AS u(first, k) "
                                         "CROSS JOIN LATERAL (SELECT {} FROM manifests WHERE first_id = u.first AND "
                                         "name IS NOT NULL AND condemned IS NULL ORDER BY id DESC LIMIT $2) f",
                                         kStoredColumns)
                                 .c_str(),
                             p, "finding files by their first chunk");
    for (int i = 0; i < r.rows(); ++i) {
        const auto k = static_cast<std::size_t>(r.i64(i, 0) - 1);
        const FirstQuery& q = queries[k];
        if (static_cast<std::uint64_t>(r.i64(i, 4)) != q.size) continue;
        if (static_cast<std::uint64_t>(r.i64(i, 5)) != q.chunks) continue;
        out[k].push_back(read_stored(r, i, {}, 1));
    }
    return out;
}

bool PgCatalog::still_there(const StoredFile& file) {
    PgParams p;
    p.add(file.row).add_bytes(id_bytes(file.digest)).add(file.chunks);
    return query("SELECT 1 FROM manifests WHERE id = $1 AND digest = $2 AND chunk_count = $3 AND condemned IS NULL", p, "checking a file")
               .rows() > 0;
}

std::unique_ptr<ListReader> PgCatalog::read_list(std::int64_t row) { return std::make_unique<PgListReader>(*this, row); }

std::unique_ptr<ListReader> PgCatalog::read_list_if_there(const StoredFile& file) {
    return std::make_unique<PgListReader>(*this, file.row, &file);
}

void PgCatalog::for_each_manifest(
    const std::function<void(const std::string&, std::uint64_t, std::uint64_t, ListReader&)>& f) {
    // The files' rows (small: no lists) at once, then each list paged.
    const PgResult ms = query("SELECT id, name, size, chunk_count FROM manifests WHERE name IS NOT NULL ORDER BY name",
                              {}, "listing files");
    // The lists of small files (one row of ids, or a few) are fetched many
    // files at once: a statement per file is most of the time of a walk over
    // a tree of small files with the catalog a round trip away.
    constexpr std::int64_t kSmallList = 4096;   // ids: a list fetched with others
    constexpr std::int64_t kFetchIds = 65536;   // ids of the lists fetched at once (~2 MiB)
    const auto small = [&](int i) { return ms.i64(i, 3) >= 0 && ms.i64(i, 3) <= kSmallList; };
    const auto call = [&](int i, ListReader& list) {
        f(as_string(ms.bytes(i, 1)), static_cast<std::uint64_t>(ms.i64(i, 2)), static_cast<std::uint64_t>(ms.i64(i, 3)),
          list);
    };
    for (int i = 0; i < ms.rows();) {
        std::vector<std::int64_t> batch;
        std::int64_t ids = 0;
        for (int j = i; j < ms.rows() && small(j) && ids + ms.i64(j, 3) <= kFetchIds; ++j) {
            batch.push_back(ms.i64(j, 0));
            ids += ms.i64(j, 3);
        }
        if (batch.size() < 2) {
            PgListReader list(*this, ms.i64(i, 0));
            call(i, list);
            ++i;
            continue;
        }
        PgParams p;
        p.add_int_array(batch);
        const PgResult rows = query("SELECT manifest, seq, ids FROM manifest_chunks WHERE manifest = ANY($1::bigint[]) "
                                    "ORDER BY manifest, seq",
                                    p, "reading chunk lists");
        std::unordered_map<std::int64_t, std::pair<int, int>> range;  // manifest -> its rows
        for (int k = 0; k < rows.rows(); ++k) {
            auto [it, added] = range.try_emplace(rows.i64(k, 0), k, k + 1);
            if (!added) it->second.second = k + 1;
        }
        for (const std::int64_t id : batch) {
            const auto it = range.find(id);
            PgFetchedListReader list(rows, it == range.end() ? 0 : it->second.first,
                                     it == range.end() ? 0 : it->second.second);
            call(i++, list);
        }
    }
}

std::uint64_t PgCatalog::pending_manifests() {
    const PgResult r = query("SELECT count(*) FROM manifests WHERE name IS NULL", {}, "counting pending files");
    return r.rows() && r.i64(0, 0) > 0 ? static_cast<std::uint64_t>(r.i64(0, 0)) : 0;
}

}  // namespace cdc::store::detail
