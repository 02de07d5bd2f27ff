// SPDX-License-Identifier: Apache-2.0
// cdc store put as snapshots (issue 35): a name put again keeps both
// versions (get NAME the newest, get SNAP:/NAME the older); overlapping
// trees both kept; rm rewrites every snapshot holding a name and gc then
// reclaims exactly the chunks only that name held; kill -9 at random
// instants of rm, then verify and restore every snapshot, and rm again
// finishes without a duplicate.
#include "cli_support.hpp"
#include "tree_support.hpp"

#include "store/snapshot_names.hpp"

#include <cdc/snapshot.hpp>
#include <cdc/store.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <csignal>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cdc {
namespace {

namespace fs = std::filesystem;
using test::json_of;
using test::run_tool;

std::string init_store(const test::TempDir& tmp, const std::vector<std::string>& extra = {}) {
    const std::string dir = (tmp.path() / "s").string();
    std::vector<std::string> args{"store", "init", "--no-encryption", dir, "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_tool(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return dir;
}

std::string put(const std::string& dir, const fs::path& path, const std::string& name) {
    const auto r = run_tool({"store", "put", dir, path.string(), "--name", name, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    return j.is_object() && j.contains("snapshot") ? j["snapshot"].get<std::string>() : std::string();
}

std::string got(const std::string& dir, const std::string& what) {
    const auto r = run_tool({"store", "get", dir, what, "-o", "-"});
    EXPECT_EQ(r.exit_code, 0) << what << ": " << r.err;
    return r.out;
}

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

std::vector<std::uint8_t> file_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void expect_verifies(const std::string& dir) {
    const auto r = run_tool({"store", "verify", dir, "--full", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
}

std::vector<std::string> snapshot_ids(const std::string& dir) {
    std::vector<std::string> ids;
    for (const auto& s : json_of(run_tool({"store", "snapshots", dir, "--json"}))) ids.push_back(s["id"]);
    return ids;
}

TEST(StorePutCli, AFilePutAgainKeepsBothVersions) {
    test::TempDir tmp;
    const std::string dir = init_store(tmp);
    const auto v1 = test::random_bytes(50'000, 1), v2 = test::random_bytes(60'000, 2);
    const auto f = tmp.write("f.bin", v1);
    const std::string s1 = put(dir, f, "f.bin");
    tmp.write("f.bin", v2);
    const std::string s2 = put(dir, f, "f.bin");
    ASSERT_FALSE(s1.empty());
    ASSERT_NE(s1, s2);
    EXPECT_EQ(bytes_of(got(dir, "f.bin")), v2);               // the newest
    EXPECT_EQ(bytes_of(got(dir, s1 + ":/f.bin")), v1);        // the older, still there
    EXPECT_EQ(bytes_of(got(dir, s2.substr(0, 8) + ":/f.bin")), v2);
    const auto ls = json_of(run_tool({"store", "ls", dir, "--json"}));
    ASSERT_EQ(ls.size(), 1u) << ls;
    EXPECT_EQ(ls[0]["name"], "f.bin");
    EXPECT_EQ(ls[0]["size"], v2.size());
    EXPECT_EQ(ls[0]["snapshot"], s2);
    // Each put is a snapshot with the put's tag and the name as its path.
    const auto snaps = json_of(run_tool({"store", "snapshots", dir, "--json"}));
    ASSERT_EQ(snaps.size(), 2u);
    EXPECT_EQ(snaps[1]["paths"], nlohmann::json::array({"/f.bin"}));
    EXPECT_EQ(snaps[1]["tags"], nlohmann::json::array({"put"}));
    expect_verifies(dir);
}

TEST(StorePutCli, OverlappingTreesAreBothKept) {
    test::TempDir tmp;
    const std::string dir = init_store(tmp);
    const auto x1 = test::random_bytes(10'000, 11), y1 = test::random_bytes(10'000, 12);
    const auto x2 = test::random_bytes(10'000, 21), z2 = test::random_bytes(10'000, 23);
    tmp.write("one/x", x1);
    tmp.write("one/sub/y", y1);
    tmp.write("two/x", x2);
    tmp.write("two/z", z2);
    const std::string s1 = put(dir, tmp.path() / "one", "t");
    const std::string s2 = put(dir, tmp.path() / "two", "t");
    // get t: the newest snapshot's tree; the first one's whole, by its id.
    const auto out = tmp.path() / "out";
    ASSERT_EQ(run_tool({"store", "get", dir, "t", "-o", out.string()}).exit_code, 0);
    EXPECT_EQ(file_bytes(out / "x"), x2);
    EXPECT_EQ(file_bytes(out / "z"), z2);
    EXPECT_FALSE(fs::exists(out / "sub/y"));
    const auto old = tmp.path() / "old";
    auto r = run_tool({"store", "get", dir, s1 + ":/t", "-o", old.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(file_bytes(old / "x"), x1);
    EXPECT_EQ(file_bytes(old / "sub/y"), y1);
    EXPECT_EQ(bytes_of(got(dir, "t/sub/y")), y1);  // only the first holds it
    // ls: the newest version of each path, and where it comes from.
    std::map<std::string, std::string> from;
    for (const auto& e : json_of(run_tool({"store", "ls", dir, "--json"}))) from[e["name"]] = e["snapshot"];
    EXPECT_EQ(from, (std::map<std::string, std::string>{{"t/x", s2}, {"t/z", s2}, {"t/sub/y", s1}}));
    expect_verifies(dir);
}

TEST(StorePutCli, ATreeKeepsEveryFileTypeAndItsMetadataAsBackupDoes) {
    test::TempDir tmp;
    const fs::path src = tmp.path() / "src";
    const test::FullTree made = test::make_full_tree(src);
    {  // reading a symlink moves its atime once (relatime): settled first
        test::MemoryTrees settle;
        test::tr::capture(src, settle);
    }
    const std::string dir = init_store(tmp);
    auto r = run_tool({"store", "put", dir, src.string(), "--name", "t", "--json"});
    ASSERT_EQ(r.exit_code, made.root ? 0 : 3) << r.err;
    auto j = json_of(r);
    if (made.root) {
        EXPECT_TRUE(j["skipped"].empty()) << j.dump();
    }
    EXPECT_GE(j["others"].get<int>(), 5 + 3 + 1) << j.dump();  // symlinks, hard links, the FIFO at least
    test::MemoryTrees before;
    const auto root = test::tr::capture(src, before);

    const fs::path out = tmp.path() / "out";
    r = run_tool({"store", "get", dir, "latest:/t", "-o", out.string(), "--keep-setid", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    {  // the empty directory's atime as restored, before anything reads it (below)
        struct stat a {}, b {};
        ASSERT_EQ(::lstat((src / "empty").c_str(), &a), 0);
        ASSERT_EQ(::lstat((out / "empty").c_str(), &b), 0);
        EXPECT_EQ(b.st_atim.tv_sec, a.st_atim.tv_sec);
        EXPECT_EQ(b.st_atim.tv_nsec, a.st_atim.tv_nsec);
    }
    const auto g = json_of(r);
    EXPECT_EQ(g["hardlinks"], 3);
    EXPECT_EQ(g["symlinks"], 5);
    EXPECT_EQ(g["specials"], made.devices ? 3 : 1);
    EXPECT_TRUE(fs::is_symlink(out / "links/dangling"));
    EXPECT_EQ(fs::status(out / "fifo").type(), fs::file_type::fifo);
    EXPECT_TRUE(fs::is_directory(out / "empty") && fs::is_empty(out / "empty"));
    test::MemoryTrees after;
    const auto back = test::tr::capture(out, after);
    std::vector<std::string> diffs;
    test::diff_trees(before, root, after, back, "", diffs);
    // The empty directory's atime is restored (checked above, right after
    // the get), earlier than its mtime as in the source; the capture of the
    // restored tree then lists it, and on a relatime mount the first read
    // of a directory whose atime is not after its mtime sets its atime to
    // now (`ls` of such a directory does the same).
    std::erase(diffs, std::string("empty: atime"));
    EXPECT_EQ(diffs, std::vector<std::string>{"sock: only in the first"});
    struct stat st {};
    ASSERT_EQ(::stat((out / "sparse.img").c_str(), &st), 0);
    EXPECT_LT(st.st_blocks * 512, 1 << 20) << "the holes were written as zeros";

    // Put again with one file changed: the others are not read.
    test::write_bytes(src / "dir/sub/deeper/leaf", "changed leaf");
    r = run_tool({"store", "put", dir, src.string(), "--name", "t", "--json"});
    ASSERT_EQ(r.exit_code, made.root ? 0 : 3) << r.err;
    j = json_of(r);
    EXPECT_EQ(j["files"].size(), 1u) << j.dump();  // only the changed one was read
    EXPECT_GE(j["skipped_unchanged"].get<int>(), 8) << j.dump();
    EXPECT_EQ(got(dir, "t/dir/sub/deeper/leaf"), "changed leaf");
    expect_verifies(dir);
}

TEST(StorePutCli, TreesAndFilesOfOnePutMergeAndAClashIsRefused) {
    test::TempDir tmp;
    const std::string dir = init_store(tmp);
    tmp.write("a/x", test::random_bytes(1000, 1));
    tmp.write("a/d/y", test::random_bytes(1000, 2));
    tmp.write("b/d/z", test::random_bytes(1000, 3));
    fs::create_directories(tmp.path() / "b/e");
    fs::create_symlink("d/z", tmp.path() / "b/l");
    auto r = run_tool({"store", "put", dir, (tmp.path() / "a").string(), (tmp.path() / "b").string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::set<std::string> paths;
    for (const auto& n : json_of(run_tool({"store", "ls", dir, "latest:/", "--json"}))) paths.insert(n["path"]);
    paths.erase("/");
    EXPECT_EQ(paths, (std::set<std::string>{"/x", "/d", "/d/y", "/d/z", "/e", "/l"}));
    tmp.write("c/x", test::random_bytes(10, 4));
    r = run_tool({"store", "put", dir, (tmp.path() / "a").string(), (tmp.path() / "c").string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("given twice"), std::string::npos) << r.err;
}

/// Every chunk id any manifest (named or a snapshot's) lists.
std::set<store::ChunkId> listed_chunks(const std::string& dir) {
    const store::Store s = store::Store::open(dir);
    std::set<store::ChunkId> ids;
    auto add = [&](const std::vector<store::ManifestInfo>& v) {
        for (const auto& m : v) s.for_each_chunk(m.name, [&](const store::ChunkId& id, std::uint32_t) { ids.insert(id); });
    };
    add(s.list());
    add(s.list(std::string(1, '\0')));
    return ids;
}

std::set<store::ChunkId> chunks_of(const std::string& dir, const std::string& snap, const std::string& path) {
    const store::Store s = store::Store::open(dir);
    const auto sn = store::find_snapshot(s, snap);
    std::set<store::ChunkId> ids;
    s.for_each_chunk(store::file_manifest(s, sn, path), [&](const store::ChunkId& id, std::uint32_t) { ids.insert(id); });
    return ids;
}

TEST(StorePutCli, RmRewritesEverySnapshotHoldingANameAndGcReclaimsExactlyItsChunks) {
    test::TempDir tmp;
    const std::string dir = init_store(tmp, {"--avg", "4K"});
    const auto a1 = test::random_bytes(300'000, 31), a2 = test::random_bytes(300'000, 32);
    const auto b = test::random_bytes(200'000, 33);
    tmp.write("in/a", a1);
    tmp.write("in/b", b);
    const std::string s1 = put(dir, tmp.path() / "in", "d");  // d/a, d/b
    tmp.write("a", a2);
    const std::string s2 = put(dir, tmp.path() / "a", "d/a");  // d/a only
    const auto snaps_before = json_of(run_tool({"store", "snapshots", dir, "--json"}));
    const auto a_chunks1 = chunks_of(dir, s1, "/d/a"), a_chunks2 = chunks_of(dir, s2, "/d/a");
    const auto b_chunks = chunks_of(dir, s1, "/d/b");
    const auto before = listed_chunks(dir);

    // --dry-run: says what would change, changes nothing.
    auto r = run_tool({"store", "rm", dir, "d/a", "--dry-run", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r)["snapshots"].size(), 2u) << r.out;
    EXPECT_EQ(snapshot_ids(dir), (std::vector<std::string>{s1, s2}));
    // A name no snapshot holds: nothing removed, exit 2.
    r = run_tool({"store", "rm", dir, "d/a", "nope"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("nope"), std::string::npos) << r.err;
    EXPECT_EQ(snapshot_ids(dir), (std::vector<std::string>{s1, s2}));

    r = run_tool({"store", "rm", dir, "d/a", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // s2 held only d/a: forgotten. s1 rewritten: a new id, the same header otherwise.
    const auto snaps = json_of(run_tool({"store", "snapshots", dir, "--json"}));
    ASSERT_EQ(snaps.size(), 1u) << snaps;
    EXPECT_NE(snaps[0]["id"], s1);
    for (const char* k : {"time_ns", "host", "user", "paths", "tags", "parent"}) EXPECT_EQ(snaps[0][k], snaps_before[0][k]) << k;
    EXPECT_EQ(snaps[0]["totals"]["files"], 1);
    EXPECT_EQ(run_tool({"store", "get", dir, "d/a", "-o", (tmp.path() / "x").string()}).exit_code, 2);
    EXPECT_EQ(bytes_of(got(dir, "d/b")), b);
    const auto ls = json_of(run_tool({"store", "ls", dir, "--json"}));
    ASSERT_EQ(ls.size(), 1u);
    EXPECT_EQ(ls[0]["name"], "d/b");
    expect_verifies(dir);

    // gc drops the contents no snapshot names (a's, both versions), then
    // removes exactly the chunks no manifest lists any more: theirs and the
    // old snapshots' headers and trees; b's stay.
    r = run_tool({"store", "gc", dir, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto after = listed_chunks(dir);
    std::set<store::ChunkId> gone;
    for (const auto& id : before)
        if (!after.count(id)) gone.insert(id);
    for (const auto& id : a_chunks1) EXPECT_TRUE(gone.count(id));
    for (const auto& id : a_chunks2) EXPECT_TRUE(gone.count(id));
    for (const auto& id : b_chunks) EXPECT_TRUE(after.count(id));
    EXPECT_EQ(gone.size(), a_chunks1.size() + a_chunks2.size() + 4);  // + 2 headers, 2 trees
    // (plus the catalog records of the six manifests gone, the two contents
    // and the old snapshots' headers and trees: one record each or more)
    EXPECT_GE(json_of(r)["chunks_removed"].get<std::size_t>(), gone.size() + 6) << r.out;
    EXPECT_LE(json_of(r)["chunks_removed"].get<std::size_t>(), gone.size() + 12) << r.out;
    {
        const store::Store s = store::Store::open(dir);
        for (const auto& id : gone) EXPECT_FALSE(s.contains(id));
        for (const auto& id : after) EXPECT_TRUE(s.contains(id));
    }
    expect_verifies(dir);
    EXPECT_EQ(bytes_of(got(dir, "d/b")), b);
}

TEST(StorePutCli, RmOfABackupPathRewritesTheSnapshotAndDropsHardLinksToIt) {
    test::TempDir tmp;
    const std::string dir = init_store(tmp);
    tmp.write("src/keep", test::random_bytes(5000, 41));
    const auto secret = tmp.write("src/secret", test::random_bytes(5000, 42));
    ASSERT_EQ(::link(secret.c_str(), (tmp.path() / "src/link").c_str()), 0);
    ASSERT_EQ(run_tool({"store", "backup", dir, (tmp.path() / "src").string(), "-q"}).exit_code, 0);
    const std::string root = (tmp.path() / "src").string();
    // Of the two names of one inode, the snapshot keeps the first as the
    // file, the other as a hard link to it: remove the file.
    std::string file, link;
    for (const auto& n : json_of(run_tool({"store", "ls", dir, "latest:" + root, "--json"}))) {
        const std::string p = n["path"];
        if (p == root + "/secret" || p == root + "/link") (n["type"] == "file" ? file : link) = p;
    }
    ASSERT_FALSE(file.empty());
    ASSERT_FALSE(link.empty());
    auto r = run_tool({"store", "rm", dir, file});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"store", "ls", dir, "latest:" + root});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find(file + "\n"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find(link), std::string::npos) << r.out;  // a hard link to it: its content went
    EXPECT_NE(r.out.find("/keep"), std::string::npos) << r.out;
    expect_verifies(dir);
    r = run_tool({"store", "get", dir, "latest:" + root, "-o", (tmp.path() / "out").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(tmp.path() / "out/keep"));
    EXPECT_FALSE(fs::exists(tmp.path() / "out/secret"));
    EXPECT_FALSE(fs::exists(tmp.path() / "out/link"));
}

// Content of name n, version k: distinct for each, sharing a prefix.
std::vector<std::uint8_t> content_of(int n, int k) {
    auto v = test::random_bytes(120'000, static_cast<std::uint64_t>(500 + n));
    const auto fresh = test::random_bytes(80'000, static_cast<std::uint64_t>(1000 + 10 * k + n));
    v.insert(v.end(), fresh.begin(), fresh.end());
    return v;
}

TEST(StorePutCli, KillNineDuringRmThenEverySnapshotVerifiesAndRestoresAndRmAgainFinishes) {
    test::TempDir tmp;
    const std::string dir = init_store(tmp, {"--avg", "4K"});
    const std::vector<std::pair<std::string, std::string>> env{{"CDC_STORE_FLUSH_BYTES", "20000"}};
    std::mt19937_64 rng(35);
    constexpr int kNames = 3;
    int killed = 0;
    for (int round = 0; round < 6; ++round) {
        // Three versions of every name, each put with the others (one
        // snapshot per put, every snapshot holding every name).
        for (int k = 0; k < 3; ++k) {
            for (int n = 0; n < kNames; ++n) tmp.write(fmt::format("in/n{}", n), content_of(n, k));
            ASSERT_EQ(run_tool({"store", "put", dir, (tmp.path() / "in").string(), "--name", "r", "-q"}).exit_code, 0);
        }
        const std::size_t snapshots = snapshot_ids(dir).size();
        const int victim = static_cast<int>(rng() % kNames);
        const std::string name = fmt::format("r/n{}", victim);
        const pid_t pid = test::spawn_tool({"store", "rm", dir, name, "-q"}, tmp.path(), env);
        // (an rm of these names takes a few ms on an idle machine: most kills land in it)
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 8'000));
        ::kill(pid, SIGKILL);
        const int code = test::wait_exit(pid);
        if (code == 128 + SIGKILL)
            ++killed;
        else
            ASSERT_EQ(code, 0) << test::read_text(tmp.path() / "err");
        // Whatever the instant: the store verifies, every snapshot restores
        // whole, each file one of its versions.
        expect_verifies(dir);
        for (const auto& id : snapshot_ids(dir)) {
            const auto out = tmp.path() / "restored";
            fs::remove_all(out);
            const auto r = run_tool({"store", "get", dir, id + ":/r", "-o", out.string(), "-q"});
            ASSERT_EQ(r.exit_code, 0) << id << ": " << r.err;
            for (int n = 0; n < kNames; ++n) {
                const auto f = out / fmt::format("n{}", n);
                if (!fs::exists(f)) {
                    EXPECT_EQ(n, victim) << id;
                    continue;
                }
                const auto b = file_bytes(f);
                bool known = false;
                for (int k = 0; k < 3; ++k) known = known || b == content_of(n, k);
                EXPECT_TRUE(known) << id << " n" << n;
            }
        }
        // rm again (when it was killed) finishes; no snapshot holds the name
        // and none was made twice.
        if (code != 0) {
            const auto r = run_tool({"store", "rm", dir, name, "-q"});
            ASSERT_TRUE(r.exit_code == 0 || r.err.find("no snapshot holds") != std::string::npos) << r.err;
        }
        EXPECT_EQ(snapshot_ids(dir).size(), snapshots);
        EXPECT_EQ(run_tool({"store", "get", dir, name, "-o", (tmp.path() / "x").string()}).exit_code, 2);
        expect_verifies(dir);
        // The next round's names are fresh: forget this round's snapshots.
        const auto ids = snapshot_ids(dir);
        std::vector<std::string> args{"store", "forget", dir};
        args.insert(args.end(), ids.begin(), ids.end());
        ASSERT_EQ(run_tool(args).exit_code, 0);
        ASSERT_EQ(run_tool({"store", "gc", dir}).exit_code, 0);
    }
    EXPECT_GE(killed, 2);
    const auto r = run_tool({"store", "verify", dir, "--full", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(json_of(r)["notes"].empty()) << r.out;
}

}  // namespace
}  // namespace cdc
