// SPDX-License-Identifier: Apache-2.0
// cdc serve of an encrypted store (docs/TRANSFER.md "Encrypted stores"): the
// server holds the password; push, pull, ls and a second push round trip
// with plain ids on the wire; a tree pushed as a snapshot commits, and
// pushed again unchanged sends no file; the store's files hold none of the corpus's
// marker strings nor a chunk's plain BLAKE3; the chunker key goes only to a
// client with the token (none without it, none from a --no-token server);
// a forged chunk and a group list are refused; a wrong password is refused
// at start.
#include "serve_support.hpp"
#include "store_support.hpp"

#include "cdc_transfer.grpc.pb.h"

#include <protocol.hpp>

#include <cdc/store.hpp>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <random>

namespace cdc {
namespace {

namespace fs = std::filesystem;
using test::json_of;
using test::run_tool;
using test::Serve;
namespace v1 = transfer::v1;

constexpr std::string_view kCanaryText = "PANGOLIN-ARCHIVE-5519 the heron owed 2207 sardines";
constexpr std::string_view kCanaryRaw = "MARIMBA-GRIFFIN-0xC0FFEE";
const std::string kPassword = "a served store's password";

std::vector<std::uint8_t> text_corpus(std::size_t n) {
    std::vector<std::uint8_t> out;
    std::mt19937_64 rng(11);
    while (out.size() < n) {
        const std::string line = fmt::format("{} line {} at {}\n", kCanaryText, rng() % 100000, out.size());
        out.insert(out.end(), line.begin(), line.end());
    }
    out.resize(n);
    return out;
}

std::vector<std::uint8_t> random_corpus(std::size_t n, std::uint64_t seed) {
    std::vector<std::uint8_t> out = test::random_bytes(n, seed);
    for (std::size_t at = 700; at + kCanaryRaw.size() < n; at += 15000)
        std::copy(kCanaryRaw.begin(), kCanaryRaw.end(), out.begin() + static_cast<std::ptrdiff_t>(at));
    return out;
}

bool contains(const std::vector<std::uint8_t>& hay, std::span<const std::uint8_t> needle) {
    return std::search(hay.begin(), hay.end(), needle.begin(), needle.end()) != hay.end();
}
bool contains(const std::vector<std::uint8_t>& hay, std::string_view needle) {
    return contains(hay, std::span(reinterpret_cast<const std::uint8_t*>(needle.data()), needle.size()));
}

struct EncryptedServed {
    test::TempDir tmp;
    fs::path dir = tmp.path() / "store";
    fs::path pw;
    EncryptedServed() {
        ::setenv("CDC_TEST_FAST_KDF", "1", 1);
        pw = tmp.path() / "pw";
        std::ofstream(pw) << kPassword << "\n";
        fs::permissions(pw, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
        const auto r = run_tool({"store", "init", dir.string(), "--avg", "4K", "--password-file", pw.string()});
        EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    ~EncryptedServed() { ::unsetenv("CDC_TEST_FAST_KDF"); }
    std::vector<fs::path> files() const {
        std::vector<fs::path> out;
        for (const auto& e : fs::recursive_directory_iterator(dir))
            if (e.is_regular_file()) out.push_back(e.path());
        return out;
    }
};

std::unique_ptr<v1::Transfer::Stub> stub_of(const Serve& s) {
    return v1::Transfer::NewStub(grpc::CreateChannel(s.address(), grpc::InsecureChannelCredentials()));
}

TEST(ServeEncrypted, PushPullLsRoundTripAndTheStoreHoldsNoPlainText) {
    EncryptedServed st;
    const auto text = text_corpus(600'000);
    const auto noise = random_corpus(300'000, 5);
    st.tmp.write("tree/notes.txt", text);
    st.tmp.write("tree/sub/noise.bin", noise);
    st.tmp.write("tree/empty", {});
    Serve s(st.dir, st.tmp.path() / "serve", {"--password-file", st.pw.string()});
    ASSERT_NE(s.log().find("the store is encrypted"), std::string::npos) << s.log();

    // Named files (a tree as a snapshot: the next test).
    auto r = run_tool({"push", "--to", s.address(), (st.tmp.path() / "tree").string(), "--names", "--name", "t",
                       "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err << s.log();
    auto j = json_of(r);
    EXPECT_EQ(j["file_count"], 3);
    EXPECT_EQ(j["bytes_sent"], text.size() + noise.size());
    // Again: every chunk is found under its keyed id, nothing travels.
    r = run_tool({"push", "--to", s.address(), (st.tmp.path() / "tree").string(), "--name", "t", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r)["bytes_sent"], 0);
    // The same bytes under a new name: nothing travels either.
    const auto copy = st.tmp.write("copy.txt", text);
    r = run_tool({"push", "--to", s.address(), copy.string(), "--name", "copy", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r)["bytes_sent"], 0);

    // ls shows the plain BLAKE3 of each file.
    const auto ls = json_of(run_tool({"ls", "--from", s.address(), "--names", "--json"}));
    std::map<std::string, std::string> digests;
    for (const auto& f : ls) digests[f["name"]] = f["digest"];
    ASSERT_EQ(digests.size(), 4u);
    const std::string text_hex = store::to_hex(store::chunk_id_of(std::as_bytes(std::span(text))));
    EXPECT_NE(digests["t/notes.txt"].find(text_hex), std::string::npos) << digests["t/notes.txt"];

    // pull: every file back, byte for byte; with a basis, chunks are reused
    // (the plain ids the server lists match the client's own).
    for (const auto& [name, bytes] : std::vector<std::pair<std::string, std::vector<std::uint8_t>>>{
             {"t/notes.txt", text}, {"t/sub/noise.bin", noise}, {"t/empty", {}}, {"copy", text}}) {
        const auto out = st.tmp.path() / "got";
        fs::remove(out);
        r = run_tool({"pull", "--from", s.address(), name, "-o", out.string(), "--json"});
        ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err << s.log();
        EXPECT_EQ(test::read_bytes(out), bytes) << name;
    }
    // A file one has already (its size and plain digest): nothing travels.
    const auto again = st.tmp.path() / "again";
    ASSERT_EQ(run_tool({"pull", "--from", s.address(), "copy", "-o", again.string()}).exit_code, 0);
    r = run_tool({"pull", "--from", s.address(), "copy", "-o", again.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r)["bytes_sent"], 0) << r.out;
    EXPECT_EQ(test::read_bytes(again), text);
    auto edited = text;
    edited[300'000] ^= 0x55;
    const auto basis = st.tmp.write("basis.txt", edited);
    const auto out = st.tmp.path() / "from-basis";
    r = run_tool({"pull", "--from", s.address(), "t/notes.txt", "-o", out.string(), "--basis", basis.string(),
                  "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(out), text);
    EXPECT_LT(json_of(r)["bytes_sent"].get<std::uint64_t>(), text.size() / 4) << r.out;

    s.stop(SIGTERM);
    // The store itself: every tag checks, and get gives the bytes back.
    r = run_tool({"store", "verify", "--full", st.dir.string(), "--password-file", st.pw.string()});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    // No file of it holds a marker string, nor a chunk's plain BLAKE3 (the
    // server stored each pushed chunk under its keyed id), in binary or hex.
    std::vector<std::vector<std::uint8_t>> plain_ids;
    {
        store::OpenOptions o;
        o.password = [] { return kPassword; };
        const store::Store opened = store::Store::open(st.dir, o);
        std::vector<store::ChunkId> ids;
        opened.for_each_chunk("t/notes.txt", [&](const store::ChunkId& id, std::uint32_t) { ids.push_back(id); });
        for (const store::ChunkId& id : ids) {
            const auto raw = opened.read_chunk(id, false).bytes;
            const store::ChunkId plain = store::chunk_id_of(raw);
            EXPECT_NE(plain, id);
            EXPECT_EQ(opened.id_of_plain(plain), id);
            plain_ids.emplace_back(plain.begin(), plain.end());
        }
    }
    ASSERT_GT(plain_ids.size(), 50u);
    for (const fs::path& f : st.files()) {
        const auto bytes = test::read_bytes(f);
        EXPECT_FALSE(contains(bytes, kCanaryText)) << f;
        EXPECT_FALSE(contains(bytes, kCanaryRaw)) << f;
        for (const auto& id : plain_ids) {
            ASSERT_FALSE(contains(bytes, id)) << f;
            store::ChunkId c;
            std::copy(id.begin(), id.end(), c.begin());
            ASSERT_FALSE(contains(bytes, store::to_hex(c))) << f;
        }
    }
}

TEST(ServeEncrypted, ATreeIsPushedAsASnapshotAndAnUnchangedOneSendsNothing) {
    EncryptedServed st;
    const auto text = text_corpus(400'000);
    st.tmp.write("tree/notes.txt", text);
    st.tmp.write("tree/sub/deeper/noise.bin", random_corpus(200'000, 6));
    st.tmp.write("tree/other/x.txt", text_corpus(1000));
    const fs::path tree = st.tmp.path() / "tree";
    Serve s(st.dir, st.tmp.path() / "serve", {"--password-file", st.pw.string()});
    auto r = run_tool({"push", "--to", s.address(), tree.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err << s.log();
    const auto first = json_of(r);
    EXPECT_EQ(first["files_pushed"], 3);
    EXPECT_EQ(first["totals"]["files"], 3);
    // Unchanged: the files are offered back (their content names keyed on
    // the server), the parent's trees held; nothing read.
    r = run_tool({"push", "--to", s.address(), tree.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err << s.log();
    const auto second = json_of(r);
    EXPECT_EQ(second["parent"], first["id"]);
    EXPECT_EQ(second["files_pushed"], 0);
    EXPECT_EQ(second["files_reused"], 3);
    EXPECT_EQ(second["bytes_sent"], 0);
    EXPECT_LT(second["trees_sent"].get<std::uint64_t>(), second["trees"].get<std::uint64_t>());
    // One file changed: its unchanged chunks are found under their keyed ids.
    auto edited = text;
    edited[200'000] ^= 0x55;
    st.tmp.write("tree/notes.txt", edited);
    r = run_tool({"push", "--to", s.address(), tree.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err << s.log();
    EXPECT_EQ(json_of(r)["files_pushed"], 1);
    EXPECT_LT(json_of(r)["bytes_sent"].get<std::uint64_t>(), text.size() / 4);
    s.stop(SIGTERM);
    // The store checks whole and gives the newest snapshot back.
    r = run_tool({"store", "verify", "--full", st.dir.string(), "--password-file", st.pw.string()});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    const fs::path out = st.tmp.path() / "out";
    r = run_tool({"store", "get", st.dir.string(), "latest:" + tree.string(), "-o", out.string(), "--password-file",
                  st.pw.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(out / "notes.txt"), edited);
    EXPECT_EQ(test::read_bytes(out / "other/x.txt"), text_corpus(1000));
    for (const fs::path& f : st.files()) EXPECT_FALSE(contains(test::read_bytes(f), kCanaryText)) << f;
}

TEST(ServeEncrypted, TheChunkerKeyGoesOnlyToAClientWithTheToken) {
    EncryptedServed st;
    Serve s(st.dir, st.tmp.path() / "serve", {"--password-file", st.pw.string()});
    auto stub = stub_of(s);
    {
        // No token: refused, nothing of the store said.
        grpc::ClientContext ctx;
        v1::InfoReply info;
        const grpc::Status status = stub->Info(&ctx, v1::InfoRequest(), &info);
        EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
        EXPECT_TRUE(info.chunker_key().empty());
    }
    grpc::ClientContext ctx;
    test::authorize(ctx);
    v1::InfoReply info;
    ASSERT_TRUE(stub->Info(&ctx, v1::InfoRequest(), &info).ok());
    EXPECT_TRUE(info.encrypted());
    EXPECT_TRUE(info.keyed());
    EXPECT_FALSE(info.group_lists());
    ASSERT_EQ(info.chunker_key().size(), 32u);
    Key k;
    std::memcpy(k.data(), info.chunker_key().data(), k.size());
    EXPECT_EQ(store::key_check_value(k), info.key_check());
    s.stop(SIGTERM);

    // A server that requires no token gives no key: its clients can pull
    // and list, not push (they cannot chunk like the store).
    Serve open(st.dir, st.tmp.path() / "serve-open", {"--password-file", st.pw.string(), "--no-token"});
    ASSERT_NE(open.log().find("clients get no chunker key"), std::string::npos) << open.log();
    const auto stub2 = stub_of(open);
    grpc::ClientContext ctx2;
    v1::InfoReply info2;
    ASSERT_TRUE(stub2->Info(&ctx2, v1::InfoRequest(), &info2).ok());
    EXPECT_TRUE(info2.encrypted());
    EXPECT_TRUE(info2.chunker_key().empty());
    const auto f = st.tmp.write("f", test::random_bytes(20'000, 3));
    const auto r = run_tool({"push", "--to", open.address(), f.string(), "--name", "f"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("sends the chunker key only to clients with its token"), std::string::npos) << r.err;
}

// A forged chunk (bytes that are not the listed plain id's) is refused as
// on a plain server, and a group list (whose stored groups would be of keyed
// ids) is refused outright: requests no client of ours sends to it.
TEST(ServeEncrypted, ForgedChunksAndGroupListsAreRefused) {
    EncryptedServed st;
    Serve s(st.dir, st.tmp.path() / "serve", {"--password-file", st.pw.string()});
    auto stub = stub_of(s);
    const auto chunk = test::random_bytes(3000, 12);
    {
        grpc::ClientContext ctx;
        test::authorize(ctx);
        auto rw = stub->Push(&ctx);
        v1::PushRequest start;
        start.mutable_start()->set_name("forged");
        ASSERT_TRUE(rw->Write(start));
        v1::PushRequest list;
        std::string ids;
        transfer::append_id(ids, store::chunk_id_of(std::as_bytes(std::span(chunk))));
        list.mutable_chunks()->set_ids(ids);
        list.mutable_chunks()->add_sizes(static_cast<std::uint32_t>(chunk.size()));
        ASSERT_TRUE(rw->Write(list));
        v1::PushReply want;
        ASSERT_TRUE(rw->Read(&want));
        EXPECT_EQ(want.want().count(), 1u);
        auto forged = chunk;
        forged[100] ^= 1;
        v1::PushRequest data;
        auto* c = data.mutable_data()->add_chunks();
        c->set_raw(true);
        c->set_raw_size(static_cast<std::uint32_t>(forged.size()));
        c->set_payload_size(static_cast<std::uint32_t>(forged.size()));
        c->set_piece(std::string(forged.begin(), forged.end()));
        rw->Write(data);
        rw->WritesDone();
        const grpc::Status status = rw->Finish();
        EXPECT_EQ(status.error_code(), grpc::StatusCode::DATA_LOSS) << status.error_message();
    }
    {
        grpc::ClientContext ctx;
        test::authorize(ctx);
        auto rw = stub->Push(&ctx);
        v1::PushRequest start;
        start.mutable_start()->set_name("grouped");
        ASSERT_TRUE(rw->Write(start));
        v1::PushRequest groups;
        groups.mutable_groups()->add_counts(1);
        groups.mutable_groups()->add_bytes(static_cast<std::uint64_t>(chunk.size()));
        groups.mutable_groups()->set_digests(std::string(32, 'x'));
        rw->Write(groups);
        rw->WritesDone();
        const grpc::Status status = rw->Finish();
        EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
        EXPECT_NE(status.error_message().find("group list"), std::string::npos) << status.error_message();
    }
    EXPECT_TRUE(json_of(run_tool({"ls", "--from", s.address(), "--names", "--json"})).empty());
}

TEST(ServeEncrypted, AWrongOrMissingPasswordIsRefusedAtStart) {
    EncryptedServed st;
    const auto wrong = st.tmp.path() / "wrong";
    std::ofstream(wrong) << "not the password\n";
    fs::permissions(wrong, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    auto r = run_tool({"serve", "--store", st.dir.string(), "--listen", "127.0.0.1:0", "--password-file",
                       wrong.string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("wrong password"), std::string::npos) << r.err;
    r = run_tool({"serve", "--store", st.dir.string(), "--listen", "127.0.0.1:0"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("password"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cdc
