// Store::gc (docs/STORE.md, "gc"): with the exclusive lock, drop pending
// manifests, delete the chunk rows no manifest lists, rewrite sparse packs,
// delete empty and orphan pack files, cut off torn tails. Each step is one
// transaction; files are deleted only after the transaction that stops
// naming them, so a crash anywhere leaves only unreferenced files behind.
#include "pack_writer.hpp"
#include "store_impl.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

#include <fcntl.h>
#include <unistd.h>

namespace cdc::store {

using namespace detail;

namespace {

constexpr std::uint64_t kRewriteCommitBytes = std::uint64_t{256} << 20;

class ExclusiveGuard {
public:
    ExclusiveGuard(StoreLock& l, const std::function<void()>& waiting) : l_(l) { l_.lock(true, waiting); }
    ~ExclusiveGuard() { l_.unlock(); }
    ExclusiveGuard(const ExclusiveGuard&) = delete;
    ExclusiveGuard& operator=(const ExclusiveGuard&) = delete;

private:
    StoreLock& l_;
};

std::uint64_t sum_values(const std::map<std::uint64_t, std::uint64_t>& m) {
    std::uint64_t s = 0;
    for (const auto& [k, v] : m) s += v;
    return s;
}

}  // namespace

GcReport Store::gc(const GcOptions& options) {
    ExclusiveGuard guard(impl_->lock, options.on_wait);
    Db& db = impl_->db;
    GcReport report;
    PackStorage& storage = *impl_->packs;
    report.bytes_before = sum_values(storage.list());

    // 1. Pending manifests: their writers are gone (we hold the lock).
    {
        Transaction t(db, true);
        Stmt n(db, "SELECT count(*) FROM manifests WHERE name IS NULL");
        if (n.step()) report.manifests_dropped = static_cast<std::uint64_t>(n.i64(0));
        n.reset();
        db.exec("DELETE FROM manifest_chunks WHERE manifest IN (SELECT id FROM manifests WHERE name IS NULL); "
                "DELETE FROM manifests WHERE name IS NULL");
        t.commit();
    }

    // 2. The live set, on disk (temp table): every id a manifest lists.
    db.exec("CREATE TEMP TABLE IF NOT EXISTS live(id BLOB PRIMARY KEY) WITHOUT ROWID; DELETE FROM temp.live; "
            "CREATE TEMP TABLE IF NOT EXISTS moves(id BLOB, pack INTEGER, offset INTEGER, raw_size INTEGER, "
            "stored_size INTEGER); DELETE FROM temp.moves; "
            "CREATE TEMP TABLE IF NOT EXISTS rewrite(pack INTEGER PRIMARY KEY); DELETE FROM temp.rewrite");
    {
        Transaction t(db, true);
        Stmt segs(db, "SELECT ids FROM manifest_chunks");
        Stmt ins(db, "INSERT OR IGNORE INTO temp.live(id) VALUES(?1)");
        while (segs.step()) {
            const auto blob = segs.blob(0);
            for (std::size_t i = 0; i + 32 <= blob.size(); i += 32) {
                ins.bind(1, blob.subspan(i, 32));
                ins.run();
            }
        }
        segs.reset();
        // 3. Chunks nobody lists.
        Stmt dead(db, "SELECT count(*), coalesce(sum(stored_size), 0) FROM chunks WHERE NOT EXISTS "
                      "(SELECT 1 FROM temp.live l WHERE l.id = chunks.id)");
        if (dead.step()) {
            report.chunks_removed = static_cast<std::uint64_t>(dead.i64(0));
            report.bytes_removed = static_cast<std::uint64_t>(dead.i64(1)) + report.chunks_removed * kRecordHeaderSize;
        }
        dead.reset();
        db.exec("DELETE FROM chunks WHERE NOT EXISTS (SELECT 1 FROM temp.live l WHERE l.id = chunks.id)");
        t.commit();
    }
    db.exec("DELETE FROM temp.live");

    // 4. Live bytes per pack; empty packs go, sparse ones are rewritten.
    std::map<std::uint64_t, std::uint64_t> committed;
    {
        Stmt q(db, "SELECT id, size FROM packs");
        while (q.step()) committed.emplace(q.i64(0), q.i64(1));
    }
    std::map<std::uint64_t, std::uint64_t> live;
    {
        Stmt q(db, "SELECT pack, sum(stored_size) + count(*) * ?1 FROM chunks GROUP BY pack");
        q.bind(1, static_cast<std::int64_t>(kRecordHeaderSize));
        while (q.step()) live.emplace(q.i64(0), q.i64(1));
    }
    std::set<std::uint64_t> empty, sparse;
    for (const auto& [id, size] : committed) {
        const auto it = live.find(id);
        const std::uint64_t l = it == live.end() ? 0 : it->second;
        if (l == 0)
            empty.insert(id);
        else if (static_cast<double>(l) < options.rewrite_below * static_cast<double>(size - kPackHeaderSize))
            sparse.insert(id);
    }
    // Packs with no row at all cannot be named by a chunk: drop their rows now.
    if (!empty.empty()) {
        Transaction t(db, true);
        Stmt del(db, "DELETE FROM packs WHERE id = ?1");
        for (const auto id : empty) {
            del.bind(1, static_cast<std::int64_t>(id));
            del.run();
        }
        t.commit();
        report.packs_deleted += empty.size();
    }

    // 5. Rewrite sparse packs: copy live records (checked) into new packs,
    //    sync, then move the rows and drop the old packs in one transaction.
    if (!sparse.empty()) {
        {
            Transaction t(db, true);
            Stmt ins(db, "INSERT INTO temp.rewrite(pack) VALUES(?1)");
            for (const auto id : sparse) {
                ins.bind(1, static_cast<std::int64_t>(id));
                ins.run();
            }
            db.exec("INSERT INTO temp.moves SELECT id, pack, offset, raw_size, stored_size FROM chunks "
                    "WHERE pack IN (SELECT pack FROM temp.rewrite)");
            t.commit();
        }
        PackAppender out(storage, impl_->info.pack_size);  // new packs only (never start()ed)
        PackFiles files(storage);
        std::vector<std::uint64_t> done_packs;
        std::uint64_t copied = 0;
        auto commit_moves = [&] {
            auto [sizes, rows] = out.sync();
            Transaction t(db, true);
            Stmt up_pack(db, "INSERT INTO packs(id, size) VALUES(?1, ?2) ON CONFLICT(id) DO UPDATE SET size = excluded.size");
            for (const auto& [id, size] : sizes) {
                up_pack.bind(1, static_cast<std::int64_t>(id)).bind(2, static_cast<std::int64_t>(size));
                up_pack.run();
            }
            Stmt move(db, "UPDATE chunks SET pack = ?2, offset = ?3 WHERE id = ?1");
            for (const auto& r : rows) {
                move.bind(1, std::span<const std::uint8_t>(r.id))
                    .bind(2, static_cast<std::int64_t>(r.pack))
                    .bind(3, static_cast<std::int64_t>(r.offset));
                move.run();
            }
            Stmt drop(db, "DELETE FROM packs WHERE id = ?1");
            for (const auto id : done_packs) {
                drop.bind(1, static_cast<std::int64_t>(id));
                drop.run();
            }
            t.commit();
            out.release_retired();
            for (const auto id : done_packs) storage.remove(id);
            report.packs_rewritten += done_packs.size();
            done_packs.clear();
            files.close_all();
            copied = 0;
        };
        Stmt q(db, "SELECT id, pack, offset, raw_size, stored_size FROM temp.moves ORDER BY pack, offset");
        std::uint64_t current = 0;
        RecordBatch batch;
        std::vector<std::byte> buf;
        auto append_batch = [&] {
            out.append(batch);
            batch.clear();
        };
        CatalogCheck check(db);
        while (q.step()) {
            const ChunkId id = to_id(q.blob(0), impl_->db_path());
            // (A damaged row stops gc as a damaged record does.)
            const Location loc = check.location(id, q.i64(1), q.i64(2), q.i64(3), q.i64(4), "gc: ");
            if (loc.pack != current) {
                append_batch();
                if (current != 0) done_packs.push_back(current);
                if (copied >= kRewriteCommitBytes || out.retired_count() >= kMaxRetiredPacks) commit_moves();
                current = loc.pack;
            }
            // A damaged record stops gc before anything of it is dropped.
            const Codec codec = read_record(files.read(loc.pack), loc, id, buf, "gc: ");
            batch.add(id, codec, loc.raw_size, std::span<const std::byte>(buf).subspan(kRecordHeaderSize));
            copied += kRecordHeaderSize + loc.stored_size;
            if (batch.bytes.size() >= (std::size_t{1} << 20)) append_batch();
        }
        q.reset();
        append_batch();
        if (current != 0) done_packs.push_back(current);
        commit_moves();
        db.exec("DELETE FROM temp.moves; DELETE FROM temp.rewrite");
    }

    // 6. Files: delete empty packs and orphans (no row), cut torn tails.
    {
        std::map<std::uint64_t, std::uint64_t> rows;
        Stmt q(db, "SELECT id, size FROM packs");
        while (q.step()) rows.emplace(q.i64(0), q.i64(1));
        for (const auto& [id, size] : storage.list()) {
            const auto it = rows.find(id);
            if (it == rows.end()) {
                storage.remove(id);
                if (!empty.count(id)) ++report.packs_deleted;
            } else if (size > it->second) {
                storage.truncate(id, it->second);
            }
        }
        storage.reclaim_incomplete();
        storage.sync_names();
    }
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    report.bytes_after = sum_values(storage.list());
    return report;
}

}  // namespace cdc::store
