// SPDX-License-Identifier: Apache-2.0
// cdc serve / push / pull against a second hostile probe: a file that shrinks
// while it is pushed, servers of the test's own that lie (a header saying 10
// bytes, then megabytes) or never answer, wrong keys, a keyed store served
// without its key, bad serve options (idle timeouts, addresses, the hidden
// message limit), names filling NAME_MAX, times before 1970, and the
// defaults of item 19: a token on the loopback interface too (other users
// are refused), a bound per client, pulled modes masked by the umask. The
// other-user cases run the tool as nobody: they need root, as CI has.
#include "serve_support.hpp"
#include "store_support.hpp"

#include "cdc_transfer.grpc.pb.h"

#include <protocol.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <climits>
#include <csignal>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cdc {
namespace {

namespace fs = std::filesystem;
using test::authorize;
using test::init_store;
using test::json_of;
using test::shrink_while_read;
using test::run_tool;
using test::Serve;
namespace v1 = transfer::v1;

constexpr unsigned kNobody = 65534;

#define REQUIRE_ROOT() ASSERT_EQ(::geteuid(), 0u) << "this test runs the tool as another user: run it as root, as CI does"

/// Runs the tool in the background; its exit code, or -1 if it was still
/// running after `seconds` (then killed): a command that must fail at once,
/// or give up, and used to hang. Its stderr is `dir`/err.
int run_bounded(const std::vector<std::string>& args, const fs::path& dir, double seconds) {
    const pid_t pid = test::spawn_tool(args, dir);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(pid, SIGKILL);
    test::wait_exit(pid);
    return -1;
}

std::map<std::string, std::uint64_t> names_on(const Serve& s) {
    std::map<std::string, std::uint64_t> out;
    for (const auto& f : json_of(run_tool({"ls", "--from", s.address(), "--names", "--json"}))) out[f["name"]] = f["size"];
    return out;
}

// ---------------------------------------------------------------- servers of the test's own

/// A transfer server written here: Info as a store of fastcdc 2K/8K/64K would
/// answer, and Pull, Push and List as the test says (a lying or a silent
/// server). No token.
class FakeServer final : public v1::Transfer::Service {
public:
    using PullFn = std::function<grpc::Status(grpc::ServerContext*,
                                              grpc::ServerReaderWriter<v1::PullReply, v1::PullRequest>*)>;
    PullFn pull;

    FakeServer() {
        grpc::ServerBuilder b;
        b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
        b.RegisterService(this);
        server_ = b.BuildAndStart();
    }
    ~FakeServer() override { server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1)); }

    std::string address() const { return fmt::format("127.0.0.1:{}", port_); }

    grpc::Status Info(grpc::ServerContext*, const v1::InfoRequest*, v1::InfoReply* r) override {
        r->set_protocol(transfer::kProtocolVersion);
        r->set_algorithm("fastcdc");
        r->set_min_size(2048);
        r->set_avg_size(8192);
        r->set_max_size(65536);
        r->set_zstd_level(3);
        r->set_store_id("fake");
        r->set_max_message_bytes(4 << 20);
        r->set_max_list_chunks(8192);
        return grpc::Status::OK;
    }
    grpc::Status Pull(grpc::ServerContext* ctx,
                      grpc::ServerReaderWriter<v1::PullReply, v1::PullRequest>* stream) override {
        return pull ? pull(ctx, stream) : silent(ctx);
    }
    grpc::Status Push(grpc::ServerContext* ctx, grpc::ServerReaderWriter<v1::PushReply, v1::PushRequest>*) override {
        return silent(ctx);
    }
    grpc::Status List(grpc::ServerContext* ctx, const v1::ListRequest*, grpc::ServerWriter<v1::ListReply>*) override {
        return silent(ctx);
    }
    grpc::Status Snapshots(grpc::ServerContext* ctx, const v1::SnapshotsRequest*,
                           grpc::ServerWriter<v1::SnapshotsReply>*) override {
        return silent(ctx);
    }

    /// Accepts the call and never answers (until the client gives up).
    static grpc::Status silent(grpc::ServerContext* ctx) {
        while (!ctx->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return {grpc::StatusCode::CANCELLED, "gone"};
    }

private:
    int port_ = 0;
    std::unique_ptr<grpc::Server> server_;
};

/// A pull that announces 10 bytes in 1 chunk, then lists 100 chunks of 64
/// KiB and sends whichever the client wants (each valid for its id).
grpc::Status lying_pull(grpc::ServerContext*, grpc::ServerReaderWriter<v1::PullReply, v1::PullRequest>* stream) {
    v1::PullRequest req;
    if (!stream->Read(&req)) return grpc::Status::OK;
    v1::PullReply header;
    header.mutable_header()->set_size(10);
    header.mutable_header()->set_digest(std::string(32, '\0'));
    header.mutable_header()->set_chunks(1);
    header.mutable_header()->set_mode(0644);
    stream->Write(header);
    std::vector<std::vector<std::uint8_t>> chunks;
    v1::PullReply list;
    std::string ids;
    for (int i = 0; i < 100; ++i) {
        chunks.push_back(test::random_bytes(65536, 1000 + static_cast<std::uint64_t>(i)));
        transfer::append_id(ids, store::chunk_id_of(std::as_bytes(std::span(chunks.back()))));
        list.mutable_chunks()->add_sizes(65536);
    }
    list.mutable_chunks()->set_ids(ids);
    stream->Write(list);
    if (!stream->Read(&req) || !req.has_want()) return grpc::Status::OK;
    for (std::size_t i = 0; i < chunks.size(); ++i) {
        if (!(static_cast<unsigned char>(req.want().bitmap()[i / 8]) & (1u << (i % 8)))) continue;
        v1::PullReply data;
        auto* c = data.mutable_data()->add_chunks();
        c->set_id(ids.substr(i * 32, 32));
        c->set_raw_size(65536);
        c->set_raw(true);
        c->set_payload_size(65536);
        c->set_piece(chunks[i].data(), chunks[i].size());
        if (!stream->Write(data)) return grpc::Status::OK;
    }
    v1::PullReply end;
    end.mutable_end();
    stream->Write(end);
    return grpc::Status::OK;
}

TEST(TransferSafetyCli, APullTakesNothingBeyondWhatTheHeaderAnnounced) {
    test::TempDir tmp;
    FakeServer server;
    server.pull = lying_pull;
    // To standard output: at most the 10 bytes announced go out.
    auto r = run_tool({"pull", "--from", server.address(), "f", "-o", "-"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_LE(r.out.size(), 10u);
    EXPECT_NE(r.err.find("announced"), std::string::npos) << r.err;
    // To a file: nothing written, no partial file left.
    const auto out = tmp.path() / "out";
    r = run_tool({"pull", "--from", server.address(), "f", "-o", out.string()});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("announced"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
    EXPECT_TRUE(fs::is_empty(tmp.path())) << "a partial file was left";
}

TEST(TransferSafetyCli, AServerThatNeverAnswersIsGivenUpOn) {
    test::TempDir tmp;
    FakeServer server;
    const auto file = tmp.write("f", test::random_bytes(100'000, 1));
    const std::vector<std::vector<std::string>> commands = {
        {"push", "--to", server.address(), file.string(), "--name", "f", "--timeout", "2"},
        {"pull", "--from", server.address(), "f", "-o", (tmp.path() / "o").string(), "--timeout", "2"},
        {"ls", "--from", server.address(), "--timeout", "2"},
    };
    for (const auto& args : commands) {
        SCOPED_TRACE(args[0]);
        const auto t0 = std::chrono::steady_clock::now();
        EXPECT_EQ(run_bounded(args, tmp.path(), 60), 4);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        EXPECT_LT(s, 30);
        const std::string err = test::read_text(tmp.path() / "err");
        EXPECT_NE(err.find("waiting for 2 s"), std::string::npos) << err;
    }
    // A timeout that is not one.
    const auto r = run_tool({"ls", "--from", server.address(), "--timeout", "inf"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
}

// ---------------------------------------------------------------- keys

/// A keyed store (kfastcdc) and its key file; `wrong` another key file.
struct Keyed {
    test::TempDir tmp;
    fs::path dir = tmp.path() / "store";
    fs::path key = tmp.write("key", std::vector<std::uint8_t>(64, '7'));
    fs::path wrong = tmp.write("wrong", std::vector<std::uint8_t>(64, '8'));
    Keyed() {
        fs::permissions(key, fs::perms::owner_read | fs::perms::owner_write);
        fs::permissions(wrong, fs::perms::owner_read | fs::perms::owner_write);
        const auto r = run_tool({"store", "init", "--no-encryption", dir.string(), "-a", "kfastcdc", "--key-file", key.string()});
        EXPECT_EQ(r.exit_code, 0) << r.err;
    }
};

TEST(TransferSafetyCli, APushWithTheWrongKeyIsRefused) {
    Keyed k;
    const auto file = k.tmp.write("f", test::mixed_bytes(300'000, 2));
    Serve s(k.dir, k.tmp.path() / "serve", {"--key-file", k.key.string()});
    auto r = run_tool({"push", "--to", s.address(), file.string(), "--name", "f", "--key-file", k.wrong.string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("wrong key"), std::string::npos) << r.err;
    EXPECT_TRUE(names_on(s).empty());
    r = run_tool({"pull", "--from", s.address(), "f", "-o", (k.tmp.path() / "o").string(), "--key-file", k.wrong.string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    r = run_tool({"push", "--to", s.address(), file.string(), "--name", "f", "--key-file", k.key.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(names_on(s).size(), 1u);
}

TEST(TransferSafetyCli, AKeyedStoreServedWithoutItsKeySaysSo) {
    Keyed k;
    const auto data = test::mixed_bytes(200'000, 3);
    const auto file = k.tmp.write("f", data);
    ASSERT_EQ(run_tool({"store", "put", k.dir.string(), file.string(), "--name", "stored", "--key-file", k.key.string()})
                  .exit_code,
              0);
    Serve s(k.dir, k.tmp.path() / "serve");
    EXPECT_NE(s.log().find("pushes are refused"), std::string::npos) << s.log();
    auto r = run_tool({"push", "--to", s.address(), file.string(), "--name", "f", "--key-file", k.key.string()});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("started without --key-file"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("give its key"), std::string::npos) << r.err;
    // Pulls need no key on the server.
    r = run_tool({"pull", "--from", s.address(), "stored", "-o", (k.tmp.path() / "o").string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(k.tmp.path() / "o"), data);
}

// ---------------------------------------------------------------- serve's options

TEST(TransferSafetyCli, ServeRefusesOptionsItCannotHonour) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--idle-timeout", "1e300"}, "--idle-timeout"},
        {{"--idle-timeout", "inf"}, "--idle-timeout"},
        {{"--listen", "127.0.0.1:99999"}, "99999"},
        {{"--listen", "127.0.0.1"}, "a port is needed"},
        {{"--bench-max-message", "abc"}, "--bench-max-message"},
        {{"--bench-max-message", "99999999999"}, "--bench-max-message"},
        {{"--max-streams", "4", "--max-client-streams", "5"}, "--max-client-streams"},
    };
    for (const auto& [extra, text] : cases) {
        SCOPED_TRACE(fmt::format("{}", fmt::join(extra, " ")));
        std::vector<std::string> args{"serve", "--store", dir.string()};
        if (extra[0] != "--listen") args.insert(args.end(), {"--listen", "127.0.0.1:0"});
        args.insert(args.end(), extra.begin(), extra.end());
        EXPECT_EQ(run_bounded(args, tmp.path(), 20), 2);
        const std::string err = test::read_text(tmp.path() / "err");
        EXPECT_NE(err.find(text), std::string::npos) << err;
    }
}

// ---------------------------------------------------------------- files and names


TEST(TransferSafetyCli, AFileThatShrinksWhilePushedIsNamedAndNotCommitted) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve");
    const auto small = test::random_bytes(20'000, 4);
    tmp.write("tree/a", small);
    for (const bool tree : {false, true}) {
        SCOPED_TRACE(tree ? "a tree" : "one file");
        const auto big = tmp.path() / "tree" / "big";
        { std::ofstream(big, std::ios::binary); }
        fs::resize_file(big, std::uint64_t{8} << 30);  // sparse: seconds to read
        const pid_t pid = test::spawn_tool({"push", "--to", s.address(),
                                            tree ? (tmp.path() / "tree").string() : big.string(), "--name",
                                            tree ? "t" : "one"},
                                           tmp.path());
        ASSERT_TRUE(shrink_while_read(pid, big, 1 << 20));
        EXPECT_EQ(test::wait_exit(pid), 3);
        const std::string err = test::read_text(tmp.path() / "err");
        EXPECT_NE(err.find(big.string()), std::string::npos) << err;
        EXPECT_NE(err.find("changed while it was read"), std::string::npos) << err;
    }
    EXPECT_EQ(names_on(s), (std::map<std::string, std::uint64_t>{{"t/a", small.size()}}));
    EXPECT_EQ(run_tool({"store", "verify", dir.string()}).exit_code, 0);
}

TEST(TransferSafetyCli, PushedNamesFollowTheStoresRule) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve");
    const auto a = test::random_bytes(10'000, 5);
    tmp.write("tree/x/a", a);
    const auto f = tmp.write("f", test::random_bytes(5'000, 6));
    // A tree's prefix may end with "/"; a file named by an absolute path gets it relative.
    auto r = run_tool({"push", "--to", s.address(), (tmp.path() / "tree").string(), "--name", "p/"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"push", "--to", s.address(), f.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("stored as '" + f.string().substr(1) + "'"), std::string::npos) << r.err;
    EXPECT_EQ(names_on(s), (std::map<std::string, std::uint64_t>{{"p/x/a", a.size()}, {f.string().substr(1), 5'000}}));
}

TEST(TransferSafetyCli, TimesBefore1970RoundTripToTheNanosecond) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve");
    const auto f = tmp.write("old", test::random_bytes(5'000, 6));
    const timespec t[2] = {{0, UTIME_OMIT}, {-2, 500'000'000}};  // 1.5 s before the epoch
    ASSERT_EQ(::utimensat(AT_FDCWD, f.c_str(), t, 0), 0);
    auto r = run_tool({"push", "--to", s.address(), f.string(), "--name", "old"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto back = tmp.path() / "back";
    r = run_tool({"pull", "--from", s.address(), "old", "-o", back.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    struct stat st {};
    ASSERT_EQ(::stat(back.c_str(), &st), 0);
    EXPECT_EQ(st.st_mtim.tv_sec, -2);
    EXPECT_EQ(st.st_mtim.tv_nsec, 500'000'000);
    ::setenv("TZ", "UTC", 1);
    r = run_tool({"ls", "--from", s.address(), "old"});
    ::unsetenv("TZ");
    EXPECT_NE(r.out.find("1969-12-31 23:59:58"), std::string::npos) << r.out;
}

TEST(TransferSafetyCli, APullIntoANameFillingNameMax) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve");
    const auto a = test::random_bytes(10'000, 5);
    ASSERT_EQ(run_tool({"push", "--to", s.address(), tmp.write("a", a).string(), "--name", "a"}).exit_code, 0);
    // Its partial file (.OUT.cdc-pull and .old) must fit too.
    const std::string long_name(NAME_MAX - 5, 'n');
    fs::create_directories(tmp.path() / "into");
    const auto out = tmp.path() / "into" / long_name;
    auto r = run_tool({"pull", "--from", s.address(), "a", "-o", out.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(out), a);
    // Pulled again over it: up to date, nothing left beside it.
    r = run_tool({"pull", "--from", s.address(), "a", "-o", out.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path() / "into"), fs::directory_iterator()), 1);
}

// ---------------------------------------------------------------- the defaults of item 19

TEST(TransferSafetyCli, ALoopbackServerRequiresTheUsersTokenByDefault) {
    REQUIRE_ROOT();
    test::TempDir tmp;
    ASSERT_EQ(::chmod(tmp.path().c_str(), 0755), 0);
    const auto dir = init_store(tmp);
    const auto token = test::config_home().path() / "cdc" / "token";
    {
        Serve s(dir, tmp.path() / "serve");
        EXPECT_NE(s.log().find("token required: " + token.string()), std::string::npos) << s.log();
        EXPECT_EQ(test::mode_of(token), 0600u);
        // The user's own clients send it; another local user has none.
        EXPECT_EQ(run_tool({"ls", "--from", s.address()}).exit_code, 0);
        const auto r = test::run_tool_as(kNobody, kNobody, {"ls", "--from", s.address()});
        EXPECT_EQ(r.exit_code, 4) << r.err;
        EXPECT_NE(r.err.find("token"), std::string::npos) << r.err;
    }
    // The same token at the next start; --no-token opens the server to every local user.
    const std::string first = test::read_text(token);
    Serve s(dir, tmp.path() / "serve2", {"--no-token"});
    EXPECT_EQ(test::read_text(token), first);
    EXPECT_NE(s.log().find("no token"), std::string::npos) << s.log();
    const auto r = test::run_tool_as(kNobody, kNobody, {"ls", "--from", s.address()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

/// A push stream held open (its first list answered), through the raw stub.
struct HeldStream {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReaderWriter<v1::PushRequest, v1::PushReply>> rw;
    HeldStream(v1::Transfer::Stub& stub, const std::string& name) {
        authorize(ctx);
        rw = stub.Push(&ctx);
        v1::PushRequest start;
        start.mutable_start()->set_name(name);
        EXPECT_TRUE(rw->Write(start));
        const auto chunk = test::random_bytes(10, 1);
        v1::PushRequest list;
        std::string ids;
        transfer::append_id(ids, store::chunk_id_of(std::as_bytes(std::span(chunk))));
        list.mutable_chunks()->set_ids(ids);
        list.mutable_chunks()->add_sizes(10);
        EXPECT_TRUE(rw->Write(list));
        v1::PushReply want;
        EXPECT_TRUE(rw->Read(&want));
    }
    ~HeldStream() {
        ctx.TryCancel();
        rw->Finish();
    }
};

TEST(TransferSafetyCli, OneClientCannotTakeEverySlot) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve", {"--max-streams", "4", "--max-client-streams", "2"});
    const auto file = tmp.write("f", test::random_bytes(1000, 7));
    auto stub = v1::Transfer::NewStub(grpc::CreateChannel(s.address(), grpc::InsecureChannelCredentials()));
    {
        HeldStream one(*stub, "one"), two(*stub, "two");
        const auto r = run_tool({"push", "--to", s.address(), file.string(), "--name", "f"});
        EXPECT_EQ(r.exit_code, 4) << r.err;
        EXPECT_NE(r.err.find("busy for this client"), std::string::npos) << r.err;
    }
    ASSERT_TRUE(s.wait_log("push", 2)) << s.log();
    const auto r = run_tool({"push", "--to", s.address(), file.string(), "--name", "f"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(TransferSafetyCli, PulledModesAreMaskedByTheUmaskUnlessKept) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve");
    const auto file = tmp.write("open", test::random_bytes(3000, 8));
    ASSERT_EQ(::chmod(file.c_str(), 0777), 0);
    ASSERT_EQ(run_tool({"push", "--to", s.address(), file.string(), "--name", "open"}).exit_code, 0);
    const mode_t old = ::umask(022);
    auto r = run_tool({"pull", "--from", s.address(), "open", "-o", (tmp.path() / "masked").string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"pull", "--from", s.address(), "open", "-o", (tmp.path() / "kept").string(), "--keep-modes"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    ::umask(old);
    EXPECT_EQ(test::mode_of(tmp.path() / "masked"), 0755u);
    EXPECT_EQ(test::mode_of(tmp.path() / "kept"), 0777u);
}

}  // namespace
}  // namespace cdc
