// SPDX-License-Identifier: Apache-2.0
// cdc dupes, the tool: output formats, exit codes, actions on copies, the
// open-file limit, unreadable files, and kill -9 at random moments.
#include "dupes_support.hpp"
#include "cli_support.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <limits>
#include <random>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;

TEST(DupesCli, JsonShapeAndSortedGroups) {
    TempDir tmp;
    const auto r = tmp.path().string();
    const auto big = random_bytes(50000, 1), small = random_bytes(1000, 2);
    write_file(tmp.path() / "b/big2", big);
    write_file(tmp.path() / "a/big1", big);
    for (const char* n : {"s3", "s1", "s2"}) write_file(tmp.path() / n, small);
    ASSERT_EQ(::link((r + "/s1").c_str(), (r + "/s1_link").c_str()), 0);
    const auto j = run_tool({"dupes", "--json", r});
    ASSERT_EQ(j.exit_code, 0) << j.err;
    const auto doc = nlohmann::json::parse(j.out);
    ASSERT_EQ(doc["groups"].size(), 2u);
    EXPECT_EQ(doc["groups"][0]["size"], 50000);  // most wasted bytes first
    EXPECT_EQ(doc["groups"][0]["files"], nlohmann::json::array({r + "/a/big1", r + "/b/big2"}));
    EXPECT_EQ(doc["groups"][1]["files"], nlohmann::json::array({r + "/s1", r + "/s2", r + "/s3"}));
    ASSERT_EQ(doc["linked"].size(), 1u);
    EXPECT_EQ(doc["linked"][0]["files"], nlohmann::json::array({r + "/s1", r + "/s1_link"}));
    const auto& s = doc["summary"];
    EXPECT_EQ(s["files_scanned"], 6);
    EXPECT_EQ(s["groups"], 2);
    EXPECT_EQ(s["duplicate_files"], 3);
    EXPECT_EQ(s["wasted_bytes"], 52000);
    EXPECT_EQ(s["linked_paths"], 1);
    EXPECT_GT(s["bytes_read"].get<std::uint64_t>(), 0u);
    EXPECT_TRUE(j.err.empty()) << "quiet when piped: " << j.err;

    const auto c = run_tool({"dupes", "--csv", "--mode", "hash", "--digest", "xxh3", r});
    ASSERT_EQ(c.exit_code, 0) << c.err;
    EXPECT_EQ(c.out.substr(0, c.out.find('\n')), "kind,group,size,path");
    EXPECT_NE(c.out.find(fmt::format("duplicate,1,50000,{}/a/big1\n", r)), std::string::npos) << c.out;
    EXPECT_NE(c.out.find(fmt::format("linked,1,1000,{}/s1_link\n", r)), std::string::npos) << c.out;

    const auto t = run_tool({"dupes", "--mode", "compare", r});
    ASSERT_EQ(t.exit_code, 0) << t.err;
    EXPECT_NE(t.out.find("== 2 files of 50000 bytes, 50000 bytes wasted"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("2 groups, 3 duplicate files, 52000 bytes wasted"), std::string::npos) << t.out;
}

TEST(DupesCli, ExcludedFilesAreNoDuplicates) {
    TempDir tmp;
    const auto r = tmp.path().string();
    const auto big = random_bytes(50000, 3);
    write_file(tmp.path() / "a/big", big);
    write_file(tmp.path() / "b/big", big);
    write_file(tmp.path() / "c/big", big);
    write_file(tmp.path() / "c/.nobackup", {});
    auto j = run_tool({"dupes", "--json", "--exclude-if-present", ".nobackup", r});
    ASSERT_EQ(j.exit_code, 0) << j.err;
    EXPECT_EQ(nlohmann::json::parse(j.out)["groups"][0]["files"], nlohmann::json::array({r + "/a/big", r + "/b/big"}));
    j = run_tool({"dupes", "--json", "--exclude", "/b", "--exclude-if-present", ".nobackup", r});
    ASSERT_EQ(j.exit_code, 0) << j.err;
    EXPECT_EQ(nlohmann::json::parse(j.out)["groups"], nlohmann::json::array());
    const auto bad = run_tool({"dupes", "--exclude", "x\\", r});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("--exclude"), std::string::npos) << bad.err;
}

TEST(DupesCli, UsageErrorsAndHelp) {
    TempDir tmp;
    EXPECT_EQ(run_tool({"dupes", (tmp.path() / "missing").string()}).exit_code, 2);
    EXPECT_EQ(run_tool({"dupes", "--mode", "fast", tmp.path().string()}).exit_code, 2);
    EXPECT_EQ(run_tool({"dupes", "--action", "shred", tmp.path().string()}).exit_code, 2);
    EXPECT_EQ(run_tool({"dupes", "--min-size", "1Q", tmp.path().string()}).exit_code, 2);
    EXPECT_EQ(run_tool({"dupes", "--json", "--csv", tmp.path().string()}).exit_code, 2);
    const auto f = run_tool({"dupes", "--follow-symlinks", "--action", "delete", tmp.path().string()});
    EXPECT_EQ(f.exit_code, 2);
    EXPECT_NE(f.err.find("reports only"), std::string::npos) << f.err;
    const auto h = run_tool({"dupes", "--help"});
    EXPECT_EQ(h.exit_code, 0);
    EXPECT_NE(h.out.find("Exit status"), std::string::npos);
    EXPECT_NE(h.out.find("--keep"), std::string::npos);
    // The parser of the cdc-dupes helper: unknown options, missing values and
    // paths, a bad count; options after the paths are options.
    for (const std::vector<std::string>& bad :
         {std::vector<std::string>{"dupes", "--bogus", tmp.path().string()}, {"dupes", "-x", tmp.path().string()},
          {"dupes"}, {"dupes", tmp.path().string(), "--mode"}, {"dupes", "--max-open", "x", tmp.path().string()}}) {
        const auto r = run_tool(bad);
        EXPECT_EQ(r.exit_code, 2) << bad.back();
        EXPECT_TRUE(r.err.starts_with("cdc: error: ")) << r.err;
    }
    const auto late = run_tool({"dupes", tmp.path().string(), "--mode=hash", "--json"});
    EXPECT_EQ(late.exit_code, 0) << late.err;
    EXPECT_NE(late.out.find("\"mode\":\"hash\""), std::string::npos) << late.out;
    // `cdc --help` still lists the command.
    EXPECT_NE(run_tool({"--help"}).out.find("dupes"), std::string::npos);
}

TEST(DupesCli, MissingHelperIsAClearError) {
    TempDir tmp;
    ::setenv("CDC_DUPES", "/nonexistent/cdc-dupes", 1);
    const auto missing = run_tool({"dupes", tmp.path().string()});
    ::unsetenv("CDC_DUPES");
    EXPECT_EQ(missing.exit_code, 4) << missing.err;
    EXPECT_NE(missing.err.find("/nonexistent/cdc-dupes"), std::string::npos) << missing.err;
    EXPECT_EQ(run_tool({"dupes", tmp.path().string()}).exit_code, 0);  // control: the helper next to the tool
}

TEST(DupesCli, ActionsOnACopy) {
    for (const std::string action : {"hardlink", "delete"}) {
        TempDir tmp;
        const auto contents = make_random_tree(tmp.path(), 100, 25, 21);
        const auto want = reference_groups(contents);
        const auto before = snapshot(tmp.path());
        const auto dry = run_tool({"dupes", "--action", action, "--dry-run", "--json", tmp.path().string()});
        ASSERT_EQ(dry.exit_code, 0) << dry.err;
        EXPECT_EQ(snapshot(tmp.path()), before) << "--dry-run changed something";
        const auto plan = nlohmann::json::parse(dry.out);
        std::size_t dups = 0;
        for (const auto& g : want) dups += g.size() - 1;
        EXPECT_EQ(plan["actions"].size(), dups);
        for (const auto& a : plan["actions"]) EXPECT_EQ(a["status"], "planned");

        const auto run = run_tool({"dupes", "--action", action, "--keep", "first", tmp.path().string()});
        ASSERT_EQ(run.exit_code, 0) << run.err;
        expect_contents(contents, action == "delete");
        for (const auto& g : want) {
            for (std::size_t i = 1; i < g.size(); ++i) {
                if (action == "hardlink")
                    EXPECT_EQ(inode_of(g[i]), inode_of(g[0])) << g[i];
                else
                    EXPECT_FALSE(fs::exists(g[i])) << g[i];
            }
            EXPECT_TRUE(fs::exists(g[0]));
        }
        EXPECT_TRUE(temporaries_in(tmp.path()).empty());
        const auto again = run_tool({"dupes", "--json", tmp.path().string()});
        EXPECT_EQ(nlohmann::json::parse(again.out)["summary"]["wasted_bytes"], 0);
    }
}

TEST(DupesCli, ReflinkErrorIsClear) {
    TempDir tmp;
    const auto d = random_bytes(20000, 3);
    write_file(tmp.path() / "a", d);
    write_file(tmp.path() / "b", d);
    const auto before = snapshot(tmp.path());
    const auto r = run_tool({"dupes", "--action", "reflink", tmp.path().string()});
    if (r.exit_code == 0) {  // Btrfs / XFS
        EXPECT_EQ(read_file(tmp.path() / "b"), d);
    } else {
        EXPECT_EQ(r.exit_code, 4);
        EXPECT_NE(r.err.find("reflink is not supported"), std::string::npos) << r.err;
        EXPECT_EQ(snapshot(tmp.path()), before);
    }
}

TEST(DupesCli, GroupLargerThanTheFileDescriptorLimit) {
    // 300 identical files under `ulimit -n 40`: lockstep comparison cannot
    // keep them open at once; every mode must still find the group.
    TempDir tmp;
    const auto d = random_bytes(20000, 4);
    for (int i = 0; i < 300; ++i) write_file(tmp.path() / fmt::format("f{:03}", i), d);
    for (const char* mode : {"compare", "hash", "auto"}) {
        const std::string cmd = fmt::format("ulimit -n 40 && exec '{}' dupes --json --mode {} '{}' > '{}/out.json'",
                                            tool_path().string(), mode, tmp.path().string(), tmp.path().string());
        ASSERT_EQ(std::system(cmd.c_str()), 0) << mode;
        const auto doc = nlohmann::json::parse(read_text(tmp.path() / "out.json"));
        fs::remove(tmp.path() / "out.json");
        ASSERT_EQ(doc["groups"].size(), 1u) << mode;
        EXPECT_EQ(doc["groups"][0]["files"].size(), 300u) << mode;
    }
}

TEST(DupesCli, UnreadableFileIsSkippedWithExitCode3) {
    // chmod 000 does not stop root: when the tests run as root, the tool runs
    // as nobody (setuid in the child), so the permission denial is real.
    TempDir tmp;
    ASSERT_EQ(::chmod(tmp.path().c_str(), 0755), 0);
    const auto d = random_bytes(9000, 5);
    for (const char* n : {"a", "b", "secret"}) write_file(tmp.path() / n, d);
    ASSERT_EQ(::chmod((tmp.path() / "secret").c_str(), 0), 0);
    write_file(tmp.path() / "locked/c", d);  // an unreadable directory
    ASSERT_EQ(::chmod((tmp.path() / "locked").c_str(), 0), 0);
    const bool root = ::geteuid() == 0;
    const std::string out = (tmp.path() / "out.json").string();
    const std::string tool = tool_path().string(), dir = tmp.path().string();
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
        const int null = ::open("/dev/null", O_WRONLY);
        if (o < 0 || null < 0) ::_exit(101);
        ::dup2(o, 1);
        ::dup2(null, 2);
        if (root && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(100);
        ::execl(tool.c_str(), tool.c_str(), "dupes", "--json", dir.c_str(), static_cast<char*>(nullptr));
        ::_exit(102);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_NE(WEXITSTATUS(status), 100) << "cannot setuid to nobody (no CAP_SETUID)";
    EXPECT_EQ(WEXITSTATUS(status), 3);
    const auto doc = nlohmann::json::parse(read_text(out));
    ASSERT_EQ(doc["groups"].size(), 1u);
    EXPECT_EQ(doc["groups"][0]["files"].size(), 2u);
    EXPECT_EQ(doc["summary"]["skipped"], 2);
    ::chmod((tmp.path() / "locked").c_str(), 0755);  // so that TempDir can clean up as non-root
}

// ---- kill -9 ------------------------------------------------------------------

// After a kill: every path has its original bytes (delete: or is gone while
// its content survives elsewhere); leftover temporaries are clearly named
// extra links holding a kept file's bytes.
void check_after_kill(const fs::path& root, const TreeContents& t, bool deleting) {
    expect_contents(t, deleting);
    for (const auto& tmp : temporaries_in(root)) {
        EXPECT_TRUE(fs::is_regular_file(tmp)) << tmp;
        const auto bytes = read_file(tmp);
        EXPECT_NE(std::find(t.blobs.begin(), t.blobs.end(), bytes), t.blobs.end()) << "stray temporary " << tmp;
    }
}

// Duplicate paths already merged (hard-linked to or deleted in favour of
// another path of their group).
std::size_t merged_paths(const TreeContents& t) {
    std::size_t n = 0;
    for (const auto& g : reference_groups(t)) {
        std::map<std::uint64_t, std::size_t> inodes;
        std::size_t missing = 0;
        for (const auto& p : g) {
            if (fs::exists(p))
                ++inodes[inode_of(p)];
            else
                ++missing;
        }
        n += missing;
        for (const auto& [ino, count] : inodes) n += count - 1;
    }
    return n;
}

void kill_test(const std::string& action, int rounds, std::uint64_t seed) {
    constexpr int kFiles = 800;  // enough actions for the kills to land among them
    TempDir tmp;
    const fs::path root = tmp.path() / "tree";
    // One unkilled run gives the time scale of the random kills.
    // (the fastest of three, on fresh trees: a loaded machine only makes
    // the runs longer, so the kills land earlier, never after the end)
    TreeContents t;
    std::int64_t full_us = std::numeric_limits<std::int64_t>::max();
    for (int i = 0; i < 3; ++i) {
        fs::remove_all(root);
        t = make_random_tree(root, kFiles, kFiles / 4, seed, true);
        const auto t0 = std::chrono::steady_clock::now();
        ASSERT_EQ(wait_exit(spawn_tool({"dupes", "--quiet", "--action", action, root.string()})), 0);
        const auto full = std::chrono::steady_clock::now() - t0;
        full_us = std::min<std::int64_t>(full_us, std::chrono::duration_cast<std::chrono::microseconds>(full).count());
    }
    std::mt19937_64 rng(seed);
    int interrupted = 0, partial = 0, temporaries_seen = 0;
    std::size_t total = 0;
    // At least `rounds` trees; more (up to 4x) until kills have landed in the
    // middle of the action phase a few times, however loaded the machine is.
    int rounds_run = 0;
    for (int round = 0; round < rounds || (partial < 3 && round < 4 * rounds); ++round) {
        ++rounds_run;
        fs::remove_all(root);
        t = make_random_tree(root, kFiles, kFiles / 4, seed + static_cast<std::uint64_t>(round) + 1, true);
        total = 0;
        for (const auto& g : reference_groups(t)) total += g.size() - 1;
        // Several kills per tree: each restarted run resumes from where the
        // last one died (temporaries included).
        for (int k = 0; k < 3; ++k) {
            const pid_t pid = spawn_tool({"dupes", "--quiet", "--action", action, root.string()});
            // The first kill anywhere in the run; the next ones in its second
            // half, where the actions are (start-up dominates under ASan).
            const std::int64_t from = k == 0 ? 0 : full_us / 2;
            std::this_thread::sleep_for(std::chrono::microseconds(
                std::uniform_int_distribution<std::int64_t>(from, full_us)(rng)));
            ::kill(pid, SIGKILL);
            const int rc = wait_exit(pid);
            interrupted += rc == 128 + SIGKILL;
            ASSERT_TRUE(rc == 0 || rc == 128 + SIGKILL) << "exit " << rc;
            check_after_kill(root, t, action == "delete");
            if (::testing::Test::HasFailure()) return;
            const std::size_t done = merged_paths(t);
            partial += done > 0 && done < total;
            temporaries_seen += !temporaries_in(root).empty();
        }
        // A run to the end: every duplicate merged, nothing left behind.
        ASSERT_EQ(wait_exit(spawn_tool({"dupes", "--quiet", "--action", action, root.string()})), 0);
        expect_contents(t, action == "delete");
        EXPECT_TRUE(temporaries_in(root).empty());
        for (const auto& g : reference_groups(t)) {
            std::set<std::uint64_t> inodes;
            for (const auto& p : g)
                if (fs::exists(p)) inodes.insert(inode_of(p));
            EXPECT_EQ(inodes.size(), 1u) << g[0];
        }
    }
    EXPECT_GE(interrupted, rounds / 2) << "the kills should often land while the tool runs";
    // Kills landed in the middle of the action phase (some duplicates done,
    // others not) — the states this test is about.
    EXPECT_GT(partial, 0);
    std::fprintf(stderr, "%s: %d rounds, %d kills landed, %d mid-action states, %d with temporaries\n",
                 action.c_str(), rounds_run, interrupted, partial, temporaries_seen);
}

TEST(DupesKill, HardlinkSurvivesSigkillAtRandomMoments) { kill_test("hardlink", 8, 1000); }

TEST(DupesKill, DeleteSurvivesSigkillAtRandomMoments) { kill_test("delete", 8, 2000); }

}  // namespace
}  // namespace cdc::test
