// SPDX-License-Identifier: Apache-2.0
// Store::gc (docs/STORE.md, "gc"): with the exclusive lock, drop pending
// manifests, delete the chunk rows no manifest lists, rewrite sparse packs,
// delete empty and orphan pack files, cut off torn tails. Each step is one
// transaction; files are deleted only after the transaction that stops
// naming them, so a crash anywhere leaves only unreferenced files behind.
// A catalog whose gc runs beside writers (PostgreSQL: "gc while writers
// write") replaces the first steps with its mark, wait and sweep, and the
// pack steps touch only the packs taken before the mark.
#include "pack_writer.hpp"
#include "snapshot_names.hpp"
#include "store_impl.hpp"

#include <fmt/format.h>

#include <limits>
#include <map>
#include <optional>
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

/// How many times gc lists the unreferenced contents before a mark that
/// condemns none (snapshots committing all the while).
constexpr int kMarkAttempts = 5;

std::uint64_t sum_values(const std::map<std::uint64_t, std::uint64_t>& m) {
    std::uint64_t s = 0;
    for (const auto& [k, v] : m) s += v;
    return s;
}

}  // namespace

GcReport Store::gc(const GcOptions& options) {
    ExclusiveGuard guard(impl_->lock, options.on_wait);
    Catalog& catalog = *impl_->catalog;
    GcReport report;
    PackStorage& storage = *impl_->packs;
    const crypto::Sealer* sealer = impl_->sealer();
    report.bytes_before = sum_values(storage.list());
    // Beside writers (a PostgreSQL catalog): mark, wait, sweep, and only the
    // packs taken before the mark (`quiet`) are cut, rewritten or deleted.
    const auto hosts = catalog.hosts_lock();
    const bool beside = hosts && hosts->gc_beside_writers();
    std::uint64_t quiet = std::numeric_limits<std::uint64_t>::max();

    if (!beside) {
        // 1-3. Pending manifests (their writers are gone: we hold the lock),
        //      then the chunks no manifest lists.
        // 0. File contents no snapshot names (forgotten snapshots, dead backups).
        report.manifests_dropped += detail::drop_unreferenced_snapshot_files(*this, catalog);
        const GcSweep swept = catalog.sweep();
        report.manifests_dropped += swept.manifests_dropped;
        report.chunks_removed = swept.chunks_removed;
        report.bytes_removed = swept.stored_bytes_removed + swept.chunks_removed * kRecordHeaderSize;
    } else {
        bool swept = false;
        auto sweep = [&] {
            // (the contents condemned are hidden from the listing: those the
            // snapshots do not name go)
            std::vector<std::string> files, contents, named;
            const bool complete = detail::unreferenced_snapshot_files(*this, catalog, files, contents, &named);
            const GcSweep s = catalog.gc_sweep(named, complete, files, quiet);
            report.manifests_dropped += s.manifests_dropped;
            report.chunks_removed += s.chunks_removed;
            report.bytes_removed += s.stored_bytes_removed + s.chunks_removed * kRecordHeaderSize;
            swept = true;
        };
        // An earlier gc's mark (--no-wait, interrupted) is swept first if
        // the sessions it waits for have ended; else it stays.
        if (catalog.gc_marked() && catalog.gc_wait(0, options.session_timeout)) sweep();
        if (!catalog.gc_marked()) {
            // A snapshot committed while the contents were listed may name
            // some of them: listed again (after a few tries, no content is
            // marked: their chunks stay live, nothing is lost).
            std::optional<std::uint64_t> condemned;
            for (int attempt = 0; !condemned; ++attempt) {
                std::vector<std::string> files, contents;
                const std::uint64_t at = catalog.snapshot_commits();
                if (attempt < kMarkAttempts) detail::unreferenced_snapshot_files(*this, catalog, files, contents);
                condemned = catalog.gc_mark(contents, at);
            }
            report.chunks_condemned = *condemned;
            if (catalog.gc_wait(options.wait_seconds, options.session_timeout)) sweep();
        }
        report.sweep_left = catalog.gc_marked();
        if (!swept) {
            report.bytes_after = report.bytes_before;
            return report;
        }
    }

    // 4. Live bytes per pack; empty packs go, sparse ones are rewritten.
    const std::map<std::uint64_t, std::uint64_t> committed = catalog.packs();
    const std::map<std::uint64_t, std::uint64_t> live = catalog.live_bytes();
    std::set<std::uint64_t> empty, sparse;
    for (const auto& [id, size] : committed) {
        if (id > quiet) continue;  // (a writer may still be writing it)
        const auto it = live.find(id);
        const std::uint64_t l = it == live.end() ? 0 : it->second;
        if (l == 0)
            empty.insert(id);
        else if (static_cast<double>(l) < options.rewrite_below * static_cast<double>(size - kPackHeaderSize))
            sparse.insert(id);
    }
    // Packs with no row at all cannot be named by a chunk: drop their rows now.
    if (!empty.empty()) {
        catalog.drop_packs(empty);
        report.packs_deleted += empty.size();
    }

    // 5. Rewrite sparse packs: copy live records (checked) into new packs,
    //    sync, then move the rows and drop the old packs in one transaction.
    // (beside writers: the old packs stay until the next gc, step 6)
    std::set<std::uint64_t> kept_for_readers;
    if (!sparse.empty()) {
        PackAppender out(storage, impl_->info.pack_size);  // new packs only (never start()ed)
        out.use_ids(catalog.pack_ids());
        PackFiles files(storage);
        std::vector<std::uint64_t> done_packs;
        std::uint64_t copied = 0;
        auto commit_moves = [&] {
            auto [sizes, rows] = out.sync();
            catalog.move_chunks(sizes, rows, done_packs);
            out.release_retired();
            // (Beside writers, a reader may have looked a record up in the
            // old pack: the next gc deletes it, after its wait, as an orphan.)
            if (!beside)
                for (const auto id : done_packs) storage.remove(id);
            else
                kept_for_readers.insert(done_packs.begin(), done_packs.end());
            report.packs_rewritten += done_packs.size();
            done_packs.clear();
            files.close_all();
            copied = 0;
        };
        std::uint64_t current = 0;
        RecordBatch batch;
        std::vector<std::byte> buf;
        auto append_batch = [&] {
            out.append(batch);
            batch.clear();
        };
        catalog.for_each_chunk(
            [&](const ChunkId& id, const Location& loc) {
                if (loc.pack != current) {
                    append_batch();
                    if (current != 0) done_packs.push_back(current);
                    if (copied >= kRewriteCommitBytes || out.retired_count() >= kMaxRetiredPacks) commit_moves();
                    current = loc.pack;
                }
                // A damaged record stops gc before anything of it is dropped.
                // Copied as it is: a sealed record is moved without being opened.
                read_record(files.read(loc.pack), loc, id, buf, "gc: ", sealer);
                batch.add_copy(id, loc.raw_size, buf);
                copied += kRecordHeaderSize + loc.stored_size;
                if (batch.bytes.size() >= (std::size_t{1} << 20)) append_batch();
            },
            // (A damaged row stops gc as a damaged record does.)
            [](const ChunkId&, const std::string& what) { throw DamageError(what); }, "gc: ", &sparse);
        append_batch();
        if (current != 0) done_packs.push_back(current);
        commit_moves();
    }

    // 6. Files: delete empty packs and orphans (no row), cut torn tails.
    {
        const std::map<std::uint64_t, std::uint64_t> rows = catalog.packs();
        for (const auto& [id, size] : storage.list()) {
            if (id > quiet) continue;
            const auto it = rows.find(id);
            if (it == rows.end()) {
                if (kept_for_readers.count(id)) continue;
                storage.remove(id);
                if (!empty.count(id)) ++report.packs_deleted;
            } else if (size > it->second) {
                storage.truncate(id, it->second);
            }
        }
        // (beside writers: only the packs taken before the mark, whose
        // writers' sessions the sweep waited for; later ones may be uploading)
        storage.reclaim_incomplete(quiet);
        storage.sync_names();
    }
    catalog.compact();
    report.bytes_after = sum_values(storage.list());
    return report;
}

}  // namespace cdc::store
