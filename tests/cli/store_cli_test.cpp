// SPDX-License-Identifier: Apache-2.0
// cdc store, the command: round trips (files, trees, stdin), JSON, errors and
// exit codes; kill -9 at random instants of put, rm and gc, then verify
// --full and every committed name byte for byte; two concurrent put
// processes; a write limit (EFBIG, like ENOSPC) in the middle of a put.
#include "cli_support.hpp"
#include "store_support.hpp"

#include "escape.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <csignal>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cdc {
namespace {

namespace fs = std::filesystem;
using test::json_of;
using test::run_tool;
using test::spawn_tool;
using test::wait_exit;

std::map<std::string, std::uint64_t> names_in(const std::string& dir) {
    std::map<std::string, std::uint64_t> out;
    for (const auto& m : json_of(run_tool({"store", "ls", dir, "--json"}))) out[m["name"]] = m["size"];
    return out;
}

/// Everything readable from `p` (a FIFO: no seeking).
std::vector<std::uint8_t> read_stream(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(StoreCli, FilesTreesStdinAndJson) {
    test::TempDir tmp;
    const auto a = test::mixed_bytes(300'000, 1);
    const auto b = test::random_bytes(100'000, 2);
    tmp.write("tree/x/a.bin", a);
    tmp.write("tree/b.bin", b);
    tmp.write("tree/empty", {});
    const auto single = tmp.write("single.bin", b);
    const std::string dir = (tmp.path() / "s").string();
    auto r = run_tool({"store", "init", "--no-encryption", dir, "-a", "ultracdc", "--avg", "4K", "--zstd-level", "5"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // A tree: its files by their paths inside it; a file: its path as given,
    // made relative (the leading / dropped, with a warning).
    r = run_tool({"store", "put", dir, (tmp.path() / "tree").string(), single.string(), "--json"});
    const auto j = json_of(r);
    EXPECT_EQ(j["file_count"], 4);
    EXPECT_EQ(j["bytes"], a.size() + 2 * b.size());
    EXPECT_EQ(j["new_bytes"], a.size() + b.size());  // single.bin = b.bin
    EXPECT_LT(j["stored_bytes"].get<std::uint64_t>(), a.size() + b.size() + 100'000);
    const auto names = names_in(dir);
    EXPECT_EQ(names, (std::map<std::string, std::uint64_t>{
                         {"x/a.bin", a.size()}, {"b.bin", b.size()}, {"empty", 0}, {single.string().substr(1), b.size()}}));
    EXPECT_NE(r.err.find(fmt::format("stored as '{}'", single.string().substr(1))), std::string::npos) << r.err;
    // A tree under --name; stdin with --name.
    r = run_tool({"store", "put", dir, (tmp.path() / "tree").string(), "--name", "day2"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("0.0 MB new"), std::string::npos) << r.out;
    r = run_tool({"store", "put", dir, "-", "--name", "piped.bin"}, (tmp.path() / "tree/x/a.bin").string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"store", "put", dir, "-"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--name"), std::string::npos) << r.err;
    for (const std::string name : {"day2/x/a.bin", "piped.bin", "x/a.bin"}) {
        const auto out = tmp.path() / "got";
        r = run_tool({"store", "get", dir, name, "-o", out.string()});
        ASSERT_EQ(r.exit_code, 0) << name << r.err;
        EXPECT_EQ(test::read_bytes(out), a) << name;
    }
    // get to stdout, get into a directory
    r = run_tool({"store", "get", dir, "b.bin", "-o", "-"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(std::vector<std::uint8_t>(r.out.begin(), r.out.end()), b);
    fs::create_directories(tmp.path() / "outdir");
    r = run_tool({"store", "get", dir, "day2/b.bin", "-o", (tmp.path() / "outdir").string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(tmp.path() / "outdir/b.bin"), b);
    EXPECT_EQ(fs::status(tmp.path() / "outdir/b.bin").permissions() & fs::perms::all,
              fs::status(tmp.path() / "tree/b.bin").permissions() & fs::perms::all);
    // get into a FIFO (like /dev/null or /dev/stdout: not a file to replace):
    // written as a stream; the FIFO stays a FIFO.
    const auto fifo = tmp.path() / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
    std::vector<std::uint8_t> piped;
    std::thread drain([&] { piped = read_stream(fifo); });
    r = run_tool({"store", "get", dir, "x/a.bin", "-o", fifo.string()});
    drain.join();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(piped, a);
    EXPECT_EQ(fs::status(fifo).type(), fs::file_type::fifo);
    // unknown name: usage error; ls --json; stats --json; rm; verify
    r = run_tool({"store", "get", dir, "nope", "-o", (tmp.path() / "n").string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("nope"), std::string::npos);
    const auto st = json_of(run_tool({"store", "stats", dir, "--json"}));
    // Three puts, three snapshots: 8 files of 3 contents (a, b, empty), a
    // manifest per content; each snapshot's header and trees are manifests
    // (and chunks) too.
    EXPECT_EQ(names_in(dir).size(), 8u);
    EXPECT_EQ(st["files"], 3 + 2 * 3);
    EXPECT_EQ(st["algorithm"], "ultracdc");
    EXPECT_EQ(st["avg_size"], 4096);
    EXPECT_GE(st["chunk_bytes"].get<std::uint64_t>(), a.size() + b.size());
    EXPECT_LT(st["chunk_bytes"].get<std::uint64_t>(), a.size() + b.size() + 8192);
    EXPECT_GT(st["chunk_table_bytes_per_chunk"].get<double>(), 0.0);
    r = run_tool({"store", "rm", dir, "day2/b.bin", "day2/x/a.bin"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(names_in(dir).size(), 6u);
    r = run_tool({"store", "rm", dir, "nope"});
    EXPECT_EQ(r.exit_code, 2);
    r = run_tool({"store", "gc", dir, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"store", "verify", dir, "--full", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(json_of(r)["ok"].get<bool>());
}

TEST(StoreCli, GetStripsSetIdBitsUnlessKeepSetid) {
    test::TempDir tmp;
    const auto file = tmp.write("tool", test::random_bytes(3000, 3));
    ASSERT_EQ(::chmod(file.c_str(), 04750), 0);
    const std::string dir = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir}).exit_code, 0);
    ASSERT_EQ(run_tool({"store", "put", dir, file.string(), "--name", "tool"}).exit_code, 0);
    ASSERT_EQ(run_tool({"store", "get", dir, "tool", "-o", (tmp.path() / "a").string()}).exit_code, 0);
    EXPECT_EQ(test::mode_of(tmp.path() / "a"), 0750u);
    ASSERT_EQ(run_tool({"store", "get", dir, "tool", "-o", (tmp.path() / "b").string(), "--keep-setid"}).exit_code, 0);
    EXPECT_EQ(test::mode_of(tmp.path() / "b"), 04750u);
}

TEST(StoreCli, GetATreeIntoADirectory) {
    test::TempDir tmp;
    const auto a = test::mixed_bytes(100'000, 4);
    const auto b = test::random_bytes(20'000, 5);
    tmp.write("tree/x/a.bin", a);
    tmp.write("tree/b.bin", b);
    tmp.write("tree/empty", {});
    const std::string dir = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir}).exit_code, 0);
    ASSERT_EQ(run_tool({"store", "put", dir, (tmp.path() / "tree").string(), "--name", "day1"}).exit_code, 0);
    ASSERT_EQ(run_tool({"store", "put", dir, (tmp.path() / "tree").string(), "--name", "day2"}).exit_code, 0);
    const auto out = tmp.path() / "restored";
    auto r = run_tool({"store", "get", dir, "day1", "-o", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(out / "x" / "a.bin"), a);
    EXPECT_EQ(test::read_bytes(out / "b.bin"), b);
    EXPECT_TRUE(fs::is_regular_file(out / "empty"));
    // '.': every file, below their full names.
    const auto all = tmp.path() / "all";
    r = run_tool({"store", "get", dir, ".", "-o", all.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(all / "day2" / "x" / "a.bin"), a);
    // A tree does not go to standard output; an unknown name is a usage error.
    EXPECT_EQ(run_tool({"store", "get", dir, "day1", "-o", "-"}).exit_code, 2);
    EXPECT_EQ(run_tool({"store", "get", dir, "day3", "-o", out.string()}).exit_code, 2);
}

TEST(StoreCli, NamesWithEscapesNewlinesAndBadUtf8AreListedSafely) {
    // A file name is any bytes but '/' and NUL: listings show it escaped (a
    // newline cannot fake an entry, an escape cannot drive the terminal) and
    // JSON carries the exact bytes (name_bytes) instead of failing.
    test::TempDir tmp;
    const std::string evil = "a\x1b]0;owned\x07\nfake 0 0";
    const std::string bad = "bad\xff";
    tmp.write("tree/" + evil, test::random_bytes(100, 6));
    tmp.write("tree/" + bad, test::random_bytes(100, 7));
    const std::string dir = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir}).exit_code, 0);
    auto r = run_tool({"store", "put", dir, (tmp.path() / "tree").string(), "--name", "t", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r)["file_count"], 2);
    r = run_tool({"store", "ls", dir});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("t/a\\x1B]0;owned\\x07\\x0Afake"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("t/bad\\xFF"), std::string::npos) << r.out;
    r = run_tool({"store", "ls", dir, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::set<std::string> names;
    for (const auto& m : json_of(r))
        names.insert(m.contains("name_bytes") ? tools::base64_decode(m["name_bytes"].get<std::string>())
                                              : m["name"].get<std::string>());
    EXPECT_EQ(names, (std::set<std::string>{"t/" + evil, "t/" + bad}));
    EXPECT_EQ(run_tool({"store", "verify", dir, "--json"}).exit_code, 0);
    // The bytes of the name restore the file.
    r = run_tool({"store", "get", dir, "t/" + bad, "-o", (tmp.path() / "out").string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(StoreCli, APutOfATreeHoldingTheStoreSkipsTheStore) {
    // The store's live database and growing packs are not data to put into it.
    test::TempDir tmp;
    const auto data = test::random_bytes(50'000, 8);
    tmp.write("home/doc", data);
    const std::string dir = (tmp.path() / "home" / "backup").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir}).exit_code, 0);
    ASSERT_EQ(run_tool({"store", "put", dir, (tmp.path() / "home").string(), "--name", "h1"}).exit_code, 0);
    const auto r = run_tool({"store", "put", dir, (tmp.path() / "home").string(), "--name", "h2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("the store itself: skipped"), std::string::npos) << r.err;
    EXPECT_EQ(names_in(dir), (std::map<std::string, std::uint64_t>{{"h1/doc", data.size()}, {"h2/doc", data.size()}}));
}

TEST(StoreCli, PutLeavesOutWhatIsExcluded) {
    test::TempDir tmp;
    const auto data = test::random_bytes(20'000, 9);
    for (const char* f : {"src/main.c", "src/main.o", "src/lib/util.o", "src/lib/keep.o", "build/out.bin",
                          "cache/blob", "notes.txt", "private/secret", "private/.nobackup"})
        tmp.write(std::string("home/") + f, data);
    const std::string tag = "Signature: 8a477f597d28d172789f06886806bc55";
    tmp.write("home/cache/CACHEDIR.TAG", std::vector<std::uint8_t>(tag.begin(), tag.end()));
    const std::string dir = (tmp.path() / "s").string(), home = (tmp.path() / "home").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir}).exit_code, 0);
    const auto r = run_tool({"store", "put", dir, home, "--name", "h", "--json", "--exclude", "*.o", "--exclude",
                             "!keep.o", "--exclude", "/build/", "--exclude-caches", "--exclude-if-present",
                             ".nobackup"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");  // no warning for what was excluded
    const auto j = json_of(r);
    EXPECT_EQ(j["excluded"], 5);  // main.o, util.o, build, cache, private
    EXPECT_EQ(names_in(dir), (std::map<std::string, std::uint64_t>{{"h/notes.txt", data.size()},
                                                                   {"h/src/lib/keep.o", data.size()},
                                                                   {"h/src/main.c", data.size()}}));
    // An anchored pattern is relative to the PATH walked, not to the name stored.
    const auto r2 = run_tool({"store", "put", dir, home + "/src", "--name", "s", "--exclude", "/lib"});
    ASSERT_EQ(r2.exit_code, 0) << r2.err;
    EXPECT_EQ(names_in(dir).count("s/main.c") + names_in(dir).count("s/main.o"), 2u);
    EXPECT_EQ(names_in(dir).count("s/lib/keep.o"), 0u);
    const auto bad = run_tool({"store", "put", dir, home, "--name", "x", "--exclude", "[oops"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("unterminated ["), std::string::npos) << bad.err;
}

TEST(StoreCli, KeyFileAndFormatErrors) {
    test::TempDir tmp;
    const auto key = tmp.write("key", std::vector<std::uint8_t>(64, '7'));
    const auto wrong = tmp.write("wrong", std::vector<std::uint8_t>(32, 9));  // 32 raw bytes
    const auto bad = tmp.write("bad", std::vector<std::uint8_t>(10, 'x'));
    const std::string dir = (tmp.path() / "s").string();
    auto r = run_tool({"store", "init", "--no-encryption", dir, "-a", "kfastcdc"});
    EXPECT_EQ(r.exit_code, 2);  // needs a key
    r = run_tool({"store", "init", "--no-encryption", dir, "-a", "kfastcdc", "--key-file", bad.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("bad"), std::string::npos);
    // A key others may read is used, with a warning (ssh's rule for a private key).
    ::chmod(key.c_str(), 0644);
    r = run_tool({"store", "init", "--no-encryption", dir, "-a", "kfastcdc", "--key-file", key.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("warning: the key file '" + key.string() + "' can be read by other users (mode 0644)"),
              std::string::npos)
        << r.err;
    ::chmod(key.c_str(), 0600);
    const auto data = tmp.write("d", test::mixed_bytes(100'000, 3));
    r = run_tool({"store", "put", dir, data.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("keyed"), std::string::npos) << r.err;
    r = run_tool({"store", "put", dir, data.string(), "--key-file", wrong.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("wrong key"), std::string::npos) << r.err;
    r = run_tool({"store", "put", dir, data.string(), "--key-file", key.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find("key file"), std::string::npos) << r.err;
    r = run_tool({"store", "ls", (tmp.path() / "nostore").string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("not a store"), std::string::npos) << r.err;
    { std::ofstream(tmp.path() / "s/cdc-store") << "cdc-store\nformat 9\n"; }
    r = run_tool({"store", "verify", dir});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("newer"), std::string::npos) << r.err;
}

TEST(StoreCli, FlippedByteVerifyAndGetExitFourNamingTheFile) {
    test::TempDir tmp;
    const std::string dir = (tmp.path() / "s").string();
    const auto f = tmp.write("f.bin", test::random_bytes(200'000, 5));
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir}).exit_code, 0);
    ASSERT_EQ(run_tool({"store", "put", dir, f.string(), "--name", "victim"}).exit_code, 0);
    test::flip_byte(test::first_pack(dir), 100'000);
    auto r = run_tool({"store", "verify", dir});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_NE(r.err.find("victim"), std::string::npos) << r.err;
    const auto out = tmp.path() / "out";
    r = run_tool({"store", "get", dir, "victim", "-o", out.string()});
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_NE(r.err.find("'victim'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("chunk "), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
}

std::uint64_t pack_bytes(const std::string& dir) {
    std::uint64_t n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(dir) / "packs", ec)) n += e.file_size(ec);
    return n;
}

// Content of a name in the kill test: a function of the name only.
std::vector<std::uint8_t> content_of(int version, int file) {
    // Versions share most of their bytes (a growing tree): file j of version
    // k is file j of the base with k small edits.
    auto v = test::mixed_bytes(400'000 + 150'000 * static_cast<std::size_t>(file), static_cast<std::uint64_t>(file));
    for (int e = 0; e < version; ++e)
        v.insert(v.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(e * 97'000 + 1234) % v.size()), 300,
                 static_cast<std::uint8_t>(e));
    // ... and grows by new data (so that each new version writes ~400 KB).
    const auto fresh = test::random_bytes(130'000, static_cast<std::uint64_t>(1000 + 10 * version + file));
    v.insert(v.end(), fresh.begin(), fresh.end());
    return v;
}

TEST(StoreCli, KillNineDuringPutRmGcLeavesAVerifiedStore) {
    test::TempDir tmp;
    constexpr int kVersions = 8, kFiles = 2;
    for (int k = 0; k < kVersions; ++k)
        for (int j = 0; j < kFiles; ++j)
            tmp.write(fmt::format("src/v{}/f{}", k, j), content_of(k, j));
    const std::string dir = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir, "--pack-size", "1M", "--avg", "4K"}).exit_code, 0);
    const std::vector<std::pair<std::string, std::string>> env{{"CDC_STORE_FLUSH_BYTES", "200000"}};
    std::mt19937_64 rng(12345);
    std::set<std::string> surely;  // committed by a put that finished, never rm'ed since
    std::set<int> attempted;       // versions put (or begun) so far
    int killed = 0, interrupted_writes = 0, names_checked = 0;
    // Every kind of operation, interrupted or let finish (the instants are random).
    enum Op { put, rm, gc };
    const std::vector<std::pair<Op, bool>> plan{  // (operation, kill it)
        {put, false}, {put, true}, {put, true},  {rm, true},  {gc, true},  {put, false}, {put, true},
        {rm, false},  {gc, true},  {put, true},  {put, false}, {gc, false}, {rm, true},  {put, true}};
    for (std::size_t round = 0; round < plan.size(); ++round) {
        auto [op, kill] = plan[round];
        const auto names = names_in(dir);
        if (op == rm && names.empty()) op = put;
        std::vector<std::string> args;
        int version = static_cast<int>(rng() % kVersions);
        if (op == put && kill) {
            // A version never put before writes new bytes (an attempted one
            // may be stored already, even by a killed put, and finish before
            // the packs grow): the kill lands mid-write.
            std::vector<int> fresh;
            for (int k = 0; k < kVersions; ++k)
                if (!attempted.count(k)) fresh.push_back(k);
            if (!fresh.empty()) version = fresh[rng() % fresh.size()];
        }
        if (op == put) attempted.insert(version);
        if (op == put) {
            args = {"store", "put", dir, (tmp.path() / fmt::format("src/v{}", version)).string(), "--name",
                    fmt::format("v{}", version)};
        } else if (op == rm) {
            auto it = names.begin();
            std::advance(it, static_cast<long>(rng() % names.size()));
            args = {"store", "rm", dir, it->first};
            surely.erase(it->first);
        } else {
            args = {"store", "gc", dir};
        }
        const pid_t pid = spawn_tool(args, tmp.path(), env);
        if (kill && op == put) {
            // Kill once the packs grew by a random amount: mid-write whatever
            // the machine's speed (a new version writes 270 KB or more).
            const std::uint64_t base = pack_bytes(dir), grow = 1 + rng() % 250'000;
            int status = 0;
            while (pack_bytes(dir) < base + grow && ::waitpid(pid, &status, WNOHANG) == 0)
                std::this_thread::sleep_for(std::chrono::microseconds(200));
            ::kill(pid, SIGKILL);
        } else if (kill) {
            std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3'000));  // rm and gc take a few ms on a fast idle machine
            ::kill(pid, SIGKILL);
        }
        const int code = wait_exit(pid);
        if (code == 128 + SIGKILL) ++killed;
        else ASSERT_EQ(code, 0) << args[1] << ": " << test::read_text(tmp.path() / "err");
        if (code == 0 && op == put)
            for (int j = 0; j < kFiles; ++j) surely.insert(fmt::format("v{}/f{}", version, j));

        // Whatever the instant: the store verifies, and every name restores exactly.
        auto r = run_tool({"store", "verify", dir, "--full", "--json"});
        ASSERT_EQ(r.exit_code, 0) << "round " << round << " (" << args[1] << "): " << r.err << r.out;
        if (!json_of(r)["notes"].empty()) ++interrupted_writes;  // torn tails, orphan packs, pending manifests
        const auto now = names_in(dir);
        for (const auto& s : surely) EXPECT_TRUE(now.count(s)) << s << " lost in round " << round;
        for (const auto& [name, size] : now) {
            const int k = name[1] - '0', j = name[4] - '0';
            const auto out = tmp.path() / "restored";
            r = run_tool({"store", "get", dir, name, "-o", out.string()});
            ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
            ASSERT_EQ(test::read_bytes(out), content_of(k, j)) << name << " in round " << round;
            ++names_checked;
        }
    }
    EXPECT_GE(killed, 6);              // most planned kills landed before the end,
    EXPECT_GT(interrupted_writes, 0);  // some in the middle of writing,
    EXPECT_GT(names_checked, 10);      // and committed names were there to compare
    // A final gc reclaims what the interrupted writers left; everything still restores.
    auto r = run_tool({"store", "gc", dir});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"store", "verify", dir, "--full", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(json_of(r)["notes"].empty()) << r.out;
    // Garbage may stay only in packs that are mostly live (gc rewrites the others).
    const auto st = json_of(run_tool({"store", "stats", dir, "--json"}));
    EXPECT_LE(st["garbage_bytes"].get<std::uint64_t>(), st["pack_bytes"].get<std::uint64_t>() / 2);
}

TEST(StoreCli, TwoPutProcessesAtOnceBothSucceedAndDedup) {
    test::TempDir tmp;
    const auto a = test::mixed_bytes(4'000'000, 41);
    tmp.write("one/a.bin", a);
    tmp.write("two/a.bin", a);
    const std::string dir = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir}).exit_code, 0);
    fs::create_directories(tmp.path() / "log1");
    fs::create_directories(tmp.path() / "log2");
    const pid_t p1 = spawn_tool({"store", "put", dir, (tmp.path() / "one").string(), "--name", "one"}, tmp.path() / "log1");
    const pid_t p2 = spawn_tool({"store", "put", dir, (tmp.path() / "two").string(), "--name", "two"}, tmp.path() / "log2");
    EXPECT_EQ(wait_exit(p1), 0) << test::read_text(tmp.path() / "log1/err");
    EXPECT_EQ(wait_exit(p2), 0) << test::read_text(tmp.path() / "log2/err");
    const auto names = names_in(dir);
    EXPECT_EQ(names.size(), 2u);
    const auto st = json_of(run_tool({"store", "stats", dir, "--json"}));
    // Each chunk indexed once (beside the snapshots' few small ones).
    EXPECT_GE(st["chunk_bytes"].get<std::uint64_t>(), a.size());
    // (the snapshots' headers and trees and the catalog records are chunks too;
    // a second copy of a would be 4 MB)
    EXPECT_LT(st["chunk_bytes"].get<std::uint64_t>(), a.size() + 65536);
    ASSERT_EQ(run_tool({"store", "gc", dir}).exit_code, 0);
    const auto after = json_of(run_tool({"store", "stats", dir, "--json"}));
    EXPECT_LE(after["garbage_bytes"].get<std::uint64_t>(), after["pack_bytes"].get<std::uint64_t>() / 2);
    for (const std::string n : {"one/a.bin", "two/a.bin"}) {
        auto r = run_tool({"store", "get", dir, n, "-o", (tmp.path() / "o").string()});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(test::read_bytes(tmp.path() / "o"), a);
    }
    auto r = run_tool({"store", "put", dir, (tmp.path() / "one").string(), "--name", "three", "--json"});
    EXPECT_EQ(json_of(r)["new_bytes"], 0);
}

TEST(StoreCli, WriteLimitDuringPutFailsCleanlyAndTheStoreVerifies) {
    test::TempDir tmp;
    const std::string dir = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", dir}).exit_code, 0);
    const auto first = tmp.write("first.bin", test::mixed_bytes(300'000, 51));
    ASSERT_EQ(run_tool({"store", "put", dir, first.string(), "--name", "first"}).exit_code, 0);
    tmp.write("big/a.bin", test::random_bytes(3'000'000, 52));
    // Files may not grow past 1 MiB: the pack write fails (EFBIG) midway.
    const pid_t pid = spawn_tool({"store", "put", dir, (tmp.path() / "big").string()}, tmp.path(), {}, 1 << 20);
    EXPECT_EQ(wait_exit(pid), 4);
    const std::string err = test::read_text(tmp.path() / "err");
    EXPECT_NE(err.find("File too large"), std::string::npos) << err;
    EXPECT_NE(err.find("pack"), std::string::npos) << err;
    auto r = run_tool({"store", "verify", dir, "--full"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(names_in(dir).size(), 1u);
    r = run_tool({"store", "get", dir, "first", "-o", (tmp.path() / "o").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(test::read_bytes(tmp.path() / "o"), test::read_bytes(first));
    // Without the limit, the same put works (the torn tail is cut off).
    r = run_tool({"store", "put", dir, (tmp.path() / "big").string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"store", "verify", dir, "--full", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace cdc
