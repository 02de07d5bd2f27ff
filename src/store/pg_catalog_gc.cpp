// SPDX-License-Identifier: Apache-2.0
// PgCatalog: what gc, verify and stats ask of the catalog; the store's lock
// across hosts (advisory locks) and the pack id sequence.
#include "pg_catalog.hpp"

#include "format.hpp"

#include <fmt/format.h>

#include <mutex>

namespace cdc::store::detail {

namespace {

std::span<const std::uint8_t> id_bytes(const ChunkId& id) { return {id.data(), id.size()}; }

/// The store's lock across hosts. Shared (writers, readers): a session
/// (PgSession) that gc beside writers waits for. Exclusive (gc): the
/// advisory lock kPgLockGc on a connection of its own, one gc at a time;
/// writers and readers run on.
class PgHostsLock final : public HostsLock {
public:
    explicit PgHostsLock(std::string url) : url_(std::move(url)) {}
    void lock(bool exclusive, const std::function<void()>& waiting) override {
        if (!exclusive) {
            // (the connection of the last session again: a read is a
            // session, and reads come one after another)
            if (spare_ && !spare_->broken())
                session_ = std::make_unique<PgSession>(std::move(*spare_), "session");
            else
                session_ = std::make_unique<PgSession>(url_, "session");
            spare_.reset();
            return;
        }
        if (!conn_ || conn_->broken()) conn_.emplace(url_);
        PgParams p;
        p.add(std::int64_t{kPgLockClass}).add(std::int64_t{kPgLockGc});
        const PgResult r = conn_->exec("SELECT pg_try_advisory_lock($1::int, $2::int)", p, "locking the store for gc");
        if (!r.boolean(0, 0)) {
            if (waiting) waiting();
            conn_->exec("SELECT pg_advisory_lock($1::int, $2::int)", p, "locking the store for gc");
        }
        held_ = true;
    }
    void unlock() noexcept override {
        if (session_) {
            spare_ = session_->end();
            session_.reset();
        }
        if (!held_ || !conn_) return;
        held_ = false;
        try {
            PgParams p;
            p.add(std::int64_t{kPgLockClass}).add(std::int64_t{kPgLockGc});
            conn_->exec("SELECT pg_advisory_unlock($1::int, $2::int)", p);
        } catch (...) {
            conn_.reset();  // (closing the connection lets go of the lock)
        }
    }
    bool gc_beside_writers() const override { return true; }

private:
    std::string url_;
    std::optional<PgConn> conn_;
    std::unique_ptr<PgSession> session_;
    std::optional<PgConn> spare_;
    bool held_ = false;
};

/// Pack ids from the sequence, over a connection of their own (a writer's
/// threads take them one at a time).
struct PackIdSource {
    std::mutex mutex;
    std::string url;
    std::optional<PgConn> conn;
    std::uint64_t next() {
        std::lock_guard lock(mutex);
        for (int attempt = 1;; ++attempt) {
            try {
                if (!conn || conn->broken()) {
                    if (conn && !conn->reconnect(kPgRetrySeconds)) throw StoreError(fmt::format(
                        "the catalog '{}': the server does not answer (taking a pack id)", url));
                    if (!conn) conn.emplace(url);
                }
                const PgResult r = conn->exec("SELECT nextval('pack_ids')", {}, "taking a pack id");
                return static_cast<std::uint64_t>(r.i64(0, 0));
            } catch (const StoreError&) {
                if (attempt >= kPgAttempts || !conn || !conn->broken()) throw;
            }
        }
    }
};

}  // namespace

std::unique_ptr<HostsLock> PgCatalog::hosts_lock() const { return std::make_unique<PgHostsLock>(conn_.url()); }

std::function<std::uint64_t()> PgCatalog::pack_ids() const {
    auto source = std::make_shared<PackIdSource>();
    source->url = conn_.url();
    return [source] { return source->next(); };
}

void PgCatalog::pack_ids_above(std::uint64_t id) {
    if (id == 0) return;
    PgParams p;
    p.add(static_cast<std::int64_t>(id));
    // (never backwards: ids already handed out stay behind)
    query("SELECT setval('pack_ids', greatest($1::bigint, (SELECT CASE WHEN is_called THEN last_value ELSE 0 END "
          "FROM pack_ids)))",
          p, "moving the pack id sequence");
}

GcSweep PgCatalog::sweep() {
    GcSweep r;
    // Pending manifests: their writers are gone (the caller holds the
    // store's lock exclusively, across hosts).
    transaction(
        [&] {
            conn_.exec("DELETE FROM manifest_chunks WHERE manifest IN (SELECT id FROM manifests WHERE name IS NULL)",
                       {}, "dropping pending files");
            r.manifests_dropped = conn_.exec("DELETE FROM manifests WHERE name IS NULL", {}, "dropping pending files")
                                      .affected();
            conn_.exec("DELETE FROM claims", {}, "dropping dead writers' claims");  // (no writer runs)
        },
        "dropping pending files");
    // The live set computed by the server (every id the lists hold), then
    // the chunks nobody lists go.
    transaction(
        [&] {
            conn_.run("CREATE TEMP TABLE live ON COMMIT DROP AS SELECT DISTINCT substring(c.ids FROM i * 32 + 1 FOR 32) "
                      "AS id FROM manifest_chunks c, generate_series(0, length(c.ids) / 32 - 1) AS i "
                      // a manifest's catalog records in the packs live as long as it does
                      "UNION SELECT substring(m.records FROM i * 32 + 1 FOR 32) FROM manifests m, "
                      "generate_series(0, length(m.records) / 32 - 1) AS i WHERE m.records IS NOT NULL; "
                      "ANALYZE live",
                      "gathering the live chunks");
            const PgResult dead = conn_.exec(
                "DELETE FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM live l WHERE l.id = c.id) RETURNING stored_size",
                {}, "dropping dead chunks");
            r.chunks_removed = static_cast<std::uint64_t>(dead.rows());
            r.stored_bytes_removed = 0;
            for (int i = 0; i < dead.rows(); ++i) r.stored_bytes_removed += static_cast<std::uint64_t>(dead.i64(i, 0));
        },
        "sweeping dead chunks");
    return r;
}

std::map<std::uint64_t, std::uint64_t> PgCatalog::live_bytes() {
    std::map<std::uint64_t, std::uint64_t> live;
    PgParams p;
    p.add(static_cast<std::uint64_t>(kRecordHeaderSize));
    const PgResult r = query("SELECT pack, (sum(stored_size) + count(*) * $1::bigint)::bigint FROM chunks GROUP BY pack",
                             p, "summing live bytes");
    for (int i = 0; i < r.rows(); ++i)
        live.emplace(static_cast<std::uint64_t>(r.i64(i, 0)), static_cast<std::uint64_t>(r.i64(i, 1)));
    return live;
}

void PgCatalog::drop_packs(const std::set<std::uint64_t>& packs) {
    if (packs.empty()) return;
    PgParams p;
    p.add_int_array(std::vector<std::int64_t>(packs.begin(), packs.end()));
    transaction([&] { conn_.exec("DELETE FROM packs WHERE id = ANY($1::bigint[])", p, "dropping packs"); },
                "dropping packs");
}

void PgCatalog::for_each_chunk(const std::function<void(const ChunkId&, const Location&)>& f,
                               const std::function<void(const ChunkId&, const std::string&)>& damaged,
                               std::string_view context, const std::set<std::uint64_t>* only_packs) {
    CatalogCheck& check = row_check();
    check.forget_lengths();
    // Pages in (pack, offset) order, by keyset: a page is one statement (no
    // cursor, so `f` may commit moves meanwhile; the moved rows have new
    // packs, beyond the ones still to read only if gc's new ids are larger,
    // which `only_packs` keeps out).
    constexpr std::int64_t kPage = 20000;
    std::int64_t last_pack = -1, last_offset = -1;
    std::vector<std::int64_t> only;
    if (only_packs) only.assign(only_packs->begin(), only_packs->end());
    for (;;) {
        PgParams p;
        p.add(last_pack).add(last_offset).add(kPage);
        if (only_packs) p.add_int_array(only);
        const PgResult r = query(only_packs ? "SELECT id, pack, \"offset\", raw_size, stored_size FROM chunks "
                                              "WHERE (pack, \"offset\") > ($1, $2) AND pack = ANY($4::bigint[]) "
                                              "ORDER BY pack, \"offset\" LIMIT $3"
                                            : "SELECT id, pack, \"offset\", raw_size, stored_size FROM chunks "
                                              "WHERE (pack, \"offset\") > ($1, $2) ORDER BY pack, \"offset\" LIMIT $3",
                                 p, "listing chunks");
        for (int i = 0; i < r.rows(); ++i) {
            const ChunkId id = to_id(r.bytes(i, 0), conn_.url());
            last_pack = r.i64(i, 1);
            last_offset = r.i64(i, 2);
            Location loc;
            try {
                loc = check.location(id, r.i64(i, 1), r.i64(i, 2), r.i64(i, 3), r.i64(i, 4), context);
            } catch (const DamageError& e) {
                damaged(id, e.what());
                continue;
            }
            f(id, loc);
        }
        if (r.rows() < kPage) break;
    }
}

void PgCatalog::move_chunks(std::span<const std::pair<std::uint64_t, std::uint64_t>> pack_sizes,
                            std::span<const PendingRow> moved, std::span<const std::uint64_t> dropped) {
    transaction(
        [&] {
            if (!pack_sizes.empty()) {
                std::vector<std::int64_t> ids, sizes;
                for (const auto& [id, size] : pack_sizes) {
                    ids.push_back(static_cast<std::int64_t>(id));
                    sizes.push_back(static_cast<std::int64_t>(size));
                }
                PgParams p;
                p.add_int_array(ids).add_int_array(sizes);
                conn_.exec("INSERT INTO packs(id, size) SELECT * FROM unnest($1::bigint[], $2::bigint[]) "
                           "ON CONFLICT (id) DO UPDATE SET size = excluded.size",
                           p, "recording packs' lengths");
            }
            constexpr std::size_t kBatch = 8192;
            for (std::size_t i = 0; i < moved.size(); i += kBatch) {
                std::vector<std::span<const std::uint8_t>> ids;
                std::vector<std::int64_t> pack, offset;
                for (std::size_t k = i; k < std::min(moved.size(), i + kBatch); ++k) {
                    ids.push_back(id_bytes(moved[k].id));
                    pack.push_back(static_cast<std::int64_t>(moved[k].pack));
                    offset.push_back(static_cast<std::int64_t>(moved[k].offset));
                }
                PgParams p;
                p.add_bytea_array(ids).add_int_array(pack).add_int_array(offset);
                conn_.exec("UPDATE chunks c SET pack = m.pack, \"offset\" = m.off FROM "
                           "unnest($1::bytea[], $2::bigint[], $3::bigint[]) AS m(id, pack, off) WHERE c.id = m.id",
                           p, "moving chunks");
            }
            if (!dropped.empty()) {
                PgParams p;
                p.add_int_array(std::vector<std::int64_t>(dropped.begin(), dropped.end()));
                conn_.exec("DELETE FROM packs WHERE id = ANY($1::bigint[])", p, "dropping packs");
            }
        },
        "moving chunks");
}

void PgCatalog::compact() {
    // (VACUUM cannot run in a transaction: one statement.)
    query("VACUUM (ANALYZE) chunks, manifests, manifest_chunks, packs", {}, "vacuuming");
}

Catalog::Totals PgCatalog::totals() {
    Totals s;
    begin_read();
    try {
        // What a mark of gc beside writers condemned is left out, as from
        // listings and lookups: the files are those `ls` shows, and the
        // condemned chunks' records count as garbage (the standing mark's
        // sweep drops them unless a writer from before it lists them; a
        // commit that does clears their marks).
        PgResult q = conn_.exec("SELECT count(*), coalesce(sum(size), 0)::bigint, coalesce(sum(chunk_count), 0)::bigint "
                                "FROM manifests WHERE name IS NOT NULL AND condemned IS NULL",
                                {}, "counting files");
        s.files = static_cast<std::uint64_t>(q.i64(0, 0));
        s.logical_bytes = static_cast<std::uint64_t>(q.i64(0, 1));
        s.references = static_cast<std::uint64_t>(q.i64(0, 2));
        q = conn_.exec("SELECT count(*), coalesce(sum(raw_size), 0)::bigint, coalesce(sum(stored_size), 0)::bigint "
                       "FROM chunks WHERE condemned IS NULL",
                       {}, "counting chunks");
        s.chunks = static_cast<std::uint64_t>(q.i64(0, 0));
        s.chunk_bytes = static_cast<std::uint64_t>(q.i64(0, 1));
        s.stored_payload = static_cast<std::uint64_t>(q.i64(0, 2));
        q = conn_.exec("SELECT count(*), coalesce(sum(raw_size), 0)::bigint FROM chunks WHERE condemned IS NULL AND "
                       "id IN (SELECT substring(m.records FROM i * 32 + 1 FOR 32) FROM manifests m, generate_series(0, "
                       "length(m.records) / 32 - 1) AS i WHERE m.name IS NOT NULL AND m.condemned IS NULL AND "
                       "m.records IS NOT NULL)",
                       {}, "counting catalog records");
        s.catalog_records = static_cast<std::uint64_t>(q.i64(0, 0));
        s.catalog_record_bytes = static_cast<std::uint64_t>(q.i64(0, 1));
        q = conn_.exec("SELECT count(*), coalesce(sum(size), 0)::bigint FROM packs", {}, "counting packs");
        s.packs = static_cast<std::uint64_t>(q.i64(0, 0));
        s.pack_bytes = static_cast<std::uint64_t>(q.i64(0, 1));
        q = conn_.exec("SELECT pg_total_relation_size('chunks')::bigint, (pg_total_relation_size('chunks') + "
                       "pg_total_relation_size('manifests') + pg_total_relation_size('manifest_chunks') + "
                       "pg_total_relation_size('packs') + pg_total_relation_size('meta'))::bigint",
                       {}, "sizing tables");
        s.chunk_table_bytes = static_cast<std::uint64_t>(q.i64(0, 0));
        s.size_on_disk = static_cast<std::uint64_t>(q.i64(0, 1));
        end_read();
    } catch (...) {
        cancel_read();
        throw;
    }
    return s;
}

std::vector<std::string> PgCatalog::check(bool full) {
    // The engine checks its own pages (checksums, WAL); what is ours to
    // check: rows the schema cannot refuse.
    std::vector<std::string> problems;
    const PgResult r = query("SELECT count(*) FROM chunks WHERE length(id) <> 32", {}, "checking chunk ids");
    if (r.i64(0, 0) > 0) problems.push_back(fmt::format("{} chunk rows have ids that are not 32 bytes", r.i64(0, 0)));
    const PgResult m = query("SELECT count(*) FROM manifest_chunks WHERE length(ids) % 32 <> 0", {}, "checking lists");
    if (m.i64(0, 0) > 0)
        problems.push_back(fmt::format("{} chunk list rows are not a whole number of ids", m.i64(0, 0)));
    if (full) {
        const PgResult o = query("SELECT count(*) FROM manifest_chunks c WHERE NOT EXISTS "
                                 "(SELECT 1 FROM manifests m WHERE m.id = c.manifest)",
                                 {}, "checking lists");
        if (o.i64(0, 0) > 0) problems.push_back(fmt::format("{} chunk list rows belong to no manifest", o.i64(0, 0)));
    }
    return problems;
}

}  // namespace cdc::store::detail
