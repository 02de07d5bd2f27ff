// SPDX-License-Identifier: Apache-2.0
// cdc store repair --rebuild-catalog (issue 37): a store whose index.db is
// lost gets a working catalog back from its packs alone, plain and
// encrypted: every snapshot and named file listed and restored byte for
// byte, verify --full clean; manifests spanning several pieces, segments
// and flushes; gc's rewrite keeps the live manifests' catalog records; a
// piece met in two packs (a rewritten pack's old file left) is one piece; a
// store whose packs hold no settings record is refused with nothing made.
#include "cli_support.hpp"
#include "test_support.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace cdc {
namespace {

namespace fs = std::filesystem;
using test::json_of;
using test::run_tool;

struct EnvVar {
    EnvVar(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
    ~EnvVar() { ::unsetenv(name_); }
    EnvVar(const EnvVar&) = delete;
    EnvVar& operator=(const EnvVar&) = delete;
    const char* name_;
};

void write_text(const fs::path& p, std::string_view data) {
    fs::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    ASSERT_TRUE(out.good()) << p;
}

void write_file(const fs::path& p, const std::vector<std::uint8_t>& data) {
    write_text(p, std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
}

std::string read_file(const fs::path& p) { return test::read_text(p); }

/// Every regular file and link below `top`: relative path -> bytes (a link: "-> target").
std::map<std::string, std::string> tree_of(const fs::path& top) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(top)) {
        const std::string rel = fs::relative(e.path(), top).string();
        if (e.is_symlink())
            out[rel] = "-> " + fs::read_symlink(e.path()).string();
        else if (e.is_regular_file())
            out[rel] = read_file(e.path());
    }
    return out;
}

class RepairCli : public ::testing::TestWithParam<bool> {
protected:
    bool encrypted() const { return GetParam(); }
    fs::path password_file() const { return tmp.path() / "pw"; }

    test::RunResult run(std::vector<std::string> args) const {
        if (encrypted()) args.insert(args.begin() + 2, {"--password-file", password_file().string()});
        return run_tool(args);
    }

    std::string init(const std::vector<std::string>& extra = {}) {
        dir = (tmp.path() / "s").string();
        std::vector<std::string> args{"store", "init", dir, "-q"};
        if (!encrypted()) args.push_back("--no-encryption");
        args.insert(args.end(), extra.begin(), extra.end());
        write_text(password_file(), "a password for the repair test\n");
        const auto r = run(args);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return dir;
    }

    /// Snapshot id -> its tree restored; named file -> its bytes.
    struct State {
        std::map<std::string, std::map<std::string, std::string>> snapshots;
        std::map<std::string, std::string> files;
    };

    State state(const std::string& tag) {
        State s;
        const auto snaps = json_of(run({"store", "snapshots", dir, "--json"}));
        for (const auto& j : snaps) {
            const std::string id = j["id"];
            const fs::path out = tmp.path() / ("restore-" + tag + "-" + id);
            const auto r = run({"store", "get", dir, id, "-o", out.string(), "-q"});
            EXPECT_EQ(r.exit_code, 0) << r.err;
            s.snapshots[id] = tree_of(out);
        }
        const auto files = json_of(run({"store", "ls", dir, "--json"}));
        for (const auto& j : files) {
            const std::string name = j["name"];
            // (the put files: the backups' paths, below the test's folder, are in their snapshots)
            if (name.starts_with(tmp.path().string().substr(1))) continue;
            const fs::path out = tmp.path() / ("file-" + tag);
            const auto r = run({"store", "get", dir, name, "-o", out.string(), "-q"});
            EXPECT_EQ(r.exit_code, 0) << r.err;
            s.files[name] = read_file(out);
            fs::remove(out);
        }
        return s;
    }

    void lose_catalog() const {
        for (const char* f : {"index.db", "index.db-wal", "index.db-shm"}) fs::remove(fs::path(dir) / f);
    }

    nlohmann::json repair(int expect = 0) const {
        const auto r = run({"store", "repair", "--rebuild-catalog", dir, "--json"});
        EXPECT_EQ(r.exit_code, expect) << r.err << r.out;
        return nlohmann::json::parse(r.out, nullptr, false);
    }

    void expect_verifies() const {
        const auto r = run({"store", "verify", dir, "--full"});
        EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    }

    test::TempDir tmp;
    std::string dir;
};

// Snapshots of a changing tree and named files (one put twice), a file of
// more than one segment (4096 ids) and of many pieces (max 4 KiB chunks:
// ~126 ids a piece) written across several flushes: all back.
TEST_P(RepairCli, RebuildsEverySnapshotAndFileFromThePacks) {
    init({"--min", "1K", "--avg", "2K", "--max", "4K"});
    EnvVar flush{"CDC_STORE_FLUSH_BYTES", std::to_string(1 << 20)};
    const fs::path src = tmp.path() / "src";
    write_file(src / "big.bin", test::random_bytes(std::size_t{10} << 20, 1));  // ~5000 chunks
    write_file(src / "d/a.txt", std::vector<std::uint8_t>(5000, 'a'));
    write_text(src / "d/small", "small\n");
    fs::create_symlink("a.txt", src / "d/link");
    ASSERT_EQ(run({"store", "backup", dir, src.string(), "-q"}).exit_code, 0);
    write_file(src / "d/b.bin", test::random_bytes(300000, 2));
    write_text(src / "d/small", "changed\n");
    ASSERT_EQ(run({"store", "backup", dir, src.string(), "-q"}).exit_code, 0);
    const fs::path named = tmp.path() / "named";
    write_file(named, test::random_bytes(100000, 3));
    ASSERT_EQ(run({"store", "put", dir, named.string(), "--name", "n/one", "-q"}).exit_code, 0);
    write_file(named, test::random_bytes(120000, 4));
    ASSERT_EQ(run({"store", "put", dir, named.string(), "--name", "n/one", "-q"}).exit_code, 0);
    ASSERT_EQ(run({"store", "put", dir, (src / "big.bin").string(), "--name", "n/big", "-q"}).exit_code, 0);
    const State before = state("before");
    ASSERT_EQ(before.snapshots.size(), 5u);  // two backups, three puts
    ASSERT_EQ(before.files.size(), 2u);
    EXPECT_EQ(before.files.at("n/one"), read_file(named));

    lose_catalog();
    EXPECT_NE(run({"store", "ls", dir}).exit_code, 0);
    const auto j = repair();
    EXPECT_TRUE(j["ok"]) << j.dump();
    EXPECT_EQ(j["superseded"], 0) << j.dump();  // (each version of n/one is a snapshot of its own)
    expect_verifies();
    const State after = state("after");
    EXPECT_EQ(after.snapshots, before.snapshots);
    EXPECT_EQ(after.files, before.files);
    // The rebuilt catalog is a working one: another backup, then gc, then
    // a second rebuild gives the same store again.
    ASSERT_EQ(run({"store", "backup", dir, src.string(), "-q"}).exit_code, 0);
    ASSERT_EQ(run({"store", "gc", dir, "-q"}).exit_code, 0);
    const State again = state("again");
    lose_catalog();
    repair();
    expect_verifies();
    EXPECT_EQ(state("again2").snapshots, again.snapshots);
}

// gc rewrites packs mostly dead: the live manifests' catalog records are
// copied with their chunks (kept by manifests.records), so a rebuild after
// it still finds every file; the removed ones whose records went with the
// rewritten packs stay removed.
TEST_P(RepairCli, GcKeepsTheCatalogRecordsOfLiveFiles) {
    init({"--pack-size", "1M"});
    std::vector<std::string> names;
    for (int i = 0; i < 12; ++i) {
        const fs::path f = tmp.path() / fmt::format("f{}", i);
        write_file(f, test::random_bytes(200000, static_cast<std::uint64_t>(100 + i)));
        names.push_back(fmt::format("f{}", i));
        ASSERT_EQ(run({"store", "put", dir, f.string(), "--name", names.back(), "-q"}).exit_code, 0);
    }
    // Most files go: their packs fall below half live and are rewritten.
    std::vector<std::string> rm{"store", "rm", dir};
    for (int i = 0; i < 12; ++i)
        if (i % 4 != 0) rm.push_back(names[static_cast<std::size_t>(i)]);
    ASSERT_EQ(run(rm).exit_code, 0);
    const auto gc = json_of(run({"store", "gc", dir, "--json"}));
    EXPECT_GT(gc["packs_rewritten"].get<int>() + gc["packs_deleted"].get<int>(), 0) << gc.dump();
    const State before = state("before");
    ASSERT_EQ(before.files.size(), 3u);
    lose_catalog();
    const auto j = repair();
    expect_verifies();
    const State after = state("after");
    EXPECT_EQ(after.files, before.files) << j.dump();
}

// A pack gc rewrote still present beside its rewrite (a gc interrupted
// between the rewrite's commit and the old file's deletion; beside writers
// on PostgreSQL likewise): the live records are in both packs. A manifest
// whose pieces are met twice is restored once (the same piece in two packs
// is one piece, not a second one of that index), with the copies counted as
// duplicates; what the old pack alone holds (a removed file) comes back too.
TEST_P(RepairCli, APieceInTwoPacksIsOnePiece) {
    init();
    const fs::path in = tmp.path() / "in";
    const auto kept = test::random_bytes(30000, 7);
    const auto gone = test::random_bytes(900000, 8);
    write_file(in / "kept", kept);
    write_file(in / "gone", gone);
    ASSERT_EQ(run({"store", "put", dir, in.string(), "--name", "t", "-q"}).exit_code, 0);
    std::vector<fs::path> packs;
    for (const auto& e : fs::directory_iterator(fs::path(dir) / "packs")) packs.push_back(e.path());
    ASSERT_EQ(packs.size(), 1u);
    const fs::path old_pack = packs.front();
    const fs::path aside = tmp.path() / "old.pack";
    fs::copy_file(old_pack, aside);
    ASSERT_EQ(run({"store", "rm", dir, "t/gone", "-q"}).exit_code, 0);
    const auto gc = json_of(run({"store", "gc", dir, "--json"}));
    ASSERT_EQ(gc["packs_rewritten"], 1) << gc.dump();
    ASSERT_FALSE(fs::exists(old_pack));
    fs::copy_file(aside, old_pack);  // (as the interrupted gc left it)
    lose_catalog();
    const auto j = repair();
    EXPECT_EQ(j["unfinished"], 0) << j.dump();
    EXPECT_GT(j["duplicates"].get<int>(), 0) << j.dump();
    EXPECT_EQ(j["problems"].size(), 0u) << j.dump();
    expect_verifies();
    const State after = state("after");
    ASSERT_EQ(after.files.count("t/kept"), 1u) << j.dump();
    EXPECT_EQ(after.files.at("t/kept"), std::string(kept.begin(), kept.end()));
    ASSERT_EQ(after.files.count("t/gone"), 1u) << "removed, but its records were in the old pack: " << j.dump();
    EXPECT_EQ(after.files.at("t/gone"), std::string(gone.begin(), gone.end()));
}

// A store whose packs hold no catalog record (no manifest was ever
// committed; a store written before them likewise) cannot say what its
// settings were: refused, no catalog made.
TEST_P(RepairCli, RefusesPacksWithoutSettings) {
    init();
    lose_catalog();
    const auto r = run({"store", "repair", "--rebuild-catalog", dir});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("no settings record"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(fs::path(dir) / "index.db"));
    const auto usage = run({"store", "repair", dir});
    EXPECT_EQ(usage.exit_code, 2) << usage.err;
}

// An index.db that is there is moved aside, never overwritten.
TEST_P(RepairCli, MovesAnExistingDatabaseAside) {
    init();
    const fs::path f = tmp.path() / "f";
    write_file(f, test::random_bytes(50000, 9));
    ASSERT_EQ(run({"store", "put", dir, f.string(), "--name", "f", "-q"}).exit_code, 0);
    const std::string db = read_file(fs::path(dir) / "index.db");
    const auto j = repair();
    const std::string aside = j["moved_aside"];
    ASSERT_FALSE(aside.empty()) << j.dump();
    EXPECT_EQ(read_file(aside), db);
    expect_verifies();
    EXPECT_EQ(state("after").files.at("f"), read_file(f));
}

INSTANTIATE_TEST_SUITE_P(PlainAndEncrypted, RepairCli, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "encrypted" : "plain"; });

}  // namespace
}  // namespace cdc

// (the encrypted stores' key slots are made with the weakest parameters)
static const bool kFastKdf = [] { return ::setenv("CDC_TEST_FAST_KDF", "1", 1) == 0; }();
