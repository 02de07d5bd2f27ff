// SPDX-License-Identifier: Apache-2.0
// The smaller items of issue 12 (item 7): an unknown command is named;
// CDC_KERNEL=bogus names the variable; compare says which side an option
// error is on; a key is never echoed and --key "" is an error; cdc dupes
// refuses abbreviated and repeated options like the other commands; a
// reflink dry run checks the file system; --buffer needs --pooled; resync
// and plot agree on --edits 0; dupes --csv lists the actions as --json does.
#include "cli_support.hpp"
#include "dupes_support.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;

void expect_usage_error(const RunResult& r, const std::string& text, const std::string& what) {
    EXPECT_EQ(r.exit_code, 2) << what << ": " << r.err;
    EXPECT_NE(r.err.find(text), std::string::npos) << what << ": " << r.err;
}

TEST(CliSmallItems, UnknownCommandIsNamed) {
    expect_usage_error(run_tool({"chunkk", "x"}), "unknown command 'chunkk'", "chunkk");
    expect_usage_error(run_tool({"bench", "runn"}), "unknown command 'bench runn'", "bench runn");
    EXPECT_EQ(run_tool({"algorithms"}).exit_code, 0);
}

TEST(CliSmallItems, BadKernelVariableIsNamed) {
    TempDir tmp;
    const auto f = tmp.write("f", random_bytes(10000, 1)).string();
    ::setenv("CDC_KERNEL", "bogus", 1);
    const auto r = run_tool({"chunk", f});
    ::unsetenv("CDC_KERNEL");
    expect_usage_error(r, "CDC_KERNEL = 'bogus' is invalid", "CDC_KERNEL=bogus");
}

TEST(CliSmallItems, CompareNamesTheSide) {
    TempDir tmp;
    const auto f = tmp.write("f", random_bytes(10000, 1)).string();
    expect_usage_error(run_tool({"compare", "-a", "fastcdc", "-b", "jc", "--b-avg", "1K", f}), "side B (-b jc)", "--b-avg");
    expect_usage_error(run_tool({"compare", "-a", "fastcdc", "-b", "jc", "--a-min", "8Q", f}),
                       "--a-min = '8Q' is invalid", "--a-min");
    expect_usage_error(run_tool({"compare", "-a", "fastcdc", "-b", "jcx", f}), "side B (-b jcx): unknown algorithm", "-b");
}

TEST(CliSmallItems, KeyIsNeverEchoedAndMayNotBeEmpty) {
    TempDir tmp;
    const auto f = tmp.write("f", random_bytes(10000, 1)).string();
    const std::string good = "030a11181f262d343b424950575e656c737a81888f969da4abb2b9c0c7ced5dc";
    for (const std::string& key : {good.substr(0, 63), good.substr(0, 63) + "Z", good + "00"}) {
        for (const std::vector<std::string>& cmd :
             {std::vector<std::string>{"chunk", "-a", "kfastcdc", "--key", key, f},
              {"analyze", "-a", "kfastcdc", "--key", key, f},
              {"compare", "-a", "kfastcdc", "-b", "fastcdc", "--key", key, f}}) {
            const auto r = run_tool(cmd);
            expect_usage_error(r, "--key is invalid", cmd[0]);
            EXPECT_EQ(r.err.find(key.substr(8, 24)), std::string::npos) << "the key is echoed: " << r.err;
        }
    }
    expect_usage_error(run_tool({"chunk", "-a", "kfastcdc", "--key", "", f}), "--key is invalid", "--key ''");
    expect_usage_error(run_tool({"chunk", "-a", "fastcdc", "--key", "", f}), "--key is invalid", "--key '' fastcdc");
    EXPECT_EQ(run_tool({"chunk", "-a", "kfastcdc", "--key", good, f}).exit_code, 0);
}

TEST(CliSmallItems, DupesRefusesAbbreviatedAndRepeatedOptions) {
    TempDir tmp;
    const auto d = tmp.path().string();
    for (const std::vector<std::string>& cmd :
         {std::vector<std::string>{"dupes", "--act", "delete", d}, {"dupes", "--dry", d}, {"dupes", "--mo=hash", d}}) {
        const auto r = run_tool(cmd);
        EXPECT_EQ(r.exit_code, 2) << cmd[1];
        EXPECT_NE(r.err.find("not expected: " + cmd[1]), std::string::npos) << r.err;
    }
    const auto twice = run_tool({"dupes", "--mode", "hash", d, "--mode=compare"});
    EXPECT_EQ(twice.exit_code, 2);
    EXPECT_NE(twice.err.find("--mode: At Most 1 required but received 2"), std::string::npos) << twice.err;
    // A value that looks like an option is a value; flags may repeat (as with CLI11).
    EXPECT_EQ(run_tool({"dupes", "--keep", "--weird*", "--json", "--json", d}).exit_code, 0);
}

TEST(CliSmallItems, ReflinkDryRunChecksTheFileSystem) {
    CDC_REQUIRE_ROOT();  // (a tmpfs: never reflinks)
    TempDir tmp;
    const TmpfsMount mount(tmp.path() / "m");
    const auto d = random_bytes(20000, 2);
    write_file(tmp.path() / "m/a", d);
    write_file(tmp.path() / "m/b", d);
    const auto before = snapshot(tmp.path() / "m");
    const auto r = run_tool({"dupes", "--action", "reflink", "--dry-run", (tmp.path() / "m").string()});
    EXPECT_EQ(r.exit_code, 4) << r.out << r.err;
    EXPECT_NE(r.err.find("reflink is not supported"), std::string::npos) << r.err;
    EXPECT_EQ(snapshot(tmp.path() / "m"), before);
}

TEST(CliSmallItems, BufferNeedsPooledAndZeroEditsAgree) {
    TempDir tmp;
    const auto f = tmp.write("in/f", random_bytes(200000, 3)).string();
    expect_usage_error(run_tool({"bench", "run", f, "--buffer", "1M"}), "--buffer = '1M' is invalid without --pooled",
                       "--buffer");
    EXPECT_EQ(run_tool({"bench", "run", f, "--pooled", "--buffer", "1M"}).exit_code, 0);
    const auto r = run_tool({"resync", "--json", "--edits", "0", f});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["results"][0]["shared_pct"], 100.0);
    const auto p = run_tool({"plot", "-q", "--chart", "resync", "-a", "fastcdc", "--edits", "0", "-o",
                             (tmp.path() / "g").string(), f});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_TRUE(fs::exists(tmp.path() / "g/fastcdc/resync-impact.png"));
}

TEST(CliSmallItems, DupesCsvListsTheActionsAsJsonDoes) {
    TempDir tmp;
    const auto d = random_bytes(20000, 4);
    for (const char* n : {"a", "b", "c"}) write_file(tmp.path() / n, d);
    for (const char* action : {"hardlink", "delete"}) {
        const auto j = run_tool({"dupes", "--json", "--dry-run", "--action", action, tmp.path().string()});
        const auto c = run_tool({"dupes", "--csv", "--dry-run", "--action", action, tmp.path().string()});
        ASSERT_EQ(c.exit_code, 0) << c.err;
        const auto rows = parse_csv(c.out);
        ASSERT_FALSE(rows.empty());
        EXPECT_EQ(rows[0], (std::vector<std::string>{"kind", "group", "size", "path", "action", "kept", "status", "reason"}));
        std::vector<std::vector<std::string>> actions;
        for (const auto& row : rows) {
            EXPECT_EQ(row.size(), 8u);
            if (row[0] == "action") actions.push_back({row[3], row[4], row[5], row[6]});
        }
        std::vector<std::vector<std::string>> want;
        const auto doc = nlohmann::json::parse(j.out);
        for (const auto& a : doc["actions"])
            want.push_back({a["path"].get<std::string>(), a["action"].get<std::string>(), a["kept"].get<std::string>(),
                            a["status"].get<std::string>()});
        EXPECT_EQ(actions, want) << action << "\n" << c.out;
        EXPECT_EQ(actions.size(), 2u);
    }
}

}  // namespace
}  // namespace cdc::test
