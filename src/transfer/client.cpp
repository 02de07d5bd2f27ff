// SPDX-License-Identifier: Apache-2.0
// Client: the gRPC side of the client (channel, credentials, metadata, the
// streams handed to push_files / pull_file).
#include "client.hpp"

#include "progress.hpp"

#include "cdc_transfer.grpc.pb.h"
#include "grpc_log.hpp"
#include "grpc_status.hpp"
#include "tls_probe.hpp"

#include <cdc/digest.hpp>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

namespace cdc::transfer {

namespace {

constexpr std::size_t kFrameHeader = 5;  // gRPC's length-prefixed message header

/// Cancels a call once one of its reads or writes has waited for the server
/// longer than the client's timeout (ClientOptions::timeout_seconds); the
/// client's own work between them does not count. Hold a Wait around each
/// call that blocks on the server.
class StallWatch {
public:
    StallWatch(grpc::ClientContext& ctx, double seconds) : ctx_(ctx) {
        if (seconds <= 0) return;
        limit_ns_ = static_cast<std::int64_t>(seconds * 1e9);
        thread_ = std::thread([this] { watch(); });
    }
    ~StallWatch() {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        cv_.notify_all();
        if (thread_.joinable()) thread_.join();
    }
    StallWatch(const StallWatch&) = delete;
    StallWatch& operator=(const StallWatch&) = delete;

    /// A read and a write may wait at once (a tree pull reads on a thread of
    /// its own): the call waits from the first of them until none is left.
    class Wait {
    public:
        explicit Wait(StallWatch& w) : w_(w) {
            std::lock_guard lock(w_.mutex_);
            if (w_.waits_++ == 0) w_.since_ns_.store(now_ns());
        }
        ~Wait() {
            std::lock_guard lock(w_.mutex_);
            if (--w_.waits_ == 0) w_.since_ns_.store(0);
        }
        Wait(const Wait&) = delete;
        Wait& operator=(const Wait&) = delete;

    private:
        StallWatch& w_;
    };

    /// Whether the call was cancelled for waiting too long.
    bool fired() const noexcept { return fired_.load(); }

private:
    static std::int64_t now_ns() {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }
    void watch() {
        const auto period = std::chrono::nanoseconds(std::clamp<std::int64_t>(limit_ns_ / 4, 1'000'000, 1'000'000'000));
        std::unique_lock lock(mutex_);
        while (!cv_.wait_for(lock, period, [&] { return stop_; })) {
            const std::int64_t since = since_ns_.load();
            if (since != 0 && now_ns() - since > limit_ns_ && !fired_.exchange(true)) ctx_.TryCancel();
        }
    }

    grpc::ClientContext& ctx_;
    std::int64_t limit_ns_ = 0;
    std::atomic<std::int64_t> since_ns_{0};
    int waits_ = 0;  // (mutex_)
    std::atomic<bool> fired_{false};
    std::mutex mutex_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace

struct Client::Impl {
    ClientOptions options;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1::Transfer::Stub> stub;
    std::optional<ServerParams> params;

    void prepare(grpc::ClientContext& ctx) const {
        if (!options.token.empty()) ctx.AddMetadata("authorization", bearer_header(options.token));
    }

    bool tls() const { return options.tls || !options.ca_pem.empty(); }

    /// A unary call's deadline: the timeout (60 s without one).
    void set_deadline(grpc::ClientContext& ctx) const {
        const double s = options.timeout_seconds > 0 ? options.timeout_seconds : 60;
        ctx.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000)));
    }

    /// `stalled`: the call was cancelled by its StallWatch (or its deadline passed).
    [[noreturn]] void fail(const grpc::Status& st, std::string_view what, bool stalled = false) const {
        if (stalled || st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
            throw TransferError(Code::unavailable,
                                fmt::format("{}: the server at {} left the call waiting for {} s: gave up (--timeout)",
                                            what, options.address, options.timeout_seconds));
        std::string message = st.error_message();
        // A client and a server that disagree on TLS: one sentence that says
        // which, instead of gRPC's "Socket closed" or OpenSSL's "wrong
        // version number".
        if (tls() && message.find("andshake failed") != std::string::npos &&
            message.find("wrong version number") != std::string::npos)
            throw TransferError(Code::invalid_argument,
                                fmt::format("{}: the server at {} does not use TLS: connect without --tls and --tls-ca",
                                            what, options.address));
        if (!tls() && st.error_code() == grpc::StatusCode::UNAVAILABLE &&
            message.find("Socket closed") != std::string::npos && speaks_tls(options.address))
            throw TransferError(Code::invalid_argument,
                                fmt::format("{}: the server at {} uses TLS: connect with --tls or --tls-ca FILE (its "
                                            "certificate)",
                                            what, options.address));
        if (tls() && message.find("certificate verify failed") != std::string::npos)
            throw TransferError(code_of(st.error_code()),
                                fmt::format("{}: the server at {} has a certificate this client does not trust: pass "
                                            "it with --tls-ca FILE (and with --tls-server-name the name it carries, "
                                            "if that is not the one connected to)",
                                            what, options.address));
        if (tls() && message.find("is not in peer certificate") != std::string::npos)
            throw TransferError(code_of(st.error_code()),
                                fmt::format("{}: the server at {} has a certificate for other names: connect by a "
                                            "name it carries, or give one with --tls-server-name",
                                            what, options.address));
        if (st.error_code() == grpc::StatusCode::UNAVAILABLE)
            message = fmt::format("cannot reach the server at {}: {}", options.address, message);
        throw TransferError(code_of(st.error_code()), fmt::format("{}: {}", what, message));
    }
};

namespace {

template <class Out, class In>
class GrpcStream final : public MessageStream<Out, In> {
public:
    using Open = std::function<std::unique_ptr<grpc::ClientReaderWriter<Out, In>>(grpc::ClientContext*)>;
    GrpcStream(const Client::Impl& client, const Open& open, std::string what)
        : client_(client), what_(std::move(what)), stall_(ctx_, client.options.timeout_seconds) {
        client_.prepare(ctx_);
        rw_ = open(&ctx_);
    }
    ~GrpcStream() override {
        if (!finished_) cancel();
    }
    void write(const Out& m) override {
        bool ok;
        {
            StallWatch::Wait w(stall_);
            ok = rw_->Write(m);
        }
        if (!ok) fail_broken();
        this->wire_sent += m.ByteSizeLong() + kFrameHeader;
    }
    bool read(In& m) override {
        {
            StallWatch::Wait w(stall_);
            if (!rw_->Read(&m)) return false;
        }
        this->wire_received += m.ByteSizeLong() + kFrameHeader;
        return true;
    }
    void writes_done() override {
        StallWatch::Wait w(stall_);
        rw_->WritesDone();
    }
    void finish() override {
        if (finished_) return;
        finished_ = true;
        grpc::Status st;
        {
            StallWatch::Wait w(stall_);
            st = rw_->Finish();
        }
        if (!st.ok()) client_.fail(st, what_, stall_.fired());
    }
    void interrupt() override { ctx_.TryCancel(); }
    void cancel() override {
        if (finished_) return;
        ctx_.TryCancel();
        In m;
        while (rw_->Read(&m)) {
        }
        finished_ = true;
        rw_->Finish();
    }

private:
    [[noreturn]] void fail_broken() {
        // The server ended the stream: drain what it sent, then its status.
        grpc::Status st;
        {
            StallWatch::Wait w(stall_);
            In m;
            while (rw_->Read(&m)) {
            }
            finished_ = true;
            st = rw_->Finish();
        }
        if (!st.ok()) client_.fail(st, what_, stall_.fired());
        throw TransferError(Code::unavailable, fmt::format("{}: the server closed the stream", what_));
    }

    const Client::Impl& client_;
    std::string what_;
    grpc::ClientContext ctx_;
    StallWatch stall_;  // (after ctx_, which it cancels; before rw_, which it outlives)
    std::unique_ptr<grpc::ClientReaderWriter<Out, In>> rw_;
    bool finished_ = false;
};

}  // namespace

Client::Client(const ClientOptions& options) : impl_(std::make_unique<Impl>()) {
    quiet_grpc_log();  // a client's errors come back as statuses
    impl_->options = options;
    const bool tls = options.tls || !options.ca_pem.empty();
    if (!options.token.empty() && !tls && !is_loopback_address(options.address))
        throw OptionError(fmt::format("refusing to send the token in clear to '{}', which is not a loopback address: "
                                      "use TLS (--tls or --tls-ca)",
                                      options.address));
    std::shared_ptr<grpc::ChannelCredentials> creds;
    if (tls) {
        grpc::SslCredentialsOptions o;
        o.pem_root_certs = options.ca_pem;
        creds = grpc::SslCredentials(o);
    } else {
        creds = grpc::InsecureChannelCredentials();
    }
    grpc::ChannelArguments args;
    if (options.max_message_bytes) {
        args.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
        args.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
    }
    if (!options.server_name.empty()) args.SetSslTargetNameOverride(options.server_name);
    // No BDP probing: on loopback it grows the flow-control window until
    // tens of MB are received ahead of a client that is busy writing (a
    // pull's memory then grows with the file; docs/BENCHMARKS.md, "Chunked
    // transfer"). The default 64 KiB window is enough: our messages are
    // pipelined a list ahead.
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    impl_->channel = grpc::CreateCustomChannel(options.address, creds, args);
    impl_->stub = v1::Transfer::NewStub(impl_->channel);
}

Client::~Client() = default;

const ServerParams& Client::params() {
    if (impl_->params) return *impl_->params;
    grpc::ClientContext ctx;
    impl_->prepare(ctx);
    impl_->set_deadline(ctx);
    v1::InfoRequest req;
    v1::InfoReply reply;
    const grpc::Status st = impl_->stub->Info(&ctx, req, &reply);
    if (!st.ok()) impl_->fail(st, "info");
    if (reply.protocol() != kProtocolVersion)
        throw TransferError(Code::failed_precondition,
                            fmt::format("the server at {} speaks protocol {}, this client {}", impl_->options.address,
                                        reply.protocol(), kProtocolVersion));
    impl_->params = params_from(reply);
    impl_->params->address = impl_->options.address;
    return *impl_->params;
}

std::vector<RemoteFile> Client::list(const std::string& prefix) {
    grpc::ClientContext ctx;
    impl_->prepare(ctx);
    StallWatch stall(ctx, impl_->options.timeout_seconds);
    v1::ListRequest req;
    req.set_prefix(prefix);
    auto reader = impl_->stub->List(&ctx, req);
    std::vector<RemoteFile> out;
    v1::ListReply page;
    auto next = [&] {
        StallWatch::Wait w(stall);
        return reader->Read(&page);
    };
    while (next()) {
        for (const auto& f : page.files()) {
            RemoteFile r;
            r.name = f.name();
            r.size = f.size();
            r.mode = f.mode();
            r.mtime_ns = f.mtime_ns();
            if (f.digest().size() == 32) std::memcpy(r.digest.data(), f.digest().data(), 32);
            r.chunks = f.chunks();
            r.committed_ns = f.committed_ns();
            out.push_back(std::move(r));
        }
    }
    grpc::Status st;
    {
        StallWatch::Wait w(stall);
        st = reader->Finish();
    }
    if (!st.ok()) impl_->fail(st, "ls", stall.fired());
    return out;
}

HashResult Client::hash(Reader& reader, const TransferProgressFn& progress) {
    const auto t0 = std::chrono::steady_clock::now();
    grpc::ClientContext ctx;
    impl_->prepare(ctx);
    StallWatch stall(ctx, impl_->options.timeout_seconds);
    v1::HashReply reply;
    auto writer = impl_->stub->Hash(&ctx, &reply);
    HashResult r;
    std::vector<std::byte> buf(kHashPieceBytes);
    v1::HashData piece;
    ProgressThrottle throttle(progress, 0, 1);
    for (;;) {
        std::size_t n = 0;
        bool end = false;
        while (n < buf.size() && !end) {
            const ReadResult got = reader.read(std::span<std::byte>(buf).subspan(n));
            n += got.bytes;
            end = got.end;
        }
        if (n) {
            piece.set_data(buf.data(), n);
            StallWatch::Wait w(stall);
            if (!writer->Write(piece)) break;
            r.wire_sent += piece.ByteSizeLong() + kFrameHeader;
            throttle.file_bytes(r.wire_sent, r.wire_sent);
        }
        if (end) break;
    }
    grpc::Status st;
    {
        StallWatch::Wait w(stall);
        writer->WritesDone();
        st = writer->Finish();
    }
    if (!st.ok()) impl_->fail(st, "hash", stall.fired());
    if (reply.digest().size() != 32) throw TransferError(Code::internal, "hash: the server's digest is not 32 bytes");
    std::memcpy(r.digest.data(), reply.digest().data(), 32);
    r.bytes = reply.size();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

HashResult Client::hash_unary(std::span<const std::byte> bytes) {
    const auto t0 = std::chrono::steady_clock::now();
    grpc::ClientContext ctx;
    impl_->prepare(ctx);
    impl_->set_deadline(ctx);
    v1::HashData req;
    req.set_data(bytes.data(), bytes.size());
    v1::HashReply reply;
    const grpc::Status st = impl_->stub->HashUnary(&ctx, req, &reply);
    if (!st.ok()) impl_->fail(st, "hash (one message)");
    HashResult r;
    if (reply.digest().size() != 32) throw TransferError(Code::internal, "hash: the server's digest is not 32 bytes");
    std::memcpy(r.digest.data(), reply.digest().data(), 32);
    r.bytes = reply.size();
    r.wire_sent = req.ByteSizeLong() + kFrameHeader;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

PushReport Client::push(const std::vector<PushInput>& inputs, const PushOptions& options) {
    const ServerParams& p = params();
    auto open = [this]() -> std::unique_ptr<PushStream> {
        return std::make_unique<GrpcStream<v1::PushRequest, v1::PushReply>>(
            *impl_, [this](grpc::ClientContext* ctx) { return impl_->stub->Push(ctx); }, "push");
    };
    return push_files(open, p, inputs, options);
}

TreePushReport Client::push_tree(const TreePushOptions& options) {
    const ServerParams& p = params();
    auto open = [this]() -> std::unique_ptr<PushStream> {
        return std::make_unique<GrpcStream<v1::PushRequest, v1::PushReply>>(
            *impl_, [this](grpc::ClientContext* ctx) { return impl_->stub->Push(ctx); }, "push");
    };
    return transfer::push_tree(open, p, options);
}

PullReport Client::pull(const std::string& name, const std::filesystem::path& out, const PullOptions& options) {
    const ServerParams& p = params();
    GrpcStream<v1::PullRequest, v1::PullReply> stream(
        *impl_, [this](grpc::ClientContext* ctx) { return impl_->stub->Pull(ctx); }, "pull");
    return pull_file(stream, p, name, out, options);
}

PullReport Client::pull_to_fd(const std::string& name, int fd, const PullOptions& options) {
    const ServerParams& p = params();
    GrpcStream<v1::PullRequest, v1::PullReply> stream(
        *impl_, [this](grpc::ClientContext* ctx) { return impl_->stub->Pull(ctx); }, "pull");
    return transfer::pull_to_fd(stream, p, name, fd, options);
}

std::vector<store::Snapshot> Client::snapshots() {
    grpc::ClientContext ctx;
    impl_->prepare(ctx);
    StallWatch stall(ctx, impl_->options.timeout_seconds);
    auto reader = impl_->stub->Snapshots(&ctx, v1::SnapshotsRequest());
    std::vector<store::Snapshot> out;
    v1::SnapshotsReply page;
    auto next = [&] {
        StallWatch::Wait w(stall);
        return reader->Read(&page);
    };
    while (next())
        for (const auto& s : page.snapshots()) out.push_back(snapshot_from_info(s));
    grpc::Status st;
    {
        StallWatch::Wait w(stall);
        st = reader->Finish();
    }
    if (!st.ok()) impl_->fail(st, "ls", stall.fired());
    return out;
}

std::vector<RemoteNode> Client::snapshot_list(const std::string& snapshot, const std::string& path, bool recursive,
                                              store::Snapshot& snap) {
    grpc::ClientContext ctx;
    impl_->prepare(ctx);
    StallWatch stall(ctx, impl_->options.timeout_seconds);
    v1::SnapshotListRequest req;
    req.set_snapshot(snapshot);
    req.set_path(path);
    req.set_recursive(recursive);
    auto reader = impl_->stub->SnapshotList(&ctx, req);
    std::vector<RemoteNode> out;
    v1::SnapshotListReply page;
    auto next = [&] {
        StallWatch::Wait w(stall);
        return reader->Read(&page);
    };
    while (next()) {
        if (page.has_snapshot()) snap = snapshot_from_info(page.snapshot());
        for (const auto& n : page.nodes()) {
            RemoteNode r;
            r.path = n.path();
            r.type = n.type();
            r.mode = n.mode();
            r.uid = n.uid();
            r.gid = n.gid();
            r.user = n.user();
            r.group = n.group();
            r.size = n.size();
            r.mtime_ns = n.mtime_ns();
            r.target = n.target();
            r.digest = n.digest();
            out.push_back(std::move(r));
        }
    }
    grpc::Status st;
    {
        StallWatch::Wait w(stall);
        st = reader->Finish();
    }
    if (!st.ok()) impl_->fail(st, "ls", stall.fired());
    return out;
}

TreePullReport Client::pull_tree(const std::string& snapshot, const std::string& path, const std::filesystem::path& out,
                                 const TreePullOptions& options) {
    const ServerParams& p = params();
    GrpcStream<v1::PullTreeRequest, v1::PullTreeReply> stream(
        *impl_, [this](grpc::ClientContext* ctx) { return impl_->stub->PullTree(ctx); }, "pull");
    return transfer::pull_tree(stream, p, snapshot, path, out, options);
}

}  // namespace cdc::transfer
