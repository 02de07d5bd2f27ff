// SPDX-License-Identifier: Apache-2.0
#include "sqlite.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <utility>

#include <sys/stat.h>

namespace cdc::store::detail {

namespace {
// A writer waits this long for another process's commit (a commit is a few
// fsyncs, so waiting long means a stuck process, not a busy one).
constexpr int kBusyTimeoutMs = 60000;

// A store's database files are never opened through a link: in a store
// shared by a group, a member could put `index.db-wal -> /etc/passwd` there.
// SQLite opens its -wal and -shm files with O_NOFOLLOW and the main file
// with SQLITE_OPEN_NOFOLLOW (Store.LinksPutInASharedStoreAreNeverFollowed
// checks both); this names such a file first, a clearer error than
// SQLite's "unable to open database file".
void check_db_files(const std::string& path) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
        const std::string p = path + suffix;
        struct stat st {};
        if (::lstat(p.c_str(), &st) != 0 || S_ISREG(st.st_mode)) continue;
        throw StoreError(fmt::format(
            "'{}' is not a regular file but a {}: refused (a store's files are never followed through links; "
            "someone who can write to the store's directory may have put it there)",
            p, S_ISLNK(st.st_mode) ? "symbolic link" : "special file"));
    }
}

}  // namespace

Db::Db(const std::string& path, bool create) : path_(path) {
    check_db_files(path);
    const int flags =
        SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW;
    const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
        const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
        sqlite3_close(db_);
        db_ = nullptr;
        throw StoreError(fmt::format("cannot open the store's database '{}': {}", path, msg));
    }
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    // WAL: readers never block the writer; FULL: a commit is durable when it
    // returns (the WAL is fsynced), the order docs/STORE.md relies on.
    // secure_delete off: freed pages need not be zeroed (Debian turns it on).
    // A 2 MiB page cache per connection: lookups by chunk id are random, so
    // a bigger cache mostly holds leaves read once (the OS caches the file)
    // and a server's memory grows with each connection's cache.
    try {
        exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA secure_delete=OFF; "
             "PRAGMA cache_size=-2048; PRAGMA temp_store=FILE; PRAGMA foreign_keys=OFF",
             "opening");
    } catch (...) {
        sqlite3_close_v2(db_);  // no destructor runs for a constructor that throws
        db_ = nullptr;
        throw;
    }
}

Db::~Db() {
    if (db_) sqlite3_close_v2(db_);
}

Db::Db(Db&& o) noexcept : db_(std::exchange(o.db_, nullptr)), path_(std::move(o.path_)) {}

Db& Db::operator=(Db&& o) noexcept {
    if (this != &o) {
        if (db_) sqlite3_close_v2(db_);
        db_ = std::exchange(o.db_, nullptr);
        path_ = std::move(o.path_);
    }
    return *this;
}

void Db::fail(int rc, std::string_view what) const {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    const int primary = rc & 0xff;
    if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB)
        throw DamageError(fmt::format("the store's database '{}' is damaged ({}: {}): restore it from a copy "
                                      "(the manifests live only there)",
                                      path_, what, msg));
    if (primary == SQLITE_FULL)
        throw StoreError(fmt::format("the store's database '{}': {}: disk full ({})", path_, what, msg));
    throw StoreError(fmt::format("the store's database '{}': {}: {}", path_, what, msg));
}

void Db::exec(const char* sql, std::string_view what) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
        sqlite3_free(err);
        fail(rc, what.empty() ? std::string_view(sql) : what);
    }
}

std::int64_t Db::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
std::int64_t Db::changes() const { return sqlite3_changes(db_); }

Stmt::Stmt(Db& db, const char* sql) : db_(&db) {
    const int rc = sqlite3_prepare_v3(db.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &s_, nullptr);
    if (rc != SQLITE_OK) db.fail(rc, sql);
}

Stmt::~Stmt() {
    if (s_) sqlite3_finalize(s_);
}

Stmt::Stmt(Stmt&& o) noexcept : db_(o.db_), s_(std::exchange(o.s_, nullptr)) {}

Stmt& Stmt::operator=(Stmt&& o) noexcept {
    if (this != &o) {
        if (s_) sqlite3_finalize(s_);
        db_ = o.db_;
        s_ = std::exchange(o.s_, nullptr);
    }
    return *this;
}

Stmt& Stmt::bind(int i, std::int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
}

Stmt& Stmt::bind(int i, std::span<const std::uint8_t> blob) {
    // SQLITE_STATIC: the caller keeps the bytes alive until the step.
    sqlite3_bind_blob64(s_, i, blob.data(), blob.size(), SQLITE_STATIC);
    return *this;
}

Stmt& Stmt::bind(int i, std::string_view text) {
    // A null pointer would bind NULL, not the empty string.
    sqlite3_bind_text64(s_, i, text.data() ? text.data() : "", text.size(), SQLITE_STATIC, SQLITE_UTF8);
    return *this;
}

Stmt& Stmt::bind_null(int i) {
    sqlite3_bind_null(s_, i);
    return *this;
}

bool Stmt::step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    sqlite3_reset(s_);
    db_->fail(rc, sqlite3_sql(s_));
}

void Stmt::run() {
    while (step()) {
    }
    reset();
}

void Stmt::reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
}

std::int64_t Stmt::i64(int col) const { return sqlite3_column_int64(s_, col); }

std::span<const std::uint8_t> Stmt::blob(int col) const {
    const void* p = sqlite3_column_blob(s_, col);
    const int n = sqlite3_column_bytes(s_, col);
    return {static_cast<const std::uint8_t*>(p), static_cast<std::size_t>(n)};
}

std::string Stmt::text(int col) const {
    const unsigned char* p = sqlite3_column_text(s_, col);
    const int n = sqlite3_column_bytes(s_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n)) : std::string();
}

bool Stmt::is_null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }

Transaction::Transaction(Db& db, bool immediate) : db_(db) { db_.exec(immediate ? "BEGIN IMMEDIATE" : "BEGIN"); }

Transaction::~Transaction() {
    if (open_) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
    db_.exec("COMMIT");
    open_ = false;
}

}  // namespace cdc::store::detail

namespace cdc::store {

void limit_catalog_cache(std::uint64_t bytes) {
    sqlite3_soft_heap_limit64(static_cast<sqlite3_int64>(bytes));
}

}  // namespace cdc::store
