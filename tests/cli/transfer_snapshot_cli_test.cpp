// SPDX-License-Identifier: Apache-2.0
// Snapshots over the wire (issue 35 item 5): `cdc ls --from` lists a
// server's snapshots and the paths of one; `cdc pull --from SNAP[:PATH]`
// restores a tree with every file type and its metadata, as `store get`
// does, in one stream, fetching only the chunks OUT's files and the seeds
// lack; an append-only token adds and reads but never replaces; and a
// lying server (names with "..", a link planted in OUT, sizes beyond an
// entry's, trees beyond the header, bytes that are not the content) never
// makes a tree pull write outside OUT.
#include "serve_support.hpp"
#include "tree_support.hpp"

#include "cdc_transfer.grpc.pb.h"

#include <protocol.hpp>

#include <cdc/store.hpp>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include <csignal>
#include <thread>

#include <sys/stat.h>
#include <sys/wait.h>
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

nlohmann::json backup(const fs::path& dir, const fs::path& path, int expect = 0) {
    const auto r = run_tool({"store", "backup", dir.string(), path.string(), "--json"});
    EXPECT_EQ(r.exit_code, expect) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
}

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
}

/// Every path below `dir` (names, not following links).
std::set<std::string> paths_below(const fs::path& dir) {
    std::set<std::string> out;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); it.increment(ec))
        out.insert(it->path().lexically_relative(dir).string());
    return out;
}

TEST(TransferSnapshotCli, ListsTheSnapshotsAndThePathsOfOne) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    fs::create_directories(tmp.path() / "src/a");
    test::write_bytes(tmp.path() / "src/a/x.txt", "x");
    fs::create_symlink("a/x.txt", tmp.path() / "src/l");
    const std::string id1 = backup(dir, tmp.path() / "src")["id"];
    test::write_bytes(tmp.path() / "src/a/y.txt", "yy");
    const std::string id2 = backup(dir, tmp.path() / "src")["id"];
    Serve s(dir, tmp.path() / "serve");
    auto r = run_tool({"ls", "--from", s.address(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto snaps = json_of(r);
    ASSERT_EQ(snaps.size(), 2u) << r.out;
    EXPECT_EQ(snaps[0]["id"], id1);
    EXPECT_EQ(snaps[1]["id"], id2);
    EXPECT_EQ(snaps[1]["paths"], nlohmann::json::array({(tmp.path() / "src").string()}));
    EXPECT_EQ(snaps[1]["totals"]["files"], 2);
    for (const char* key : {"time_ns", "time", "host", "user", "tags", "parent"}) EXPECT_TRUE(snaps[1].contains(key)) << key;
    r = run_tool({"ls", "--from", s.address()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(id1.substr(0, 8)), std::string::npos) << r.out;
    // A snapshot's paths, as `store ls` gives them.
    const std::string ref = id1.substr(0, 8) + ":" + (tmp.path() / "src").string();
    r = run_tool({"ls", "--from", s.address(), ref, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto local = run_tool({"store", "ls", dir.string(), ref, "--json"});
    ASSERT_EQ(local.exit_code, 0) << local.err;
    EXPECT_EQ(json_of(r), json_of(local));
    r = run_tool({"ls", "--from", s.address(), "latest:" + (tmp.path() / "src").string(), "-l"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("/src/a/y.txt"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("src/l -> a/x.txt"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("lrwxrwxrwx"), std::string::npos) << r.out;
    // Unknown snapshot or path: exit 2.
    r = run_tool({"ls", "--from", s.address(), "latest:/no/such/path"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    r = run_tool({"ls", "--from", s.address(), "ffffffff:/"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    // The named files still list (none here).
    EXPECT_TRUE(json_of(run_tool({"ls", "--from", s.address(), "--names", "--json"})).empty());
}

TEST(TransferSnapshotCli, PullsATreeWithEveryTypeAndItsMetadataInOneStream) {
    test::TempDir tmp;
    const fs::path src = tmp.path() / "src";
    const test::FullTree made = test::make_full_tree(src);
    {  // reading a symlink moves its atime once (relatime): settled first
        test::MemoryTrees settle;
        tr::capture(src, settle);
    }
    const auto dir = init_store(tmp);
    backup(dir, src, made.root ? 0 : 3);
    test::MemoryTrees before;
    const auto root = tr::capture(src, before);
    Serve s(dir, tmp.path() / "serve");
    const fs::path out = tmp.path() / "out";
    auto r = run_tool({"pull", "--from", s.address(), "latest:" + src.string(), "-o", out.string(), "--keep-setid",
                       "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = json_of(r);
    EXPECT_EQ(j["hardlinks"], 3);  // hard0, links/hard2, pair_b
    EXPECT_EQ(j["symlinks"], 5);
    EXPECT_EQ(j["specials"], made.devices ? 3 : 1);
    ASSERT_EQ(j["not_restored"].size(), 1u) << r.out;  // the socket
    // Into an empty directory: every chunk travels but those a list repeats.
    EXPECT_EQ(j["seed_files"], 0);
    EXPECT_EQ(j["bytes_sent"].get<std::uint64_t>() + j["bytes_reused"].get<std::uint64_t>(), j["content_bytes"]);
    EXPECT_GT(j["bytes_sent"].get<std::uint64_t>(), 50'000u);
    test::MemoryTrees after;
    const auto back = tr::capture(out, after);
    std::vector<std::string> diffs;
    test::diff_trees(before, root, after, back, "", diffs);
    EXPECT_EQ(diffs, std::vector<std::string>{"sock: only in the first"});
    struct stat a {}, b {};
    ASSERT_EQ(::stat((out / "dir/hard1").c_str(), &a), 0);
    ASSERT_EQ(::stat((out / "links/hard2").c_str(), &b), 0);
    EXPECT_EQ(a.st_ino, b.st_ino);
    ASSERT_EQ(::stat((out / "sparse.img").c_str(), &a), 0);
    EXPECT_LT(a.st_blocks * 512, 1 << 20) << "the holes were written as zeros";
    // One stream for the whole tree.
    ASSERT_TRUE(s.wait_log("tree pull:"));
    EXPECT_EQ(count_of(s.log(), " pull: "), 1u) << s.log();
    // The same as `store get` of it.
    const fs::path got = tmp.path() / "got";
    r = run_tool({"store", "get", dir.string(), "latest:" + src.string(), "-o", got.string(), "--keep-setid"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    test::MemoryTrees local;
    diffs.clear();
    test::diff_trees(local, tr::capture(got, local), after, back, "", diffs);
    EXPECT_TRUE(diffs.empty()) << fmt::format("{}", fmt::join(diffs, "\n"));
    // A file of the snapshot, into a directory.
    fs::create_directories(tmp.path() / "one");
    r = run_tool({"pull", "--from", s.address(), "latest:" + (src / "dir/sub/deeper/leaf").string(), "-o",
                  (tmp.path() / "one").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(tmp.path() / "one/leaf"), "leaf");
    // A part of the tree whose hard link's first file lies outside it: the
    // link is restored as a file with its content.
    r = run_tool({"pull", "--from", s.address(), "latest:" + (src / "links").string(), "-o",
                  (tmp.path() / "links").string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(tmp.path() / "links/hard2"), "linked content");
    EXPECT_EQ(fs::read_symlink(tmp.path() / "links/rel"), "../plain.txt");
    // A snapshot's path restores to a path, not to standard output.
    r = run_tool({"pull", "--from", s.address(), "latest", "-o", "-"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST(TransferSnapshotCli, OnlyTheChunksOutAndTheSeedsLackTravel) {
    test::TempDir tmp;
    const auto big = test::random_bytes(1'000'000, 7);
    const auto other = test::random_bytes(300'000, 8);
    tmp.write("src/big.bin", big);
    tmp.write("src/sub/other.bin", other);
    test::write_bytes(tmp.path() / "src/small.txt", "small");
    const auto dir = init_store(tmp);
    backup(dir, tmp.path() / "src");
    Serve s(dir, tmp.path() / "serve");
    const std::string ref = "latest:" + (tmp.path() / "src").string();
    const fs::path out = tmp.path() / "out";
    auto j = json_of(run_tool({"pull", "--from", s.address(), ref, "-o", out.string(), "--json"}));
    EXPECT_EQ(j["bytes_sent"], big.size() + other.size() + 5);
    EXPECT_EQ(j["contents"], 3);
    // Again into the same directory: every chunk is in OUT's files.
    j = json_of(run_tool({"pull", "--from", s.address(), ref, "-o", out.string(), "--json"}));
    EXPECT_EQ(j["bytes_sent"], 0);
    EXPECT_EQ(j["bytes_reused"], big.size() + other.size() + 5);
    EXPECT_EQ(j["seed_files"], 3);
    // A file of OUT changed at its start: only the chunks that differ travel,
    // and it is restored.
    auto changed = big;
    for (std::size_t i = 0; i < 100; ++i) changed[i] ^= 0x5a;
    tmp.write("out/big.bin", changed);
    j = json_of(run_tool({"pull", "--from", s.address(), ref, "-o", out.string(), "--json"}));
    EXPECT_GT(j["bytes_sent"].get<std::uint64_t>(), 0u);
    EXPECT_LT(j["bytes_sent"].get<std::uint64_t>(), 100'000u);
    EXPECT_EQ(test::read_bytes(out / "big.bin"), std::string(big.begin(), big.end()));
    // A directory in OUT where the tree has a file: that entry is refused
    // (exit 3) and its content, sent already, is dropped; the files after it
    // are restored.
    fs::remove(out / "big.bin");
    fs::create_directories(out / "big.bin");
    fs::remove(out / "sub/other.bin");
    auto r = run_tool({"pull", "--from", s.address(), ref, "-o", out.string(), "--json"});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("big.bin"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::is_directory(out / "big.bin"));
    EXPECT_EQ(test::read_bytes(out / "sub/other.bin"), std::string(other.begin(), other.end()));
    EXPECT_EQ(test::read_bytes(out / "small.txt"), "small");
    // A fresh directory with a seed holding big.bin: the rest travels.
    const auto seed = tmp.write("seed.bin", big);
    j = json_of(run_tool({"pull", "--from", s.address(), ref, "-o", (tmp.path() / "fresh").string(), "--basis",
                          seed.string(), "--json"}));
    EXPECT_EQ(j["bytes_sent"], other.size() + 5);
    EXPECT_EQ(test::read_bytes(tmp.path() / "fresh/big.bin"), std::string(big.begin(), big.end()));
    EXPECT_EQ(test::read_bytes(tmp.path() / "fresh/sub/other.bin"), std::string(other.begin(), other.end()));
}

TEST(TransferSnapshotCli, AnAppendOnlyTokenAddsButNeverReplaces) {
    test::TempDir tmp;
    const auto dir = init_store(tmp);
    test::write_bytes(tmp.path() / "full", "full-access-token-0123456789\n");
    test::write_bytes(tmp.path() / "append", "append-only-token-0123456789\n");
    test::write_bytes(tmp.path() / "wrong", "some-other-token-0123456789\n");
    for (const char* f : {"full", "append", "wrong"}) fs::permissions(tmp.path() / f, fs::perms::owner_read | fs::perms::owner_write);
    fs::create_directories(tmp.path() / "src");
    test::write_bytes(tmp.path() / "src/f.txt", "version 1");
    backup(dir, tmp.path() / "src");
    Serve s(dir, tmp.path() / "serve",
            {"--token-file", (tmp.path() / "full").string(), "--append-token-file", (tmp.path() / "append").string()});
    const std::string full = (tmp.path() / "full").string(), append = (tmp.path() / "append").string();
    const auto f1 = tmp.write("one.bin", test::random_bytes(100'000, 1));
    const auto f2 = tmp.write("two.bin", test::random_bytes(100'000, 2));
    // The append-only token pushes a new name, lists and pulls.
    auto r = run_tool({"push", "--to", s.address(), "--token-file", append, f1.string(), "--name", "n"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"ls", "--from", s.address(), "--token-file", append, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r).size(), 1u);
    r = run_tool({"pull", "--from", s.address(), "--token-file", append, "n", "-o", (tmp.path() / "n.out").string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"pull", "--from", s.address(), "--token-file", append, "latest", "-o", (tmp.path() / "t").string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    // ... but never replaces: refused, exit 4, the stored file unchanged.
    r = run_tool({"push", "--to", s.address(), "--token-file", append, f2.string(), "--name", "n"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("append-only"), std::string::npos) << r.err;
    r = run_tool({"pull", "--from", s.address(), "--token-file", full, "n", "-o", (tmp.path() / "check").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(tmp.path() / "check"), test::read_bytes(f1));
    // The full-access token replaces.
    r = run_tool({"push", "--to", s.address(), "--token-file", full, f2.string(), "--name", "n"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"pull", "--from", s.address(), "--token-file", append, "n", "-o", (tmp.path() / "check").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(tmp.path() / "check"), test::read_bytes(f2));
    // Any other token: refused.
    r = run_tool({"ls", "--from", s.address(), "--token-file", (tmp.path() / "wrong").string()});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    // An append-only token needs a full one beside it, and another one.
    r = run_tool({"serve", "--store", dir.string(), "--listen", "127.0.0.1:0", "--no-token", "--append-token-file", append});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    r = run_tool({"serve", "--store", dir.string(), "--listen", "127.0.0.1:0", "--token-file", full,
                  "--append-token-file", full});
    EXPECT_EQ(r.exit_code, 2) << r.err;
}

// ---------------------------------------------------------------- a lying server

/// Info as a store of fastcdc 2K/8K/64K would answer; PullTree as the test
/// says. No token.
class TreeServer final : public v1::Transfer::Service {
public:
    using PullTreeFn = std::function<grpc::Status(grpc::ServerContext*,
                                                  grpc::ServerReaderWriter<v1::PullTreeReply, v1::PullTreeRequest>*)>;
    PullTreeFn pull_tree;

    TreeServer() {
        grpc::ServerBuilder b;
        b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
        b.RegisterService(this);
        server_ = b.BuildAndStart();
    }
    ~TreeServer() override { server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1)); }
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
    grpc::Status PullTree(grpc::ServerContext* ctx,
                          grpc::ServerReaderWriter<v1::PullTreeReply, v1::PullTreeRequest>* stream) override {
        return pull_tree(ctx, stream);
    }

private:
    int port_ = 0;
    std::unique_ptr<grpc::Server> server_;
};

std::string bytes_of(const std::vector<std::uint8_t>& v) { return {v.begin(), v.end()}; }

std::string digest_of(std::string_view s) {
    const auto id = store::chunk_id_of(std::as_bytes(std::span(s.data(), s.size())));
    return {reinterpret_cast<const char*>(id.data()), id.size()};
}

tr::Entry file_entry(const std::string& name, std::string_view content, std::uint64_t size) {
    tr::Entry e;
    e.name = name;
    e.type = tr::EntryType::file;
    e.mode = 0644;
    e.size = size;
    e.nlink = 1;
    e.content.digest = digest_of(content);
    return e;
}

/// A tree object of `entries` as the store writes one (tree_object.hpp:
/// CBOR, fields by one-letter keys, defaults left out), names unjudged: the
/// store's encoder refuses the names a lying server sends. Only the fields
/// these entries use.
std::vector<std::uint8_t> raw_tree(std::vector<tr::Entry> entries) {
    std::sort(entries.begin(), entries.end(), [](const tr::Entry& a, const tr::Entry& b) { return a.name < b.name; });
    using json = nlohmann::json;
    const auto bin = [](std::string_view v) { return json::binary(std::vector<std::uint8_t>(v.begin(), v.end())); };
    json a = json::array();
    for (const auto& e : entries) {
        json j = json::object();
        j["n"] = bin(e.name);
        j["t"] = static_cast<std::uint64_t>(e.type);
        if (e.mode) j["m"] = e.mode;
        if (e.size) j["s"] = e.size;
        if (e.nlink) j["N"] = e.nlink;
        if (!e.target.empty()) j["l"] = bin(e.target);
        if (!e.content.digest.empty()) j["D"] = bin(e.content.digest);
        if (e.type == tr::EntryType::directory)
            j["T"] = bin(std::string_view(reinterpret_cast<const char*>(e.subtree.data()), e.subtree.size()));
        a.push_back(std::move(j));
    }
    json top = json::object();
    top["e"] = std::move(a);
    top["v"] = tr::kTreeFormat;
    return json::to_cbor(top);
}

/// A snapshot of one directory holding `entries`, each content of which
/// the server sends as `chunks` says (content digest -> the chunks it lists
/// and sends for it). `trees_bytes_claimed`: what the header announces (0:
/// the truth).
struct Forged {
    std::vector<tr::Entry> entries;
    std::vector<std::vector<tr::Entry>> subtrees;  // more tree objects
    std::map<std::string, std::vector<std::string>> chunks;
    std::uint64_t trees_bytes_claimed = 0;
    bool silent_after_want = false;  // take the first want, then never answer
};

void append_record(std::string& trees, const std::vector<std::uint8_t>& object) {
    const tr::BlobId id = tr::tree_id(object);
    trees.append(reinterpret_cast<const char*>(id.data()), id.size());
    const auto len = static_cast<std::uint32_t>(object.size());
    for (int i = 0; i < 4; ++i) trees.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
    trees += bytes_of(object);
}

grpc::Status serve_forged(const Forged& f, grpc::ServerContext* ctx,
                          grpc::ServerReaderWriter<v1::PullTreeReply, v1::PullTreeRequest>* stream) {
    v1::PullTreeRequest req;
    if (!stream->Read(&req) || !req.has_start()) return grpc::Status::OK;
    std::string trees;
    for (const auto& sub : f.subtrees) append_record(trees, raw_tree(sub));
    const auto object = raw_tree(f.entries);
    append_record(trees, object);
    tr::Entry root;
    root.name = "root";
    root.type = tr::EntryType::directory;
    root.mode = 0755;
    root.subtree = tr::tree_id(object);
    v1::PullTreeReply header;
    header.mutable_header()->mutable_snapshot()->set_id(std::string(32, 'a'));
    header.mutable_header()->set_root(bytes_of(tr::encode_tree({root})));
    header.mutable_header()->set_trees_bytes(f.trees_bytes_claimed ? f.trees_bytes_claimed : trees.size());
    stream->Write(header);
    v1::PullTreeReply t;
    t.mutable_trees()->set_bytes(trees);
    stream->Write(t);
    std::vector<std::string> digests;
    while (stream->Read(&req) && req.has_files()) {
        for (std::size_t i = 0; i + 32 <= req.files().digests().size(); i += 32)
            digests.push_back(req.files().digests().substr(i, 32));
        if (req.files().last()) break;
    }
    std::vector<std::string> chunks;
    for (const auto& d : digests)
        for (const auto& c : f.chunks.at(d)) chunks.push_back(c);
    if (!chunks.empty()) {
        v1::PullTreeReply list;
        std::string ids;
        for (const auto& c : chunks) {
            ids += digest_of(c);
            list.mutable_chunks()->add_sizes(static_cast<std::uint32_t>(c.size()));
        }
        list.mutable_chunks()->set_ids(ids);
        stream->Write(list);
        if (!stream->Read(&req) || !req.has_want()) return grpc::Status::OK;
        while (f.silent_after_want && !ctx->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        for (std::size_t i = 0; i < chunks.size(); ++i) {
            if (!(static_cast<unsigned char>(req.want().bitmap()[i / 8]) & (1u << (i % 8)))) continue;
            v1::PullTreeReply data;
            auto* c = data.mutable_data()->add_chunks();
            c->set_id(digest_of(chunks[i]));
            c->set_raw_size(static_cast<std::uint32_t>(chunks[i].size()));
            c->set_raw(true);
            c->set_payload_size(static_cast<std::uint32_t>(chunks[i].size()));
            c->set_piece(chunks[i]);
            if (!stream->Write(data)) return grpc::Status::OK;
        }
    }
    v1::PullTreeReply end;
    end.mutable_end();
    stream->Write(end);
    return grpc::Status::OK;
}

TEST(TransferSnapshotCli, ALyingServerNeverMakesATreePullWriteOutsideOut) {
    test::TempDir tmp;
    const fs::path outside = tmp.path() / "outside";
    fs::create_directories(outside);
    TreeServer server;
    const auto pull = [&](const Forged& f, const fs::path& out) {
        server.pull_tree = [&f](auto* ctx, auto* stream) { return serve_forged(f, ctx, stream); };
        return run_tool({"pull", "--from", server.address(), "latest:/", "-o", out.string(), "--json", "--timeout", "30"});
    };

    {  // Names with "..", '/' or nothing; a symlink to outside, then a file
       // of that name in the link's directory (a second entry: refused).
        Forged f;
        f.entries.push_back(file_entry("ok", "fine", 4));
        f.chunks[digest_of("fine")] = {"fine"};
        tr::Entry dots = file_entry("..", "dots", 4);
        f.entries.push_back(dots);
        f.chunks[digest_of("dots")] = {"dots"};
        tr::Entry slash = file_entry("a/../../outside/x", "slash", 5);
        f.entries.push_back(slash);
        f.chunks[digest_of("slash")] = {"slash"};
        tr::Entry link;
        link.name = "link";
        link.type = tr::EntryType::symlink;
        link.mode = 0777;
        link.target = outside.string();
        f.entries.push_back(link);
        // A directory "sub" whose tree holds ".." and a name through the link.
        tr::Entry up = file_entry("..", "up", 2);
        f.chunks[digest_of("up")] = {"up"};
        f.subtrees.push_back({up});
        tr::Entry sub;
        sub.name = "sub";
        sub.type = tr::EntryType::directory;
        sub.mode = 0755;
        sub.subtree = tr::tree_id(raw_tree({up}));
        f.entries.push_back(sub);
        const fs::path out = tmp.path() / "out1";
        const auto r = pull(f, out);
        EXPECT_EQ(r.exit_code, 3) << r.out << r.err;  // entries refused, named
        EXPECT_NE(r.err.find("damaged"), std::string::npos) << r.err;
        EXPECT_EQ(test::read_bytes(out / "ok"), "fine");
        EXPECT_TRUE(fs::is_symlink(out / "link"));
        EXPECT_TRUE(fs::is_empty(outside));
        EXPECT_EQ(paths_below(tmp.path() / "out1"), (std::set<std::string>{"ok", "link", "sub"}));
    }
    {  // A link planted in OUT where the tree has a directory: never entered.
        const fs::path out = tmp.path() / "out2";
        fs::create_directories(out);
        fs::create_directory_symlink(outside, out / "d");
        Forged f;
        tr::Entry inner = file_entry("victim", "written through the link", 24);
        f.chunks[digest_of("written through the link")] = {"written through the link"};
        f.subtrees.push_back({inner});
        tr::Entry d;
        d.name = "d";
        d.type = tr::EntryType::directory;
        d.mode = 0755;
        d.subtree = tr::tree_id(raw_tree({inner}));
        f.entries.push_back(d);
        const auto r = pull(f, out);
        EXPECT_TRUE(fs::is_empty(outside)) << r.out << r.err;
        EXPECT_FALSE(fs::exists(outside / "victim"));
    }
    {  // Chunks beyond an entry's size: refused before anything is asked for.
        Forged f;
        const std::string lie(60'000, 'L');
        tr::Entry e = file_entry("small", "tiny", 4);
        f.entries.push_back(e);
        f.chunks[digest_of("tiny")] = {lie};
        const fs::path out = tmp.path() / "out3";
        const auto r = pull(f, out);
        EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
        EXPECT_NE(r.err.find("refused"), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(out / "small"));
        EXPECT_TRUE(fs::is_empty(outside));
        EXPECT_TRUE(paths_below(out).empty()) << "a temporary file was left";
    }
    {  // Trees beyond what the header announced.
        Forged f;
        f.entries.push_back(file_entry("x", "x", 1));
        f.chunks[digest_of("x")] = {"x"};
        f.trees_bytes_claimed = 10;
        const fs::path out = tmp.path() / "out4";
        const auto r = pull(f, out);
        EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
        EXPECT_NE(r.err.find("announced"), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(out));
    }
    {  // Bytes that are not the entry's content (each chunk valid for its
       // id): that file is not restored, the others are.
        Forged f;
        f.entries.push_back(file_entry("a", "the real a", 10));
        f.chunks[digest_of("the real a")] = {"other byte"};
        f.entries.push_back(file_entry("b", "bee", 3));
        f.chunks[digest_of("bee")] = {"bee"};
        const fs::path out = tmp.path() / "out5";
        const auto r = pull(f, out);
        EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
        EXPECT_NE(r.err.find("digest"), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(out / "a"));
        EXPECT_EQ(test::read_bytes(out / "b"), "bee");
        EXPECT_EQ(paths_below(out), (std::set<std::string>{"b"}));
    }
}

TEST(TransferSnapshotCli, AServerSilentMidTreeIsGivenUpOn) {
    // The client reads on a thread of its own while it writes its wants: a
    // server that goes silent after a want is still given up on (--timeout).
    test::TempDir tmp;
    TreeServer server;
    Forged f;
    f.entries.push_back(file_entry("x", "some bytes", 10));
    f.chunks[digest_of("some bytes")] = {"some bytes"};
    f.silent_after_want = true;
    server.pull_tree = [&f](auto* ctx, auto* stream) { return serve_forged(f, ctx, stream); };
    const pid_t pid = test::spawn_tool(
        {"pull", "--from", server.address(), "latest:/", "-o", (tmp.path() / "restored").string(), "--timeout", "2"}, tmp.path());
    int code = -1;
    for (int i = 0; i < 600 && code < 0; ++i) {
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        else std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (code < 0) {
        ::kill(pid, SIGKILL);
        test::wait_exit(pid);
    }
    EXPECT_EQ(code, 4) << "the pull hung (-1) or failed otherwise: " << test::read_text(tmp.path() / "err");
    EXPECT_NE(test::read_text(tmp.path() / "err").find("waiting"), std::string::npos) << test::read_text(tmp.path() / "err");
}

}  // namespace
}  // namespace cdc
