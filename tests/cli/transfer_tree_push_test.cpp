// SPDX-License-Identifier: Apache-2.0
// `cdc push DIR` commits one snapshot on the server (issue 35 item 5): every
// file type and its metadata come back through `pull --from` and `store
// get`; a second push of an unchanged tree reads and sends no file, nor
// (issue 35 item 5) the trees the server holds, nor an unchanged sparse
// file; a push
// that ends before its commit leaves no snapshot and a rerun works; an
// append-only token pushes trees; a lying client (trees that do not match
// their ids, names with ".." or '/', files naming contents it never sent,
// huge counts, trees the server said it lacks and were not sent, trees it
// holds whose contents were not offered) is refused with nothing committed.
#include "serve_support.hpp"
#include "tree_support.hpp"

#include "cdc_transfer.grpc.pb.h"

#include <cdc/store.hpp>
#include <cdc/snapshot.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc {
namespace {

namespace fs = std::filesystem;
using test::init_store;
using test::json_of;
using test::run_tool;
using test::Serve;
namespace v1 = transfer::v1;
namespace tr = store::tree;

std::size_t snapshot_count(const fs::path& dir) {
    const auto r = run_tool({"store", "snapshots", dir.string(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json_of(r).size();
}

/// rsync's itemized dry run of `a` against `b` (-naicHAX --numeric-ids):
/// empty when bytes and metadata agree.
std::string rsync_diff(const fs::path& a, const fs::path& b) {
    const std::string cmd = fmt::format("rsync -naicHAX --numeric-ids '{}/' '{}/' 2>&1", a.string(), b.string());
    std::string out;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
        char buf[4096];
        std::size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
        ::pclose(p);
    }
    return out;
}

TEST(TransferTreePush, APushedTreeIsOneSnapshotWithEveryTypeAndItsMetadata) {
    test::TempDir tmp;
    const fs::path src = tmp.path() / "src";
    const test::FullTree made = test::make_full_tree(src);
    {  // reading a symlink moves its atime once (relatime): settled first
        test::MemoryTrees settle;
        tr::capture(src, settle);
    }
    test::MemoryTrees before;
    const auto root = tr::capture(src, before);
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve");
    auto r = run_tool({"push", "--to", s.address(), src.string(), "--tag", "t1", "--host", "h1", "--json"});
    ASSERT_EQ(r.exit_code, made.root ? 0 : 3) << r.err;
    const auto j = json_of(r);
    EXPECT_EQ(j["paths"], nlohmann::json::array({src.string()}));
    EXPECT_EQ(j["tags"], nlohmann::json::array({"t1"}));
    EXPECT_EQ(j["host"], "h1");
    EXPECT_EQ(j["parent"], "");
    EXPECT_EQ(j["totals"]["skipped_unchanged"], 0);
    EXPECT_EQ(j["files_reused"], 0);
    EXPECT_GT(j["files_pushed"].get<std::uint64_t>(), 5u);
    EXPECT_EQ(snapshot_count(dir), 1u);
    // The same totals as `store backup` of the tree counts.
    const auto dir2 = tmp.path() / "store2";
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir2.string(), "--avg", "4K"}).exit_code, 0);
    r = run_tool({"store", "backup", dir2.string(), src.string(), "--json"});
    const auto b = json_of(r);
    for (const char* k : {"files", "dirs", "others", "bytes"}) EXPECT_EQ(j["totals"][k], b["totals"][k]) << k;
    // The server's listing of it is the snapshot's.
    const std::string id = j["id"];
    const auto local = json_of(run_tool({"store", "snapshots", dir.string(), "--json"}));
    EXPECT_EQ(local[0]["id"], id);
    EXPECT_EQ(local[0]["totals"]["files"], j["totals"]["files"]);

    // Pulled back in one stream, and restored by store get: as captured.
    const fs::path out = tmp.path() / "out";
    r = run_tool({"pull", "--from", s.address(), id + ":" + src.string(), "-o", out.string(), "--keep-setid"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    test::MemoryTrees after;
    std::vector<std::string> diffs;
    test::diff_trees(before, root, after, tr::capture(out, after), "", diffs);
    EXPECT_EQ(diffs, std::vector<std::string>{"sock: only in the first"}) << fmt::format("{}", fmt::join(diffs, "\n"));
    struct stat st {};
    ASSERT_EQ(::stat((out / "sparse.img").c_str(), &st), 0);
    EXPECT_LT(st.st_blocks * 512, 1 << 20) << "the holes were written as zeros";
    const fs::path got = tmp.path() / "got";
    s.stop(SIGTERM);
    r = run_tool({"store", "get", dir.string(), id + ":" + src.string(), "-o", got.string(), "--keep-setid"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    test::MemoryTrees local_trees;
    diffs.clear();
    test::diff_trees(before, root, local_trees, tr::capture(got, local_trees), "", diffs);
    EXPECT_EQ(diffs, std::vector<std::string>{"sock: only in the first"}) << fmt::format("{}", fmt::join(diffs, "\n"));
    if (made.root && fs::exists("/usr/bin/rsync")) {
        struct stat top {};
        ASSERT_EQ(::stat(src.c_str(), &top), 0);
        fs::remove(src / "sock");  // (a socket is recorded, never restored)
        const struct timespec times[2] = {top.st_atim, top.st_mtim};
        ASSERT_EQ(::utimensat(AT_FDCWD, src.c_str(), times, 0), 0);
        EXPECT_EQ(rsync_diff(src, out), "");
        EXPECT_EQ(rsync_diff(src, got), "");
    }
}

TEST(TransferTreePush, AnUnchangedTreeIsPushedWithoutReadingOrSendingItsFiles) {
    test::TempDir tmp;
    const auto big = test::random_bytes(600'000, 3);
    tmp.write("src/big.bin", big);
    fs::create_directories(tmp.path() / "src/sub");
    test::write_bytes(tmp.path() / "src/sub/a.txt", "aaaa");
    test::write_bytes(tmp.path() / "src/sub/b.txt", "bbbbbb");
    fs::create_directories(tmp.path() / "src/empty");
    fs::create_symlink("sub/a.txt", tmp.path() / "src/link");
    fs::create_hard_link(tmp.path() / "src/sub/a.txt", tmp.path() / "src/hard");
    const fs::path src = tmp.path() / "src";
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve");
    auto r = run_tool({"push", "--to", s.address(), src.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto first = json_of(r);
    EXPECT_GE(first["bytes_sent"].get<std::uint64_t>(), big.size());
    EXPECT_EQ(first["files_pushed"], 3);
    // Again, unchanged: the parent's contents are offered back, no file is read.
    r = run_tool({"push", "--to", s.address(), src.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto second = json_of(r);
    EXPECT_EQ(second["parent"], first["id"]);
    EXPECT_NE(second["id"], first["id"]);
    EXPECT_EQ(second["files_pushed"], 0);
    EXPECT_EQ(second["files_reused"], 3);
    EXPECT_EQ(second["totals"]["skipped_unchanged"], 3);
    EXPECT_EQ(second["bytes_read"], 0);
    EXPECT_EQ(second["bytes_sent"], 0);
    // (not the same root tree: reading a symlink moves its atime, and the
    // directories above the path are recorded with theirs)
    EXPECT_EQ(second["tree"].get<std::string>().size(), 64u);
    EXPECT_LT(second["wire_bytes_sent"].get<std::uint64_t>(), 20'000u);
    // The trees the parent holds (sub/ and empty/ at least) are not sent.
    EXPECT_LT(second["tree_bytes"].get<std::uint64_t>(), first["tree_bytes"].get<std::uint64_t>());
    // One file changed: it alone is read; its unchanged chunks stay home.
    auto changed = big;
    for (std::size_t i = 0; i < 50; ++i) changed[i] ^= 0x33;
    tmp.write("src/big.bin", changed);
    r = run_tool({"push", "--to", s.address(), src.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto third = json_of(r);
    EXPECT_EQ(third["files_pushed"], 1);
    EXPECT_EQ(third["files_reused"], 2);
    EXPECT_LT(third["bytes_sent"].get<std::uint64_t>(), 100'000u);
    // Same size and mtime, a new ctime (a chmod there and back): read again.
    fs::permissions(tmp.path() / "src/sub/b.txt", fs::perms::owner_exec, fs::perm_options::add);
    fs::permissions(tmp.path() / "src/sub/b.txt", fs::perms::owner_exec, fs::perm_options::remove);
    r = run_tool({"push", "--to", s.address(), src.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r)["files_pushed"], 1);
    EXPECT_EQ(json_of(r)["bytes_read"], 6);
    EXPECT_EQ(json_of(r)["bytes_sent"], 0);
    // --force-read reads every file, sends no chunk the server has.
    r = run_tool({"push", "--to", s.address(), src.string(), "--force-read", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r)["files_pushed"], 3);
    EXPECT_EQ(json_of(r)["bytes_sent"], 0);
    EXPECT_EQ(snapshot_count(dir), 5u);
    // The newest restores the changed file.
    const fs::path out = tmp.path() / "out";
    r = run_tool({"pull", "--from", s.address(), "latest:" + src.string(), "-o", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(out / "big.bin"), std::string(changed.begin(), changed.end()));
    EXPECT_EQ(fs::read_symlink(out / "link"), "sub/a.txt");
    EXPECT_TRUE(fs::is_directory(out / "empty"));
    EXPECT_TRUE(fs::equivalent(out / "hard", out / "sub/a.txt"));
    // Named files still go with --names.
    r = run_tool({"push", "--to", s.address(), src.string(), "--names", "--name", "p", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r)["file_count"], 4);  // big, hard, sub/a, sub/b (the link is not followed)
}

TEST(TransferTreePush, OnlyTheTreesTheServerLacksAreSent) {
    test::TempDir tmp;
    for (const char* d : {"src/a/a1", "src/b", "src/c/d"}) fs::create_directories(tmp.path() / d);
    for (int i = 0; i < 20; ++i) {
        test::write_bytes(tmp.path() / fmt::format("src/a/a1/f{}.txt", i), fmt::format("file {}", i));
        test::write_bytes(tmp.path() / fmt::format("src/b/g{}.txt", i), fmt::format("other {}", i));
    }
    test::write_bytes(tmp.path() / "src/c/d/z.txt", "zzz");
    const fs::path src = tmp.path() / "src";
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve");
    auto r = run_tool({"push", "--to", s.address(), src.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto first = json_of(r);
    EXPECT_EQ(first["trees_sent"], first["trees"]);  // (no parent: every tree)
    // One file deep down changed: a/, a/a1/ and b/ stay on the server.
    test::write_bytes(tmp.path() / "src/c/d/z.txt", "zzzz");
    r = run_tool({"push", "--to", s.address(), src.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto second = json_of(r);
    EXPECT_EQ(second["trees"], first["trees"]);
    EXPECT_LE(second["trees_sent"].get<std::uint64_t>() + 3, second["trees"].get<std::uint64_t>());
    EXPECT_GE(second["trees_sent"].get<std::uint64_t>(), 3u);  // c/d, c, src (and the directories above it)
    EXPECT_LT(second["tree_bytes"].get<std::uint64_t>(), first["tree_bytes"].get<std::uint64_t>() / 2);
    EXPECT_EQ(second["totals"]["files"], 41);
    // The snapshot is whole: it verifies and restores every file.
    r = run_tool({"store", "verify", dir.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    const fs::path out = tmp.path() / "out";
    r = run_tool({"pull", "--from", s.address(), "latest:" + src.string(), "-o", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(out / "a/a1/f7.txt"), "file 7");
    EXPECT_EQ(test::read_bytes(out / "b/g19.txt"), "other 19");
    EXPECT_EQ(test::read_bytes(out / "c/d/z.txt"), "zzzz");
    // A snapshot made from those held trees is a parent like any other.
    r = run_tool({"push", "--to", s.address(), src.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r)["files_pushed"], 0);
    EXPECT_EQ(json_of(r)["parent"], second["id"]);
}

TEST(TransferTreePush, AnUnchangedSparseFileIsNotPushedAgain) {
    test::TempDir tmp;
    fs::create_directories(tmp.path() / "src");
    const fs::path sparse = tmp.path() / "src/holes.bin";
    {
        const int fd = ::open(sparse.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ASSERT_GE(fd, 0);
        const std::string data(8192, 'd');
        ASSERT_EQ(::pwrite(fd, data.data(), data.size(), 1 << 20), static_cast<ssize_t>(data.size()));
        ASSERT_EQ(::ftruncate(fd, 4 << 20), 0);
        ::close(fd);
    }
    struct stat st {};
    ASSERT_EQ(::stat(sparse.c_str(), &st), 0);
    if (st.st_blocks * 512 >= st.st_size) GTEST_SKIP() << "this filesystem keeps no holes";
    test::write_bytes(tmp.path() / "src/plain.txt", "plain");
    const fs::path src = tmp.path() / "src";
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve");
    auto r = run_tool({"push", "--to", s.address(), src.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r)["files_pushed"], 2);
    r = run_tool({"push", "--to", s.address(), src.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto second = json_of(r);
    EXPECT_EQ(second["files_pushed"], 0);
    EXPECT_EQ(second["files_reused"], 2);
    EXPECT_EQ(second["bytes_read"], 0);
    // Changed (data elsewhere, the same size, mtime put back; its ctime and
    // extents differ): read again.
    {
        const int fd = ::open(sparse.c_str(), O_WRONLY);
        ASSERT_GE(fd, 0);
        const std::string data(8192, 'e');
        ASSERT_EQ(::pwrite(fd, data.data(), data.size(), 2 << 20), static_cast<ssize_t>(data.size()));
        const struct timespec times[2] = {st.st_atim, st.st_mtim};
        ASSERT_EQ(::futimens(fd, times), 0);
        ::close(fd);
    }
    r = run_tool({"push", "--to", s.address(), src.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r)["files_pushed"], 1);
    const fs::path out = tmp.path() / "out";
    r = run_tool({"pull", "--from", s.address(), "latest:" + src.string(), "-o", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string want(4 << 20, '\0');
    std::fill_n(want.begin() + (1 << 20), 8192, 'd');
    std::fill_n(want.begin() + (2 << 20), 8192, 'e');
    EXPECT_TRUE(test::read_bytes(out / "holes.bin") == want);
}

// ------------------------------------------------------------ raw streams

std::unique_ptr<v1::Transfer::Stub> stub_of(const Serve& s) {
    return v1::Transfer::NewStub(grpc::CreateChannel(s.address(), grpc::InsecureChannelCredentials()));
}

std::string digest_bytes(std::string_view bytes) {
    const auto id = store::chunk_id_of(std::as_bytes(std::span(bytes.data(), bytes.size())));
    return {reinterpret_cast<const char*>(id.data()), id.size()};
}

/// A client that speaks the snapshot push by hand.
struct RawPush {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReaderWriter<v1::PushRequest, v1::PushReply>> rw;
    explicit RawPush(v1::Transfer::Stub& stub) {
        test::authorize(ctx);
        rw = stub.Push(&ctx);
    }
    bool send(const v1::PushRequest& m) { return rw->Write(m); }
    std::optional<v1::PushReply> read() {
        v1::PushReply r;
        if (!rw->Read(&r)) return std::nullopt;
        return r;
    }
    grpc::Status end() {
        rw->WritesDone();
        v1::PushReply r;
        while (rw->Read(&r)) {
        }
        return rw->Finish();
    }
    void start(const std::string& path = "/x", const std::string& parent = {}) {
        v1::PushRequest m;
        m.mutable_snapshot()->add_paths(path);
        m.mutable_snapshot()->set_host("raw");
        if (parent.empty())
            m.mutable_snapshot()->set_no_parent(true);
        else
            m.mutable_snapshot()->set_parent(parent);
        ASSERT_TRUE(send(m));
        const auto r = read();
        ASSERT_TRUE(r && r->has_snapshot_started());
        no_dones = r->snapshot_started().no_dones();
    }
    bool no_dones = false;  ///< the server sends no done per file
    /// One small file of one chunk under `name`: its digest.
    std::string file(const std::string& name, const std::string& bytes) {
        v1::PushRequest m;
        m.mutable_start()->set_name(name);
        m.mutable_start()->set_mode(0644);
        send(m);
        m.Clear();
        const std::string id = digest_bytes(bytes);
        m.mutable_chunks()->set_ids(id);
        m.mutable_chunks()->add_sizes(static_cast<std::uint32_t>(bytes.size()));
        send(m);
        const auto want = read();
        if (!want || !want->has_want()) return {};
        if (want->want().count() == 1) {
            m.Clear();
            auto* c = m.mutable_data()->add_chunks();
            c->set_id(id);
            c->set_raw_size(static_cast<std::uint32_t>(bytes.size()));
            c->set_raw(true);
            c->set_payload_size(static_cast<std::uint32_t>(bytes.size()));
            c->set_piece(bytes);
            send(m);
        }
        m.Clear();
        m.mutable_end()->set_size(bytes.size());
        m.mutable_end()->set_digest(id);
        send(m);
        if (no_dones) return id;  // (a refusal would end the stream: the commit says)
        const auto done = read();
        return done && done->has_done() ? id : std::string();
    }
};

tr::Entry file_entry(const std::string& name, const std::string& digest, std::uint64_t size) {
    tr::Entry e;
    e.name = name;
    e.type = tr::EntryType::file;
    e.mode = 0644;
    e.size = size;
    e.nlink = 1;
    e.content.digest = digest;
    return e;
}

tr::Entry dir_entry(const std::string& name, const tr::BlobId& subtree) {
    tr::Entry e;
    e.name = name;
    e.type = tr::EntryType::directory;
    e.mode = 0755;
    e.subtree = subtree;
    return e;
}

void add_record(std::string& records, const std::vector<std::uint8_t>& object, const tr::BlobId* claimed = nullptr) {
    const tr::BlobId id = claimed ? *claimed : tr::tree_id(object);
    records.append(reinterpret_cast<const char*>(id.data()), id.size());
    const auto len = static_cast<std::uint32_t>(object.size());
    for (int i = 0; i < 4; ++i) records.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
    records.append(reinterpret_cast<const char*>(object.data()), object.size());
}

/// Sends the records and a commit of `root`: the server's status.
grpc::Status commit(RawPush& p, const std::string& records, const tr::BlobId& root) {
    v1::PushRequest m;
    m.mutable_trees()->set_bytes(records);
    p.send(m);
    m.Clear();
    m.mutable_commit()->set_root(root.data(), root.size());
    p.send(m);
    return p.end();
}

/// A tree object with a name the encoder refuses: the CBOR of one file
/// entry written by hand (tree_object.hpp's layout).
std::vector<std::uint8_t> tree_with_name(const std::string& name, const std::string& digest, std::uint64_t size) {
    using json = nlohmann::json;
    const auto bin = [](std::string_view v) { return json::binary(std::vector<std::uint8_t>(v.begin(), v.end())); };
    json e = json::object();
    e["n"] = bin(name);
    e["t"] = 0;
    e["m"] = 0644;
    e["s"] = size;
    e["N"] = 1;
    e["D"] = bin(digest);
    json top = json::object();
    top["e"] = json::array({e});
    top["v"] = tr::kTreeFormat;
    return json::to_cbor(top);
}

TEST(TransferTreePush, ALyingClientIsRefusedAndNothingIsCommitted) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    // A snapshot whose content a liar might name without sending it.
    fs::create_directories(tmp.path() / "other");
    test::write_bytes(tmp.path() / "other/secret.txt", "the secret");
    ASSERT_EQ(run_tool({"store", "backup", dir.string(), (tmp.path() / "other").string()}).exit_code, 0);
    Serve s(dir, tmp.path() / "serve");
    auto stub = stub_of(s);
    const std::string content = "pushed bytes";
    {  // The good case first: the same messages commit.
        RawPush p(*stub);
        p.start();
        EXPECT_TRUE(p.no_dones);  // (the next reply after the file is the commit's)
        const std::string d = p.file("x/a", content);
        ASSERT_EQ(d.size(), 32u);
        std::string records;
        const auto inner = tr::encode_tree({file_entry("a", d, content.size())});
        add_record(records, inner);
        const auto top = tr::encode_tree({dir_entry("x", tr::tree_id(inner))});
        add_record(records, top);
        const grpc::Status st = commit(p, records, tr::tree_id(top));
        ASSERT_TRUE(st.ok()) << st.error_message();
        ASSERT_EQ(snapshot_count(dir), 2u);
    }
    const auto run_std = [&](const std::function<void(RawPush&, std::string&, tr::BlobId&)>& make, const std::string& what) {
        RawPush p(*stub);
        p.start();
        std::string records;
        tr::BlobId root{};
        make(p, records, root);
        const auto before = snapshot_count(dir);
        const grpc::Status st = commit(p, records, root);
        EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << what << ": " << st.error_message();
        EXPECT_NE(st.error_message().find(what), std::string::npos) << st.error_message();
        EXPECT_EQ(snapshot_count(dir), before) << what;
    };
    // A file naming a content stored by another snapshot, never sent.
    run_std([&](RawPush&, std::string& records, tr::BlobId& root) {
        const auto top = tr::encode_tree({file_entry("s", digest_bytes("the secret"), 10)});
        add_record(records, top);
        root = tr::tree_id(top);
    }, "neither pushed in this stream nor offered");
    // A content sent, named with another length.
    run_std([&](RawPush& p, std::string& records, tr::BlobId& root) {
        const std::string d = p.file("a", content);
        const auto top = tr::encode_tree({file_entry("a", d, content.size() + 1)});
        add_record(records, top);
        root = tr::tree_id(top);
    }, "neither pushed in this stream nor offered");
    // A tree under an id that is not its own.
    run_std([&](RawPush& p, std::string& records, tr::BlobId& root) {
        const std::string d = p.file("a", content);
        const auto top = tr::encode_tree({file_entry("a", d, content.size())});
        tr::BlobId wrong = tr::tree_id(top);
        wrong[0] ^= 1;
        add_record(records, top, &wrong);
        root = wrong;
    }, "does not have that id");
    // Names with "..", '/' and nothing.
    for (const std::string bad : {"..", "a/b", ".", ""}) {
        run_std([&](RawPush& p, std::string& records, tr::BlobId& root) {
            const std::string d = p.file("a", content);
            const auto top = tree_with_name(bad, d, content.size());
            add_record(records, top);
            root = tr::tree_id(top);
        }, "a name in '/'");
    }
    // A directory whose tree was not sent; a tree no directory names.
    run_std([&](RawPush&, std::string& records, tr::BlobId& root) {
        tr::BlobId missing{};
        missing[3] = 7;
        const auto top = tr::encode_tree({dir_entry("d", missing)});
        add_record(records, top);
        root = tr::tree_id(top);
    }, "was not sent");
    run_std([&](RawPush& p, std::string& records, tr::BlobId& root) {
        const std::string d = p.file("a", content);
        add_record(records, tr::encode_tree({file_entry("stray", d, content.size())}));
        const auto top = tr::encode_tree({file_entry("a", d, content.size())});
        add_record(records, top);
        root = tr::tree_id(top);
    }, "in no directory");
    // Bytes that are not a tree object; a truncated record.
    run_std([&](RawPush&, std::string& records, tr::BlobId& root) {
        const std::vector<std::uint8_t> junk{0xa1, 0x61, 0x76, 0x01};
        add_record(records, junk);
        root = tr::tree_id(junk);
    }, "snapshot refused: tree");
    run_std([&](RawPush&, std::string& records, tr::BlobId& root) {
        records = std::string(20, 'x');
        root[0] = 1;
    }, "truncated");
    // Tree ids (the trees the server holds are not sent). The parent here is
    // the good case's snapshot: its trees are held, and its content is
    // reused only where the server offered it back.
    const auto snaps = json_of(run_tool({"store", "snapshots", dir.string(), "--json"}));
    std::string parent_id;
    for (const auto& x : snaps)
        if (x["host"] == "raw") parent_id = x["id"];
    ASSERT_FALSE(parent_id.empty());
    const auto held_inner = tr::encode_tree({file_entry("a", digest_bytes(content), content.size())});
    const auto held_top = tr::encode_tree({dir_entry("x", tr::tree_id(held_inner))});
    const tr::BlobId held = tr::tree_id(held_top);
    const auto ask = [](RawPush& p, const std::vector<tr::BlobId>& ids) {
        v1::PushRequest m;
        for (const auto& id : ids) m.mutable_tree_ids()->mutable_ids()->append(reinterpret_cast<const char*>(id.data()), 32);
        p.send(m);
        const auto r = p.read();
        return r && r->has_trees_wanted() ? r->trees_wanted().wanted() : std::string("no answer");
    };
    const auto refused = [&](RawPush& p, const std::string& records, const tr::BlobId& root, const std::string& what) {
        const auto before = snapshot_count(dir);
        const grpc::Status st = commit(p, records, root);
        EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << what << ": " << st.error_message();
        EXPECT_NE(st.error_message().find(what), std::string::npos) << st.error_message();
        EXPECT_EQ(snapshot_count(dir), before) << what;
    };
    {  // The good case: its file offered back, its trees held, none sent.
        RawPush p(*stub);
        p.start("/x", parent_id);
        v1::PushRequest m;
        auto* c = m.mutable_candidates();
        c->add_paths("x/a");
        c->add_sizes(content.size());
        c->add_mtimes_ns(0);
        c->add_ctimes_ns(0);
        c->add_inodes(0);
        c->add_devices(0);
        p.send(m);
        const auto reuse = p.read();
        ASSERT_TRUE(reuse && reuse->has_reuse());
        EXPECT_EQ(reuse->reuse().digests(), digest_bytes(content));
        tr::BlobId lacking{};
        lacking[5] = 9;
        EXPECT_EQ(ask(p, {tr::tree_id(held_inner), held, lacking}), std::string("\0\0\1", 3));
        const auto before = snapshot_count(dir);
        const grpc::Status st = commit(p, "", held);
        ASSERT_TRUE(st.ok()) << st.error_message();
        EXPECT_EQ(snapshot_count(dir), before + 1);
    }
    {  // The parent's trees held, its content not offered: nothing pulled back.
        RawPush p(*stub);
        p.start("/x", parent_id);
        EXPECT_EQ(ask(p, {tr::tree_id(held_inner), held}), std::string("\0\0", 2));
        refused(p, "", held, "neither pushed in this stream nor offered");
    }
    {  // The parent's root named without asking: the server never said it held it.
        RawPush p(*stub);
        p.start("/x", parent_id);
        const std::string d = p.file("a", content);
        const auto top = tr::encode_tree({file_entry("a", d, content.size()), dir_entry("old", held)});
        std::string records;
        add_record(records, top);
        refused(p, records, tr::tree_id(top), "was not sent");
    }
    {  // A tree the server said it lacks, then not sent.
        RawPush p(*stub);
        p.start("/x", parent_id);
        const std::string d = p.file("a", content);
        const auto inner = tr::encode_tree({file_entry("b", d, content.size())});
        const auto top = tr::encode_tree({dir_entry("in", tr::tree_id(inner))});
        EXPECT_EQ(ask(p, {tr::tree_id(inner), tr::tree_id(top)}), std::string("\1\1", 2));
        std::string records;
        add_record(records, top);
        refused(p, records, tr::tree_id(top), "was not sent");
    }
    {  // A sparse candidate's extents that are not (offset, length) pairs;
       // sparse flags for some candidates only.
        for (const bool short_flags : {false, true}) {
            RawPush p(*stub);
            p.start("/x", parent_id);
            v1::PushRequest m;
            auto* c = m.mutable_candidates();
            for (const char* path : {"x/a", "x/b"}) {
                c->add_paths(path);
                c->add_sizes(content.size());
                c->add_mtimes_ns(0);
                c->add_ctimes_ns(0);
                c->add_inodes(0);
                c->add_devices(0);
            }
            c->add_sparse(true);
            c->add_extents(std::string(7, 'e'));
            if (!short_flags) {
                c->add_sparse(false);
                c->add_extents("");
            }
            p.send(m);
            const grpc::Status st = p.end();
            EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
            EXPECT_NE(st.error_message().find(short_flags ? "each with" : "(offset, length) pairs"), std::string::npos)
                << st.error_message();
        }
    }
    {  // Ids that are not 32 bytes each; ids after the records.
        RawPush p(*stub);
        p.start("/x", parent_id);
        v1::PushRequest m;
        m.mutable_tree_ids()->set_ids(std::string(33, 'i'));
        p.send(m);
        EXPECT_EQ(p.end().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
        RawPush q(*stub);
        q.start("/x", parent_id);
        m.Clear();
        m.mutable_trees()->set_bytes(std::string(36, 'x'));
        q.send(m);
        m.Clear();
        m.mutable_tree_ids()->set_ids(std::string(32, 'i'));
        q.send(m);
        const grpc::Status st = q.end();
        EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
        EXPECT_NE(st.error_message().find("after the tree records"), std::string::npos) << st.error_message();
    }
    {  // A file path with ".." in the snapshot's files; too many candidates.
        RawPush p(*stub);
        p.start();
        v1::PushRequest m;
        m.mutable_start()->set_name("a/../b");
        p.send(m);
        const grpc::Status st = p.end();
        EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
    }
    {
        RawPush p(*stub);
        p.start();
        v1::PushRequest m;
        for (int i = 0; i < 5000; ++i) {
            auto* c = m.mutable_candidates();
            c->add_paths("f");
            c->add_sizes(1);
            c->add_mtimes_ns(1);
            c->add_ctimes_ns(1);
            c->add_inodes(1);
            c->add_devices(1);
        }
        p.send(m);
        const grpc::Status st = p.end();
        EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
    }
    {  // A relative path; finish in place of commit.
        RawPush p(*stub);
        v1::PushRequest m;
        m.mutable_snapshot()->add_paths("relative/x");
        p.send(m);
        EXPECT_EQ(p.end().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
        RawPush q(*stub);
        q.start();
        m.Clear();
        m.mutable_finish();
        q.send(m);
        EXPECT_EQ(q.end().error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    }
    EXPECT_EQ(snapshot_count(dir), 3u);  // (the backup, the good case and the good case on held trees)
}

TEST(TransferTreePush, APushThatEndsBeforeItsCommitLeavesNoSnapshotAndARerunWorks) {
    test::TempDir tmp;
    tmp.write("src/a.bin", test::random_bytes(300'000, 5));
    test::write_bytes(tmp.path() / "src/b.txt", "bee");
    const fs::path src = tmp.path() / "src";
    const auto dir = init_store(tmp);
    {
        Serve s(dir, tmp.path() / "serve");
        auto stub = stub_of(s);
        RawPush p(*stub);
        p.start(src.string());
        ASSERT_EQ(p.file("a.bin", "some of it").size(), 32u);
        p.ctx.TryCancel();  // the client vanishes before trees and commit
        p.end();
        EXPECT_TRUE(s.wait_log("push:"));
        EXPECT_EQ(snapshot_count(dir), 0u);
        // The client killed at once, mid-file.
        fs::create_directories(tmp.path() / "killed");
        const pid_t pid = test::spawn_tool({"push", "--to", s.address(), src.string(), "-q"}, tmp.path() / "killed");
        ::usleep(20'000);
        ::kill(pid, SIGKILL);
        test::wait_exit(pid);
        // The server ends that stream before we count: a commit sent just
        // before the kill is still carried out (ignored if the client died
        // before it opened a stream: no line then).
        s.wait_log("push:", 2);
        const auto n = snapshot_count(dir);
        EXPECT_LE(n, 1u);  // (a fast machine may have committed it whole before the kill)
        // A rerun commits the tree.
        const auto r = run_tool({"push", "--to", s.address(), src.string(), "--json"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(snapshot_count(dir), n + 1);
    }
    // What the broken streams stored under the snapshots' names, gc drops;
    // the committed snapshot verifies and restores.
    auto r = run_tool({"store", "gc", dir.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"store", "verify", dir.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    r = run_tool({"store", "get", dir.string(), "latest:" + src.string(), "-o", (tmp.path() / "out").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(tmp.path() / "out/b.txt"), "bee");
}

TEST(TransferTreePush, AnAppendOnlyTokenPushesTreesButReplacesNoName) {
    test::TempDir tmp;
    test::write_bytes(tmp.path() / "full", "full-access-token-0123456789\n");
    test::write_bytes(tmp.path() / "append", "append-only-token-0123456789\n");
    for (const char* f : {"full", "append"}) fs::permissions(tmp.path() / f, fs::perms::owner_read | fs::perms::owner_write);
    const std::string full = (tmp.path() / "full").string(), append = (tmp.path() / "append").string();
    fs::create_directories(tmp.path() / "src");
    test::write_bytes(tmp.path() / "src/a.txt", "a");
    const fs::path src = tmp.path() / "src";
    const auto dir = init_store(tmp);
    Serve s(dir, tmp.path() / "serve", {"--token-file", full, "--append-token-file", append});
    auto r = run_tool({"push", "--to", s.address(), "--token-file", append, src.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    test::write_bytes(tmp.path() / "src/a.txt", "a, changed");
    r = run_tool({"push", "--to", s.address(), "--token-file", append, src.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(snapshot_count(dir), 2u);
    // Both versions are there: a snapshot replaces nothing.
    const auto snaps = json_of(run_tool({"store", "snapshots", dir.string(), "--json"}));
    r = run_tool({"store", "get", dir.string(), snaps[0]["id"].get<std::string>() + ":" + (src / "a.txt").string(),
                  "-o", "-"});
    EXPECT_EQ(r.out, "a");
    // A named file the store holds is not replaced by that token.
    r = run_tool({"push", "--to", s.address(), "--token-file", append, (src / "a.txt").string(), "--name", "n"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"push", "--to", s.address(), "--token-file", append, (src / "a.txt").string(), "--name", "n"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("append-only"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cdc
