// SPDX-License-Identifier: Apache-2.0
// SqliteCatalog: what gc, verify and stats ask of the catalog.
#include "sqlite_catalog.hpp"

#include "format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace cdc::store::detail {

namespace {

/// Ids sorted in memory before they go into the live set: 32 MiB at most.
constexpr std::size_t kLiveBatch = std::size_t{1} << 20;

}  // namespace

void SqliteCatalog::make_temp_tables() {
    db_.exec("CREATE TEMP TABLE IF NOT EXISTS live(id BLOB PRIMARY KEY) WITHOUT ROWID; DELETE FROM temp.live; "
             "CREATE TEMP TABLE IF NOT EXISTS moves(id BLOB, pack INTEGER, offset INTEGER, raw_size INTEGER, "
             "stored_size INTEGER); DELETE FROM temp.moves; "
             "CREATE TEMP TABLE IF NOT EXISTS rewrite(pack INTEGER PRIMARY KEY); DELETE FROM temp.rewrite");
}

GcSweep SqliteCatalog::sweep() {
    GcSweep r;
    // Pending manifests: their writers are gone (the caller holds the store).
    {
        Transaction t(db_, true);
        Stmt n(db_, "SELECT count(*) FROM manifests WHERE name IS NULL");
        if (n.step()) r.manifests_dropped = static_cast<std::uint64_t>(n.i64(0));
        n.reset();
        db_.exec("DELETE FROM manifest_chunks WHERE manifest IN (SELECT id FROM manifests WHERE name IS NULL); "
                 "DELETE FROM manifests WHERE name IS NULL");
        t.commit();
    }
    // The live set, on disk (a temp table): every id a manifest lists; then
    // the chunks nobody lists go. The ids go in sorted, a batch at a time
    // (appended to the table's B-tree rather than scattered through it:
    // most of the sweep's time when they went in as listed).
    make_temp_tables();
    {
        Transaction t(db_, true);
        Stmt ins(db_, "INSERT OR IGNORE INTO temp.live(id) VALUES(?1)");
        std::vector<std::array<std::uint8_t, 32>> batch;
        auto flush = [&] {
            std::sort(batch.begin(), batch.end());
            batch.erase(std::unique(batch.begin(), batch.end()), batch.end());
            for (const auto& id : batch) {
                ins.bind(1, std::span<const std::uint8_t>(id));
                ins.run();
            }
            batch.clear();
        };
        auto add = [&](std::span<const std::uint8_t> blob) {
            for (std::size_t i = 0; i + 32 <= blob.size(); i += 32) {
                auto& id = batch.emplace_back();
                std::memcpy(id.data(), blob.data() + i, 32);
                if (batch.size() >= kLiveBatch) flush();
            }
        };
        Stmt segs(db_, "SELECT ids FROM manifest_chunks");
        while (segs.step()) add(segs.blob(0));
        segs.reset();
        // A manifest's catalog records in the packs live as long as it does.
        Stmt recs(db_, "SELECT records FROM manifests WHERE records IS NOT NULL");
        while (recs.step()) add(recs.blob(0));
        recs.reset();
        flush();
        // One pass over the chunks: each dead one deleted and counted.
        Stmt dead(db_, "DELETE FROM chunks WHERE NOT EXISTS (SELECT 1 FROM temp.live l WHERE l.id = chunks.id) "
                       "RETURNING stored_size");
        while (dead.step()) {
            ++r.chunks_removed;
            r.stored_bytes_removed += static_cast<std::uint64_t>(dead.i64(0));
        }
        dead.reset();
        t.commit();
    }
    db_.exec("DELETE FROM temp.live");
    return r;
}

std::map<std::uint64_t, std::uint64_t> SqliteCatalog::live_bytes() {
    std::map<std::uint64_t, std::uint64_t> live;
    Stmt q(db_, "SELECT pack, sum(stored_size) + count(*) * ?1 FROM chunks GROUP BY pack");
    q.bind(1, static_cast<std::int64_t>(kRecordHeaderSize));
    while (q.step()) live.emplace(q.i64(0), q.i64(1));
    return live;
}

void SqliteCatalog::drop_packs(const std::set<std::uint64_t>& packs) {
    if (packs.empty()) return;
    Transaction t(db_, true);
    Stmt del(db_, "DELETE FROM packs WHERE id = ?1");
    for (const auto id : packs) {
        del.bind(1, static_cast<std::int64_t>(id));
        del.run();
    }
    t.commit();
}

void SqliteCatalog::for_each_chunk(const std::function<void(const ChunkId&, const Location&)>& f,
                                   const std::function<void(const ChunkId&, const std::string&)>& damaged,
                                   std::string_view context, const std::set<std::uint64_t>* only_packs) {
    const char* sql = "SELECT id, pack, offset, raw_size, stored_size FROM chunks ORDER BY pack, offset";
    if (only_packs) {
        // A copy of their rows (a temp table): `f` may move chunks meanwhile.
        make_temp_tables();
        Transaction t(db_, true);
        Stmt ins(db_, "INSERT INTO temp.rewrite(pack) VALUES(?1)");
        for (const auto id : *only_packs) {
            ins.bind(1, static_cast<std::int64_t>(id));
            ins.run();
        }
        db_.exec("INSERT INTO temp.moves SELECT id, pack, offset, raw_size, stored_size FROM chunks "
                 "WHERE pack IN (SELECT pack FROM temp.rewrite)");
        t.commit();
        sql = "SELECT id, pack, offset, raw_size, stored_size FROM temp.moves ORDER BY pack, offset";
    }
    CatalogCheck& check = row_check();
    check.forget_lengths();
    {
        Stmt q(db_, sql);
        while (q.step()) {
            const ChunkId id = to_id(q.blob(0), db_.path());
            Location loc;
            try {
                loc = check.location(id, q.i64(1), q.i64(2), q.i64(3), q.i64(4), context);
            } catch (const DamageError& e) {
                damaged(id, e.what());
                continue;
            }
            f(id, loc);
        }
    }
    if (only_packs) db_.exec("DELETE FROM temp.moves; DELETE FROM temp.rewrite");
}

void SqliteCatalog::move_chunks(std::span<const std::pair<std::uint64_t, std::uint64_t>> pack_sizes,
                                std::span<const PendingRow> moved, std::span<const std::uint64_t> dropped) {
    Transaction t(db_, true);
    Stmt up_pack(db_, "INSERT INTO packs(id, size) VALUES(?1, ?2) ON CONFLICT(id) DO UPDATE SET size = excluded.size");
    for (const auto& [id, size] : pack_sizes) {
        up_pack.bind(1, static_cast<std::int64_t>(id)).bind(2, static_cast<std::int64_t>(size));
        up_pack.run();
    }
    Stmt move(db_, "UPDATE chunks SET pack = ?2, offset = ?3 WHERE id = ?1");
    for (const auto& r : moved) {
        move.bind(1, std::span<const std::uint8_t>(r.id))
            .bind(2, static_cast<std::int64_t>(r.pack))
            .bind(3, static_cast<std::int64_t>(r.offset));
        move.run();
    }
    Stmt drop(db_, "DELETE FROM packs WHERE id = ?1");
    for (const auto id : dropped) {
        drop.bind(1, static_cast<std::int64_t>(id));
        drop.run();
    }
    t.commit();
}

void SqliteCatalog::compact() { db_.exec("PRAGMA wal_checkpoint(TRUNCATE)"); }

Catalog::Totals SqliteCatalog::totals() {
    Totals s;
    Transaction read(db_, false);
    {
        Stmt q(db_, "SELECT count(*), coalesce(sum(size), 0), coalesce(sum(chunk_count), 0) FROM manifests "
                    "WHERE name IS NOT NULL");
        if (q.step()) {
            s.files = static_cast<std::uint64_t>(q.i64(0));
            s.logical_bytes = static_cast<std::uint64_t>(q.i64(1));
            s.references = static_cast<std::uint64_t>(q.i64(2));
        }
    }
    {
        Stmt q(db_, "SELECT count(*), coalesce(sum(raw_size), 0), coalesce(sum(stored_size), 0) FROM chunks");
        if (q.step()) {
            s.chunks = static_cast<std::uint64_t>(q.i64(0));
            s.chunk_bytes = static_cast<std::uint64_t>(q.i64(1));
            s.stored_payload = static_cast<std::uint64_t>(q.i64(2));
        }
    }
    // (a store no writer of catalog records has opened yet has no column)
    if (Stmt has(db_, "SELECT 1 FROM pragma_table_info('manifests') WHERE name = 'records'"); has.step()) {
        IdSet records;
        Stmt q(db_, "SELECT records FROM manifests WHERE name IS NOT NULL AND records IS NOT NULL");
        while (q.step()) {
            const auto blob = q.blob(0);
            for (std::size_t i = 0; i + 32 <= blob.size(); i += 32) records.insert(to_id(blob.subspan(i, 32), db_.path()));
        }
        Stmt size(db_, "SELECT raw_size FROM chunks WHERE id = ?1");
        for (const ChunkId& id : records) {
            size.bind(1, std::span<const std::uint8_t>(id));
            if (size.step()) {
                ++s.catalog_records;
                s.catalog_record_bytes += static_cast<std::uint64_t>(size.i64(0));
            }
            size.reset();
        }
    }
    {
        Stmt q(db_, "SELECT count(*), coalesce(sum(size), 0) FROM packs");
        if (q.step()) {
            s.packs = static_cast<std::uint64_t>(q.i64(0));
            s.pack_bytes = static_cast<std::uint64_t>(q.i64(1));
        }
    }
    try {
        Stmt q(db_, "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = 'chunks'");
        if (q.step()) s.chunk_table_bytes = static_cast<std::uint64_t>(q.i64(0));
    } catch (const StoreError&) {
        s.chunk_table_bytes = 0;  // SQLite built without dbstat
    }
    read.commit();
    s.size_on_disk = file_size_or_zero(db_.path()) + file_size_or_zero(db_.path() + "-wal");
    return s;
}

std::vector<std::string> SqliteCatalog::check(bool full) {
    std::vector<std::string> problems;
    Stmt q(db_, full ? "PRAGMA integrity_check" : "PRAGMA quick_check");
    while (q.step()) {
        std::string line = q.text(0);
        if (line != "ok") problems.push_back(std::move(line));
    }
    return problems;
}

}  // namespace cdc::store::detail
