// SPDX-License-Identifier: Apache-2.0
// The PostgreSQL catalog against a real server (the `engines` CTest label):
// a private cluster started once for all these tests
// (tests/engines/postgres.sh; the CTest fixture `postgres` starts it in
// $CDC_TEST_PG_DIR, a run by hand starts its own), each test in a database
// of its own; the tests with S3 packs use the Ceph of the fixture `ceph`
// ($CDC_TEST_CEPH_DIR; skipped, saying so, without it).
//   - The store through the cdc tool (its cdc-store-s3 helper, which links
//     libpq): put, get, ls, rm, gc, verify --full, stats, with packs in the
//     directory and in S3; a second directory naming the same catalog and
//     bucket (another host) dedups against the first's chunks.
//   - 3 writers at once (distinct and overlapping files): every file
//     restores byte-identical, verify --full, the duplicate bytes the race
//     stored reported (stats: garbage), gc takes them back.
//   - gc beside writers (docs/STORE.md, "gc while writers write"): sessions,
//     one gc at a time, a writer declared dead fails its flush, a writer
//     after the mark ignores condemned chunks, a snapshot committed after
//     the mark naming contents it condemned restores at once (its writer
//     paused by CDC_TEST_PAUSE_BEFORE_SNAPSHOT_COMMIT), a mark after a
//     snapshot committed since gc's listing marks nothing, stats while a
//     mark stands leave out what it condemned, gc in a loop beside 2
//     writers with kill -9 of both kinds, gc of half the snapshots.
//   - The catalog rebuilt (repair --rebuild-catalog) after its tables are
//     dropped, and after a sweep beside writers: what comes back (the
//     records of the packs present), the pack id sequence after it.
//   - Two `cdc serve` of one store: pushed to one, pulled from the other.
//   - A writer killed (-9) mid-put; PostgreSQL restarted mid-put: the put
//     retries or fails clearly, never a half-committed file.
//   - Wrong password, server down, a database that is not a store, a
//     password on the command line: clear errors, exit codes.
#include "store/pg_catalog.hpp"
#include "store/s3_client.hpp"
#include "store/format.hpp"

#include <cdc/store_pg.hpp>

#include "cli_support.hpp"
#include "engine_files.hpp"
#include "engine_support.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cdc::test {
namespace {

using namespace cdc::store::detail;
namespace fs = std::filesystem;

struct Engines {
    EngineInstance pg;
    std::map<std::string, std::string> ceph;  // CEPH_DIR/env (empty: no Ceph)
};

Engines& engines() {
    static Engines e;
    return e;
}

/// postgresql://USER@127.0.0.1:PORT/DB (no password: PGPASSWORD has it).
std::string pg_url(const std::string& db) {
    const auto& pg = engines().pg.env;
    return fmt::format("postgresql://{}@{}:{}/{}", pg.at("PG_USER"), pg.at("PG_HOST"), pg.at("PG_PORT"), db);
}

class PgEnvironment : public ::testing::Environment {
public:
    void SetUp() override {
        Engines& e = engines();
        ASSERT_TRUE(e.pg.start("CDC_TEST_PG_DIR", CDC_PG_SCRIPT, "pg", "server.log"));
        ASSERT_TRUE(e.pg.env.count("PG_PORT")) << e.pg.dir;
        ::setenv("PGPASSWORD", e.pg.env["PG_PASSWORD"].c_str(), 1);
        ::setenv("PGCONNECT_TIMEOUT", "10", 1);
        ::unsetenv("PGPASSFILE");
        const char* ceph = std::getenv("CDC_TEST_CEPH_DIR");
        if (ceph != nullptr && *ceph != '\0' && fs::exists(fs::path(ceph) / "env")) {
            e.ceph = read_engine_env(fs::path(ceph) / "env");
            use_ceph_credentials(e.ceph);
        }
        cdc::store::enable_pg_catalog();
    }
    void TearDown() override { engines().pg.stop(CDC_PG_SCRIPT); }
};
[[maybe_unused]] const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new PgEnvironment);

/// A new database, named after the test; its URL.
std::string make_database() {
    static int n = 0;
    std::string name = fmt::format("t{}_{}_{}", ::getpid(), ++n,
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    for (char& ch : name) ch = static_cast<char>(std::isalnum(static_cast<unsigned char>(ch)) ? std::tolower(ch) : '_');
    name = name.substr(0, 60);
    PgConn admin(pg_url("postgres"));
    admin.exec(fmt::format("CREATE DATABASE {}", name).c_str());
    return pg_url(name);
}

bool have_ceph() { return !engines().ceph.empty(); }

/// A new bucket on the Ceph of the fixture.
std::string s3_bucket() {
    static int n = 0;
    const std::string name = fmt::format("pg{}-{}", ::getpid(), ++n);
    s3::ClientConfig c;
    c.endpoint = engines().ceph.at("CEPH_S3_ENDPOINT");
    c.region = "us-east-1";
    c.bucket = name;
    c.credentials = {engines().ceph.at("CEPH_S3_ACCESS_KEY"), engines().ceph.at("CEPH_S3_SECRET_KEY"), "", "test"};
    c.retry.max_attempts = 3;
    s3::Request r;
    r.method = "PUT";
    s3::Client(std::move(c)).send(r);
    return name;
}

// Every file of `tree` restored under `dir` byte for byte.
void expect_tree(const fs::path& dir, const std::map<std::string, std::vector<std::uint8_t>>& tree) {
    for (const auto& [name, bytes] : tree) EXPECT_TRUE(file_bytes(dir / name) == bytes) << (dir / name);
}

/// The round trip every combination passes: put, get, verify --full, ls,
/// stats, rm + gc, verify, get again.
void round_trip(const std::string& store, const fs::path& tmp) {
    auto tree = make_tree(tmp / "in", 6, 300000, 10);
    const auto big = random_bytes(9 << 20, 99);
    std::ofstream(tmp / "in" / "big.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(big.data()), static_cast<std::streamsize>(big.size()));
    tree.emplace("big.bin", big);

    auto r = run_tool({"store", "put", store, (tmp / "in").string(), "--name", "t"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"store", "get", store, "t", "-o", (tmp / "out").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_tree(tmp / "out", tree);
    auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    EXPECT_EQ(v["manifests"], tree.size() + 2);  // + the snapshot's header and trees
    const auto list = json_of(run_tool({"store", "ls", "--json", store, "t/"}));
    EXPECT_EQ(list.size(), tree.size());
    auto stats = json_of(run_tool({"store", "stats", "--json", store}));
    EXPECT_EQ(stats["files"], tree.size() + 2);
    EXPECT_GT(stats["index_bytes"].get<std::uint64_t>(), 0u) << "the tables' size in the server";

    // Put again: everything deduplicated.
    const auto again = json_of(run_tool({"store", "put", "--json", store, (tmp / "in").string(), "--name", "u"}));
    EXPECT_EQ(again["new_chunks"], 0) << again;

    r = run_tool({"store", "rm", store, "t/big.bin", "u/big.bin"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"store", "rm", store, "t/nosuch"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("no snapshot holds '/t/nosuch'"), std::string::npos) << r.err;
    const auto gc = json_of(run_tool({"store", "gc", "--json", store}));
    EXPECT_GT(gc["bytes_removed"].get<std::uint64_t>(), std::uint64_t{8} << 20) << gc;
    // (a pack it rewrote keeps its old file until the next gc: a reader may
    // have looked a record up in it before the rewrite's commit)
    const auto gc2 = json_of(run_tool({"store", "gc", "--json", store}));
    EXPECT_LT(gc2["bytes_after"].get<std::uint64_t>(), gc["bytes_before"].get<std::uint64_t>()) << gc << gc2;
    v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    // two snapshots, rewritten; t and u hold the same files: a content manifest each
    EXPECT_EQ(v["manifests"], (tree.size() - 1) + 2 * 2);
    fs::remove_all(tmp / "out");
    r = run_tool({"store", "get", store, "t", "-o", (tmp / "out").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    tree.erase("big.bin");
    expect_tree(tmp / "out", tree);
    EXPECT_FALSE(fs::exists(tmp / "out" / "big.bin"));
}

// A snapshot a test saw committed: its id, the directory it was taken of,
// and that directory's files then.
struct CommittedSnap {
    std::string id;
    fs::path src;
    std::map<std::string, std::vector<std::uint8_t>> tree;
};

/// The i-th state of a writer's directory: `shared`, a new file n<i> of
/// `size` random bytes (`seed`), n<i-2> gone; its files.
std::map<std::string, std::vector<std::uint8_t>> next_state(const fs::path& dir, const std::vector<std::uint8_t>& shared,
                                                            std::size_t size, std::uint64_t seed, int i) {
    const auto write_file = [](const fs::path& p, const std::vector<std::uint8_t>& bytes) {
        std::ofstream(p, std::ios::binary)
            .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    };
    write_file(dir / "shared", shared);
    write_file(dir / fmt::format("n{}", i), random_bytes(size, seed));
    if (i >= 2) fs::remove(dir / fmt::format("n{}", i - 2));
    std::map<std::string, std::vector<std::uint8_t>> tree;
    for (const auto& e : fs::directory_iterator(dir)) tree[e.path().filename().string()] = file_bytes(e.path());
    return tree;
}

/// The snapshot a command's --json output names, taken of `dir`, added to `committed` (under `m`).
void record_committed(std::mutex& m, std::vector<CommittedSnap>& committed, const std::string& json,
                      const fs::path& dir, std::map<std::string, std::vector<std::uint8_t>> tree) {
    const auto j = nlohmann::json::parse(json, nullptr, false);
    std::lock_guard g(m);
    committed.push_back({j.is_object() ? j.value("id", std::string()) : std::string(), dir, std::move(tree)});
}

/// Forgets the older half of `committed` (taken out of it under `m`).
void forget_older_half(const std::string& store, std::mutex& m, std::vector<CommittedSnap>& committed) {
    std::vector<std::string> forget = {"store", "forget", "-q", store};
    {
        std::lock_guard g(m);
        const std::size_t n = committed.size() / 2;
        for (std::size_t k = 0; k < n; ++k) forget.push_back(committed[k].id);
        committed.erase(committed.begin(), committed.begin() + static_cast<std::ptrdiff_t>(n));
    }
    if (forget.size() > 4) {
        const auto r = run_tool(forget);
        EXPECT_EQ(r.exit_code, 0) << r.err;
    }
}

/// Every snapshot of `committed` restores byte for byte (into `tmp`/out-ID).
void expect_restores(const std::string& store, const std::vector<CommittedSnap>& committed, const fs::path& tmp) {
    for (const CommittedSnap& snap : committed) {
        const fs::path out = tmp / ("out-" + snap.id);
        const auto r = run_tool({"store", "get", "-q", store, snap.id + ":" + snap.src.string(), "-o", out.string()});
        ASSERT_EQ(r.exit_code, 0) << snap.id << ": " << r.err;
        expect_tree(out, snap.tree);
    }
}

/// `cdc store verify --full` finds the store whole.
void expect_verifies(const std::string& store) {
    const auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
}

/// A new unencrypted store in tmp/store whose catalog is `url`; its directory.
std::string init_store(const std::string& url, TempDir& tmp) {
    const std::string store = (tmp.path() / "store").string();
    const auto r = run_tool({"store", "init", "--no-encryption", "-q", "--catalog", url, store});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return store;
}

TEST(PgEngine, RoundTripWithPacksInTheDirectory) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = (tmp.path() / "store").string();
    const auto init = json_of(run_tool({"store", "init", "--no-encryption", "--json", "--catalog", url, store}));
    EXPECT_EQ(init.value("catalog", ""), url) << init;
    EXPECT_FALSE(fs::exists(tmp.path() / "store" / "index.db")) << "the catalog is in the server";
    const std::string recorded = read_text(tmp.path() / "store" / "catalog");
    EXPECT_EQ(recorded, url + "\n");
    EXPECT_EQ(recorded.find(engines().pg.env.at("PG_PASSWORD")), std::string::npos);
    round_trip(store, tmp.path());
    // The packs are in the directory, named by the sequence's ids.
    std::size_t packs = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(tmp.path() / "store" / "packs")) ++packs;
    EXPECT_GT(packs, 0u);
    // A second store in the same database is refused, nothing made.
    const auto r = run_tool({"store", "init", "--no-encryption", "--catalog", url, (tmp.path() / "store2").string()});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("holds a store already"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(tmp.path() / "store2" / "cdc-store"));
}

// A catalog made before the claims table and the manifests' records column
// (an older cdc) gains them at its first write (the claims table's check
// read a binary boolean as text: never found missing, and every put to such
// a catalog failed "relation claims does not exist").
TEST(PgEngine, AnOlderCatalogIsUpgradedByItsFirstWriter) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = init_store(url, tmp);
    PgConn(url).run("DROP TABLE claims; ALTER TABLE manifests DROP COLUMN records", "making an older catalog");
    const auto bytes = random_bytes(300000, 5);
    const auto r = run_tool({"store", "put", "-q", store, tmp.write("a.bin", bytes).string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const PgResult has = PgConn(url).exec("SELECT to_regclass('claims') IS NOT NULL, EXISTS (SELECT 1 FROM pg_attribute "
                                          "WHERE attrelid = to_regclass('manifests') AND attname = 'records' AND NOT "
                                          "attisdropped)");
    EXPECT_TRUE(has.boolean(0, 0)) << "the claims table";
    EXPECT_TRUE(has.boolean(0, 1)) << "the records column";
    const fs::path out = tmp.path() / "back.bin";
    ASSERT_EQ(run_tool({"store", "get", "-q", store, (tmp.path() / "a.bin").string(), "-o", out.string()}).exit_code, 0);
    EXPECT_TRUE(file_bytes(out) == bytes);
}

// The statements the cdc-store-s3 helpers of a command sent (CDC_PG_STATS).
std::uint64_t statements_sent(const std::vector<std::string>& args) {
    ::setenv("CDC_PG_STATS", "1", 1);
    const auto r = run_tool(args);
    ::unsetenv("CDC_PG_STATS");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::uint64_t n = 0;
    bool seen = false;
    static const std::regex line(R"(PostgreSQL: (\d+) statements)");
    for (std::sregex_iterator it(r.err.begin(), r.err.end(), line), end; it != end; ++it) {
        n += std::stoull((*it)[1].str());
        seen = true;
    }
    EXPECT_TRUE(seen) << "no statement count in: " << r.err;
    return n;
}

// A backup of many small files sends a few statements per flush and batch
// of files read ahead, not a round trip per file and step (the flush and
// the renames took ~13 a file, a backup of 8,000 files 34 s): a bound of
// one statement per 2 files, on a tree of new files, then the same files
// under other names (found by their first chunk), then the tree again.
TEST(PgEngine, ABackupOfSmallFilesSendsFewStatements) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = (tmp.path() / "store").string();
    ASSERT_EQ(run_tool({"store", "init", "-q", "--no-encryption", "--catalog", url, store}).exit_code, 0);
    const fs::path in = tmp.path() / "in";
    constexpr int kFiles = 600;
    const auto tree = make_small_files(in, kFiles, 7, 500, 40000, 7000);  // 0.5-40 KB: one chunk or a few
    const std::uint64_t first = statements_sent({"store", "backup", "-q", store, in.string()});
    EXPECT_LT(first, kFiles / 2u) << "a backup of " << kFiles << " new files";
    const fs::path moved = tmp.path() / "moved";
    fs::rename(in, moved);
    const std::uint64_t again = statements_sent({"store", "backup", "-q", store, moved.string()});
    EXPECT_LT(again, kFiles / 2u) << "the same files under other paths";
    fs::rename(moved, in);
    const std::uint64_t third = statements_sent({"store", "backup", "-q", store, in.string(), "--host", "other"});
    EXPECT_LT(third, kFiles / 2u) << "the tree again (another host: no parent)";
    std::cout << fmt::format("statements for {} files: {} new, {} moved, {} again\n", kFiles, first, again, third);
    // and every snapshot restores, under one lock and one read view, its
    // files looked up in batches: three statements for up to 64 files (13 a
    // file when each took the lock and a view of its own, then 3 a file:
    // its manifest, its list, its chunks)
    const auto snaps = json_of(run_tool({"store", "snapshots", "--json", store}));
    ASSERT_EQ(snaps.size(), 3u) << snaps;
    for (const auto& snap : snaps) {
        const std::string path = snap["paths"][0].get<std::string>();
        const fs::path out = tmp.path() / ("out-" + snap["id"].get<std::string>());
        const std::uint64_t restored =
            statements_sent({"store", "get", "-q", store, snap["id"].get<std::string>() + ":" + path, "-o", out.string()});
        EXPECT_LT(restored, kFiles / 6u) << "a restore of " << kFiles << " files";
        std::cout << fmt::format("statements of a restore of {} files: {}\n", kFiles, restored);
        expect_tree(out, tree);
    }
    // A tree put under a name and got by it: one session too (each file's
    // own get took 13 statements: its lock and view, its manifest, list and
    // chunks).
    ASSERT_EQ(run_tool({"store", "put", "-q", store, in.string(), "--name", "named"}).exit_code, 0);
    const std::uint64_t named =
        statements_sent({"store", "get", "-q", store, "named", "-o", (tmp.path() / "out-named").string()});
    EXPECT_LT(named, kFiles / 3u) << "a named tree of " << kFiles << " files";
    std::cout << fmt::format("statements of a get of a named tree of {} files: {}\n", kFiles, named);
    expect_tree(tmp.path() / "out-named", tree);
    // ls: the newest version of every file, its chunk count from its content
    // manifest, looked up in batches (two statements a file before)
    const std::uint64_t listed = statements_sent({"store", "ls", store});
    EXPECT_LT(listed, kFiles / 3u) << "ls of " << kFiles << " files";
    std::cout << fmt::format("statements of ls: {}\n", listed);
    const auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    // verify reads the chunk lists of files, looks their chunks up and finds
    // the snapshots' files in batches across files (~290 statements here,
    // most of them its sessions and the snapshots' trees; 2,682 when it
    // asked for each list, chunk and file on its own)
    const std::uint64_t verified = statements_sent({"store", "verify", "--full", "-q", store});
    EXPECT_LT(verified, std::uint64_t{kFiles}) << "verify of three snapshots of " << kFiles << " files";
    std::cout << fmt::format("statements of verify --full: {}\n", verified);
}

TEST(PgEngine, RoundTripWithPacksInS3AndASecondHost) {
    if (!have_ceph()) GTEST_SKIP() << "no Ceph (CDC_TEST_CEPH_DIR): run through ctest -L engines";
    const std::string url = make_database();
    const std::string bucket = s3_bucket();
    TempDir tmp;
    const std::string store = (tmp.path() / "store").string();
    auto r = run_tool({"store", "init", "--no-encryption", "-q", "--catalog", url, "--packs", fmt::format("s3://{}/p", bucket),
                       "--s3-endpoint", engines().ceph.at("CEPH_S3_ENDPOINT"), "--s3-part-size", "5M", store});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    round_trip(store, tmp.path());
    // Another host: a directory with the same marker and catalog file (the
    // settings, packs location included, are in the catalog).
    const fs::path host2 = tmp.path() / "host2";
    fs::create_directories(host2);
    fs::copy_file(tmp.path() / "store" / "cdc-store", host2 / "cdc-store");
    fs::copy_file(tmp.path() / "store" / "catalog", host2 / "catalog");
    fs::remove(tmp.path() / "in" / "big.bin");  // (removed from the store and gc'd by round_trip)
    const auto same = json_of(run_tool({"store", "put", "--json", host2.string(), (tmp.path() / "in").string(),
                                        "--name", "from2"}));
    EXPECT_EQ(same["new_chunks"], 0) << "the first host's chunks dedup the second's: " << same;
    const auto more = make_tree(tmp.path() / "in2", 3, 200000, 500);
    r = run_tool({"store", "put", host2.string(), (tmp.path() / "in2").string(), "--name", "more"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"store", "get", store, "more", "-o", (tmp.path() / "more").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_tree(tmp.path() / "more", more);
    const auto v = json_of(run_tool({"store", "verify", "--full", "--json", host2.string()}));
    EXPECT_EQ(v["ok"], true) << v;
}

TEST(PgEngine, ThreeWritersAtOnce) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = init_store(url, tmp);
    // Writer i: files of its own, and a shared set every writer puts too.
    std::vector<std::map<std::string, std::vector<std::uint8_t>>> trees;
    for (int w = 0; w < 3; ++w) {
        auto t = make_tree(tmp.path() / fmt::format("in{}", w), 8, 400000, 1000 + 100 * static_cast<std::uint64_t>(w),
                           "own");
        auto shared = make_tree(tmp.path() / fmt::format("in{}", w), 6, 500000, 7, "shared");
        t.insert(shared.begin(), shared.end());
        trees.push_back(std::move(t));
    }
    std::vector<pid_t> puts;
    for (int w = 0; w < 3; ++w) {
        const fs::path logs = tmp.path() / fmt::format("log{}", w);
        fs::create_directories(logs);
        puts.push_back(spawn_tool({"store", "put", "--json", store, (tmp.path() / fmt::format("in{}", w)).string(),
                                   "--name", fmt::format("w{}", w)},
                                  logs, {{"CDC_STORE_FLUSH_BYTES", std::to_string(1 << 20)}}));
    }
    std::uint64_t new_bytes = 0, raced_bytes = 0;
    for (int w = 0; w < 3; ++w) {
        EXPECT_EQ(wait_exit(puts[static_cast<std::size_t>(w)]), 0)
            << read_text(tmp.path() / fmt::format("log{}", w) / "err");
        const auto j = nlohmann::json::parse(read_text(tmp.path() / fmt::format("log{}", w) / "out"), nullptr, false);
        EXPECT_TRUE(j.is_object());
        if (j.is_object()) {
            new_bytes += j.value("new_bytes", std::uint64_t{0});
            raced_bytes += j.value("raced_bytes", std::uint64_t{0});
        }
    }
    auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    EXPECT_EQ(v["manifests"], 3 * 8 + 6 + 3 * 2);  // three snapshots; the shared files' contents once
    for (int w = 0; w < 3; ++w) {
        const fs::path out = tmp.path() / fmt::format("out{}", w);
        const auto r = run_tool({"store", "get", store, fmt::format("w{}", w), "-o", out.string()});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        expect_tree(out, trees[static_cast<std::size_t>(w)]);
    }
    // The shared files' chunks are indexed once; what two writers stored of
    // them at the same instant is garbage in the packs, reported by stats
    // and taken back by gc.
    const auto stats = json_of(run_tool({"store", "stats", "--json", store}));
    const std::uint64_t distinct = stats["chunk_bytes"];
    const std::uint64_t garbage = stats["garbage_bytes"];
    std::cout << fmt::format("3 writers: {} new bytes reported by the puts, {} distinct chunk bytes, {} duplicate "
                             "record bytes reported by the puts (raced_bytes), {} garbage bytes in the packs\n",
                             new_bytes, distinct, raced_bytes, garbage);
    // (the snapshots' headers and trees are chunks the puts do not count as file bytes)
    EXPECT_GE(new_bytes + 65536, distinct) << "every distinct chunk was new to one writer at least";
    // What the race stored twice is garbage; so are the catalog records of
    // the shared contents the later writers committed (their manifests
    // dropped for the one kept under the content's name).
    EXPECT_GE(garbage, raced_bytes);
    // Writers claim the chunks they store (Catalog::claim): another writer
    // refers to a claimed chunk once indexed instead of storing it too
    // (without claims: 28% and 36% of the distinct bytes stored twice in two runs).
    EXPECT_LT(raced_bytes * 100, distinct) << "under 1% of the new bytes stored twice";
    const auto gc = json_of(run_tool({"store", "gc", "--json", store}));
    // (only those catalog records: 2 writers x 6 shared contents, a record or two each)
    EXPECT_LE(gc["chunks_removed"].get<int>(), 2 * 6 * 2) << gc;
    const auto after = json_of(run_tool({"store", "stats", "--json", store}));
    // (the dropped catalog records' bytes, left in packs gc does not rewrite)
    EXPECT_LE(after["garbage_bytes"].get<std::uint64_t>(), garbage + (std::uint64_t{1} << 20));
    v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
}

#if CDC_TEST_TRANSFER  // (a build without cdc-transfer has no cdc serve)
/// A token file for `cdc serve` and its clients in `tmp` (0600).
fs::path server_token(const TempDir& tmp) {
    const std::string text = "pg-engine-test-token\n";
    const auto token = tmp.write("token", std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
    fs::permissions(token, fs::perms::owner_read | fs::perms::owner_write);
    return token;
}

/// Waits (up to ~15 s) until `dir` holds `n` regular files (a restore or a
/// pull under way); the number seen.
std::size_t wait_for_files(const fs::path& dir, std::size_t n) {
    std::size_t seen = 0;
    for (int i = 0; i < 3000 && seen < n; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        seen = 0;
        std::error_code ec;
        for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
             it.increment(ec))
            seen += it->is_regular_file(ec) ? 1u : 0u;
    }
    return seen;
}

/// Starts `cdc serve` of `store` with `token`; its port ("" if it did not start).
std::string start_server(const std::string& store, const fs::path& token, const fs::path& logs, pid_t& pid) {
    fs::create_directories(logs);
    pid = spawn_tool({"serve", "--store", store, "--listen", "127.0.0.1:0", "--port-file", (logs / "port").string(),
                      "--token-file", token.string()},
                     logs);
    std::string port;
    for (int i = 0; i < 600 && port.empty(); ++i) {
        if (fs::exists(logs / "port")) port = read_text(logs / "port");
        while (!port.empty() && (port.back() == '\n' || port.back() == '\r')) port.pop_back();
        if (port.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return port;
}

// What the server received while `f` ran, for the database of `url`: the
// statements and the connections (the server's log: every statement logged
// for that database while `f` runs, every connection by tests/engines/
// postgres.sh's log_connections; the engine tests of this binary run one at
// a time).
struct Received {
    std::uint64_t statements = 0;
    std::uint64_t connections = 0;
};
Received received(const std::string& url, const std::function<void()>& f) {
    const std::string db = url.substr(url.rfind('/') + 1);
    PgConn admin(pg_url("postgres"));
    admin.exec(fmt::format("ALTER DATABASE {} SET log_min_duration_statement = 0", db).c_str());
    const fs::path log = engines().pg.dir / "server.log";
    const auto before = fs::file_size(log);
    f();
    admin.exec(fmt::format("ALTER DATABASE {} RESET log_min_duration_statement", db).c_str());
    std::ifstream in(log, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(before));
    Received n;
    for (std::string line; std::getline(in, line);) {
        if (line.find("duration: ") != std::string::npos &&
            (line.find(" execute ") != std::string::npos || line.find(" statement: ") != std::string::npos))
            ++n.statements;
        if (line.find("connection authorized:") != std::string::npos && line.find("database=" + db) != std::string::npos)
            ++n.connections;
    }
    return n;
}
std::uint64_t statements_received(const std::string& url, const std::function<void()>& f) {
    return received(url, f).statements;
}

// A snapshot pulled through a server whose store has a PostgreSQL catalog:
// the server lists the files' chunks a batch of files at a time and finds
// their contents in batches (7 statements a file before).
TEST(PgEngine, ATreePullSendsFewStatements) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = init_store(url, tmp);
    const fs::path in = tmp.path() / "in";
    constexpr int kFiles = 600;
    const auto tree = make_small_files(in, kFiles, 11, 500, 40000, 7000);
    ASSERT_EQ(run_tool({"store", "backup", "-q", store, in.string()}).exit_code, 0);
    const fs::path token = server_token(tmp);
    pid_t server = 0;
    const std::string port = start_server(store, token, tmp.path() / "server", server);
    ASSERT_FALSE(port.empty()) << "cdc serve did not start";
    const fs::path out = tmp.path() / "pulled";
    const std::uint64_t n = statements_received(url, [&] {
        const auto r = run_tool({"pull", "-q", "--from", "127.0.0.1:" + port, "--token-file", token.string(),
                                 "latest:" + in.string(), "-o", out.string()});
        EXPECT_EQ(r.exit_code, 0) << r.err;
    });
    ::kill(server, SIGTERM);
    EXPECT_EQ(wait_exit(server), 0) << read_text(tmp.path() / "server" / "err");
    expect_tree(out, tree);
    EXPECT_GT(n, 0u) << "no statement logged: the count would prove nothing";
    EXPECT_LT(n, kFiles / 4u) << "a tree pull of " << kFiles << " files";
    std::cout << fmt::format("statements of a tree pull of {} files: {}\n", kFiles, n);
}

// A tree pushed as a snapshot to a server whose store has a PostgreSQL
// catalog: no connection of its own per file (each file's look for its
// parent's groups opened one: 3 statements and a connection a file, 73 s
// for 8,000 small files), the chunks it lacks looked up a list at a time
// and a similar stored file looked for, each without a view for one
// statement, and an unchanged tree's candidates found in one go (one
// statement a file before).
TEST(PgEngine, ATreePushSendsFewStatements) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = init_store(url, tmp);
    const fs::path in = tmp.path() / "in";
    constexpr int kFiles = 600;
    const auto tree = make_small_files(in, kFiles, 13, 500, 40000, 7000);
    const fs::path token = server_token(tmp);
    pid_t server = 0;
    const std::string port = start_server(store, token, tmp.path() / "server", server);
    ASSERT_FALSE(port.empty()) << "cdc serve did not start";
    const auto push = [&] {
        const auto r = run_tool({"push", "-q", "--to", "127.0.0.1:" + port, "--token-file", token.string(), in.string()});
        EXPECT_EQ(r.exit_code, 0) << r.err;
    };
    const std::uint64_t first = statements_received(url, push);
    const std::uint64_t again = statements_received(url, push);
    // A sixth of the files changed: the server looks at each one's stored
    // list (the parent's) in a view of its own, on a connection it keeps
    // for the next (a login per changed file before).
    constexpr int kChanged = kFiles / 6;
    for (int i = 0; i < kFiles; i += kFiles / kChanged) {
        const auto it = std::next(tree.begin(), i);
        std::ofstream(in / it->first, std::ios::app | std::ios::binary) << "changed";
    }
    const Received changed = received(url, push);
    ::kill(server, SIGTERM);
    EXPECT_EQ(wait_exit(server), 0) << read_text(tmp.path() / "server" / "err");
    std::cout << fmt::format("statements of a tree push of {} files: {} new, {} unchanged, {} with {} changed "
                             "({} connections)\n",
                             kFiles, first, again, changed.statements, kChanged, changed.connections);
    EXPECT_LT(first, 3u * kFiles) << "a push of " << kFiles << " new files";
    EXPECT_LT(again, kFiles / 4u) << "a push of " << kFiles << " unchanged files";
    EXPECT_LT(changed.connections, kChanged / 4u) << "a push of " << kChanged << " changed files";
    const auto snaps = json_of(run_tool({"store", "snapshots", "--json", store}));
    ASSERT_EQ(snaps.size(), 3u) << snaps;
    const fs::path out = tmp.path() / "out";
    ASSERT_EQ(run_tool({"store", "get", "-q", store, snaps[1]["id"].get<std::string>() + ":" + in.string(), "-o",
                        out.string()})
                  .exit_code,
              0);
    expect_tree(out, tree);
}

// A store of its own (unencrypted, catalog at `url`) with two `cdc serve`
// of it: the store's directory, the token, and the two servers.
struct TwoServedStore {
    std::string store;
    fs::path token;
    pid_t a = 0, b = 0;
    std::string port_a, port_b;
};
TwoServedStore two_servers(const std::string& url, TempDir& tmp) {
    TwoServedStore t;
    t.store = init_store(url, tmp);
    t.token = server_token(tmp);
    t.port_a = start_server(t.store, t.token, tmp.path() / "a", t.a);
    t.port_b = start_server(t.store, t.token, tmp.path() / "b", t.b);
    EXPECT_FALSE(t.port_a.empty()) << "cdc serve did not start";
    EXPECT_FALSE(t.port_b.empty()) << "cdc serve did not start";
    return t;
}

// A tree pushed as named files (`--names`) to a server whose store has a
// PostgreSQL catalog, again with a sixth of its files changed: each file's
// stored version is looked up once (the list for the client's groups is
// that look's file, read in a view only while the view still holds it; a
// name the store lacks is not looked at again) and a similar file's
// candidates once (read in a view the same way). 600 files: 1,243 and
// 5,285 statements (3,699 and 7,033 before).
TEST(PgEngine, ANamedPushLooksEachNameUpOnce) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = init_store(url, tmp);
    const fs::path in = tmp.path() / "in";
    constexpr int kFiles = 600;
    auto tree = make_small_files(in, kFiles, 17, 500, 40000, 7000);
    const fs::path token = server_token(tmp);
    pid_t server = 0;
    const std::string port = start_server(store, token, tmp.path() / "server", server);
    ASSERT_FALSE(port.empty()) << "cdc serve did not start";
    const auto push = [&] {
        const auto r = run_tool(
            {"push", "-q", "--names", "--to", "127.0.0.1:" + port, "--token-file", token.string(), in.string()});
        EXPECT_EQ(r.exit_code, 0) << r.err;
    };
    const std::uint64_t first = statements_received(url, push);
    constexpr int kChanged = kFiles / 6;
    for (int i = 0; i < kFiles; i += kFiles / kChanged) {
        const auto it = std::next(tree.begin(), i);
        std::ofstream(in / it->first, std::ios::app | std::ios::binary) << "changed";
        const std::string_view more = "changed";
        it->second.insert(it->second.end(), more.begin(), more.end());
    }
    const std::uint64_t changed = statements_received(url, push);
    ::kill(server, SIGTERM);
    EXPECT_EQ(wait_exit(server), 0) << read_text(tmp.path() / "server" / "err");
    std::cout << fmt::format("statements of a named push of {} files: {} new, {} with {} changed\n", kFiles, first,
                             changed, kChanged);
    EXPECT_LT(first, 3u * kFiles) << "a named push of " << kFiles << " new files";
    EXPECT_LT(changed, 10u * kFiles) << "a named push of " << kFiles << " files, " << kChanged << " changed";
    const fs::path out = tmp.path() / "out";
    const auto r = run_tool({"store", "get", "-q", store, ".", "-o", out.string()});  // (named relative to `in`)
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_tree(out, tree);
}

// Two `cdc serve` processes of one PostgreSQL-catalog store: a push to one
// is pulled from the other, pushes to both at once dedup in the catalog.
TEST(PgEngine, TwoServersOfOneStore) {
    const std::string url = make_database();
    TempDir tmp;
    const auto [store, token, a, b, port_a, port_b] = two_servers(url, tmp);
    ASSERT_FALSE(port_a.empty() || port_b.empty());
    const auto bytes = random_bytes(3 << 20, 42);
    const auto in = tmp.write("in.bin", bytes);
    auto r = run_tool({"push", "-q", "--to", "127.0.0.1:" + port_a, "--token-file", token.string(), "--name", "f.bin",
                       in.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"pull", "-q", "--from", "127.0.0.1:" + port_b, "--token-file", token.string(), "f.bin", "-o",
                  (tmp.path() / "back.bin").string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(file_bytes(tmp.path() / "back.bin") == bytes);
    // The same bytes pushed to the other server under another name: nothing new.
    r = run_tool({"push", "--json", "--to", "127.0.0.1:" + port_b, "--token-file", token.string(), "--name", "g.bin",
                  in.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto stats = json_of(run_tool({"store", "stats", "--json", store}));
    EXPECT_EQ(stats["files"], 2);
    EXPECT_EQ(stats["chunk_bytes"], bytes.size()) << "stored once";
    ::kill(a, SIGTERM);
    ::kill(b, SIGTERM);
    EXPECT_EQ(wait_exit(a), 0) << read_text(tmp.path() / "a" / "err");
    EXPECT_EQ(wait_exit(b), 0) << read_text(tmp.path() / "b" / "err");
    expect_verifies(store);
}

// A server keeps the logins of a push for the next (each push opened its
// store's connections anew: 8 logins, ~6 ms each, most of a one-file push);
// a PostgreSQL restart leaves it connections that are gone, which it drops
// and replaces; at its exit it closes them.
TEST(PgEngine, AServerKeepsItsLoginsForTheNextPush) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = init_store(url, tmp);
    const fs::path token = server_token(tmp);
    pid_t server = 0;
    const std::string port = start_server(store, token, tmp.path() / "server", server);
    ASSERT_FALSE(port.empty()) << "cdc serve did not start";
    std::vector<std::vector<std::uint8_t>> files;
    const auto push = [&] {
        files.push_back(random_bytes(200000, 70 + files.size()));
        const std::string name = fmt::format("f{}.bin", files.size());
        const auto r = run_tool({"push", "-q", "--to", "127.0.0.1:" + port, "--token-file", token.string(), "--name",
                                 name, tmp.write(name, files.back()).string()});
        EXPECT_EQ(r.exit_code, 0) << r.err;
    };
    const Received first = received(url, push);
    const Received second = received(url, push);
    EXPECT_GT(first.connections, 2u) << "the first push logs in";
    EXPECT_EQ(second.connections, 0u) << "the second push of the same server logs in again";
    EXPECT_EQ(shell(engines().pg.env.at("PG_CTL_CMD") + " -m fast restart >/dev/null"), 0);
    const Received after = received(url, push);
    EXPECT_GT(after.connections, 0u) << "the kept connections were gone: new ones were needed";
    ::kill(server, SIGTERM);
    EXPECT_EQ(wait_exit(server), 0) << read_text(tmp.path() / "server" / "err");
    for (std::size_t i = 0; i < files.size(); ++i) {
        const std::string name = fmt::format("f{}.bin", i + 1);
        const fs::path out = tmp.path() / ("back-" + name);
        const auto r = run_tool({"store", "get", "-q", store, name, "-o", out.string()});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_TRUE(file_bytes(out) == files[i]) << name;
    }
    // (a backend leaves shortly after its client's goodbye)
    const std::string db = url.substr(url.rfind('/') + 1);
    PgConn admin(pg_url("postgres"));
    std::int64_t left = -1;
    for (int i = 0; i < 100 && left != 0; ++i) {
        if (i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        PgParams p;
        p.add_text(db);
        left = admin.exec("SELECT count(*) FROM pg_stat_activity WHERE datname = $1", p).i64(0, 0);
    }
    EXPECT_EQ(left, 0) << "connections left open by the server after its exit";
}

bool wait_packs(const std::string& url, std::int64_t n, pid_t put);

// A tree pushed to a server while PostgreSQL restarts: the push goes on
// (its statements and sessions wait for the server to come back) or stops
// with a clear error; a snapshot it committed restores whole.
TEST(PgEngine, PostgresRestartedMidPush) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = (tmp.path() / "store").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", "-q", "--catalog", url, "--pack-size", "4M", store})
                  .exit_code,
              0);
    const fs::path in = tmp.path() / "in";
    const auto tree = make_small_files(in, 6000, 102, 500, 40000, 7000);
    const fs::path token = server_token(tmp);
    pid_t server = 0;
    const std::string port = start_server(store, token, tmp.path() / "server", server);
    ASSERT_FALSE(port.empty()) << "cdc serve did not start";
    const fs::path logs = tmp.path() / "push";
    fs::create_directories(logs);
    const pid_t push =
        spawn_tool({"push", "-q", "--to", "127.0.0.1:" + port, "--token-file", token.string(), in.string()}, logs);
    const bool started = wait_packs(url, 2, push);
    int status = 0;
    ASSERT_EQ(::waitpid(push, &status, WNOHANG), 0) << "the push ended before the restart: " << read_text(logs / "err");
    EXPECT_EQ(shell(engines().pg.env.at("PG_CTL_CMD") + " -m fast restart >/dev/null"), 0);
    const int code = wait_exit(push);
    ASSERT_TRUE(started);
    const std::string text = read_text(logs / "err");
    std::cout << "the push's exit code: " << code << ", its messages: " << text;
    EXPECT_TRUE(code == 0 || code == 4) << text;
    ::kill(server, SIGTERM);
    EXPECT_EQ(wait_exit(server), 0) << read_text(tmp.path() / "server" / "err");
    const auto snaps = json_of(run_tool({"store", "snapshots", "--json", store}));
    EXPECT_EQ(snaps.size(), code == 0 ? 1u : 0u) << snaps;
    if (snaps.size() == 1) {
        const fs::path out = tmp.path() / "out";
        const auto r = run_tool({"store", "get", "-q", store, snaps[0]["id"].get<std::string>() + ":" + in.string(),
                                 "-o", out.string()});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        expect_tree(out, tree);
    }
    expect_verifies(store);
}

// A snapshot pulled through a server while PostgreSQL restarts: the
// server's read session lost its view with the server, renews it and goes on.
TEST(PgEngine, PostgresRestartedMidTreePull) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = init_store(url, tmp);
    const fs::path in = tmp.path() / "in";
    const auto tree = make_small_files(in, 12000, 101, 50, 3000, 9000);  // (a pull of some seconds)
    ASSERT_EQ(run_tool({"store", "backup", "-q", store, in.string()}).exit_code, 0);
    const fs::path token = server_token(tmp);
    pid_t server = 0;
    const std::string port = start_server(store, token, tmp.path() / "server", server);
    ASSERT_FALSE(port.empty()) << "cdc serve did not start";
    const fs::path out = tmp.path() / "pulled";
    const fs::path logs = tmp.path() / "pull";
    fs::create_directories(logs);
    const pid_t pull = spawn_tool({"pull", "-q", "--from", "127.0.0.1:" + port, "--token-file", token.string(),
                                   "latest:" + in.string(), "-o", out.string()},
                                  logs);
    wait_for_files(out, 200);
    int status = 0;
    ASSERT_EQ(::waitpid(pull, &status, WNOHANG), 0) << "the pull ended before the restart: " << read_text(logs / "err");
    EXPECT_EQ(shell(engines().pg.env.at("PG_CTL_CMD") + " -m fast restart >/dev/null"), 0);
    EXPECT_EQ(wait_exit(pull), 0) << read_text(logs / "err");
    ::kill(server, SIGTERM);
    EXPECT_EQ(wait_exit(server), 0) << read_text(tmp.path() / "server" / "err");
    expect_tree(out, tree);
}

// Replicated servers (issue 37): two `cdc serve` of one store take pushes
// in a loop while gc runs beside them and one of them is killed (-9) at
// random instants and started again. A push to the killed one fails (or
// commits whole); pushes to the other never fail; every snapshot a push
// reported restores byte for byte and verify --full is clean.
TEST(PgEngine, AServerReplicaKilledAtRandomLosesNothing) {
    const std::string url = make_database();
    TempDir tmp;
    TwoServedStore served = two_servers(url, tmp);
    // (references, not a structured binding: clang 14 lets no lambda capture one)
    const std::string& store = served.store;
    const fs::path& token = served.token;
    pid_t& a = served.a;
    pid_t& b = served.b;
    std::string& port_a = served.port_a;
    const std::string& port_b = served.port_b;
    ASSERT_FALSE(port_a.empty() || port_b.empty());
    std::mutex m;
    std::vector<CommittedSnap> committed;
    std::atomic<bool> stop{false};
    std::atomic<int> kills{0}, failed_to_a{0}, gcs{0};
    const auto shared = random_bytes(1 << 20, 777);
    auto writer = [&](int k) {
        const fs::path dir = tmp.path() / fmt::format("w{}", k);
        fs::create_directories(dir);
        for (int i = 0; !stop; ++i) {
            auto tree = next_state(dir, shared, 400000, static_cast<std::uint64_t>(k * 1000 + i), i);
            const bool to_a = (i + k) % 2 == 0;
            std::string port;
            {
                std::lock_guard g(m);
                port = to_a ? port_a : port_b;
            }
            const auto r =
                run_tool({"push", "--json", "--to", "127.0.0.1:" + port, "--token-file", token.string(), dir.string()});
            if (r.exit_code != 0) {
                if (to_a) {
                    ++failed_to_a;  // (killed under it, or gone before it asked)
                } else {
                    ADD_FAILURE() << "a push to the server never killed: " << r.err;
                }
                continue;
            }
            record_committed(m, committed, r.out, dir, std::move(tree));
        }
    };
    std::thread w0(writer, 0), w1(writer, 1);
    std::thread killer([&] {
        std::mt19937 rng(31);
        while (!stop) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng() % 600));
            ::kill(a, SIGKILL);
            wait_exit(a);
            ++kills;
            pid_t again = 0;
            const std::string port = start_server(store, token, tmp.path() / fmt::format("a{}", kills.load()), again);
            EXPECT_FALSE(port.empty()) << "cdc serve did not start again";
            std::lock_guard g(m);
            a = again;
            port_a = port;
        }
    });
    std::thread gc([&] {
        while (!stop) {
            std::this_thread::sleep_for(std::chrono::milliseconds(400));
            forget_older_half(store, m, committed);
            const auto r = run_tool({"store", "gc", "-q", "--wait", "10", store});
            EXPECT_EQ(r.exit_code, 0) << r.err;
            ++gcs;
        }
    });
    std::this_thread::sleep_for(std::chrono::seconds(8));
    stop = true;
    w0.join();
    w1.join();
    killer.join();
    gc.join();
    ::kill(a, SIGTERM);
    ::kill(b, SIGTERM);
    EXPECT_EQ(wait_exit(a), 0);
    EXPECT_EQ(wait_exit(b), 0) << read_text(tmp.path() / "b" / "err");
    std::cout << fmt::format("{} kills of a server, {} pushes to it failed, {} gc runs, {} snapshots kept\n",
                             kills.load(), failed_to_a.load(), gcs.load(), committed.size());
    EXPECT_GE(kills.load(), 3);
    EXPECT_GE(committed.size(), 2u);
    const auto last = json_of(run_tool({"store", "gc", "--json", store}));
    EXPECT_EQ(last["sweep_left"], false) << last;
    const auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    expect_restores(store, committed, tmp.path());
}
#endif

// A base for a push found before its read view began (a look outside the
// view saves a round trip a file) is read in the view only while the view
// still holds that file, live: one replaced or condemned since reads as an
// empty list (its chunks may be condemned with it), one still there as
// read_list reads it.
TEST(PgEngine, AListReadIfThereIsEmptyForAFileReplacedOrCondemnedSince) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = init_store(url, tmp);
    for (const auto& [name, seed] : {std::pair{"a", 9}, std::pair{"b", 11}, std::pair{"c", 13}}) {
        const auto r = run_tool({"store", "put", "-q", store,
                                 tmp.write(name, random_bytes(400000, static_cast<std::uint64_t>(seed))).string(),
                                 "--name", name});
        ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    // The three contents' manifests (the files of several chunks).
    PgConn db(url);
    const PgResult named = db.exec("SELECT name FROM manifests WHERE chunk_count > 1 ORDER BY id");
    ASSERT_EQ(named.rows(), 3);
    auto catalog = PgCatalog::open(url);
    std::vector<StoredFile> files;
    for (int i = 0; i < 3; ++i) {
        const auto f = catalog->stored_file(named.text(i, 0));
        ASSERT_TRUE(f) << i;
        files.push_back(*f);
    }
    // The first dropped (as a newer version of its name drops it), the
    // second condemned (as a gc mark does), the third left alone.
    PgParams first, second;
    first.add(files[0].row);
    second.add(files[1].row);
    db.exec("DELETE FROM manifest_chunks WHERE manifest = $1", first);
    db.exec("DELETE FROM manifests WHERE id = $1", first);
    db.exec("UPDATE manifests SET condemned = now() WHERE id = $1", second);
    const auto rows = [](ListReader& list) {
        std::vector<std::vector<std::uint8_t>> out;
        std::uint32_t seq = 0;
        std::vector<std::uint8_t> ids;
        while (list.next(seq, ids)) out.push_back(ids);
        return out;
    };
    catalog->begin_read();
    EXPECT_TRUE(rows(*catalog->read_list_if_there(files[0])).empty()) << "dropped since";
    EXPECT_TRUE(rows(*catalog->read_list_if_there(files[1])).empty()) << "condemned since";
    EXPECT_FALSE(rows(*catalog->read_list(files[1].row)).empty()) << "(its rows are there)";
    const auto there = rows(*catalog->read_list_if_there(files[2]));
    EXPECT_FALSE(there.empty());
    EXPECT_EQ(there, rows(*catalog->read_list(files[2].row)));
    StoredFile other = files[2];
    other.chunks += 1;
    EXPECT_TRUE(rows(*catalog->read_list_if_there(other)).empty()) << "not that file";
    catalog->end_read();
}

TEST(PgEngine, SessionsForWritersAndReadersOneGcAtATime) {
    const std::string url = make_database();
    TempDir tmp;
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", "-q", "--catalog", url, (tmp.path() / "s").string()}).exit_code, 0);
    auto catalog = PgCatalog::open(url);
    auto writer1 = catalog->hosts_lock();
    auto gc = catalog->hosts_lock();
    auto gc2 = catalog->hosts_lock();
    EXPECT_TRUE(gc->gc_beside_writers());
    writer1->lock(false, {});
    PgConn c(url);
    EXPECT_EQ(c.exec("SELECT count(*) FROM sessions").i64(0, 0), 1) << "a writer or reader is a session";
    bool waited = false;
    gc->lock(true, [&] { waited = true; });
    EXPECT_FALSE(waited) << "gc does not wait for writers";
    std::atomic<bool> gc2_has_it{false};
    std::thread t([&] {
        gc2->lock(true, {});
        gc2_has_it = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_FALSE(gc2_has_it.load()) << "one gc at a time";
    gc->unlock();
    t.join();
    gc2->unlock();
    writer1->unlock();
    EXPECT_EQ(c.exec("SELECT count(*) FROM sessions").i64(0, 0), 0) << "a session ends with its lock";

    // A writer that gc declared dead (its row dropped) fails its next flush
    // rather than commit lists of chunks that gc may have dropped.
    auto writer = catalog->connect();
    writer->upgrade_for_writing();
    FlushBatch empty;
    EXPECT_NO_THROW(writer->commit(empty));
    c.exec("DELETE FROM sessions");
    try {
        writer->commit(empty);
        ADD_FAILURE() << "a flush of a writer declared dead";
    } catch (const store::StoreError& e) {
        EXPECT_NE(std::string(e.what()).find("gc declared this writer dead"), std::string::npos) << e.what();
    }
}

// A writer that starts after gc's mark never refers to a condemned chunk:
// its lookups ignore them, so it stores them again. The writer below looks
// A's chunks up after the mark and commits after the sweep (which does not
// wait for it): were the condemned rows found, the sweep would drop them
// under it (its flush then fails: it checks what it lists after a sweep).
TEST(PgEngine, AWriterAfterTheMarkIgnoresCondemnedChunks) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", "-q", "--catalog", url, store}).exit_code, 0);
    const auto bytes = random_bytes(24 << 20, 77);
    const auto a = tmp.write("a.bin", bytes);
    ASSERT_EQ(run_tool({"store", "put", "-q", store, a.string(), "--name", "a"}).exit_code, 0);
    ASSERT_EQ(run_tool({"store", "rm", "-q", store, "a"}).exit_code, 0);
    // A session from before the mark holds the sweep back.
    auto catalog = PgCatalog::open(url);
    auto old_session = catalog->hosts_lock();
    old_session->lock(false, {});
    auto g = json_of(run_tool({"store", "gc", "--no-wait", "--json", store}));
    EXPECT_GT(g["chunks_condemned"].get<std::uint64_t>(), 0u) << g;
    EXPECT_EQ(g["sweep_left"], true) << g;
    // The writer after the mark: A's bytes through a pipe, held open.
    const fs::path fifo = tmp.path() / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    RunResult put;
    std::thread w([&] { put = run_tool({"store", "put", "-q", store, "-", "--name", "a2"}, fifo.string()); });
    {
        std::ofstream out(fifo, std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size() - 1000));
        out.flush();
        std::this_thread::sleep_for(std::chrono::milliseconds(2000));  // (its lookups of A's chunks)
        old_session->unlock();
        g = json_of(run_tool({"store", "gc", "--no-wait", "--json", store}));
        EXPECT_GT(g["chunks_removed"].get<std::uint64_t>(), 0u) << "the sweep ran: " << g;
        out.write(reinterpret_cast<const char*>(bytes.data() + bytes.size() - 1000), 1000);
    }
    w.join();
    ASSERT_EQ(put.exit_code, 0) << put.err;
    const auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    const fs::path out = tmp.path() / "out.bin";
    ASSERT_EQ(run_tool({"store", "get", "-q", store, "a2", "-o", out.string()}).exit_code, 0);
    EXPECT_TRUE(file_bytes(out) == bytes);
}

// The sweep waits for the sessions alive at the mark: a writer that found
// A's chunks before the mark (not condemned then) and commits after it
// keeps them. Were they swept under it, its flush would be refused.
TEST(PgEngine, TheSweepWaitsForAWriterFromBeforeTheMark) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", "-q", "--catalog", url, store}).exit_code, 0);
    const auto bytes = random_bytes(24 << 20, 78);
    const auto a = tmp.write("a.bin", bytes);
    ASSERT_EQ(run_tool({"store", "put", "-q", store, a.string(), "--name", "a"}).exit_code, 0);
    ASSERT_EQ(run_tool({"store", "rm", "-q", store, "a"}).exit_code, 0);
    const fs::path fifo = tmp.path() / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    RunResult put;
    std::thread w([&] { put = run_tool({"store", "put", "-q", store, "-", "--name", "a0"}, fifo.string()); });
    {
        std::ofstream out(fifo, std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size() - 1000));
        out.flush();
        std::this_thread::sleep_for(std::chrono::milliseconds(2000));  // (its lookups find A's chunks)
        auto g = json_of(run_tool({"store", "gc", "--no-wait", "--json", store}));
        EXPECT_GT(g["chunks_condemned"].get<std::uint64_t>(), 0u) << g;
        EXPECT_EQ(g["sweep_left"], true) << "the writer from before the mark runs: " << g;
        g = json_of(run_tool({"store", "gc", "--wait", "0.5", "--json", store}));
        EXPECT_EQ(g["chunks_removed"].get<std::uint64_t>(), 0u) << g;
        EXPECT_EQ(g["sweep_left"], true) << g;
        out.write(reinterpret_cast<const char*>(bytes.data() + bytes.size() - 1000), 1000);
    }
    w.join();
    ASSERT_EQ(put.exit_code, 0) << put.err;
    const auto g = json_of(run_tool({"store", "gc", "--json", store}));
    EXPECT_EQ(g["sweep_left"], false) << g;
    const auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    const fs::path out = tmp.path() / "out.bin";
    ASSERT_EQ(run_tool({"store", "get", "-q", store, "a0", "-o", out.string()}).exit_code, 0);
    EXPECT_TRUE(file_bytes(out) == bytes);
}

/// Opens `fifo` to write once the process `pid` opened it to read (it paused
/// there: CDC_TEST_PAUSE_BEFORE_SNAPSHOT_COMMIT); -1 if it ended first or
/// did not within 2 minutes.
int open_when_paused(const fs::path& fifo, pid_t pid) {
    for (int i = 0; i < 12000; ++i) {
        const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) return fd;
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) {
            ADD_FAILURE() << "the backup ended before its snapshot's commit";
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
}

// A snapshot committed after gc's mark naming a content that mark condemned
// (its writer, alive at the mark, found the content before it) restores at
// once: its commit clears the marks. Here a backup of a tree whose files'
// contents only a forgotten snapshot holds renames its files onto those
// contents (found: not condemned yet), pauses before its snapshot's commit
// (CDC_TEST_PAUSE_BEFORE_SNAPSHOT_COMMIT), gc --no-wait marks them
// condemned (no snapshot names them), then the snapshot commits.
TEST(PgEngine, ASnapshotCommittedAfterTheMarkRestoresAtOnce) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", "-q", "--catalog", url, store}).exit_code, 0);
    const auto tree = make_tree(tmp.path() / "in", 3, 3 << 20, 81);
    ASSERT_EQ(run_tool({"store", "put", "-q", store, (tmp.path() / "in").string(), "--name", "a"}).exit_code, 0);
    ASSERT_EQ(run_tool({"store", "rm", "-q", store, "a"}).exit_code, 0);
    const fs::path fifo = tmp.path() / "pause";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    fs::create_directories(tmp.path() / "blog");
    const pid_t b = spawn_tool({"store", "put", "-q", store, (tmp.path() / "in").string(), "--name", "b"},
                               tmp.path() / "blog", {{"CDC_TEST_PAUSE_BEFORE_SNAPSHOT_COMMIT", fifo.string()}});
    const int pause = open_when_paused(fifo, b);
    ASSERT_GE(pause, 0);
    PgConn db(url);
    const auto g = json_of(run_tool({"store", "gc", "--no-wait", "--json", store}));
    EXPECT_GT(g["chunks_condemned"].get<std::uint64_t>(), 0u) << g;
    EXPECT_EQ(g["sweep_left"], true) << "the backup from before the mark runs: " << g;
    EXPECT_EQ(db.exec("SELECT count(*) FROM manifests WHERE condemned IS NOT NULL").i64(0, 0),
              static_cast<std::int64_t>(tree.size()))
        << "the contents the backup found are condemned";
    const std::int64_t chunks_marked = db.exec("SELECT count(*) FROM chunks WHERE condemned IS NOT NULL").i64(0, 0);
    ::close(pause);  // the snapshot commits
    ASSERT_EQ(wait_exit(b), 0) << read_text(tmp.path() / "blog" / "err");
    EXPECT_EQ(db.exec("SELECT count(*) FROM manifests WHERE condemned IS NOT NULL").i64(0, 0), 0)
        << "the commit cleared its contents' marks";
    EXPECT_LT(db.exec("SELECT count(*) FROM chunks WHERE condemned IS NOT NULL").i64(0, 0), chunks_marked)
        << "and their chunks'";
    // Restored right after its commit, the mark still standing.
    auto r = run_tool({"store", "get", store, "b", "-o", (tmp.path() / "out").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_tree(tmp.path() / "out", tree);
    // The sweep keeps them; restored again, verify --full clean.
    const auto s = json_of(run_tool({"store", "gc", "--json", store}));
    EXPECT_EQ(s["sweep_left"], false) << s;
    fs::remove_all(tmp.path() / "out");
    r = run_tool({"store", "get", store, "b", "-o", (tmp.path() / "out").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_tree(tmp.path() / "out", tree);
    expect_verifies(store);
}

// gc lists the contents no snapshot names, then marks them: a snapshot
// committed in between (naming some of them) makes the mark refuse, with
// nothing marked (gc lists again), rather than hide that snapshot's
// contents until the sweep.
TEST(PgEngine, AMarkAfterASnapshotCommittedSinceTheListingMarksNothing) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", "-q", "--catalog", url, store}).exit_code, 0);
    const auto tree = make_tree(tmp.path() / "in", 2, 1 << 20, 83);
    ASSERT_EQ(run_tool({"store", "put", "-q", store, (tmp.path() / "in").string(), "--name", "a"}).exit_code, 0);
    ASSERT_EQ(run_tool({"store", "rm", "-q", store, "a"}).exit_code, 0);
    auto catalog = PgCatalog::open(url);
    const std::uint64_t at = catalog->snapshot_commits();
    std::vector<std::string> unnamed;  // (what gc lists: no snapshot names them now)
    for (const auto& m : catalog->list(std::string("\0c/", 3))) unnamed.push_back(m.name);
    ASSERT_EQ(unnamed.size(), tree.size());
    ASSERT_EQ(run_tool({"store", "put", "-q", store, (tmp.path() / "in").string(), "--name", "b"}).exit_code, 0);
    EXPECT_GT(catalog->snapshot_commits(), at);
    EXPECT_FALSE(catalog->gc_mark(unnamed, at).has_value()) << "a snapshot committed since the listing";
    EXPECT_FALSE(catalog->gc_marked());
    PgConn db(url);
    EXPECT_EQ(db.exec("SELECT count(*) FROM manifests WHERE condemned IS NOT NULL").i64(0, 0), 0);
    EXPECT_EQ(db.exec("SELECT count(*) FROM chunks WHERE condemned IS NOT NULL").i64(0, 0), 0);
    // With nothing listed, what gc does after kMarkAttempts listings each
    // overtaken by a commit (gc.cpp), the mark stands whatever the count
    // (here the stale one) and condemns none of b's contents.
    ASSERT_GT(catalog->snapshot_commits(), at);
    const auto marked = catalog->gc_mark({}, at);
    ASSERT_TRUE(marked.has_value());
    EXPECT_TRUE(catalog->gc_marked());
    auto r = run_tool({"store", "get", store, "b", "-o", (tmp.path() / "out").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_tree(tmp.path() / "out", tree);
    const auto g = json_of(run_tool({"store", "gc", "--json", store}));
    EXPECT_EQ(g["sweep_left"], false) << g;
    expect_verifies(store);
}

// stats while a mark stands (docs/STORE.md): what it condemned is left out
// of the files and chunks, as from listings, and counted as garbage; the
// sweep then takes that garbage back.
TEST(PgEngine, StatsLeaveOutWhatTheMarkCondemned) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", "-q", "--catalog", url, store}).exit_code, 0);
    const auto a = tmp.write("a.bin", random_bytes(8 << 20, 79));
    const auto k = tmp.write("k.bin", random_bytes(1 << 20, 80));
    ASSERT_EQ(run_tool({"store", "put", "-q", store, a.string(), "--name", "a"}).exit_code, 0);
    ASSERT_EQ(run_tool({"store", "put", "-q", store, k.string(), "--name", "k"}).exit_code, 0);
    ASSERT_EQ(run_tool({"store", "rm", "-q", store, "a"}).exit_code, 0);
    const auto s0 = json_of(run_tool({"store", "stats", "--json", store}));
    // A session from before the mark holds the sweep back.
    auto catalog = PgCatalog::open(url);
    auto old_session = catalog->hosts_lock();
    old_session->lock(false, {});
    const auto g = json_of(run_tool({"store", "gc", "--no-wait", "--json", store}));
    ASSERT_EQ(g["sweep_left"], true) << g;
    const auto s1 = json_of(run_tool({"store", "stats", "--json", store}));
    EXPECT_EQ(s1["files"].get<std::uint64_t>(), s0["files"].get<std::uint64_t>() - 1) << "a's content: " << s1;
    // (chunks_condemned also counts a's catalog records, which `chunks` never counts)
    EXPECT_LT(s1["chunks"].get<std::uint64_t>(), s0["chunks"].get<std::uint64_t>()) << s1;
    EXPECT_GE(s1["chunks"].get<std::uint64_t>() + g["chunks_condemned"].get<std::uint64_t>(),
              s0["chunks"].get<std::uint64_t>())
        << s1;
    EXPECT_EQ(s1["pack_bytes"], s0["pack_bytes"]) << s1;
    EXPECT_GE(s1["garbage_bytes"].get<std::uint64_t>(), s0["garbage_bytes"].get<std::uint64_t>() + (8u << 20))
        << s1;
    old_session->unlock();
    const auto swept = json_of(run_tool({"store", "gc", "--json", store}));
    EXPECT_EQ(swept["sweep_left"], false) << swept;
    const auto s2 = json_of(run_tool({"store", "stats", "--json", store}));
    EXPECT_EQ(s2["files"], s1["files"]) << s2;
    EXPECT_EQ(s2["chunks"], s1["chunks"]) << s2;
    EXPECT_LT(s2["garbage_bytes"].get<std::uint64_t>(), s1["garbage_bytes"].get<std::uint64_t>()) << s2;
}

/// Waits until the catalog at `url` has `n` pack rows (the put is under way).
bool wait_packs(const std::string& url, std::int64_t n, pid_t put) {
    PgConn c(url);
    for (int i = 0; i < 3000; ++i) {
        if (c.exec("SELECT count(*) FROM packs").i64(0, 0) >= n) return true;
        int status = 0;
        if (::waitpid(put, &status, WNOHANG) == put) {
            ADD_FAILURE() << "the put ended before " << n << " packs were committed";
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}


TEST(PgEngine, AWriterKilledMidPutLeavesNoHalfCommittedFile) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = (tmp.path() / "store").string();
    const auto tree = make_tree(tmp.path() / "in", 60, 1 << 20, 100);
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", "-q", "--catalog", url, "--pack-size", "4M", store}).exit_code, 0);
    const pid_t put = spawn_tool({"store", "put", store, (tmp.path() / "in").string(), "--name", "t"}, tmp.path(),
                                 {{"CDC_STORE_FLUSH_BYTES", std::to_string(2 << 20)}});
    const bool started = wait_packs(url, 3, put);
    ::kill(put, SIGKILL);
    EXPECT_EQ(wait_exit(put), 128 + SIGKILL);
    ASSERT_TRUE(started);
    // A put is one snapshot, visible at its last commit: the files of the
    // flushes before the kill are in none (gc drops them).
    const std::size_t committed = check_committed(store, tree, tmp.path() / "restored");
    EXPECT_EQ(committed, 0u);
    // The store takes the rest.
    const auto r = run_tool({"store", "put", store, (tmp.path() / "in").string(), "--name", "t"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    fs::remove_all(tmp.path() / "restored");
    EXPECT_EQ(check_committed(store, tree, tmp.path() / "restored"), tree.size());
}

TEST(PgEngine, PostgresRestartedMidPut) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = (tmp.path() / "store").string();
    const auto tree = make_tree(tmp.path() / "in", 120, 1 << 20, 300);
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", "-q", "--catalog", url, "--pack-size", "4M", store}).exit_code, 0);
    const pid_t put = spawn_tool({"store", "put", store, (tmp.path() / "in").string(), "--name", "t"}, tmp.path(),
                                 {{"CDC_STORE_FLUSH_BYTES", std::to_string(1 << 20)}});
    const bool started = wait_packs(url, 2, put);
    int status = 0;
    EXPECT_EQ(::waitpid(put, &status, WNOHANG), 0) << "the put is still under way when the server goes";
    // A fast shutdown (the server aborts open transactions), then up again.
    EXPECT_EQ(shell(engines().pg.env.at("PG_CTL_CMD") + " -m fast restart >/dev/null"), 0);
    const int code = wait_exit(put);
    ASSERT_TRUE(started);
    const std::string text = read_text(tmp.path() / "err");
    std::cout << "the put's exit code: " << code << ", its messages: " << text;
    // A retry that succeeds, or a clear error; never a half-committed file.
    EXPECT_TRUE(code == 0 || code == 4) << text;
    if (code == 4) {
        EXPECT_NE(text.find(url), std::string::npos) << "the error names the catalog: " << text;
    }
    const std::size_t committed = check_committed(store, tree, tmp.path() / "restored");
    if (code == 0) {
        EXPECT_EQ(committed, tree.size());
    }
}

TEST(PgEngine, PostgresRestartedMidRestore) {
    // A snapshot restore, and a get of a tree put under a name, read all
    // their files in one view of the catalog (its files looked up in
    // batches): a restart of the server takes the view with it, and the
    // restore renews it and goes on (before, every file after the restart
    // failed).
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = init_store(url, tmp);
    const fs::path in = tmp.path() / "in";
    const auto tree = make_small_files(in, 12000, 100, 50, 3000, 9000);  // (a restore of some seconds)
    ASSERT_EQ(run_tool({"store", "backup", "-q", store, in.string()}).exit_code, 0);
    const auto snaps = json_of(run_tool({"store", "snapshots", "--json", store}));
    ASSERT_EQ(snaps.size(), 1u) << snaps;
    ASSERT_EQ(run_tool({"store", "put", "-q", store, in.string(), "--name", "named"}).exit_code, 0);
    for (const bool by_name : {false, true}) {
        SCOPED_TRACE(by_name ? "the named tree" : "the snapshot");
        // ("out" and "err": the tool's output)
        const fs::path out = tmp.path() / (by_name ? "restored-named" : "restored");
        const std::string what = by_name ? std::string("named") : snaps[0]["id"].get<std::string>() + ":" + in.string();
        const pid_t get = spawn_tool({"store", "get", "-q", store, what, "-o", out.string()}, tmp.path());
        // Under way: some files restored, not all.
        wait_for_files(out, 200);
        int status = 0;
        ASSERT_EQ(::waitpid(get, &status, WNOHANG), 0) << "the restore ended before the restart: " << read_text(tmp.path() / "err");
        EXPECT_EQ(shell(engines().pg.env.at("PG_CTL_CMD") + " -m fast restart >/dev/null"), 0);
        const int code = wait_exit(get);
        EXPECT_EQ(code, 0) << read_text(tmp.path() / "err");
        expect_tree(out, tree);
    }
}

TEST(PgEngine, ClearErrors) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = init_store(url, tmp);
    const auto bytes = random_bytes(300000, 5);
    const auto in = tmp.write("in.bin", bytes);
    ASSERT_EQ(run_tool({"store", "put", "-q", store, in.string(), "--name", "keep"}).exit_code, 0);
    const std::string another = make_database();
    {
        ScopedEnv pw("PGPASSWORD", "wrong");
        for (const auto& args : std::vector<std::vector<std::string>>{
                 {"store", "ls", store},
                 {"store", "put", store, in.string(), "--name", "other"},
                 {"store", "get", store, "keep", "-o", (tmp.path() / "got").string()},
                 {"store", "gc", store},
                 {"store", "verify", store},
                 {"store", "stats", store}}) {
            const auto r = run_tool(args);
            EXPECT_EQ(r.exit_code, 4) << args[1] << ": " << r.err;
            EXPECT_NE(r.err.find("password authentication failed"), std::string::npos) << r.err;
            EXPECT_NE(r.err.find(url), std::string::npos) << r.err;
            EXPECT_EQ(r.err.find("wrong"), std::string::npos) << "never the password: " << r.err;
        }
        EXPECT_FALSE(fs::exists(tmp.path() / "got"));
        const auto r = run_tool({"store", "init", "--no-encryption", "--catalog", another, (tmp.path() / "s2").string()});
        EXPECT_EQ(r.exit_code, 4) << r.err;
        EXPECT_FALSE(fs::exists(tmp.path() / "s2" / "cdc-store")) << "nothing made";
    }
    // A server that is not there.
    {
        const std::string down = fmt::format("postgresql://cdc@127.0.0.1:1/x");
        auto r = run_tool({"store", "init", "--no-encryption", "--catalog", down, (tmp.path() / "s3").string()});
        EXPECT_EQ(r.exit_code, 4) << r.err;
        EXPECT_NE(r.err.find("cannot connect to the catalog 'postgresql://cdc@127.0.0.1:1/x'"), std::string::npos)
            << r.err;
        EXPECT_FALSE(fs::exists(tmp.path() / "s3" / "cdc-store"));
    }
    // A database that is not a store (a directory naming it).
    {
        const std::string empty = make_database();
        const fs::path fake = tmp.path() / "fake";
        fs::create_directories(fake);
        fs::copy_file(tmp.path() / "store" / "cdc-store", fake / "cdc-store");
        std::ofstream(fake / "catalog") << empty << "\n";
        const auto r = run_tool({"store", "ls", fake.string()});
        EXPECT_EQ(r.exit_code, 4) << r.err;
        EXPECT_NE(r.err.find("holds no store"), std::string::npos) << r.err;
    }
    // DIR/catalog is never read through a symbolic link (it says where the
    // store's data goes).
    {
        const fs::path linked = tmp.path() / "linked";
        fs::create_directories(linked);
        fs::copy_file(tmp.path() / "store" / "cdc-store", linked / "cdc-store");
        fs::create_symlink(tmp.path() / "store" / "catalog", linked / "catalog");
        const auto r = run_tool({"store", "ls", linked.string()});
        EXPECT_EQ(r.exit_code, 4) << r.err;
        EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
    }
    // A password on the command line, a location that is not PostgreSQL: usage errors.
    for (const std::string& bad : std::vector<std::string>{fmt::format("postgresql://cdc:secret@127.0.0.1:{}/x", engines().pg.env.at("PG_PORT")),
                                  std::string("postgresql://cdc@127.0.0.1/x?password=secret"),
                                  std::string("mysql://cdc@127.0.0.1/x")}) {
        const auto r = run_tool({"store", "init", "--no-encryption", "--catalog", bad, (tmp.path() / "s4").string()});
        EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
        EXPECT_FALSE(fs::exists(tmp.path() / "s4"));
    }
    // Nothing lost.
    const auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    const auto r = run_tool({"store", "get", store, "keep", "-o", (tmp.path() / "got").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(file_bytes(tmp.path() / "got") == bytes);
}

// Losing the catalog loses no data (issue 37): the database's tables
// dropped, `store repair --rebuild-catalog` makes them again from the packs
// (in the directory, or in S3 for an encrypted store): every snapshot and
// file restores byte for byte, verify --full is clean, the store takes
// writes again.
void rebuild_after_dropping_the_schema(bool encrypted, bool s3) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = (tmp.path() / "store").string();
    const fs::path pw = tmp.path() / "pw";
    std::ofstream(pw) << "rebuild password";
    std::vector<std::string> pass;
    if (encrypted) pass = {"--password-file", pw.string()};
    auto cmd = [&](std::vector<std::string> args) {
        args.insert(args.begin() + 2, pass.begin(), pass.end());
        return run_tool(args);
    };
    std::vector<std::string> location;
    if (s3)
        location = {"--packs", fmt::format("s3://{}/p", s3_bucket()), "--s3-endpoint",
                    engines().ceph.at("CEPH_S3_ENDPOINT")};
    std::vector<std::string> init{"store", "init", "-q", "--catalog", url, store};
    if (!encrypted) init.push_back("--no-encryption");
    init.insert(init.end(), location.begin(), location.end());
    auto r = cmd(init);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto tree = make_tree(tmp.path() / "in", 5, 200000, 7);
    ASSERT_EQ(cmd({"store", "backup", store, (tmp.path() / "in").string(), "-q"}).exit_code, 0);
    const auto more = make_tree(tmp.path() / "in" / "sub", 3, 100000, 8);
    ASSERT_EQ(cmd({"store", "backup", store, (tmp.path() / "in").string(), "-q"}).exit_code, 0);
    ASSERT_EQ(cmd({"store", "put", store, (tmp.path() / "in").string(), "--name", "named", "-q"}).exit_code, 0);
    auto snapshots = [&] {
        std::vector<std::string> ids;
        for (const auto& j : json_of(cmd({"store", "snapshots", store, "--json"}))) ids.push_back(j["id"]);
        return ids;
    };
    const auto ids = snapshots();
    ASSERT_EQ(ids.size(), 3u);  // two backups and the put
    const auto files = json_of(cmd({"store", "ls", store, "--json"}));

    PgConn(url).run("DROP SCHEMA public CASCADE; CREATE SCHEMA public", "dropping the catalog");
    EXPECT_NE(cmd({"store", "ls", store}).exit_code, 0) << "the catalog is gone";
    std::vector<std::string> repair{"store", "repair", "--rebuild-catalog", store, "--json"};
    repair.insert(repair.end(), location.begin(), location.end());
    r = cmd(repair);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto rep = nlohmann::json::parse(r.out);
    EXPECT_EQ(rep["problems"].size(), 0u) << rep;
    const auto v = json_of(cmd({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    EXPECT_EQ(snapshots(), ids);
    EXPECT_EQ(json_of(cmd({"store", "ls", store, "--json"})).size(), files.size());
    for (std::size_t i = 0; i < 2; ++i) {  // the backups (the put is checked by name below)
        const fs::path out = tmp.path() / fmt::format("snap{}", i);
        r = cmd({"store", "get", store, ids[i], "-o", out.string(), "-q"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const fs::path root = out / fs::relative(tmp.path() / "in", "/");
        expect_tree(root, tree);
        if (i == 1) expect_tree(root / "sub", more);
    }
    r = cmd({"store", "get", store, "named", "-o", (tmp.path() / "named").string(), "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_tree(tmp.path() / "named", tree);
    // A working catalog: another backup and a gc.
    ASSERT_EQ(cmd({"store", "backup", store, (tmp.path() / "in").string(), "-q"}).exit_code, 0);
    ASSERT_EQ(cmd({"store", "gc", store, "-q"}).exit_code, 0);
    EXPECT_EQ(snapshots().size(), 4u);
}

TEST(PgEngine, CatalogRebuiltFromDirectoryPacks) { rebuild_after_dropping_the_schema(false, false); }

TEST(PgEngine, EncryptedCatalogRebuiltFromS3Packs) {
    if (!have_ceph()) GTEST_SKIP() << "no Ceph (CDC_TEST_CEPH_DIR): run through ctest -L engines";
    ::setenv("CDC_TEST_FAST_KDF", "1", 1);
    rebuild_after_dropping_the_schema(true, true);
    ::unsetenv("CDC_TEST_FAST_KDF");
}

/// The ids of `store`'s pack files (packs in DIR/packs) and of its pack rows.
std::pair<std::set<std::uint64_t>, std::set<std::uint64_t>> pack_files_and_rows(const fs::path& store,
                                                                                 const std::string& url) {
    std::set<std::uint64_t> files, rows;
    for (const auto& e : fs::directory_iterator(store / "packs")) {
        // (NNNNNNNN.pack, the id in decimal)
        const std::string n = e.path().filename().string();
        if (e.path().extension() == ".pack" && !n.empty() && std::isdigit(static_cast<unsigned char>(n[0])))
            files.insert(std::stoull(n));
    }
    PgConn c(url);
    const auto r = c.exec("SELECT id FROM packs");
    for (int i = 0; i < r.rows(); ++i) rows.insert(static_cast<std::uint64_t>(r.i64(i, 0)));
    return {files, rows};
}

// A catalog rebuilt after a gc beside writers (docs/STORE.md, "gc while
// writers write", Catalog records): the rebuild takes the records of the
// packs present. Six backups, three forgotten, so that the sweep leaves
// each kind of pack: S1's pack (the contents S2 names, S1's header and
// tree) is mostly live and stays as it is; S4's (a file of its own, its
// header) is left empty; S5's (a large file of its own, a small one S6
// names) is sparse and rewritten. Then the catalog is dropped and rebuilt:
// S1 comes back whole (its records were in a pack gc kept), S4 and S5 do
// not (their records went with their packs, S5's not copied), nothing is
// counted twice; every kept snapshot restores, verify --full is clean; the
// next gc keeps S1 (a snapshot again) until it is forgotten again.
TEST(PgEngine, CatalogRebuiltAfterASweepTakesTheRecordsOfThePacksPresent) {
    const std::string url = make_database();
    TempDir tmp;
    const fs::path store_dir = tmp.path() / "store";
    const std::string store = store_dir.string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", "-q", "--catalog", url, store}).exit_code, 0);
    std::vector<EngineTree> trees(7);
    std::vector<fs::path> dirs(7);
    std::vector<std::string> ids(7);
    auto backup = [&](int i) {
        const std::string dir = dirs[static_cast<std::size_t>(i)].string();
        const auto j = json_of(run_tool({"store", "backup", "--json", store, dir}));
        ids[static_cast<std::size_t>(i)] = j.value("id", std::string());
        return !ids[static_cast<std::size_t>(i)].empty();
    };
    for (int i = 1; i <= 6; ++i) dirs[static_cast<std::size_t>(i)] = tmp.path() / fmt::format("d{}", i);
    trees[1] = make_tree(dirs[1], 4, 300000, 1, "a");
    trees[2] = make_tree(dirs[2], 4, 300000, 1, "a");  // S1's files
    trees[2].merge(make_tree(dirs[2], 1, 2 << 20, 2, "b"));
    trees[3] = make_tree(dirs[3], 4, 300000, 3, "c");
    trees[4] = make_tree(dirs[4], 4, 300000, 3, "c");  // S3's files
    trees[4].merge(make_tree(dirs[4], 1, 200000, 4, "d"));
    trees[5] = make_tree(dirs[5], 1, 3 << 20, 5, "e");
    trees[5].merge(make_tree(dirs[5], 1, 100000, 6, "f"));
    trees[6] = make_tree(dirs[6], 1, 100000, 6, "f");  // S5's small file
    for (int i = 1; i <= 6; ++i) ASSERT_TRUE(backup(i)) << i;
    const auto [files0, rows0] = pack_files_and_rows(store_dir, url);
    ASSERT_EQ(files0, rows0);
    ASSERT_EQ(files0.size(), 6u) << "a pack per backup";
    const std::vector<std::uint64_t> pack(files0.begin(), files0.end());  // pack[i - 1]: S{i}'s

    ASSERT_EQ(run_tool({"store", "forget", "-q", store, ids[1], ids[4], ids[5]}).exit_code, 0);
    // gc beside writers: the mark (a session from before it holds the
    // sweep back), then the sweep by the next gc.
    auto catalog = PgCatalog::open(url);
    auto old_session = catalog->hosts_lock();
    old_session->lock(false, {});
    auto g = json_of(run_tool({"store", "gc", "--no-wait", "--json", store}));
    EXPECT_EQ(g["sweep_left"], true) << g;
    EXPECT_GT(g["chunks_condemned"].get<std::uint64_t>(), 0u) << g;
    const fs::path old_pack5 = store_dir / "packs" / fmt::format("{:08}.pack", pack[4]);
    fs::copy_file(old_pack5, tmp.path() / "s5.pack");  // (for case 2 below)
    old_session->unlock();
    g = json_of(run_tool({"store", "gc", "--no-wait", "--json", store}));
    EXPECT_EQ(g["sweep_left"], false) << g;
    EXPECT_GT(g["chunks_removed"].get<std::uint64_t>(), 0u) << g;
    // What the gc left: S1's pack as it was, S4's deleted, S5's rewritten
    // into a new pack, its old file kept until the next gc (a reader may
    // have looked a record up in it before the rewrite's commit).
    const auto [files0b, rows0b] = pack_files_and_rows(store_dir, url);
    std::cout << fmt::format("after the sweep: pack files {}, pack rows {}\n", fmt::join(files0b, " "),
                             fmt::join(rows0b, " "));
    EXPECT_EQ(g["packs_rewritten"], 1) << g;
    EXPECT_TRUE(files0b.count(pack[4])) << "S5's old pack was deleted by the gc that rewrote it";
    EXPECT_FALSE(rows0b.count(pack[4]));
    EXPECT_FALSE(files0b.count(pack[3])) << "S4's pack, left empty, is deleted";
    // The next gc deletes it (an orphan: no row); then no pack file
    // without a row, no row without a file.
    g = json_of(run_tool({"store", "gc", "--json", store}));
    EXPECT_EQ(g["sweep_left"], false) << g;
    const auto [files1, rows1] = pack_files_and_rows(store_dir, url);
    EXPECT_EQ(files1, rows1) << "gc left a pack file without a row (or a row without a file)";
    EXPECT_TRUE(files1.count(pack[0])) << "S1's pack, mostly live, is kept as it is";
    EXPECT_FALSE(files1.count(pack[3])) << "S4's pack, left empty, is deleted";
    EXPECT_FALSE(files1.count(pack[4])) << "S5's pack, sparse, is rewritten";
    EXPECT_TRUE(files1.count(pack[1]) && files1.count(pack[2]) && files1.count(pack[5]));
    EXPECT_EQ(files1.size(), 5u) << "S1-S3's and S6's packs and the rewritten one";
    const auto snaps_before = json_of(run_tool({"store", "snapshots", "--json", store}));
    EXPECT_EQ(snaps_before.size(), 3u);
    const auto files_before = json_of(run_tool({"store", "ls", "--json", store}));
    const std::uint64_t rewritten = *files1.rbegin();  // (the one new pack: the rewrite's)
    ASSERT_GT(rewritten, pack[5]);
    const std::int64_t moved =
        PgConn(url).exec(fmt::format("SELECT count(*) FROM chunks WHERE pack = {}", rewritten).c_str()).i64(0, 0);
    EXPECT_GT(moved, 0);
    int gets = 0;
    auto restores = [&](int i) {
        const fs::path out = tmp.path() / fmt::format("out{}", ++gets);
        const auto got = run_tool({"store", "get", "-q", store, ids[static_cast<std::size_t>(i)], "-o", out.string()});
        EXPECT_EQ(got.exit_code, 0) << "S" << i << ": " << got.err;
        expect_tree(out / fs::relative(dirs[static_cast<std::size_t>(i)], "/"), trees[static_cast<std::size_t>(i)]);
        fs::remove_all(out);
    };
    auto snapshots = [&] {
        std::set<std::string> s;
        for (const auto& j : json_of(run_tool({"store", "snapshots", "--json", store}))) s.insert(j["id"]);
        return s;
    };
    auto rebuild = [&] {
        PgConn(url).run("DROP SCHEMA public CASCADE; CREATE SCHEMA public", "dropping the catalog");
        const auto r = run_tool({"store", "repair", "--rebuild-catalog", store, "--json"});
        EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
        const auto rep = nlohmann::json::parse(r.out, nullptr, false);
        std::cout << "rebuilt: " << rep.dump() << "\n";
        // New pack ids follow the packs present (gc beside writers cuts,
        // rewrites and deletes only packs up to the sequence's value at its mark).
        const auto seq = PgConn(url).exec("SELECT (CASE WHEN is_called THEN last_value ELSE 0 END)::bigint FROM pack_ids");
        EXPECT_EQ(seq.i64(0, 0), static_cast<std::int64_t>(*pack_files_and_rows(store_dir, url).first.rbegin()));
        return rep;
    };

    // 1. The catalog lost after the next gc, rebuilt from the packs it left.
    auto rep = rebuild();
    EXPECT_EQ(rep["problems"].size(), 0u) << rep;
    EXPECT_EQ(rep["packs"], 5) << rep;
    EXPECT_EQ(rep["duplicates"], 0) << "no record is in two packs: " << rep;
    EXPECT_EQ(rep["unfinished"], 0) << rep;
    EXPECT_EQ(snapshots(), (std::set<std::string>{ids[1], ids[2], ids[3], ids[6]}))
        << "the kept snapshots and S1, whose header and tree were in a pack gc kept";
    auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    for (const int i : {1, 2, 3, 6}) restores(i);
    // S1's files are listed again; nothing of S4 or S5 came back (S4's
    // d000.bin and S5's e000.bin are in no snapshot and in no pack).
    auto listed = json_of(run_tool({"store", "ls", "--json", store}));
    EXPECT_EQ(listed.size(), files_before.size() + trees[1].size()) << listed;
    EXPECT_EQ(listed.dump().find("d000.bin"), std::string::npos) << listed;
    EXPECT_EQ(listed.dump().find("e000.bin"), std::string::npos) << listed;

    // 2. The same with S5's old pack still present, as the gc that
    //    rewrote it leaves it (the next gc deletes it as an orphan), or a
    //    gc interrupted after its rewrite's commit: the old pack is read
    //    first (ids in order), so S5 comes back whole and the rewrite's
    //    copies are duplicates.
    fs::copy_file(tmp.path() / "s5.pack", old_pack5);
    rep = rebuild();
    EXPECT_EQ(rep["problems"].size(), 0u) << rep;
    EXPECT_EQ(rep["packs"], 6) << rep;
    EXPECT_EQ(rep["duplicates"], moved) << "every record of the rewrite is a copy of one in S5's old pack: " << rep;
    EXPECT_EQ(rep["unfinished"], 0) << "a piece met twice is one piece: " << rep;
    EXPECT_EQ(snapshots(), (std::set<std::string>{ids[1], ids[2], ids[3], ids[5], ids[6]}));
    v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    for (const int i : {1, 2, 3, 5, 6}) restores(i);

    // The next gc keeps what came back (snapshots again) and deletes the
    // rewrite's pack (no row points into it: every copy lost to the old
    // pack's); forgotten again, S1 and S5 go, the rest still restores.
    g = json_of(run_tool({"store", "gc", "--json", store}));
    EXPECT_EQ(g["sweep_left"], false) << g;
    EXPECT_EQ(snapshots().size(), 5u);
    EXPECT_FALSE(fs::exists(store_dir / "packs" / fmt::format("{:08}.pack", rewritten))) << g;
    for (const int i : {1, 2, 3, 5, 6}) restores(i);
    ASSERT_EQ(run_tool({"store", "forget", "-q", store, ids[1], ids[5]}).exit_code, 0);
    g = json_of(run_tool({"store", "gc", "--json", store}));
    EXPECT_EQ(g["sweep_left"], false) << g;
    EXPECT_GT(g["chunks_removed"].get<std::uint64_t>(), 0u) << "S5's large file and both headers' records: " << g;
    EXPECT_EQ(snapshots(), (std::set<std::string>{ids[2], ids[3], ids[6]}));
    for (const int i : {2, 3, 6}) restores(i);
    v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    g = json_of(run_tool({"store", "gc", "--json", store}));  // (what the last one rewrote goes now)
    const auto [files2, rows2] = pack_files_and_rows(store_dir, url);
    EXPECT_EQ(files2, rows2);
    for (const int i : {2, 3, 6}) restores(i);
}

// gc while writers write (issue 37; docs/STORE.md, "gc while writers
// write"): 2 writers back up trees that change (a file each new, one file
// shared by both) in a loop for a few seconds while snapshots are forgotten
// and gc runs in a loop; a writer and gc are killed (-9) at random instants
// now and then. Then verify --full is clean and every committed snapshot
// not forgotten restores byte for byte.
TEST(PgEngine, GcBesideTwoWritersAndKillsLosesNothing) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = init_store(url, tmp);
    std::mutex m;
    std::vector<CommittedSnap> committed;
    std::atomic<bool> stop{false};
    std::atomic<int> writer_kills{0}, gc_kills{0}, gcs{0}, failures{0};
    std::atomic<std::uint64_t> removed{0};
    const auto shared = random_bytes(1 << 20, 4242);
    auto writer = [&](int k) {
        std::mt19937 rng(static_cast<unsigned>(k) + 1);
        const fs::path dir = tmp.path() / fmt::format("w{}", k);
        fs::create_directories(dir);
        for (int i = 0; !stop; ++i) {
            auto tree = next_state(dir, shared, 300000, static_cast<std::uint64_t>(k * 1000 + i), i);
            if (k == 1 && i % 3 == 2) {
                const pid_t p = spawn_tool({"store", "backup", "-q", store, dir.string()});
                std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 300));
                ::kill(p, SIGKILL);
                wait_exit(p);
                ++writer_kills;
                continue;
            }
            const auto r = run_tool({"store", "backup", "--json", store, dir.string()});
            if (r.exit_code != 0) {
                ++failures;
                ADD_FAILURE() << "writer " << k << ": " << r.err;
                continue;
            }
            record_committed(m, committed, r.out, dir, std::move(tree));
        }
    };
    std::thread w0(writer, 0), w1(writer, 1);
    std::thread gc([&] {
        std::mt19937 rng(99);
        for (int i = 0; !stop; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            forget_older_half(store, m, committed);
            if (i % 3 == 1) {
                const pid_t p = spawn_tool({"store", "gc", "-q", "--wait", "5", store});
                std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 400));
                ::kill(p, SIGKILL);
                wait_exit(p);
                ++gc_kills;
                continue;
            }
            const auto r = run_tool({"store", "gc", "--json", "--wait", "5", store});
            EXPECT_EQ(r.exit_code, 0) << r.err;
            const auto j = nlohmann::json::parse(r.out, nullptr, false);
            if (j.is_object()) removed += j.value("chunks_removed", std::uint64_t{0});
            ++gcs;
        }
    });
    std::this_thread::sleep_for(std::chrono::seconds(8));
    stop = true;
    w0.join();
    w1.join();
    gc.join();
    const auto last = json_of(run_tool({"store", "gc", "--json", store}));
    EXPECT_EQ(last["sweep_left"], false) << last;
    removed += last["chunks_removed"].get<std::uint64_t>();
    std::cout << fmt::format("{} snapshots kept, {} gc runs ({} killed), {} backups killed, {} chunks removed\n",
                             committed.size(), gcs.load(), gc_kills.load(), writer_kills.load(), removed.load());
    EXPECT_GT(removed.load(), 0u) << "gc took back what forgotten snapshots held";
    EXPECT_EQ(failures.load(), 0);
    const auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    ASSERT_FALSE(committed.empty());
    expect_restores(store, committed, tmp.path());
}

// gc beside writers (docs/STORE.md, "gc while writers write"): half of 6
// snapshots forgotten and pruned while 2 writers back up new trees (each
// with a file of a forgotten snapshot): gc marks, waits for the sessions
// alive at its mark (the writers), sweeps; every other snapshot (the kept
// ones and the writers') restores byte for byte, verify --full is clean;
// the times are printed, and those of a gc of as much with no writer.
TEST(PgEngine, GcOfHalfTheSnapshotsWhileTwoWritersPutLosesNothing) {
    const std::string url = make_database();
    TempDir tmp;
    const std::string store = init_store(url, tmp);
    std::vector<std::map<std::string, std::vector<std::uint8_t>>> trees;
    std::vector<std::string> ids;
    for (int i = 0; i < 6; ++i) {
        const fs::path in = tmp.path() / fmt::format("in{}", i);
        trees.push_back(make_tree(in, 4, 300000, 500 + static_cast<std::uint64_t>(i)));
        const auto j = json_of(run_tool({"store", "backup", "--json", store, in.string()}));
        ids.push_back(j.value("id", std::string()));
    }
    // The writers' trees, each also sharing a file with a forgotten snapshot.
    std::vector<pid_t> writers;
    for (int w = 0; w < 2; ++w) {
        const fs::path in = tmp.path() / fmt::format("w{}", w);
        trees.push_back(make_tree(in, 12, 1500000, 900 + static_cast<std::uint64_t>(w)));
        fs::copy_file(tmp.path() / fmt::format("in{}", 2 * w + 1) / trees[static_cast<std::size_t>(2 * w + 1)].begin()->first,
                      in / "from-forgotten");
        trees.back()["from-forgotten"] = file_bytes(in / "from-forgotten");
        const fs::path logs = tmp.path() / fmt::format("wlog{}", w);
        fs::create_directories(logs);
        writers.push_back(spawn_tool({"store", "backup", "--json", store, in.string()}, logs,
                                     {{"CDC_STORE_FLUSH_BYTES", std::to_string(1 << 20)}}));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // (the writers under way, most likely)
    const auto t0 = std::chrono::steady_clock::now();
    const fs::path glogs = tmp.path() / "gclog";
    fs::create_directories(glogs);
    const pid_t gc = spawn_tool({"store", "forget", "--prune", "-q", store, ids[1], ids[3], ids[5]}, glogs);
    // Every process's end, as it comes (waitpid WNOHANG): when gc ended
    // relative to the writers.
    std::vector<pid_t> all = {writers[0], writers[1], gc};
    std::vector<double> ended(3, -1);
    std::vector<int> codes(3, -1);
    for (int left = 3; left > 0;) {
        for (std::size_t k = 0; k < 3; ++k) {
            if (ended[k] >= 0) continue;
            int status = 0;
            if (::waitpid(all[k], &status, WNOHANG) == all[k]) {
                ended[k] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                codes[k] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                --left;
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(codes[2], 0) << read_text(glogs / "err");
    std::vector<std::string> writer_ids;
    for (int w = 0; w < 2; ++w) {
        const fs::path logs = tmp.path() / fmt::format("wlog{}", w);
        EXPECT_EQ(codes[static_cast<std::size_t>(w)], 0) << read_text(logs / "err");
        const auto j = nlohmann::json::parse(read_text(logs / "out"), nullptr, false);
        writer_ids.push_back(j.is_object() ? j.value("id", std::string()) : std::string());
    }
    std::cout << fmt::format("forget --prune of 3 of 6 snapshots started while 2 backups ran: writers ended after "
                             "{:.2f} s and {:.2f} s, forget --prune after {:.2f} s (its gc waits for the sessions of its mark)\n",
                             ended[0], ended[1], ended[2]);
    const auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    std::vector<std::pair<std::string, std::size_t>> kept = {{ids[0], 0}, {ids[2], 2}, {ids[4], 4},
                                                             {writer_ids[0], 6}, {writer_ids[1], 7}};
    std::size_t listed = 0;
    for (const auto& j : json_of(run_tool({"store", "snapshots", "--json", store}))) {
        (void)j;
        ++listed;
    }
    EXPECT_EQ(listed, kept.size());
    for (const auto& [id, t] : kept) {
        const fs::path out = tmp.path() / ("out-" + id);
        const auto r = run_tool({"store", "get", store, id, "-o", out.string(), "-q"});
        ASSERT_EQ(r.exit_code, 0) << id << ": " << r.err;
        const fs::path src = t < 6 ? tmp.path() / fmt::format("in{}", t) : tmp.path() / fmt::format("w{}", t - 6);
        expect_tree(out / fs::relative(src, "/"), trees[t]);
    }
    // As much forgotten with no writer: the mark, an empty wait, the sweep.
    const auto t1 = std::chrono::steady_clock::now();
    ASSERT_EQ(run_tool({"store", "forget", "--prune", "-q", store, ids[0], ids[2], ids[4]}).exit_code, 0);
    std::cout << fmt::format("forget --prune of the other 3 with no writer: {:.2f} s\n",
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
    EXPECT_EQ(json_of(run_tool({"store", "verify", "--full", "--json", store}))["ok"], true);
}

}  // namespace
}  // namespace cdc::test
