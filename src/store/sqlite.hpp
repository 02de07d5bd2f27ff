// SPDX-License-Identifier: Apache-2.0
// A thin RAII layer over SQLite's C API for the store: a connection, prepared
// statements, transactions. Errors become StoreError (DamageError when SQLite
// reports a damaged or foreign file), naming the database.
#pragma once

#include <cdc/store.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace cdc::store::detail {

class Db {
public:
    Db() = default;
    /// Opens (create = also creates) the database and applies the store's
    /// settings (WAL, synchronous=FULL, busy timeout, bounded cache).
    Db(const std::string& path, bool create);
    ~Db();
    Db(Db&& o) noexcept;
    Db& operator=(Db&& o) noexcept;
    Db(const Db&) = delete;
    Db& operator=(const Db&) = delete;

    sqlite3* get() const noexcept { return db_; }
    const std::string& path() const noexcept { return path_; }
    /// Runs SQL; an error names `what` (default: the SQL itself).
    void exec(const char* sql, std::string_view what = {});
    std::int64_t last_insert_rowid() const;
    /// Rows the last INSERT, UPDATE or DELETE changed.
    std::int64_t changes() const;
    /// Throws the error for SQLite code `rc` while doing `what`.
    [[noreturn]] void fail(int rc, std::string_view what) const;

private:
    sqlite3* db_ = nullptr;
    std::string path_;
};

class Stmt {
public:
    Stmt() = default;
    Stmt(Db& db, const char* sql);
    ~Stmt();
    Stmt(Stmt&& o) noexcept;
    Stmt& operator=(Stmt&& o) noexcept;
    Stmt(const Stmt&) = delete;
    Stmt& operator=(const Stmt&) = delete;

    bool prepared() const noexcept { return s_ != nullptr; }
    Stmt& bind(int i, std::int64_t v);
    Stmt& bind(int i, std::span<const std::uint8_t> blob);
    Stmt& bind(int i, std::string_view text);
    Stmt& bind_null(int i);
    /// true: a row is available; false: done. Throws on error (and resets).
    bool step();
    /// Steps to the end, expecting no row.
    void run();
    void reset();

    std::int64_t i64(int col) const;
    std::span<const std::uint8_t> blob(int col) const;
    std::string text(int col) const;
    bool is_null(int col) const;

private:
    Db* db_ = nullptr;
    sqlite3_stmt* s_ = nullptr;
};

/// BEGIN (IMMEDIATE for writes) ... COMMIT; rolls back if not committed.
class Transaction {
public:
    Transaction(Db& db, bool immediate);
    ~Transaction();
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

private:
    Db& db_;
    bool open_ = true;
};

}  // namespace cdc::store::detail
