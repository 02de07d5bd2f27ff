// SPDX-License-Identifier: Apache-2.0
// A PostgreSQL connection for the PostgreSQL catalog (libpq): statements
// with parameters (integers as text, byte strings as binary), results in
// binary (integers read by their width, byte strings as they are), errors
// as StoreError naming the server, and reconnection after a lost server.
#pragma once

#include <cdc/store.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct pg_conn;
struct pg_result;

namespace cdc::store::detail {

/// Parameters of one statement ($1, $2, ... in order of add).
class PgParams {
public:
    PgParams& add(std::int64_t v);
    PgParams& add(std::uint64_t v) { return add(static_cast<std::int64_t>(v)); }
    PgParams& add_bytes(std::span<const std::uint8_t> b);
    PgParams& add_bytes(std::string_view b);
    /// Text (UTF-8) for a text column.
    PgParams& add_text(std::string_view t);
    /// A bytea[] in its text form (= ANY($n::bytea[]), unnest).
    PgParams& add_bytea_array(const std::vector<std::span<const std::uint8_t>>& items);
    /// A bigint[] in its text form.
    PgParams& add_int_array(const std::vector<std::int64_t>& items);
    PgParams& add_null();
    int size() const noexcept { return static_cast<int>(values_.size()); }

private:
    friend class PgConn;
    std::vector<std::string> values_;
    std::vector<bool> null_;
    std::vector<int> formats_;
};

/// A result's rows (binary columns).
class PgResult {
public:
    PgResult() = default;
    explicit PgResult(pg_result* r) : r_(r) {}
    PgResult(PgResult&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
    PgResult& operator=(PgResult&& o) noexcept;
    PgResult(const PgResult&) = delete;
    PgResult& operator=(const PgResult&) = delete;
    ~PgResult();

    int rows() const;
    bool null(int row, int col) const;
    /// An integer column (int2, int4, int8 by its width); DamageError for another width.
    std::int64_t i64(int row, int col) const;
    std::span<const std::uint8_t> bytes(int row, int col) const;
    std::string text(int row, int col) const;
    /// A boolean column (binary: one byte); false for NULL.
    bool boolean(int row, int col) const;
    /// The number of rows a command touched.
    std::uint64_t affected() const;
    pg_result* get() const noexcept { return r_; }

private:
    pg_result* r_ = nullptr;
};

/// One connection (a thread at a time). A connection closed idle is kept
/// for the next PgConn of the same URL in this process (reset with DISCARD
/// ALL; at most 8 a URL, none kept longer than 30 s idle).
class PgConn {
public:
    /// Connects (or takes an idle connection of `url`; a server that
    /// answered this process before is given kRetrySeconds to come back
    /// from a restart); StoreError naming `url` (never a password) with the
    /// server's reason (refused, authentication failed, no such database).
    explicit PgConn(std::string url);
    PgConn(PgConn&&) noexcept;
    PgConn& operator=(PgConn&&) noexcept;
    PgConn(const PgConn&) = delete;
    PgConn& operator=(const PgConn&) = delete;
    ~PgConn();

    const std::string& url() const noexcept { return url_; }
    /// Runs `sql`; StoreError (naming `what` and the server) on failure.
    PgResult exec(const char* sql, const PgParams& params = {}, std::string_view what = {});
    /// Several statements without parameters.
    void run(const char* sql, std::string_view what = {});
    /// Whether the last failure was one a retry of the transaction may cure
    /// (deadlock, serialization failure, unique violation, lost connection).
    bool retryable() const noexcept { return retryable_; }
    /// Whether the connection is down (the server went away).
    bool broken() const;
    /// Reconnects, retrying with backoff for up to `seconds`; false if the
    /// server did not come back.
    bool reconnect(double seconds);
    /// The server's error for the last statement (empty if none).
    const std::string& sqlstate() const noexcept { return sqlstate_; }

    /// How long a server that answered this process before may refuse a
    /// new connection (a restart) before that is an error.
    static constexpr double kRetrySeconds = 30;

private:
    /// An idle connection of the URL, or a new one (retried for up to
    /// kRetrySeconds if the server answered this process before).
    void open();
    /// A new connection, tried once.
    void connect();
    /// Gives the connection back (kept idle, or closed).
    void release() noexcept;
    /// `r` if it succeeded, else the StoreError (sqlstate_ and retryable_ set).
    PgResult checked(PgResult r, std::string_view what);
    pg_conn* c_ = nullptr;
    std::string url_;
    int pid_ = 0;  // (the process that opened it: a forked child never uses or closes it)
    std::string sqlstate_;
    bool retryable_ = false;
};

}  // namespace cdc::store::detail
