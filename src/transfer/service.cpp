// SPDX-License-Identifier: Apache-2.0
// Server: the gRPC service (authentication, the stream bound, status codes)
// over the sessions of push_session.hpp and pull_session.hpp.
#include "service.hpp"

#include "cdc_transfer.grpc.pb.h"
#include "grpc_log.hpp"
#include "grpc_status.hpp"
#include "protocol.hpp"
#include "pull_session.hpp"
#include "push_session.hpp"
#include "read_ahead_bidi.hpp"
#include "tree_session.hpp"

#include <cdc/digest.hpp>
#include <cdc/snapshot.hpp>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

namespace cdc::transfer {

namespace {

/// Runs f() and turns what it throws into a status.
template <class F>
grpc::Status guarded(F&& f) {
    try {
        return f();
    } catch (const TransferError& e) {
        return {grpc_code(e.code()), e.what()};
    } catch (const store::NotFoundError& e) {
        return {grpc::StatusCode::NOT_FOUND, e.what()};
    } catch (const store::DamageError& e) {
        return {grpc::StatusCode::DATA_LOSS, e.what()};
    } catch (const OptionError& e) {
        return {grpc::StatusCode::FAILED_PRECONDITION, e.what()};
    } catch (const std::exception& e) {
        return {grpc::StatusCode::INTERNAL, e.what()};
    }
}

// Memory of a server that runs for months (docs/TRANSFER.md "Memory",
// bench/transfer/server_memory.py). glibc gives each thread that allocates
// under contention an arena of its own (up to 8 per core), and gRPC's
// threads come and go: a stream's buffers were freed in one arena and the
// next stream's allocated in another. Two arenas, and their free pages given
// back when a stream ends, keep its peak at what the streams in flight need
// (with the fixed windows below: 56 MB over a session of files up to 4 GiB
// that took the server to 207 MB before).
constexpr int kMallocArenas = 2;
// The catalog's page caches, all connections together (a stream opens two to
// five, up to 2 MiB of cache each: three streams at once held 9 MB). Past
// this a cache reuses its oldest pages instead of growing; lookups of chunk
// ids are random reads that a cache hardly helps (pushes took no longer).
constexpr std::uint64_t kCatalogCacheBytes = std::uint64_t{4} << 20;

void limit_process_memory() {
#ifdef __GLIBC__
    mallopt(M_ARENA_MAX, kMallocArenas);
#endif
    store::limit_catalog_cache(kCatalogCacheBytes);
}

void give_back_free_memory() {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

store::ChunkId id_of(const Digest& d) {
    store::ChunkId id;
    std::memcpy(id.data(), d.bytes.data(), id.size());
    return id;
}

using ServiceBase = v1::Transfer::WithCallbackMethod_Push<v1::Transfer::Service>;

class Service final : public ServiceBase {
    using Base = ServiceBase;

public:
    explicit Service(const ServerOptions& o)
        : o_(o),
          open_(o.open),
          max_client_streams_(o.max_client_streams ? o.max_client_streams : std::max(1u, (o.max_streams + 1) / 2)) {
        // Opened once here: an encrypted store's password costs one Argon2id,
        // and the sessions open the store with the key it unlocked.
        const store::Store s = store::Store::open(o.store_dir, o.open);
        info_ = s.info();
        chunker_key_ = s.chunking_key();
        if (info_.encrypted()) {
            open_.password = nullptr;
            open_.unlocked = s.unlocked_key();
        }
        if (o_.idle_timeout_seconds > 0) watchdog_ = std::thread([this] { watch(); });
    }
    ~Service() override {
        {
            std::lock_guard lock(slots_mutex_);
            stopping_ = true;
        }
        watch_cv_.notify_all();
        if (watchdog_.joinable()) watchdog_.join();
    }

    bool key_missing() const noexcept { return info_.profile.keyed && !chunker_key_; }
    bool encrypted() const noexcept { return info_.encrypted(); }

    grpc::Status Info(grpc::ServerContext* ctx, const v1::InfoRequest*, v1::InfoReply* r) override {
        if (auto st = authenticate(ctx); !st.ok()) return st;
        r->set_protocol(kProtocolVersion);
        r->set_algorithm(info_.algorithm);
        r->set_min_size(info_.profile.min_size);
        r->set_avg_size(info_.profile.normal_size);
        r->set_max_size(info_.profile.max_size);
        r->set_keyed(info_.profile.keyed);
        r->set_normalization_level(info_.profile.normalization_level);
        r->set_seed(info_.profile.seed);
        r->set_polynomial(info_.profile.polynomial);
        r->set_window_size(info_.profile.window_size);
        r->set_zstd_level(info_.zstd_level);
        r->set_store_id(info_.store_id);
        r->set_max_message_bytes(static_cast<std::uint32_t>(o_.max_message_bytes ? o_.max_message_bytes : kMaxMessageBytes));
        r->set_max_list_chunks(static_cast<std::uint32_t>(kMaxListChunks));
        // (an encrypted store's groups are of keyed ids, which clients cannot compute)
        r->set_group_lists(!info_.encrypted());
        r->set_group_digest_bytes(kShortGroupDigest);
        r->set_data_ids_optional(true);
        r->set_key_check(info_.key_check);
        r->set_key_missing(key_missing());
        r->set_encrypted(info_.encrypted());
        r->set_tree_ids(true);
        // An encrypted store's chunker key, which its pushing clients cut
        // with, only to a client that proved it holds the token (TLS carries
        // it beyond the loopback interface: listen_problem). Never a key of
        // the master key's other uses.
        if (info_.encrypted() && chunker_key_ && !o_.token.empty())
            r->set_chunker_key(chunker_key_->data(), chunker_key_->size());
        return grpc::Status::OK;
    }

    // Push runs on gRPC's callback API: its requests are read ahead of the
    // one being handled (read_ahead_bidi.hpp), the client's data messages
    // travel while the server decodes and stores the previous one.
    using Base::Push;  // (the synchronous one, which gRPC no longer calls)
    grpc::ServerBidiReactor<v1::PushRequest, v1::PushReply>* Push(grpc::CallbackServerContext* ctx) override {
        return PushReactor::start(push_read_ahead_, [this, ctx](PushReactor& stream) { return push(ctx, stream); });
    }

    grpc::Status Pull(grpc::ServerContext* ctx,
                      grpc::ServerReaderWriter<v1::PullReply, v1::PullRequest>* stream) override {
        Slot slot(*this, ctx);
        if (auto st = admit(ctx, slot); !st.ok()) return st;
        const auto t0 = std::chrono::steady_clock::now();
        std::unique_ptr<PullSession> session;
        const grpc::Status st = guarded([&] {
            session = std::make_unique<PullSession>(o_.store_dir, open_);
            const auto sink = [&](const v1::PullReply& r) {
                if (!stream->Write(r)) throw TransferError(Code::cancelled, "the client went away");
            };
            v1::PullRequest req;
            while (!session->finished() && stream->Read(&req)) {
                slot.touch();
                session->handle(req, sink);
            }
            if (!session->finished())
                return grpc::Status(grpc::StatusCode::CANCELLED, "the pull ended before the end of the file");
            return grpc::Status::OK;
        });
        log(ctx, st, fmt::format("pull: {} payload bytes sent", session ? session->bytes_sent() : 0), t0);
        return st;
    }

    grpc::Status List(grpc::ServerContext* ctx, const v1::ListRequest* req,
                      grpc::ServerWriter<v1::ListReply>* writer) override {
        Slot slot(*this, ctx);
        if (auto st = admit(ctx, slot); !st.ok()) return st;
        return guarded([&] {
            const store::Store s = store::Store::open(o_.store_dir, open_);
            const auto files = s.list(req->prefix());
            v1::ListReply page;
            for (std::size_t i = 0; i < files.size(); ++i) {
                const auto& m = files[i];
                auto* f = page.add_files();
                f->set_name(m.name);
                f->set_size(m.size);
                f->set_mode(m.mode);
                f->set_mtime_ns(m.mtime_ns);
                f->set_digest(m.digest.data(), m.digest.size());
                f->set_chunks(m.chunks);
                f->set_committed_ns(m.committed_ns);
                if (page.files_size() == 512 || i + 1 == files.size()) {
                    if (!writer->Write(page)) return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
                    page.Clear();
                }
            }
            return grpc::Status::OK;
        });
    }

    grpc::Status Hash(grpc::ServerContext* ctx, grpc::ServerReader<v1::HashData>* reader,
                      v1::HashReply* reply) override {
        Slot slot(*this, ctx);
        if (auto st = admit(ctx, slot); !st.ok()) return st;
        const auto t0 = std::chrono::steady_clock::now();
        Hasher h(DigestKind::blake3);
        std::uint64_t n = 0;
        v1::HashData piece;
        while (reader->Read(&piece)) {
            slot.touch();
            h.update(std::as_bytes(std::span(piece.data().data(), piece.data().size())));
            n += piece.data().size();
        }
        if (ctx->IsCancelled()) return {grpc::StatusCode::CANCELLED, "the client went away"};
        const store::ChunkId d = id_of(h.finish());
        reply->set_digest(d.data(), d.size());
        reply->set_size(n);
        log(ctx, grpc::Status::OK, fmt::format("hash: {} bytes", n), t0);
        return grpc::Status::OK;
    }

    grpc::Status HashUnary(grpc::ServerContext* ctx, const v1::HashData* req, v1::HashReply* reply) override {
        Slot slot(*this, ctx);
        if (auto st = admit(ctx, slot); !st.ok()) return st;
        const store::ChunkId d =
            id_of(compute_digest(DigestKind::blake3, std::as_bytes(std::span(req->data().data(), req->data().size()))));
        reply->set_digest(d.data(), d.size());
        reply->set_size(req->data().size());
        return grpc::Status::OK;
    }

    grpc::Status Snapshots(grpc::ServerContext* ctx, const v1::SnapshotsRequest*,
                           grpc::ServerWriter<v1::SnapshotsReply>* writer) override {
        Slot slot(*this, ctx);
        if (auto st = admit(ctx, slot); !st.ok()) return st;
        return guarded([&] {
            const store::Store s = store::Store::open(o_.store_dir, open_);
            const auto all = store::list_snapshots(s);
            v1::SnapshotsReply page;
            for (std::size_t i = 0; i < all.size(); ++i) {
                fill_snapshot_info(all[i], page.add_snapshots());
                if (page.snapshots_size() == 256 || i + 1 == all.size()) {
                    if (!writer->Write(page)) return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
                    page.Clear();
                }
            }
            return grpc::Status::OK;
        });
    }

    grpc::Status SnapshotList(grpc::ServerContext* ctx, const v1::SnapshotListRequest* req,
                              grpc::ServerWriter<v1::SnapshotListReply>* writer) override {
        Slot slot(*this, ctx);
        if (auto st = admit(ctx, slot); !st.ok()) return st;
        return guarded([&] {
            const store::Store s = store::Store::open(o_.store_dir, open_);
            const store::Snapshot snap = store::find_snapshot(s, req->snapshot());
            v1::SnapshotListReply page;
            fill_snapshot_info(snap, page.mutable_snapshot());
            bool gone = false;
            auto flush = [&] {
                if (!writer->Write(page)) gone = true;
                page.Clear();
            };
            store::list_snapshot(s, snap, req->path(), req->recursive(), [&](const store::SnapshotNode& n) {
                if (gone) return;
                auto* m = page.add_nodes();
                m->set_path(n.path);
                m->set_type(n.type);
                m->set_mode(n.mode);
                m->set_uid(n.uid);
                m->set_gid(n.gid);
                m->set_user(n.user);
                m->set_group(n.group);
                m->set_size(n.size);
                m->set_mtime_ns(n.mtime_ns);
                m->set_target(n.target);
                m->set_digest(n.digest);
                if (page.nodes_size() == 1024) flush();
            });
            if (!gone) flush();
            if (gone) return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
            return grpc::Status::OK;
        });
    }

    grpc::Status PullTree(grpc::ServerContext* ctx,
                          grpc::ServerReaderWriter<v1::PullTreeReply, v1::PullTreeRequest>* stream) override {
        Slot slot(*this, ctx);
        if (auto st = admit(ctx, slot); !st.ok()) return st;
        const auto t0 = std::chrono::steady_clock::now();
        std::unique_ptr<TreePullSession> session;
        const grpc::Status st = guarded([&] {
            session = std::make_unique<TreePullSession>(o_.store_dir, open_);
            const auto sink = [&](const v1::PullTreeReply& r) {
                if (!stream->Write(r)) throw TransferError(Code::cancelled, "the client went away");
            };
            v1::PullTreeRequest req;
            while (!session->finished() && stream->Read(&req)) {
                slot.touch();
                session->handle(req, sink);
            }
            if (!session->finished())
                return grpc::Status(grpc::StatusCode::CANCELLED, "the tree pull ended before its end");
            return grpc::Status::OK;
        });
        log(ctx, st, fmt::format("tree pull: {} payload bytes sent", session ? session->bytes_sent() : 0), t0);
        return st;
    }

private:
    // Push streams that read their next request while they handle one
    // (read_ahead_bidi.hpp): each holds one more data message (~1 MiB). One
    // push at a time, the usual case, reads ahead; a burst of pushes holds
    // one message more than before (with two at a time, four pushes of 64
    // MiB at once took a long session's peak to 66 MB).
    static constexpr int kPushReadAheadStreams = 1;

    using PushReactor = ReadAheadBidi<v1::PushRequest, v1::PushReply>;

    grpc::Status push(grpc::ServerContextBase* ctx, PushReactor& stream) {
        Slot slot(*this, ctx);
        if (auto st = admit(ctx, slot); !st.ok()) return st;
        if (key_missing())
            return {grpc::StatusCode::FAILED_PRECONDITION,
                    "this server holds no key for its keyed store (it was started without --key-file): it takes no "
                    "push (pull, ls and hash work)"};
        const auto t0 = std::chrono::steady_clock::now();
        std::unique_ptr<PushSession> session;
        grpc::Status st = guarded([&] {
            session = std::make_unique<PushSession>(o_.store_dir, open_);
            session->refuse_replacing(append_only(ctx));
            const auto sink = [&](const v1::PushReply& r) { stream.write(r); };
            v1::PushRequest req;
            while (!session->finished() && stream.read(req)) {
                slot.touch();
                session->handle(req, sink);
            }
            if (!session->finished())
                return grpc::Status(grpc::StatusCode::CANCELLED,
                                    "the push ended before finish: the open file was not committed");
            return grpc::Status::OK;
        });
        if (session && !session->finished()) session->abort();
        slot.release();  // before the log line: a client that waits for it may start a stream at once
        if (session) {
            const PushTotals& t = session->totals();
            log(ctx, st, fmt::format("push: {} file(s), {} bytes, {} new chunks ({} bytes)", t.files, t.bytes,
                                     t.new_chunks, t.new_bytes),
                t0);
        } else {
            log(ctx, st, "push", t0);
        }
        return st;
    }

    /// A stream being served: counted against max_streams and against its
    /// client's share (max_client_streams), watched for idleness.
    struct Slot {
        Slot(Service& s, grpc::ServerContextBase* ctx) : s_(s), ctx_(ctx), client_(client_of(ctx->peer())) {
            touch();
            std::lock_guard lock(s_.slots_mutex_);
            s_.slots_.insert(this);
            unsigned& mine = s_.per_client_[client_];
            if (s_.active_ >= s_.o_.max_streams) {
                refusal_ = fmt::format("the server is busy ({} streams at once at most); try again", s_.o_.max_streams);
            } else if (mine >= s_.max_client_streams_) {
                refusal_ = fmt::format("the server is busy for this client ({} streams from one client at once at "
                                       "most); try again",
                                       s_.max_client_streams_);
            } else {
                ++s_.active_;
                ++mine;
                taken_ = true;
            }
            if (!taken_ && mine == 0) s_.per_client_.erase(client_);
        }
        ~Slot() {
            {
                std::lock_guard lock(s_.slots_mutex_);
                s_.slots_.erase(this);
            }
            release();
            // (the stream's session, declared after its slot, is gone: 1-2 ms)
            if (taken_) give_back_free_memory();
        }
        Slot(const Slot&) = delete;
        Slot& operator=(const Slot&) = delete;
        void release() {
            std::lock_guard lock(s_.slots_mutex_);
            if (taken_ && !released_) {
                --s_.active_;
                if (--s_.per_client_[client_] == 0) s_.per_client_.erase(client_);
            }
            released_ = true;
        }
        void touch() { last_ns_.store(now_ns()); }
        Service& s_;
        grpc::ServerContextBase* ctx_;
        std::string client_;
        bool taken_ = false;
        std::string refusal_;  ///< why it was not taken
        bool released_ = false;
        std::atomic<std::int64_t> last_ns_{0};
    };

    /// A client, for the per-client bound: the peer's address without its
    /// port ("ipv4:10.0.0.7", "ipv6:[::1]"; every local unix: client is one).
    static std::string client_of(const std::string& peer) {
        if (peer.starts_with("unix:") || peer.starts_with("unix-abstract:")) return "unix:";
        const std::size_t colon = peer.rfind(':');
        const std::size_t bracket = peer.rfind(']');
        if (colon == std::string::npos || (bracket != std::string::npos && colon < bracket)) return peer;
        return peer.substr(0, colon);
    }



    static std::int64_t now_ns() {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }

    /// Cancels streams that received nothing for idle_timeout_seconds: a
    /// client that stalls must not hold the store's lock (gc waits) forever.
    void watch() {
        const auto idle = static_cast<std::int64_t>(o_.idle_timeout_seconds * 1e9);
        const auto period = std::chrono::milliseconds(
            std::clamp<std::int64_t>(static_cast<std::int64_t>(o_.idle_timeout_seconds * 250), 10, 5000));
        std::unique_lock lock(slots_mutex_);
        while (!watch_cv_.wait_for(lock, period, [&] { return stopping_; })) {
            const std::int64_t now = now_ns();
            for (Slot* slot : slots_)
                if (now - slot->last_ns_.load() > idle) {
                    if (o_.log)
                        o_.log(fmt::format("{}: nothing received for {} s: stream cancelled", slot->ctx_->peer(),
                                           o_.idle_timeout_seconds));
                    slot->ctx_->TryCancel();
                    slot->touch();  // once
                }
        }
    }

    grpc::Status authenticate(grpc::ServerContextBase* ctx) const {
        if (o_.token.empty()) return grpc::Status::OK;
        const auto& md = ctx->client_metadata();
        const auto it = md.find("authorization");
        if (it != md.end()) {
            const std::string_view header(it->second.data(), it->second.size());
            if (bearer_matches(header, o_.token)) return grpc::Status::OK;
            if (!o_.append_token.empty() && bearer_matches(header, o_.append_token)) return grpc::Status::OK;
        }
        return {grpc::StatusCode::UNAUTHENTICATED, "a valid token is required (--token-file or CDC_TOKEN)"};
    }

    /// The client holds the append-only token (authenticate() passed): it
    /// may add, never replace.
    bool append_only(grpc::ServerContextBase* ctx) const {
        if (o_.token.empty() || o_.append_token.empty()) return false;
        const auto& md = ctx->client_metadata();
        const auto it = md.find("authorization");
        return it == md.end() || !bearer_matches(std::string_view(it->second.data(), it->second.size()), o_.token);
    }

    grpc::Status admit(grpc::ServerContextBase* ctx, const Slot& slot) const {
        if (auto st = authenticate(ctx); !st.ok()) return st;
        if (!slot.taken_) return {grpc::StatusCode::RESOURCE_EXHAUSTED, slot.refusal_};
        return grpc::Status::OK;
    }

    void log(grpc::ServerContextBase* ctx, const grpc::Status& st, const std::string& what,
             std::chrono::steady_clock::time_point t0) const {
        if (!o_.log) return;
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (st.ok())
            o_.log(fmt::format("{} {} in {:.3f} s", ctx->peer(), what, s));
        else
            o_.log(fmt::format("{} {} failed after {:.3f} s ({}): {}", ctx->peer(), what, s,
                               code_name(code_of(st.error_code())), st.error_message()));
    }

    const ServerOptions& o_;
    store::OpenOptions open_;  // the sessions': an encrypted store's unlocked key instead of its password
    store::StoreInfo info_;
    std::optional<Key> chunker_key_;  // a keyed store's, when the server holds it
    unsigned max_client_streams_ = 1;
    unsigned active_ = 0;                                 // (slots_mutex_)
    std::unordered_map<std::string, unsigned> per_client_;  // (slots_mutex_)
    std::mutex slots_mutex_;
    std::condition_variable watch_cv_;
    std::set<Slot*> slots_;
    bool stopping_ = false;
    std::thread watchdog_;
    ReadAheadBudget push_read_ahead_{kPushReadAheadStreams};
};

}  // namespace

struct Server::Impl {
    ServerOptions options;
    std::unique_ptr<Service> service;
    std::unique_ptr<grpc::Server> server;
    int port = 0;
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>()) {
    impl_->options = std::move(options);
    const ServerOptions& o = impl_->options;
    const bool tls = !o.tls_cert_pem.empty() && !o.tls_key_pem.empty();
    if (const std::string why = listen_problem(o.listen, tls, !o.token.empty()); !why.empty()) throw OptionError(why);
    if (o.max_streams == 0) throw OptionError("max streams 0 is invalid: at least 1", "max_streams");
    if (!o.append_token.empty() && o.token.empty())
        throw OptionError("an append-only token needs a full-access token beside it (--token-file, or the user's own "
                          "on the loopback interface)",
                          "append_token");
    if (!o.append_token.empty() && o.append_token == o.token)
        throw OptionError("the append-only token is the full-access token: give another", "append_token");
    if (o.max_client_streams > o.max_streams)
        throw OptionError(fmt::format("max client streams {} is invalid: at most max streams ({})",
                                      o.max_client_streams, o.max_streams),
                          "max_client_streams");
    // (a bound the watchdog's nanoseconds hold; inf, nan or 1e300 would not)
    if (!(o.idle_timeout_seconds >= 0 && o.idle_timeout_seconds <= kMaxIdleTimeoutSeconds))
        throw OptionError(fmt::format("idle timeout {} is invalid: 0 (never) to {} seconds", o.idle_timeout_seconds,
                                      kMaxIdleTimeoutSeconds),
                          "idle_timeout");
    limit_process_memory();  // before gRPC starts its threads
    impl_->service = std::make_unique<Service>(o);
    route_grpc_log(o.log);  // gRPC's lines as sentences of this server's log
    grpc::ServerBuilder b;
    std::shared_ptr<grpc::ServerCredentials> creds;
    if (tls) {
        grpc::SslServerCredentialsOptions so;
        so.pem_key_cert_pairs.push_back({o.tls_key_pem, o.tls_cert_pem});
        creds = grpc::SslServerCredentials(so);
    } else {
        creds = grpc::InsecureServerCredentials();
    }
    b.AddListeningPort(o.listen, creds, &impl_->port);
    b.RegisterService(impl_->service.get());
    if (o.max_message_bytes) {
        b.SetMaxReceiveMessageSize(static_cast<int>(o.max_message_bytes));
        b.SetMaxSendMessageSize(static_cast<int>(o.max_message_bytes));
    }
    // A peer that vanished without closing its connection is found by pings.
    b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
    b.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
    // No BDP probing, as on the clients' channels: with it, each stream's
    // receive window grows with the bandwidth-delay product gRPC estimates,
    // which a loaded machine inflates (pings answered late): one `hash --via`
    // of 256 MiB, whose sender outruns the hashing, held 20-50 MiB more, and
    // a long-lived server passed 64 MB whatever else was bounded. Without it
    // a stream's window is the message being read and 64 KiB more (gRPC 1.51
    // ignores the lookahead option). A push reads its next request while it
    // handles one (Push above), so the client sends a data message while the
    // server stores the previous; a pull or a hash is read by its handler's
    // thread alone, and on long links about one message (~1 MiB) travels
    // per round trip (docs/BENCHMARKS.md "Chunked transfer").
    b.AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    grpc::ResourceQuota quota("cdc-serve");
    quota.SetMaxThreads(static_cast<int>(o.max_streams) * 2 + 8);
    b.SetResourceQuota(quota);
    impl_->server = b.BuildAndStart();
    if (!impl_->server || impl_->port == 0)
        throw TransferError(Code::unavailable, fmt::format("cannot listen on '{}' (address in use, or not an address "
                                                           "of this machine?)",
                                                           o.listen));
}

Server::~Server() {
    if (impl_->server) impl_->server->Shutdown(std::chrono::system_clock::now());
    route_grpc_log(nullptr);
}

int Server::port() const noexcept { return impl_->port; }

bool Server::key_missing() const noexcept { return impl_->service->key_missing(); }

bool Server::encrypted() const noexcept { return impl_->service->encrypted(); }

void Server::wait() { impl_->server->Wait(); }

void Server::shutdown(double grace_seconds) {
    impl_->server->Shutdown(std::chrono::system_clock::now() +
                            std::chrono::milliseconds(static_cast<long>(grace_seconds * 1000)));
}

}  // namespace cdc::transfer
