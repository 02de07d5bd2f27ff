// SPDX-License-Identifier: Apache-2.0
// The server's side of a tree pull (TreePullSession) in process: the
// exchange as the protocol says, and the requests it refuses (out of turn,
// a content the snapshot lacks, a path with a NUL byte, an unknown
// snapshot).
#include "store_support.hpp"

#include <cdc/snapshot.hpp>
#include <cdc/snapshot_wire.hpp>
#include <protocol.hpp>
#include <tree_session.hpp>

#include <gtest/gtest.h>

namespace cdc {
namespace {

namespace fs = std::filesystem;
namespace v1 = transfer::v1;
using transfer::Code;
using transfer::TransferError;

struct Scene {
    test::TempDir tmp;
    fs::path dir = tmp.path() / "store";
    std::string id;
    Scene() {
        store::InitOptions o;
        o.chunking.normal_size = 4096;
        store::Store::init(dir, o);
        tmp.write("src/a.bin", test::random_bytes(100'000, 1));
        tmp.write("src/d/b.bin", test::random_bytes(30'000, 2));
        const store::Store s = store::Store::open(dir);
        store::SnapshotOptions so;
        so.paths = {tmp.path() / "src"};
        id = store::create_snapshot(s, so).snapshot.id;
    }
};

v1::PullTreeRequest start(const std::string& snap, const std::string& path) {
    v1::PullTreeRequest r;
    r.mutable_start()->set_snapshot(snap);
    r.mutable_start()->set_path(path);
    return r;
}

Code code_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const TransferError& e) {
        return e.code();
    }
    ADD_FAILURE() << "not refused";
    return Code::unknown;
}

TEST(TreePullSession, AWholeTreeTravelsAsTheProtocolSays) {
    Scene sc;
    transfer::TreePullSession session(sc.dir, {});
    std::vector<v1::PullTreeReply> out;
    const auto sink = [&](const v1::PullTreeReply& r) { out.push_back(r); };
    const std::string path = (sc.tmp.path() / "src").string();
    session.handle(start("latest", path), sink);
    ASSERT_GE(out.size(), 2u);
    ASSERT_TRUE(out[0].has_header());
    EXPECT_EQ(out[0].header().snapshot().id(), sc.id);
    std::string trees;
    for (std::size_t i = 1; i < out.size(); ++i) trees += out[i].trees().bytes();
    EXPECT_EQ(trees.size(), out[0].header().trees_bytes());
    const store::ImportedTree tree(path, out[0].header().root(), trees);
    const auto needs = tree.contents();
    ASSERT_EQ(needs.size(), 2u);
    EXPECT_EQ(needs[0].length, 100'000u);  // a.bin, then d/b.bin: the restore's order
    EXPECT_EQ(needs[1].length, 30'000u);
    out.clear();
    v1::PullTreeRequest files;
    for (const auto& n : needs) *files.mutable_files()->mutable_digests() += n.digest;
    files.mutable_files()->set_last(true);
    session.handle(files, sink);
    ASSERT_EQ(out.size(), 1u);
    ASSERT_TRUE(out[0].has_chunks());
    std::uint64_t listed = 0;
    for (const auto s : out[0].chunks().sizes()) listed += s;
    EXPECT_EQ(listed, 130'000u);  // both contents in one list, back to back
    const auto count = static_cast<std::size_t>(out[0].chunks().sizes_size());
    out.clear();
    v1::PullTreeRequest want;
    want.mutable_want()->set_bitmap(transfer::make_bitmap(std::vector<bool>(count, true)));
    want.mutable_want()->set_count(static_cast<std::uint32_t>(count));
    session.handle(want, sink);
    ASSERT_FALSE(out.empty());
    EXPECT_TRUE(out.back().has_end());
    EXPECT_TRUE(session.finished());
    EXPECT_GT(session.bytes_sent(), 0u);
    EXPECT_EQ(code_of([&] { session.handle(want, sink); }), Code::failed_precondition);
}

TEST(TreePullSession, RefusesWhatTheProtocolDoesNotAllow) {
    Scene sc;
    const auto sink = [](const v1::PullTreeReply&) {};
    const std::string path = (sc.tmp.path() / "src").string();
    {  // files and wants before the start
        transfer::TreePullSession s(sc.dir, {});
        v1::PullTreeRequest files;
        files.mutable_files()->set_last(true);
        EXPECT_EQ(code_of([&] { s.handle(files, sink); }), Code::failed_precondition);
    }
    {
        transfer::TreePullSession s(sc.dir, {});
        v1::PullTreeRequest want;
        want.mutable_want();
        EXPECT_EQ(code_of([&] { s.handle(want, sink); }), Code::failed_precondition);
    }
    {  // a content the snapshot does not hold; a digest of 31 bytes
        transfer::TreePullSession s(sc.dir, {});
        s.handle(start("latest", path), sink);
        v1::PullTreeRequest files;
        files.mutable_files()->set_digests(std::string(32, 'x'));
        EXPECT_EQ(code_of([&] { s.handle(files, sink); }), Code::invalid_argument);
        transfer::TreePullSession t(sc.dir, {});
        t.handle(start("latest", path), sink);
        files.mutable_files()->set_digests(std::string(31, 'x'));
        EXPECT_EQ(code_of([&] { t.handle(files, sink); }), Code::invalid_argument);
        EXPECT_EQ(code_of([&] { t.handle(start("latest", path), sink); }), Code::failed_precondition);
    }
    {  // more contents than the path has files (the server would hold them)
        transfer::TreePullSession s(sc.dir, {});
        std::vector<v1::PullTreeReply> out;
        s.handle(start("latest", path), [&](const v1::PullTreeReply& r) { out.push_back(r); });
        std::string trees;
        for (std::size_t i = 1; i < out.size(); ++i) trees += out[i].trees().bytes();
        const auto needs = store::ImportedTree(path, out[0].header().root(), trees).contents();
        v1::PullTreeRequest files;
        for (int i = 0; i < 3; ++i) *files.mutable_files()->mutable_digests() += needs[0].digest;
        EXPECT_EQ(code_of([&] { s.handle(files, sink); }), Code::invalid_argument);
    }
    {  // a path with a NUL byte; an unknown snapshot or path
        transfer::TreePullSession s(sc.dir, {});
        EXPECT_EQ(code_of([&] { s.handle(start("latest", std::string("a\0b", 3)), sink); }), Code::invalid_argument);
        transfer::TreePullSession t(sc.dir, {});
        EXPECT_THROW(t.handle(start("ffffffff", "/"), sink), store::NotFoundError);
        transfer::TreePullSession u(sc.dir, {});
        EXPECT_THROW(u.handle(start("latest", "/no/such"), sink), store::NotFoundError);
    }
}

}  // namespace
}  // namespace cdc
