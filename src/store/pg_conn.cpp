// SPDX-License-Identifier: Apache-2.0
#include "pg_conn.hpp"

#include <fmt/format.h>
#include <libpq-fe.h>

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace cdc::store::detail {

namespace {

constexpr const char* kHexDigits = "0123456789abcdef";

void append_hex(std::string& out, std::span<const std::uint8_t> b) {
    for (const std::uint8_t c : b) {
        out += kHexDigits[c >> 4];
        out += kHexDigits[c & 15];
    }
}

std::string trimmed(const char* s) {
    std::string m = s ? s : "";
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
    // libpq's multi-line messages on one line
    for (auto& c : m)
        if (c == '\n' || c == '\t') c = ' ';
    return m;
}

// CDC_PG_STATS: the statements a process sent, at its exit (a round trip
// each: bench/ and the engine tests read it to tell a flush that batches
// from one that talks per file).
struct Statements {
    std::atomic<std::uint64_t> sent{0}, waited_ns{0};
    ~Statements() {
        if (const char* v = std::getenv("CDC_PG_STATS"); v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0)
            std::fprintf(stderr, "PostgreSQL: %llu statements, %.3f s waiting for their answers (summed over threads)\n",
                         static_cast<unsigned long long>(sent.load()), static_cast<double>(waited_ns.load()) / 1e9);
    }
};
Statements statements;

// Counts a statement and the time until its answer.
class Timed {
public:
    Timed() : start_(std::chrono::steady_clock::now()) { statements.sent.fetch_add(1, std::memory_order_relaxed); }
    ~Timed() {
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_);
        statements.waited_ns.fetch_add(static_cast<std::uint64_t>(ns.count()), std::memory_order_relaxed);
    }
    Timed(const Timed&) = delete;
    Timed& operator=(const Timed&) = delete;

private:
    std::chrono::steady_clock::time_point start_;
};

// Connections given back, for the next PgConn of the same URL in this
// process: a login (a backend started, SCRAM's key derivation) costs ~6 ms
// on loopback, and a store opened per push or pull makes several (the
// catalog, the writer's, its session, a read view, lent lookups): the
// logins were half of a one-file push to a server.
class IdleConnections {
public:
    /// At most this many idle connections a URL; one idle longer than
    /// kKeep is closed (a server keeps no login open for long for nothing).
    static constexpr std::size_t kMax = 8;
    static constexpr auto kKeep = std::chrono::seconds(30);

    /// An idle connection of `url` that still answers, or nullptr.
    pg_conn* take(const std::string& url) {
        const pid_t pid = ::getpid();
        for (;;) {
            pg_conn* c = nullptr;
            {
                const std::lock_guard lock(m_);
                expire(pid);
                for (auto it = idle_.rbegin(); it != idle_.rend(); ++it)
                    if (it->pid == pid && it->url == url) {
                        c = it->c;
                        idle_.erase(std::next(it).base());
                        break;
                    }
            }
            if (c == nullptr) return nullptr;
            if (quiet(c)) return c;
            PQfinish(c);  // (the server closed it, or spoke unasked: a new one)
        }
    }

    /// Keeps `c` for the next connection of `url` if it is idle and clean
    /// (DISCARD ALL: no lock, temporary table or setting of its last user
    /// is left), else closes it.
    void give(pg_conn* c, const std::string& url, pid_t owner) {
        if (owner != ::getpid()) return;  // (a forked child's copy: the parent's socket, left alone)
        bool keep = PQstatus(c) == CONNECTION_OK && PQtransactionStatus(c) == PQTRANS_IDLE;
        if (keep) {
            PGresult* r = PQexec(c, "DISCARD ALL");
            keep = r != nullptr && PQresultStatus(r) == PGRES_COMMAND_OK;
            PQclear(r);
        }
        if (keep) {
            const std::lock_guard lock(m_);
            if (stop_) {  // (the process is exiting: nothing kept, no reaper started)
                PQfinish(c);
                return;
            }
            expire(owner);
            std::size_t same = 0;
            for (const Idle& i : idle_) same += i.url == url ? 1u : 0u;
            if (same < kMax) {
                idle_.push_back({c, url, owner, std::chrono::steady_clock::now()});
                if (reaper_ != owner) {  // (none yet in this process, or it ended with nothing left)
                    reaper_ = owner;
                    std::thread([this] { reap(); }).detach();
                }
                return;
            }
        }
        PQfinish(c);
    }

    /// Whether a connection to `url` succeeded in this process.
    bool answered(const std::string& url) {
        const std::lock_guard lock(m_);
        return std::find(answered_.begin(), answered_.end(), url) != answered_.end();
    }
    void answered_now(const std::string& url) {
        const std::lock_guard lock(m_);
        if (std::find(answered_.begin(), answered_.end(), url) == answered_.end()) answered_.push_back(url);
    }

    /// Closes every idle connection (at exit: each server sees its client leave).
    void close_all() {
        const std::lock_guard lock(m_);
        stop_ = true;
        wake_.notify_all();
        const pid_t pid = ::getpid();
        for (const Idle& i : idle_)
            if (i.pid == pid) PQfinish(i.c);
        idle_.clear();
    }

private:
    struct Idle {
        pg_conn* c;
        std::string url;
        pid_t pid;
        std::chrono::steady_clock::time_point since;
    };

    // Drops what is too old, and a forked parent's connections (not closed:
    // the socket is the parent's).
    void expire(pid_t pid) {
        const auto now = std::chrono::steady_clock::now();
        std::erase_if(idle_, [&](const Idle& i) {
            if (i.pid != pid) return true;
            if (now - i.since < kKeep) return false;
            PQfinish(i.c);
            return true;
        });
    }

    // Closes what stayed idle kKeep, until nothing is left: a server
    // between sessions keeps no login open for long.
    void reap() {
        std::unique_lock lock(m_);
        const pid_t pid = ::getpid();
        while (!stop_ && !idle_.empty()) {
            wake_.wait_for(lock, kKeep / 2);
            if (!stop_) expire(pid);
        }
        reaper_ = 0;
    }

    // An idle connection has nothing to say: anything to read is the
    // server closing it (a restart, an administrator) or a notice.
    static bool quiet(pg_conn* c) {
        if (PQstatus(c) != CONNECTION_OK || PQtransactionStatus(c) != PQTRANS_IDLE) return false;
        pollfd p{PQsocket(c), POLLIN, 0};
        return ::poll(&p, 1, 0) == 0;
    }

    std::mutex m_;
    std::condition_variable wake_;
    std::vector<Idle> idle_;
    std::vector<std::string> answered_;  // (a few URLs a process)
    pid_t reaper_ = 0;  // (the process whose reaper runs: a forked child starts its own)
    bool stop_ = false;
};

// Never destroyed (a PgConn in a static object may outlive any static);
// its connections are closed at exit.
IdleConnections& idle_connections() {
    static IdleConnections* const pool = [] {
        auto* p = new IdleConnections;
        std::atexit([] { idle_connections().close_all(); });
        return p;
    }();
    return *pool;
}

std::uint64_t get_be(const char* p, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
    return v;
}

}  // namespace

// ---------------------------------------------------------------- params

PgParams& PgParams::add(std::int64_t v) {
    values_.push_back(std::to_string(v));
    null_.push_back(false);
    formats_.push_back(0);
    return *this;
}

PgParams& PgParams::add_bytes(std::span<const std::uint8_t> b) {
    values_.emplace_back(reinterpret_cast<const char*>(b.data()), b.size());
    null_.push_back(false);
    formats_.push_back(1);
    return *this;
}

PgParams& PgParams::add_bytes(std::string_view b) {
    values_.emplace_back(b);
    null_.push_back(false);
    formats_.push_back(1);
    return *this;
}

PgParams& PgParams::add_text(std::string_view t) {
    values_.emplace_back(t);
    null_.push_back(false);
    formats_.push_back(0);
    return *this;
}

PgParams& PgParams::add_bytea_array(const std::vector<std::span<const std::uint8_t>>& items) {
    // {"\\x00ff",...}: in an array literal a backslash escapes the next
    // character, so each element reaches bytea's input as \x00ff.
    std::string s = "{";
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) s += ',';
        s += "\"\\\\x";
        append_hex(s, items[i]);
        s += '"';
    }
    s += '}';
    values_.push_back(std::move(s));
    null_.push_back(false);
    formats_.push_back(0);
    return *this;
}

PgParams& PgParams::add_int_array(const std::vector<std::int64_t>& items) {
    std::string s = "{";
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(items[i]);
    }
    s += '}';
    values_.push_back(std::move(s));
    null_.push_back(false);
    formats_.push_back(0);
    return *this;
}

PgParams& PgParams::add_null() {
    values_.emplace_back();
    null_.push_back(true);
    formats_.push_back(0);
    return *this;
}

// ---------------------------------------------------------------- results

PgResult& PgResult::operator=(PgResult&& o) noexcept {
    if (this != &o) {
        if (r_) PQclear(r_);
        r_ = o.r_;
        o.r_ = nullptr;
    }
    return *this;
}

PgResult::~PgResult() {
    if (r_) PQclear(r_);
}

int PgResult::rows() const { return r_ ? PQntuples(r_) : 0; }

bool PgResult::null(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }

std::int64_t PgResult::i64(int row, int col) const {
    if (PQgetisnull(r_, row, col)) return 0;
    const int n = PQgetlength(r_, row, col);
    const char* p = PQgetvalue(r_, row, col);
    switch (n) {
        case 8: return static_cast<std::int64_t>(get_be(p, 8));
        case 4: return static_cast<std::int32_t>(static_cast<std::uint32_t>(get_be(p, 4)));
        case 2: return static_cast<std::int16_t>(static_cast<std::uint16_t>(get_be(p, 2)));
        default:
            throw DamageError(fmt::format("the PostgreSQL catalog: column {} holds {} bytes where an integer was "
                                          "expected",
                                          PQfname(r_, col), n));
    }
}

std::span<const std::uint8_t> PgResult::bytes(int row, int col) const {
    return {reinterpret_cast<const std::uint8_t*>(PQgetvalue(r_, row, col)),
            static_cast<std::size_t>(PQgetlength(r_, row, col))};
}

std::string PgResult::text(int row, int col) const {
    return std::string(PQgetvalue(r_, row, col), static_cast<std::size_t>(PQgetlength(r_, row, col)));
}

bool PgResult::boolean(int row, int col) const {
    const auto b = bytes(row, col);
    return b.size() == 1 && b[0] != 0;
}

std::uint64_t PgResult::affected() const {
    const char* n = r_ ? PQcmdTuples(r_) : nullptr;
    return n && *n ? std::stoull(n) : 0;
}

// ---------------------------------------------------------------- connection

PgConn::PgConn(std::string url) : url_(std::move(url)) { open(); }

PgConn::PgConn(PgConn&& o) noexcept : c_(o.c_), url_(std::move(o.url_)), pid_(o.pid_) { o.c_ = nullptr; }

PgConn& PgConn::operator=(PgConn&& o) noexcept {
    if (this != &o) {
        release();
        c_ = o.c_;
        o.c_ = nullptr;
        url_ = std::move(o.url_);
        pid_ = o.pid_;
    }
    return *this;
}

PgConn::~PgConn() { release(); }

void PgConn::release() noexcept {
    if (c_ == nullptr) return;
    pg_conn* c = std::exchange(c_, nullptr);
    try {
        idle_connections().give(c, url_, pid_);
    } catch (...) {
        PQfinish(c);  // (no memory to keep it: closed)
    }
}

void PgConn::open() {
    if (c_) PQfinish(std::exchange(c_, nullptr));  // (a lost connection: never kept)
    pid_ = ::getpid();
    c_ = idle_connections().take(url_);
    if (c_ != nullptr) return;
    if (!idle_connections().answered(url_)) {
        connect();  // (a first contact: a wrong address or password is said at once)
        return;
    }
    // A server that answered this process before and refuses now is
    // restarting (its shutdown, its recovery): a clear error only if it
    // stays away.
    if (!reconnect(kRetrySeconds)) connect();
}

void PgConn::connect() {
    if (c_) PQfinish(std::exchange(c_, nullptr));
    c_ = PQconnectdb(url_.c_str());
    if (c_ == nullptr) throw StoreError(fmt::format("the catalog '{}': out of memory connecting", url_));
    if (PQstatus(c_) != CONNECTION_OK) {
        const std::string why = trimmed(PQerrorMessage(c_));
        PQfinish(c_);
        c_ = nullptr;
        throw StoreError(fmt::format("cannot connect to the catalog '{}': {}", url_, why));
    }
    // Quiet notices ("relation exists, skipping") on stderr.
    PQsetNoticeProcessor(c_, [](void*, const char*) {}, nullptr);
    idle_connections().answered_now(url_);
}

bool PgConn::broken() const { return c_ == nullptr || PQstatus(c_) != CONNECTION_OK; }

bool PgConn::reconnect(double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    auto pause = std::chrono::milliseconds(100);
    pid_ = ::getpid();
    for (;;) {
        try {
            connect();
            return true;
        } catch (const StoreError&) {
            if (std::chrono::steady_clock::now() + pause > until) return false;
            std::this_thread::sleep_for(pause);
            pause = std::min(pause * 2, std::chrono::milliseconds(2000));
        }
    }
}

PgResult PgConn::exec(const char* sql, const PgParams& params, std::string_view what) {
    sqlstate_.clear();
    retryable_ = false;
    if (c_ == nullptr) throw StoreError(fmt::format("the catalog '{}': not connected", url_));
    const int n = params.size();
    std::vector<const char*> values(static_cast<std::size_t>(n));
    std::vector<int> lengths(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        const auto k = static_cast<std::size_t>(i);
        values[k] = params.null_[k] ? nullptr : params.values_[k].data();
        lengths[k] = static_cast<int>(params.values_[k].size());
    }
    PgResult r;
    {
        const Timed timed;
        r = PgResult(PQexecParams(c_, sql, n, nullptr, values.data(), lengths.data(), params.formats_.data(), 1));
    }
    return checked(std::move(r), what);
}

PgResult PgConn::checked(PgResult r, std::string_view what) {
    PGresult* raw = r.get();
    const ExecStatusType st = raw ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
    const char* state = raw ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : nullptr;
    sqlstate_ = state ? state : "";
    const bool lost = PQstatus(c_) != CONNECTION_OK;
    // Deadlock, serialization failure, a unique key another writer took
    // meanwhile, a lost connection, the server shutting down: a new
    // attempt of the transaction may succeed.
    retryable_ = lost || sqlstate_ == "40P01" || sqlstate_ == "40001" || sqlstate_ == "23505" ||
                 sqlstate_.starts_with("08") || sqlstate_ == "57P01";
    std::string why = trimmed(raw ? PQresultErrorMessage(raw) : nullptr);
    if (why.empty()) why = trimmed(PQerrorMessage(c_));
    throw StoreError(fmt::format("the catalog '{}'{}{}: {}{}", url_, what.empty() ? "" : ", ", what, why,
                                 lost ? " (the connection to the server was lost)" : ""));
}

void PgConn::run(const char* sql, std::string_view what) {
    sqlstate_.clear();
    retryable_ = false;
    if (c_ == nullptr) throw StoreError(fmt::format("the catalog '{}': not connected", url_));
    PgResult r;
    {
        const Timed timed;
        r = PgResult(PQexec(c_, sql));
    }
    (void)checked(std::move(r), what);
}

}  // namespace cdc::store::detail
