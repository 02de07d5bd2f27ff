// SPDX-License-Identifier: Apache-2.0
// gc beside writers on a PostgreSQL catalog (docs/STORE.md, "gc while
// writers write"): the sessions of writers and readers, and gc's mark,
// wait and sweep. Why it is safe: a writer refers to an existing chunk only
// through its lookups (find_present, claim), which ignore condemned rows,
// or through a manifest it found (a base file, a snapshot's content),
// which lists only chunks that were live at the mark unless the manifest
// is itself condemned (hidden from list and find). A reference found
// before the mark belongs to a session alive at the mark: the sweep waits
// until every such session has ended (its manifests are then committed and
// in the sweep's live set) or was declared dead (its next flush fails).
#include "pg_catalog.hpp"

#include <fmt/format.h>

#include <chrono>
#include <sstream>

#include <unistd.h>

namespace cdc::store::detail {

namespace {

constexpr auto kHeartbeat = std::chrono::seconds(10);

std::string host_name() {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
    return buf;
}

struct Mark {
    std::int64_t sessions = 0, manifests = 0, packs = 0;
};

std::optional<Mark> parse_mark(const std::string& v) {
    std::istringstream in(v);
    Mark m;
    if (!(in >> m.sessions >> m.manifests >> m.packs)) return std::nullopt;
    return m;
}

PgParams names_param(std::span<const std::string> names) {
    std::vector<std::span<const std::uint8_t>> items;
    items.reserve(names.size());
    for (const auto& n : names) items.emplace_back(reinterpret_cast<const std::uint8_t*>(n.data()), n.size());
    PgParams p;
    p.add_bytea_array(items);
    return p;
}

/// The live set as a temporary table `live`: every id the lists of the
/// manifests not condemned hold, and their catalog records in the packs.
constexpr const char* kLiveTable =
    "CREATE TEMP TABLE live ON COMMIT DROP AS SELECT DISTINCT substring(c.ids FROM i * 32 + 1 FOR 32) AS id "
    "FROM manifest_chunks c JOIN manifests m ON m.id = c.manifest, generate_series(0, length(c.ids) / 32 - 1) AS i "
    "WHERE m.condemned IS NULL "
    "UNION SELECT substring(m.records FROM i * 32 + 1 FOR 32) FROM manifests m, "
    "generate_series(0, length(m.records) / 32 - 1) AS i WHERE m.records IS NOT NULL AND m.condemned IS NULL; "
    // (indexed: with the chunks' statistics from before the mark, which
    // count no condemned rows, the sweep's anti-join was planned as a scan
    // of `live` per condemned chunk: 62 s for a prune of 8,000 files)
    "CREATE INDEX ON live (id); ANALYZE live";

}  // namespace

void ensure_gc_schema(PgConn& conn) {
    // (the system catalogs: information_schema's views took ~7 ms to plan)
    const PgResult has = conn.exec("SELECT to_regclass('sessions') IS NOT NULL AND EXISTS (SELECT 1 FROM pg_attribute "
                                   "WHERE attrelid = to_regclass('chunks') AND attname = 'condemned' AND NOT "
                                   "attisdropped)",
                                   {}, "reading the schema");
    if (has.boolean(0, 0)) return;
    conn.run("BEGIN; "
             "CREATE TABLE IF NOT EXISTS sessions(id BIGSERIAL PRIMARY KEY, host TEXT NOT NULL, pid BIGINT NOT NULL, "
             "kind TEXT NOT NULL, started TIMESTAMPTZ NOT NULL, heartbeat TIMESTAMPTZ NOT NULL); "
             "ALTER TABLE chunks ADD COLUMN IF NOT EXISTS condemned TIMESTAMPTZ; "
             "ALTER TABLE manifests ADD COLUMN IF NOT EXISTS condemned TIMESTAMPTZ; "
             "COMMIT",
             "adding sessions and marks to the catalog");
}

PgSession::PgSession(const std::string& url, std::string_view kind) : conn_(url) {
    ensure_gc_schema(conn_);
    start(kind);
}

PgSession::PgSession(PgConn conn, std::string_view kind) : conn_(std::move(conn)) { start(kind); }

void PgSession::start(std::string_view kind) {
    // (a server lost meanwhile, a restart: registered on a new connection)
    for (int attempt = 1;; ++attempt) try {
            register_once(kind);
            break;
        } catch (const StoreError&) {
            if (attempt >= kPgAttempts || !conn_.broken() || !conn_.reconnect(kPgRetrySeconds)) throw;
        }
    thread_ = std::thread([this] { beat_loop(); });
}

void PgSession::register_once(std::string_view kind) {
    PgParams p;
    p.add_text(host_name()).add(static_cast<std::int64_t>(::getpid())).add_text(kind);
    // The advisory lock is taken before the row is visible: gc never sees a
    // registered session whose lock is free.
    conn_.run("BEGIN", "registering a session");
    try {
        id_ = conn_.exec("INSERT INTO sessions(host, pid, kind, started, heartbeat) VALUES($1, $2, $3, now(), now()) "
                         "RETURNING id",
                         p, "registering a session")
                  .i64(0, 0);
        PgParams l;
        l.add(id_);
        conn_.exec("SELECT pg_advisory_lock($1::bigint)", l, "registering a session");
        conn_.run("COMMIT", "registering a session");
    } catch (...) {
        if (!conn_.broken()) try {
                conn_.run("ROLLBACK");
            } catch (...) {
            }
        throw;
    }
}

PgSession::~PgSession() { (void)end(); }

std::optional<PgConn> PgSession::end() {
    if (ended_) return std::nullopt;
    ended_ = true;
    {
        std::lock_guard g(mutex_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    try {
        PgParams p;
        p.add(id_);
        conn_.exec("DELETE FROM sessions WHERE id = $1", p);
        conn_.exec("SELECT pg_advisory_unlock($1::bigint)", p);
        return std::move(conn_);
    } catch (...) {
        // (its connection closes: gc sees the session dead and drops the row)
        return std::nullopt;
    }
}

void PgSession::beat_loop() {
    std::unique_lock g(mutex_);
    while (!cv_.wait_for(g, kHeartbeat, [this] { return stop_; })) {
        g.unlock();
        try {
            PgParams p;
            p.add(id_);
            if (conn_.broken() && conn_.reconnect(kPgRetrySeconds))
                // A new connection: the lock again (a gc that holds it is
                // dropping the row; the beat below then finds none).
                conn_.exec("SELECT pg_advisory_lock($1::bigint)", p, "beating a session");
            // (No row: gc declared this session dead; the writer's next
            // flush finds out, there is nothing more to beat.)
            conn_.exec("UPDATE sessions SET heartbeat = now() WHERE id = $1", p, "beating a session");
        } catch (const StoreError&) {
            // (a lost server: the next beat reconnects)
        }
        g.lock();
    }
}

namespace {

std::uint64_t read_snapshot_commits(PgConn& c) {
    PgParams k;
    k.add_text(kSnapshotCommitsKey);
    const PgResult r = c.exec("SELECT value::bigint FROM meta WHERE key = $1", k, "counting snapshots");
    return r.rows() == 0 ? 0 : static_cast<std::uint64_t>(r.i64(0, 0));
}

}  // namespace

std::uint64_t PgCatalog::snapshot_commits() {
    PgParams k;
    k.add_text(kSnapshotCommitsKey);
    const PgResult r = query("SELECT value::bigint FROM meta WHERE key = $1", k, "counting snapshots");
    return r.rows() == 0 ? 0 : static_cast<std::uint64_t>(r.i64(0, 0));
}

std::optional<std::uint64_t> PgCatalog::gc_mark(std::span<const std::string> unreferenced, std::uint64_t listed_at) {
    ensure_gc_schema(conn_);
    std::optional<std::uint64_t> condemned;
    transaction(
        [&] {
            condemned.reset();
            // No session registers meanwhile: one that does after this
            // commit sees the marks in its every lookup.
            conn_.run("LOCK TABLE sessions IN SHARE MODE", "marking");
            // Nor does a flush commit meanwhile (it updates its session's
            // row first): a snapshot committed since gc listed what the
            // snapshots name is counted here, one after this commit clears
            // the marks on what it names (write_batch).
            if (!unreferenced.empty() && read_snapshot_commits(conn_) != listed_at) return;
            Mark m;
            m.sessions = conn_.exec("SELECT coalesce(max(id), 0)::bigint FROM sessions", {}, "marking").i64(0, 0);
            m.manifests = conn_.exec("SELECT coalesce(max(id), 0)::bigint FROM manifests", {}, "marking").i64(0, 0);
            m.packs = conn_.exec("SELECT (CASE WHEN is_called THEN last_value ELSE 0 END)::bigint FROM pack_ids", {},
                                 "marking")
                          .i64(0, 0);
            PgParams n = names_param(unreferenced);
            n.add(m.manifests);
            conn_.exec("UPDATE manifests SET condemned = now() WHERE condemned IS NULL AND id <= $2 AND "
                       "name = ANY($1::bytea[])",
                       n, "marking unreferenced files");
            conn_.run(kLiveTable, "gathering the live chunks");
            condemned = conn_.exec("UPDATE chunks c SET condemned = now() WHERE c.condemned IS NULL AND NOT EXISTS "
                                   "(SELECT 1 FROM live l WHERE l.id = c.id)",
                                   {}, "marking dead chunks")
                            .affected();
            PgParams k;
            k.add_text(kGcMarkKey).add_text(fmt::format("{} {} {}", m.sessions, m.manifests, m.packs));
            conn_.exec("INSERT INTO meta(key, value) VALUES($1, $2) ON CONFLICT (key) DO UPDATE SET value = "
                       "excluded.value",
                       k, "recording the mark");
        },
        "marking");
    return condemned;
}

bool PgCatalog::gc_marked() {
    ensure_gc_schema(conn_);
    PgParams p;
    p.add_text(kGcMarkKey);
    return query("SELECT 1 FROM meta WHERE key = $1", p, "reading the mark").rows() > 0;
}

bool PgCatalog::gc_wait(double seconds, double timeout) {
    PgParams k;
    k.add_text(kGcMarkKey);
    const PgResult v = query("SELECT value FROM meta WHERE key = $1", k, "reading the mark");
    if (v.rows() == 0) return false;
    const auto mark = parse_mark(v.text(0, 0));
    if (!mark) throw DamageError(fmt::format("the catalog '{}': an unreadable '{}' setting", conn_.url(), kGcMarkKey));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
        PgParams p;
        p.add(static_cast<std::int64_t>(timeout * 1000));
        // Sessions whose connection is gone (their advisory lock is free)
        // or that stopped beating are dead: their rows go.
        const PgResult s = query("SELECT id, heartbeat < now() - $1::bigint * interval '1 millisecond' FROM sessions "
                                 "ORDER BY id",
                                 p, "listing sessions");
        bool waiting = false;
        for (int i = 0; i < s.rows(); ++i) {
            const std::int64_t id = s.i64(i, 0);
            PgParams q;
            q.add(id);
            bool dead = s.boolean(i, 1);
            const bool free = query("SELECT pg_try_advisory_lock($1::bigint)", q, "checking a session").boolean(0, 0);
            if (free) dead = true;
            if (dead) query("DELETE FROM sessions WHERE id = $1", q, "dropping a dead session");
            if (free) query("SELECT pg_advisory_unlock($1::bigint)", q, "checking a session");
            if (!dead && id <= mark->sessions) waiting = true;
        }
        if (!waiting) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
}

GcSweep PgCatalog::gc_sweep(std::span<const std::string> named, bool named_complete,
                            std::span<const std::string> dead_files, std::uint64_t& quiet) {
    GcSweep r;
    transaction(
        [&] {
            r = GcSweep{};
            PgParams k;
            k.add_text(kGcMarkKey);
            const PgResult v = conn_.exec("SELECT value FROM meta WHERE key = $1 FOR UPDATE", k, "reading the mark");
            if (v.rows() == 0) throw StoreError(fmt::format("the catalog '{}': no mark to sweep", conn_.url()));
            const auto mark = parse_mark(v.text(0, 0));
            if (!mark)
                throw DamageError(fmt::format("the catalog '{}': an unreadable '{}' setting", conn_.url(), kGcMarkKey));
            quiet = static_cast<std::uint64_t>(mark->packs);
            // A flush under way commits first (it holds the epoch FOR SHARE);
            // the next ones wait for this sweep, and those of writers that
            // started before it check that what they list is still there.
            PgParams e;
            e.add_text(kGcEpochKey);
            conn_.exec("UPDATE meta SET value = (value::bigint + 1)::text WHERE key = $1", e, "sweeping");
            PgParams m;
            m.add(mark->manifests);
            // Pending manifests and unnamed backups' files from before the
            // mark: their writers have ended.
            conn_.exec("DELETE FROM manifest_chunks WHERE manifest IN (SELECT id FROM manifests WHERE name IS NULL "
                       "AND id <= $1)",
                       m, "dropping pending files");
            r.manifests_dropped +=
                conn_.exec("DELETE FROM manifests WHERE name IS NULL AND id <= $1", m, "dropping pending files")
                    .affected();
            PgParams f = names_param(dead_files);
            f.add(mark->manifests);
            conn_.exec("DELETE FROM manifest_chunks WHERE manifest IN (SELECT id FROM manifests WHERE id <= $2 AND "
                       "name = ANY($1::bytea[]))",
                       f, "dropping dead backups' files");
            r.manifests_dropped += conn_.exec("DELETE FROM manifests WHERE id <= $2 AND name = ANY($1::bytea[])", f,
                                              "dropping dead backups' files")
                                       .affected();
            // Contents condemned at the mark that no snapshot names now
            // (a writer since the mark could not find them: it stored them
            // again, as a new row).
            if (named_complete) {
                const PgParams u = names_param(named);
                conn_.exec("DELETE FROM manifest_chunks WHERE manifest IN (SELECT id FROM manifests WHERE condemned "
                           "IS NOT NULL AND NOT (name = ANY($1::bytea[])))",
                           u, "dropping unreferenced files");
                r.manifests_dropped += conn_.exec("DELETE FROM manifests WHERE condemned IS NOT NULL AND NOT (name = "
                                                  "ANY($1::bytea[]))",
                                                  u, "dropping unreferenced files")
                                           .affected();
            }
            conn_.exec("UPDATE manifests SET condemned = NULL WHERE condemned IS NOT NULL", {}, "clearing marks");
            conn_.run(kLiveTable, "gathering the live chunks");
            const PgResult dead = conn_.exec("DELETE FROM chunks c WHERE c.condemned IS NOT NULL AND NOT EXISTS "
                                             "(SELECT 1 FROM live l WHERE l.id = c.id) RETURNING stored_size",
                                             {}, "dropping dead chunks");
            r.chunks_removed = static_cast<std::uint64_t>(dead.rows());
            for (int i = 0; i < dead.rows(); ++i) r.stored_bytes_removed += static_cast<std::uint64_t>(dead.i64(i, 0));
            conn_.exec("UPDATE chunks SET condemned = NULL WHERE condemned IS NOT NULL", {}, "clearing marks");
            // (claims of dead writers: a live one's are younger than a minute)
            conn_.exec("DELETE FROM claims WHERE at < now() - interval '60 seconds'", {}, "dropping dead claims");
            conn_.exec("DELETE FROM meta WHERE key = $1", k, "ending the mark");
        },
        "sweeping");
    return r;
}

}  // namespace cdc::store::detail
