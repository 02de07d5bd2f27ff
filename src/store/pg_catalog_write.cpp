// SPDX-License-Identifier: Apache-2.0
// PgCatalog: transactions, the flush and remove.
#include "pg_catalog.hpp"

#include "format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace cdc::store::detail {

namespace {

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::span<const std::uint8_t> id_bytes(const ChunkId& id) { return {id.data(), id.size()}; }

// Chunk rows per INSERT (a flush of many small chunks: a few statements).
constexpr std::size_t kInsertBatch = 8192;

}  // namespace

void PgCatalog::transaction(const std::function<void()>& body, std::string_view what) {
    end_read();
    for (int attempt = 1;; ++attempt) {
        try {
            if (conn_.broken() && !conn_.reconnect(kPgRetrySeconds))
                throw StoreError(fmt::format("the catalog '{}', {}: the server does not answer", conn_.url(), what));
            conn_.exec("BEGIN", {}, what);
            body();
            conn_.exec("COMMIT", {}, what);
            return;
        } catch (...) {
            // (retryable() is false unless the server failed the last statement)
            const bool again = conn_.retryable() && attempt < kPgAttempts;
            if (!conn_.broken()) {
                try {
                    conn_.exec("ROLLBACK");
                } catch (const StoreError&) {
                    // (the transaction is gone with its connection)
                }
            }
            if (!again) throw;
            // Another writer's transaction won (a deadlock, a name it
            // published first) or the server went away: a pause, then all
            // of it again.
            std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
        }
    }
}

void PgCatalog::commit(FlushBatch& batch) {
    std::vector<std::int64_t> rows;
    std::vector<bool> kept;
    transaction(
        [&] {
            batch.raced_chunks = batch.raced_bytes = 0;
            write_batch(batch, rows, kept);
        },
        "committing a flush");
    // Committed: the drafts learn their rows (a retried attempt started
    // from them as they were).
    for (std::size_t i = 0; i < batch.manifests.size(); ++i) {
        ManifestDraft& m = *batch.manifests[i];
        if (!kept[i]) m.row = rows[i];
        m.full.clear();
    }
}

void PgCatalog::write_batch(FlushBatch& batch, std::vector<std::int64_t>& rows, std::vector<bool>& kept) {
    rows.assign(batch.manifests.size(), 0);
    kept.assign(batch.manifests.size(), false);
    if (session_) {
        // Still a session gc waits for (gc drops the row of one it declared
        // dead; the row's lock makes a gc dropping it wait for this flush).
        PgParams p;
        p.add(session_->id());
        if (conn_.exec("UPDATE sessions SET heartbeat = now() WHERE id = $1", p, "beating the session").affected() == 0)
            throw StoreError(fmt::format("the catalog '{}': gc declared this writer dead (no heartbeat) and may have "
                                         "dropped chunks it refers to: what it wrote since its last flush is not "
                                         "committed; put it again",
                                         conn_.url()));
    }
    // Whether a gc swept since this writer started: then what it publishes
    // is checked below (FOR SHARE: a sweep that starts now waits for this
    // flush, and sees it committed).
    bool swept = false;
    if (gc_epoch_) {
        PgParams p;
        p.add_text(kGcEpochKey);
        const PgResult r = conn_.exec("SELECT value FROM meta WHERE key = $1 FOR SHARE", p, "checking the gc epoch");
        swept = r.rows() == 0 || r.text(0, 0) != *gc_epoch_;
    }
    // Chunk rows in id order: two writers inserting the same ids take the
    // index's locks in one order (no deadlock); a chunk another writer
    // indexed first keeps that copy.
    {
        std::vector<const PendingRow*> sorted;
        sorted.reserve(batch.chunks.size());
        for (const auto& r : batch.chunks) sorted.push_back(&r);
        std::sort(sorted.begin(), sorted.end(), [](const PendingRow* a, const PendingRow* b) { return a->id < b->id; });
        for (std::size_t i = 0; i < sorted.size(); i += kInsertBatch) {
            const std::size_t n = std::min(kInsertBatch, sorted.size() - i);
            std::vector<std::span<const std::uint8_t>> ids;
            std::vector<std::int64_t> pack, offset, raw, stored;
            for (std::size_t k = i; k < i + n; ++k) {
                const PendingRow& r = *sorted[k];
                ids.push_back(id_bytes(r.id));
                pack.push_back(static_cast<std::int64_t>(r.pack));
                offset.push_back(static_cast<std::int64_t>(r.offset));
                raw.push_back(r.raw_size);
                stored.push_back(r.stored_size);
            }
            PgParams p;
            p.add_bytea_array(ids).add_int_array(pack).add_int_array(offset).add_int_array(raw).add_int_array(stored);
            // (RETURNING: the rows indexed; the others another writer had.)
            const PgResult added = conn_.exec(
                "INSERT INTO chunks(id, pack, \"offset\", raw_size, stored_size) "
                "SELECT * FROM unnest($1::bytea[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[]) "
                // (a row gc condemned is re-pointed to this copy and kept)
                "ON CONFLICT (id) DO UPDATE SET pack = excluded.pack, \"offset\" = excluded.\"offset\", "
                "raw_size = excluded.raw_size, stored_size = excluded.stored_size, condemned = NULL "
                "WHERE chunks.condemned IS NOT NULL RETURNING id",
                p, "indexing chunks");
            if (static_cast<std::size_t>(added.rows()) < n) {
                IdSet in;
                for (int k = 0; k < added.rows(); ++k) in.insert(to_id(added.bytes(k, 0), "an indexed chunk"));
                for (std::size_t k = i; k < i + n; ++k) {
                    if (in.count(sorted[k]->id)) continue;
                    ++batch.raced_chunks;
                    batch.raced_bytes += kRecordHeaderSize + sorted[k]->stored_size;
                }
            }
        }
    }
    if (!batch.chunks.empty()) {
        // Indexed now: their claims (claim()) are done with.
        std::vector<std::span<const std::uint8_t>> ids;
        for (const auto& r : batch.chunks) ids.push_back(id_bytes(r.id));
        PgParams p;
        p.add_bytea_array(ids);
        // (locked in id order, as claim() takes them: no deadlock between them)
        conn_.exec("DELETE FROM claims WHERE id IN (SELECT id FROM claims WHERE id = ANY($1::bytea[]) ORDER BY id "
                   "FOR UPDATE)",
                   p, "dropping claims");
    }
    if (!batch.pack_sizes.empty()) {
        std::vector<std::int64_t> ids, sizes;
        for (const auto& [id, size] : batch.pack_sizes) {
            ids.push_back(static_cast<std::int64_t>(id));
            sizes.push_back(static_cast<std::int64_t>(size));
        }
        PgParams p;
        p.add_int_array(ids).add_int_array(sizes);
        conn_.exec("INSERT INTO packs(id, size) SELECT * FROM unnest($1::bigint[], $2::bigint[]) "
                   "ON CONFLICT (id) DO UPDATE SET size = excluded.size",
                   p, "recording packs' lengths");
    }
    const std::int64_t now = now_ns();
    const Profile& prof = batch.profile;
    auto drop_rows = [&](std::int64_t id) {
        PgParams p;
        p.add(id);
        conn_.exec("DELETE FROM manifest_chunks WHERE manifest = $1", p, "dropping a manifest");
        conn_.exec("DELETE FROM manifests WHERE id = $1", p, "dropping a manifest");
    };
    for (std::size_t i = 0; i < batch.manifests.size(); ++i) {
        const ManifestDraft& m = *batch.manifests[i];
        if (m.finished && m.keep_row != 0) {
            // Put again unchanged, metadata included: kept as it is if the
            // stored row is still that file.
            PgParams p;
            p.add(m.keep_row)
                .add_bytes(m.meta.name)
                .add_bytes(id_bytes(m.digest))
                .add(m.size)
                .add(std::int64_t{m.meta.mode})
                .add(m.meta.mtime_ns)
                .add(m.chunks);
            const bool same = conn_.exec("SELECT 1 FROM manifests WHERE id = $1 AND name = $2 AND digest = $3 AND "
                                         "size = $4 AND mode = $5 AND mtime_ns = $6 AND chunk_count = $7",
                                         p, "checking a file")
                                  .rows() > 0;
            if (same) {
                if (m.row != 0) drop_rows(m.row);
                kept[i] = true;
                continue;
            }
        }
        std::int64_t row = m.row;
        if (row == 0 && (m.finished || !m.full.empty())) {
            PgParams p;
            p.add_bytes(m.meta.name);
            row = conn_.exec("INSERT INTO manifests(pending_name) VALUES($1) RETURNING id", p, "adding a manifest")
                      .i64(0, 0);
        }
        rows[i] = row;
        // (A retried flush whose first attempt did commit finds its rows:
        // replaced, not doubled.)
        for (const auto& [seq, ids] : m.full) {
            PgParams p;
            p.add(row).add(std::int64_t{seq}).add_bytes(std::span<const std::uint8_t>(ids));
            conn_.exec("INSERT INTO manifest_chunks(manifest, seq, ids) VALUES($1, $2, $3) "
                       "ON CONFLICT (manifest, seq) DO UPDATE SET ids = excluded.ids",
                       p, "writing a chunk list");
        }
        if (!m.finished) continue;
        {
            PgParams p;
            p.add_bytes(m.meta.name).add(row);
            conn_.exec("DELETE FROM manifest_chunks WHERE manifest IN "
                       "(SELECT id FROM manifests WHERE name = $1 AND id <> $2)",
                       p, "replacing a file");
            conn_.exec("DELETE FROM manifests WHERE name = $1 AND id <> $2", p, "replacing a file");
        }
        PgParams p;
        p.add(row)
            .add_bytes(m.meta.name)
            .add(m.size)
            .add(std::int64_t{m.meta.mode})
            .add(m.meta.mtime_ns)
            .add_bytes(id_bytes(m.digest))
            .add_text(batch.algorithm)
            .add(static_cast<std::uint64_t>(prof.min_size))
            .add(static_cast<std::uint64_t>(prof.normal_size))
            .add(static_cast<std::uint64_t>(prof.max_size))
            .add(std::int64_t{prof.keyed})
            .add(m.chunks)
            .add(now);
        if (m.chunks >= 2)
            p.add_bytes(id_bytes(m.first));
        else
            p.add_null();
        if (m.records.empty())
            p.add_null();
        else
            p.add_bytes(std::span<const std::uint8_t>(m.records));
        conn_.exec("UPDATE manifests SET name = $2, pending_name = NULL, size = $3, mode = $4, mtime_ns = $5, "
                   "digest = $6, algorithm = $7, min_size = $8, normal_size = $9, max_size = $10, keyed = $11, "
                   "chunk_count = $12, committed_ns = $13, first_id = $14::bytea, records = $15::bytea, "
                   "condemned = NULL WHERE id = $1",
                   p, "publishing a file");
        if (swept) {
            // A gc swept since this writer started: a chunk it found before
            // that sweep's mark may be gone (e.g. listed by a snapshot
            // forgotten meanwhile). Nothing is published that names one.
            PgParams q;
            q.add(row);
            const PgResult missing = conn_.exec(
                "SELECT count(*) FROM (SELECT substring(c.ids FROM i * 32 + 1 FOR 32) AS id FROM manifest_chunks c, "
                "generate_series(0, length(c.ids) / 32 - 1) AS i WHERE c.manifest = $1 UNION ALL "
                "SELECT substring(m.records FROM i * 32 + 1 FOR 32) FROM manifests m, "
                "generate_series(0, length(m.records) / 32 - 1) AS i WHERE m.id = $1 AND m.records IS NOT NULL) x "
                "WHERE NOT EXISTS (SELECT 1 FROM chunks k WHERE k.id = x.id)",
                q, "checking a file's chunks");
            if (missing.i64(0, 0) > 0)
                throw StoreError(fmt::format("the catalog '{}': gc dropped {} chunk(s) that a file of this writer "
                                             "refers to while it ran: nothing of this flush is committed; put it "
                                             "again",
                                             conn_.url(), missing.i64(0, 0)));
        }
    }
    if (!batch.named.empty()) {
        // A gc that listed what the snapshots name before this commit marks
        // nothing (gc_mark compares this count): it lists them again.
        PgParams p;
        p.add_text(kSnapshotCommitsKey);
        conn_.exec("INSERT INTO meta(key, value) VALUES($1, '1') ON CONFLICT (key) DO UPDATE SET value = "
                   "(meta.value::bigint + 1)::text",
                   p, "counting snapshots");
    }
    clear_marks(batch, rows, kept);
    if (!batch.abandoned.empty()) {
        PgParams p;
        p.add_int_array(std::vector<std::int64_t>(batch.abandoned.begin(), batch.abandoned.end()));
        conn_.exec("DELETE FROM manifest_chunks WHERE manifest = ANY($1::bigint[])", p, "dropping abandoned files");
        conn_.exec("DELETE FROM manifests WHERE id = ANY($1::bigint[])", p, "dropping abandoned files");
    }
    for (const auto& name : batch.remove) {
        PgParams p;
        p.add_bytes(name);
        const PgResult r = conn_.exec("DELETE FROM manifests WHERE name = $1 RETURNING id", p, "removing files");
        if (r.rows() == 0) throw NotFoundError(fmt::format("no file named '{}' in the store (nothing committed)", name));
        PgParams q;
        q.add(r.i64(0, 0));
        conn_.exec("DELETE FROM manifest_chunks WHERE manifest = $1", q, "removing files");
    }
}

void PgCatalog::clear_marks(const FlushBatch& batch, std::span<const std::int64_t> rows,
                            const std::vector<bool>& kept) {
    // Only while a gc's mark stands (else nothing is condemned). The mark
    // cannot commit during this flush: it locks `sessions`, whose row this
    // flush updated first; one committed before that update is seen here.
    PgParams k;
    k.add_text(kGcMarkKey);
    if (conn_.exec("SELECT 1 FROM meta WHERE key = $1", k, "reading the mark").rows() == 0) return;
    // Why clearing is safe: the sweep drops a condemned chunk only if no
    // manifest lists it, and a condemned content only if no snapshot names
    // it; what this flush commits lists those chunks and names those
    // contents, so the sweep would keep them anyway. Clearing the marks now
    // only lets lookups and listings see them meanwhile: a snapshot that
    // names a content condemned at a mark made after its writer found it
    // restores as soon as it is committed, not after the sweep. (A writer
    // after the mark that finds them refers to rows the sweep keeps; were
    // the snapshot forgotten before the sweep, they stay until the next gc.)
    std::vector<std::int64_t> manifests;
    if (!batch.named.empty()) {
        std::vector<std::span<const std::uint8_t>> names;
        names.reserve(batch.named.size());
        for (const auto& n : batch.named) names.emplace_back(reinterpret_cast<const std::uint8_t*>(n.data()), n.size());
        PgParams p;
        p.add_bytea_array(names);
        const PgResult r = conn_.exec("UPDATE manifests SET condemned = NULL WHERE condemned IS NOT NULL AND "
                                      "name = ANY($1::bytea[]) RETURNING id",
                                      p, "clearing gc's marks");
        for (int i = 0; i < r.rows(); ++i) manifests.push_back(r.i64(i, 0));
    }
    for (std::size_t i = 0; i < batch.manifests.size(); ++i) {
        const ManifestDraft& m = *batch.manifests[i];
        if (!m.finished) continue;
        manifests.push_back(kept[i] ? m.keep_row : rows[i]);
    }
    if (manifests.empty()) return;
    PgParams p;
    p.add_int_array(manifests);
    conn_.exec("UPDATE chunks k SET condemned = NULL FROM (SELECT substring(c.ids FROM i * 32 + 1 FOR 32) AS id "
               "FROM manifest_chunks c, generate_series(0, length(c.ids) / 32 - 1) AS i WHERE c.manifest = "
               "ANY($1::bigint[]) UNION SELECT substring(m.records FROM i * 32 + 1 FOR 32) FROM manifests m, "
               "generate_series(0, length(m.records) / 32 - 1) AS i WHERE m.id = ANY($1::bigint[]) AND m.records "
               "IS NOT NULL) x WHERE k.id = x.id AND k.condemned IS NOT NULL",
               p, "clearing gc's marks");
}

void PgCatalog::remove(std::span<const std::string> names, std::string_view store_name) {
    transaction(
        [&] {
            for (const auto& name : names) {
                PgParams p;
                p.add_bytes(name);
                const PgResult r = conn_.exec("DELETE FROM manifests WHERE name = $1 RETURNING id", p, "removing files");
                if (r.rows() == 0)
                    throw NotFoundError(
                        fmt::format("no file named '{}' in the store '{}' (nothing removed)", name, store_name));
                PgParams q;
                q.add(r.i64(0, 0));
                conn_.exec("DELETE FROM manifest_chunks WHERE manifest = $1", q, "removing files");
            }
        },
        "removing files");
}

void PgCatalog::rename(std::span<const Move> moves, std::string_view store_name) {
    transaction(
        [&] {
            for (const auto& [from, to, digest] : moves) {
                PgParams f;
                f.add_bytes(from);
                const PgResult r = conn_.exec("SELECT id FROM manifests WHERE name = $1", f, "renaming files");
                if (r.rows() == 0)
                    throw NotFoundError(
                        fmt::format("no file named '{}' in the store '{}' (nothing renamed)", from, store_name));
                PgParams id;
                id.add(r.i64(0, 0));
                PgParams t;
                t.add_bytes(to);
                // A target gc condemned (a content no snapshot named at its
                // mark) gives way to this copy: were this one dropped, the
                // sweep could drop the other under the snapshot naming it.
                conn_.exec("DELETE FROM manifest_chunks WHERE manifest IN (SELECT id FROM manifests WHERE name = $1 "
                           "AND condemned IS NOT NULL)",
                           t, "renaming files");
                conn_.exec("DELETE FROM manifests WHERE name = $1 AND condemned IS NOT NULL", t, "renaming files");
                if (conn_.exec("SELECT 1 FROM manifests WHERE name = $1", t, "renaming files").rows() > 0) {
                    conn_.exec("DELETE FROM manifest_chunks WHERE manifest = $1", id, "renaming files");
                    conn_.exec("DELETE FROM manifests WHERE id = $1", id, "renaming files");
                } else {
                    PgParams m;
                    m.add(r.i64(0, 0));
                    m.add_bytes(to);
                    if (digest) {
                        m.add_bytes(std::string_view(reinterpret_cast<const char*>(digest->data()), digest->size()));
                        conn_.exec("UPDATE manifests SET name = $2, digest = $3 WHERE id = $1", m, "renaming files");
                    } else {
                        conn_.exec("UPDATE manifests SET name = $2 WHERE id = $1", m, "renaming files");
                    }
                }
            }
        },
        "renaming files");
}

}  // namespace cdc::store::detail
