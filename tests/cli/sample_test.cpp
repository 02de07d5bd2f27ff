// SPDX-License-Identifier: Apache-2.0
// cdc sample verifies, completes and repairs (issue 12, item 6): its
// manifest holds a BLAKE3 digest per file; a run killed at random instants
// is completed by the next one, byte for byte; damaged files are rewritten;
// a verified sample is left untouched; only a foreign directory is refused.
#include "cli_support.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <random>
#include <thread>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;

// Relative path -> BLAKE3 of every regular file under `dir` (the manifest too).
std::map<std::string, std::string> digests(const fs::path& dir) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) {
            const std::string bytes = read_text(e.path());
            out[fs::relative(e.path(), dir).string()] =
                compute_digest(DigestKind::blake3, std::as_bytes(std::span(bytes))).hex();
        }
    return out;
}

// mtime of every file: a run that writes nothing changes none.
std::map<std::string, fs::file_time_type> mtimes(const fs::path& dir) {
    std::map<std::string, fs::file_time_type> out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) out[e.path().string()] = e.last_write_time();
    return out;
}

int run_killed_after(const fs::path& dir, std::chrono::microseconds delay) {
    const pid_t pid = spawn_tool({"sample", "-q", dir.string()});
    std::this_thread::sleep_for(delay);
    ::kill(pid, SIGKILL);
    return wait_exit(pid);
}

TEST(CliSampleSafety, KilledRunsAreCompletedByteForByte) {
    TempDir tmp;
    const fs::path ref = tmp.path() / "ref", dir = tmp.path() / "s";
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(run_tool({"sample", "-q", ref.string()}).exit_code, 0);
    const auto full = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
    const auto want = digests(ref);
    ASSERT_EQ(want.size(), 313u);  // 312 files + the manifest
    EXPECT_NE(read_text(ref / ".cdc-sample").find("cdc-sample 2\n16777216 "), std::string::npos);

    std::mt19937_64 rng(12);
    int killed = 0;
    for (int k = 0; k < 4; ++k) {
        const auto delay = std::chrono::microseconds(std::uniform_int_distribution<long>(0, full.count())(rng));
        killed += run_killed_after(dir, delay) == 128 + SIGKILL;
        // Whatever was killed, the directory is ours: never refused.
        if (fs::exists(dir) && !fs::is_empty(dir)) {
            EXPECT_TRUE(fs::exists(dir / ".cdc-sample.partial") || fs::exists(dir / ".cdc-sample")) << k;
        }
    }
    const auto r = run_tool({"sample", "-q", dir.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_EQ(digests(dir), want) << "every byte of every file";
    EXPECT_FALSE(fs::exists(dir / ".cdc-sample.partial"));
    std::fprintf(stderr, "%d of 4 runs killed mid-way; then: %s", killed, r.out.c_str());
}

TEST(CliSampleSafety, RepairsVerifiesAndRefusesOnlyForeignDirectories) {
    TempDir tmp;
    const fs::path dir = tmp.path() / "s";
    ASSERT_EQ(run_tool({"sample", "-q", dir.string()}).exit_code, 0);
    const auto want = digests(dir);

    // Verified: nothing written.
    const auto before = mtimes(dir);
    auto r = run_tool({"sample", dir.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("every file verified"), std::string::npos) << r.out;
    EXPECT_EQ(mtimes(dir), before);

    // Same sizes, other bytes; a truncation; a file gone.
    {
        std::string b = read_text(dir / "images/disk-v3.img");
        b[12345] ^= 1;
        std::ofstream(dir / "images/disk-v3.img", std::ios::binary | std::ios::trunc) << b;
    }
    fs::resize_file(dir / "logs/app-v2.log", 100);
    fs::remove(dir / "src-v2/module001.txt");
    r = run_tool({"sample", dir.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("repaired the sample (3 files rewritten)"), std::string::npos) << r.out;
    EXPECT_EQ(digests(dir), want);

    // A manifest of the first version (sizes only): ours, verified and upgraded.
    std::string v1 = "cdc-sample 1\n16777216 images/disk-v1.img\n";
    std::ofstream(dir / ".cdc-sample", std::ios::trunc) << v1;
    r = run_tool({"sample", dir.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("every file verified, manifest rewritten"), std::string::npos) << r.out;
    EXPECT_EQ(digests(dir), want);
    // -q: nothing but errors; --json: the state.
    r = run_tool({"sample", "-q", dir.string()});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out + r.err, "");
    const auto j = json_of(run_tool({"sample", "--json", dir.string()}));
    EXPECT_EQ(j["state"], "verified");
    EXPECT_EQ(j["written"], 0);

    // A foreign directory is refused and left as it was; an empty one is fine.
    const fs::path other = tmp.path() / "other";
    tmp.write("other/notes.txt", random_bytes(10, 1));
    r = run_tool({"sample", other.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("not empty"), std::string::npos) << r.err;
    EXPECT_EQ(std::distance(fs::directory_iterator(other), fs::directory_iterator()), 1);
    fs::create_directories(tmp.path() / "empty");
    EXPECT_EQ(run_tool({"sample", "-q", (tmp.path() / "empty").string()}).exit_code, 0);
}

}  // namespace
}  // namespace cdc::test
