// SPDX-License-Identifier: Apache-2.0
// PgCatalog: transactions, the flush and remove.
#include "pg_catalog.hpp"

#include "format.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace cdc::store::detail {

namespace {

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::span<const std::uint8_t> id_bytes(const ChunkId& id) { return {id.data(), id.size()}; }

// Chunk rows per INSERT (a flush of many small chunks: a few statements).
constexpr std::size_t kInsertBatch = 8192;
// Bytes of chunk lists per INSERT of manifest_chunks (sent in text form:
// twice that on the wire).
constexpr std::size_t kListBytesPerInsert = 8 << 20;

std::span<const std::uint8_t> as_bytes(std::string_view s) {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// Drops manifest rows and their chunk lists.
void drop_manifest_rows(PgConn& conn, const std::vector<std::int64_t>& ids, const char* what) {
    if (ids.empty()) return;
    PgParams p;
    p.add_int_array(ids);
    conn.exec("DELETE FROM manifest_chunks WHERE manifest = ANY($1::bigint[])", p, what);
    conn.exec("DELETE FROM manifests WHERE id = ANY($1::bigint[])", p, what);
}

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
    write_manifests(batch, swept, rows, kept);
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
    drop_manifest_rows(conn_, std::vector<std::int64_t>(batch.abandoned.begin(), batch.abandoned.end()),
                       "dropping abandoned files");
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

// The manifests of a flush, set-based: a few statements whatever the number
// of files (a statement per file and step cost a round trip each: a backup
// of 8,000 small files spent ~30 s waiting on ~100,000 of them). The same
// rows result as from taking the drafts one by one in order.
void PgCatalog::write_manifests(FlushBatch& batch, bool swept, std::vector<std::int64_t>& rows,
                                std::vector<bool>& kept) {
    const std::size_t n = batch.manifests.size();
    std::vector<std::int64_t> drop;  // rows that go (with their chunk lists)
    // 1. Put again unchanged, metadata included: kept as it is if the stored
    //    row is still that file (its pending row, if any, goes).
    {
        std::vector<std::int64_t> ids, sizes, modes, mtimes, counts, at;
        std::vector<std::span<const std::uint8_t>> names, digests;
        for (std::size_t i = 0; i < n; ++i) {
            const ManifestDraft& m = *batch.manifests[i];
            if (!m.finished || m.keep_row == 0) continue;
            ids.push_back(m.keep_row);
            names.push_back(as_bytes(m.meta.name));
            digests.push_back(id_bytes(m.digest));
            sizes.push_back(static_cast<std::int64_t>(m.size));
            modes.push_back(std::int64_t{m.meta.mode});
            mtimes.push_back(m.meta.mtime_ns);
            counts.push_back(static_cast<std::int64_t>(m.chunks));
            at.push_back(static_cast<std::int64_t>(i));
        }
        if (!ids.empty()) {
            PgParams p;
            p.add_int_array(ids).add_bytea_array(names).add_bytea_array(digests).add_int_array(sizes)
                .add_int_array(modes).add_int_array(mtimes).add_int_array(counts).add_int_array(at);
            const PgResult same = conn_.exec(
                "SELECT u.i FROM unnest($1::bigint[], $2::bytea[], $3::bytea[], $4::bigint[], $5::bigint[], "
                "$6::bigint[], $7::bigint[], $8::bigint[]) AS u(id, name, digest, size, mode, mtime, chunks, i) "
                "JOIN manifests m ON m.id = u.id AND m.name = u.name AND m.digest = u.digest AND m.size = u.size "
                "AND m.mode = u.mode AND m.mtime_ns = u.mtime AND m.chunk_count = u.chunks",
                p, "checking files");
            for (int r = 0; r < same.rows(); ++r) {
                const auto i = static_cast<std::size_t>(same.i64(r, 0));
                kept.at(i) = true;
                if (batch.manifests[i]->row != 0) drop.push_back(batch.manifests[i]->row);
            }
        }
    }
    // 2. A pending row for each draft that needs one and has none, numbered
    //    from the rows' sequence first (then inserted with those ids).
    {
        std::vector<std::size_t> fresh;
        for (std::size_t i = 0; i < n; ++i) {
            const ManifestDraft& m = *batch.manifests[i];
            rows[i] = m.row;
            if (!kept[i] && m.row == 0 && (m.finished || !m.full.empty())) fresh.push_back(i);
        }
        if (!fresh.empty()) {
            PgParams c;
            c.add(static_cast<std::int64_t>(fresh.size()));
            const PgResult ids = conn_.exec("SELECT nextval(pg_get_serial_sequence('manifests', 'id')) "
                                            "FROM generate_series(1, $1)",
                                            c, "adding manifests");
            if (static_cast<std::size_t>(ids.rows()) != fresh.size())
                throw StoreError(fmt::format("the catalog '{}': {} manifest ids for {} manifests", conn_.url(),
                                             ids.rows(), fresh.size()));
            std::vector<std::int64_t> id;
            std::vector<std::span<const std::uint8_t>> pending;
            for (std::size_t k = 0; k < fresh.size(); ++k) {
                rows[fresh[k]] = ids.i64(static_cast<int>(k), 0);
                id.push_back(rows[fresh[k]]);
                pending.push_back(as_bytes(batch.manifests[fresh[k]]->meta.name));
            }
            PgParams p;
            p.add_int_array(id).add_bytea_array(pending);
            conn_.exec("INSERT INTO manifests(id, pending_name) SELECT * FROM unnest($1::bigint[], $2::bytea[])", p,
                       "adding manifests");
        }
    }
    // 3. The chunk lists written since the last flush. (A retried flush
    //    whose first attempt did commit finds its rows: replaced, not
    //    doubled.)
    {
        std::vector<std::int64_t> manifest, seq;
        std::vector<std::span<const std::uint8_t>> lists;
        std::size_t bytes = 0;
        const auto send = [&] {
            if (manifest.empty()) return;
            PgParams p;
            p.add_int_array(manifest).add_int_array(seq).add_bytea_array(lists);
            conn_.exec("INSERT INTO manifest_chunks(manifest, seq, ids) "
                       "SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bytea[]) "
                       "ON CONFLICT (manifest, seq) DO UPDATE SET ids = excluded.ids",
                       p, "writing chunk lists");
            manifest.clear();
            seq.clear();
            lists.clear();
            bytes = 0;
        };
        for (std::size_t i = 0; i < n; ++i) {
            if (kept[i]) continue;
            for (const auto& [s, ids] : batch.manifests[i]->full) {
                manifest.push_back(rows[i]);
                seq.push_back(std::int64_t{s});
                lists.emplace_back(ids);
                bytes += ids.size();
                if (bytes >= kListBytesPerInsert) send();
            }
        }
        send();
    }
    // 4. The finished ones published under their names, replacing the rows
    //    of those names (a name twice in the batch: the later one stays, as
    //    when taken in order).
    std::vector<std::size_t> publish;
    {
        std::unordered_map<std::string_view, std::size_t> last;
        for (std::size_t i = 0; i < n; ++i) {
            const ManifestDraft& m = *batch.manifests[i];
            if (!m.finished || kept[i]) continue;
            const auto [it, added] = last.try_emplace(m.meta.name, i);
            if (!added) {
                drop.push_back(rows[it->second]);
                it->second = i;
            }
        }
        for (std::size_t i = 0; i < n; ++i) {
            const ManifestDraft& m = *batch.manifests[i];
            if (m.finished && !kept[i] && last.at(m.meta.name) == i) publish.push_back(i);
        }
    }
    drop_manifest_rows(conn_, drop, "dropping manifests");
    if (!publish.empty()) {
        const std::int64_t now = now_ns();
        const Profile& prof = batch.profile;
        std::vector<std::int64_t> id, size, mode, mtime, chunks;
        std::vector<std::span<const std::uint8_t>> name, digest, first, records;
        for (const std::size_t i : publish) {
            const ManifestDraft& m = *batch.manifests[i];
            id.push_back(rows[i]);
            name.push_back(as_bytes(m.meta.name));
            size.push_back(static_cast<std::int64_t>(m.size));
            mode.push_back(std::int64_t{m.meta.mode});
            mtime.push_back(m.meta.mtime_ns);
            digest.push_back(id_bytes(m.digest));
            chunks.push_back(static_cast<std::int64_t>(m.chunks));
            // (empty for NULL: a chunk id or a record list is never empty)
            first.push_back(m.chunks >= 2 ? id_bytes(m.first) : std::span<const std::uint8_t>{});
            records.emplace_back(m.records);
        }
        PgParams r;
        r.add_bytea_array(name).add_int_array(id);
        conn_.exec("DELETE FROM manifest_chunks WHERE manifest IN (SELECT m.id FROM manifests m JOIN "
                   "unnest($1::bytea[], $2::bigint[]) AS u(name, id) ON m.name = u.name AND m.id <> u.id)",
                   r, "replacing files");
        conn_.exec("DELETE FROM manifests m USING unnest($1::bytea[], $2::bigint[]) AS u(name, id) "
                   "WHERE m.name = u.name AND m.id <> u.id",
                   r, "replacing files");
        PgParams p;
        p.add_int_array(id)
            .add_bytea_array(name)
            .add_int_array(size)
            .add_int_array(mode)
            .add_int_array(mtime)
            .add_bytea_array(digest)
            .add_int_array(chunks)
            .add_bytea_array(first)
            .add_bytea_array(records)
            .add_text(batch.algorithm)
            .add(static_cast<std::uint64_t>(prof.min_size))
            .add(static_cast<std::uint64_t>(prof.normal_size))
            .add(static_cast<std::uint64_t>(prof.max_size))
            .add(std::int64_t{prof.keyed})
            .add(now);
        conn_.exec("UPDATE manifests m SET name = u.name, pending_name = NULL, size = u.size, mode = u.mode, "
                   "mtime_ns = u.mtime, digest = u.digest, algorithm = $10, min_size = $11, normal_size = $12, "
                   "max_size = $13, keyed = $14, chunk_count = u.chunks, committed_ns = $15, "
                   "first_id = NULLIF(u.first, ''::bytea), records = NULLIF(u.records, ''::bytea), condemned = NULL "
                   "FROM unnest($1::bigint[], $2::bytea[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bytea[], "
                   "$7::bigint[], $8::bytea[], $9::bytea[]) AS u(id, name, size, mode, mtime, digest, chunks, first, "
                   "records) WHERE m.id = u.id",
                   p, "publishing files");
        if (swept) {
            // A gc swept since this writer started: a chunk it found before
            // that sweep's mark may be gone (e.g. listed by a snapshot
            // forgotten meanwhile). Nothing is published that names one.
            PgParams q;
            q.add_int_array(id);
            const PgResult missing = conn_.exec(
                "SELECT count(*) FROM (SELECT substring(c.ids FROM i * 32 + 1 FOR 32) AS id FROM manifest_chunks c, "
                "generate_series(0, length(c.ids) / 32 - 1) AS i WHERE c.manifest = ANY($1::bigint[]) UNION ALL "
                "SELECT substring(m.records FROM i * 32 + 1 FOR 32) FROM manifests m, "
                "generate_series(0, length(m.records) / 32 - 1) AS i WHERE m.id = ANY($1::bigint[]) AND "
                "m.records IS NOT NULL) x WHERE NOT EXISTS (SELECT 1 FROM chunks k WHERE k.id = x.id)",
                q, "checking files' chunks");
            if (missing.i64(0, 0) > 0)
                throw StoreError(fmt::format("the catalog '{}': gc dropped {} chunk(s) that a file of this writer "
                                             "refers to while it ran: nothing of this flush is committed; put it "
                                             "again",
                                             conn_.url(), missing.i64(0, 0)));
        }
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
    // Set-based, as the flush (a backup renames each new file to its
    // content's name): the same rows as taking the moves one by one, given
    // that no name is moved twice or is both a source and a target (else,
    // one by one).
    std::unordered_set<std::string_view> from;
    bool disjoint = true;
    for (const auto& m : moves) disjoint = disjoint && from.insert(m.from).second;
    for (const auto& m : moves) disjoint = disjoint && !from.count(m.to);
    transaction(
        [&] {
            if (!disjoint) {
                for (const Move& m : moves) rename_batch(std::span(&m, 1), store_name);
                return;
            }
            rename_batch(moves, store_name);
        },
        "renaming files");
}

void PgCatalog::rename_batch(std::span<const Move> moves, std::string_view store_name) {
    if (moves.empty()) return;
    std::vector<std::span<const std::uint8_t>> sources, targets;
    for (const auto& m : moves) {
        sources.push_back(as_bytes(m.from));
        targets.push_back(as_bytes(m.to));
    }
    PgParams f;
    f.add_bytea_array(sources);
    const PgResult found = conn_.exec("SELECT u.k, m.id FROM unnest($1::bytea[]) WITH ORDINALITY AS u(name, k) "
                                      "JOIN manifests m ON m.name = u.name",
                                      f, "renaming files");
    std::vector<std::int64_t> source_row(moves.size(), 0);
    for (int r = 0; r < found.rows(); ++r) source_row.at(static_cast<std::size_t>(found.i64(r, 0) - 1)) = found.i64(r, 1);
    for (std::size_t k = 0; k < moves.size(); ++k)
        if (source_row[k] == 0)
            throw NotFoundError(
                fmt::format("no file named '{}' in the store '{}' (nothing renamed)", moves[k].from, store_name));
    // A target gc condemned (a content no snapshot named at its mark) gives
    // way to this copy: were this one dropped, the sweep could drop the
    // other under the snapshot naming it.
    PgParams t;
    t.add_bytea_array(targets);
    conn_.exec("DELETE FROM manifest_chunks WHERE manifest IN (SELECT id FROM manifests WHERE name = "
               "ANY($1::bytea[]) AND condemned IS NOT NULL)",
               t, "renaming files");
    conn_.exec("DELETE FROM manifests WHERE name = ANY($1::bytea[]) AND condemned IS NOT NULL", t, "renaming files");
    // A target that exists keeps its row and the source goes (a content
    // stored already); else the source takes the target's name (the first
    // of the moves to a target, the others' sources go).
    const PgResult existing = conn_.exec("SELECT name FROM manifests WHERE name = ANY($1::bytea[])", t, "renaming files");
    std::unordered_set<std::string> taken;
    for (int r = 0; r < existing.rows(); ++r) {
        const auto b = existing.bytes(r, 0);
        taken.emplace(reinterpret_cast<const char*>(b.data()), b.size());
    }
    std::vector<std::int64_t> drop, ids;
    std::vector<std::span<const std::uint8_t>> names, digests;
    for (std::size_t k = 0; k < moves.size(); ++k) {
        if (!taken.insert(moves[k].to).second) {
            drop.push_back(source_row[k]);
            continue;
        }
        ids.push_back(source_row[k]);
        names.push_back(targets[k]);
        // (empty: the row's digest stays)
        digests.push_back(moves[k].digest ? id_bytes(*moves[k].digest) : std::span<const std::uint8_t>{});
    }
    drop_manifest_rows(conn_, drop, "renaming files");
    if (ids.empty()) return;
    PgParams m;
    m.add_int_array(ids).add_bytea_array(names).add_bytea_array(digests);
    conn_.exec("UPDATE manifests m SET name = u.name, digest = CASE WHEN u.digest = ''::bytea THEN m.digest ELSE "
               "u.digest END FROM unnest($1::bigint[], $2::bytea[], $3::bytea[]) AS u(id, name, digest) "
               "WHERE m.id = u.id",
               m, "renaming files");
}

}  // namespace cdc::store::detail
