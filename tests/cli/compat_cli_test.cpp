// SPDX-License-Identifier: Apache-2.0
// The compatibility names on the command line: --level, --seed, --poly,
// --window where a name has them (usage error where it does not), cdc
// algorithms listing them, and "all" / compare handing each name only what
// it takes.
#include "cli_support.hpp"

#include <cdc/corpus/datagen.hpp>

#include <gtest/gtest.h>

namespace cdc::test {
namespace {

std::vector<std::size_t> json_lengths(const std::string& out) {
    std::vector<std::size_t> v;
    const auto doc = nlohmann::json::parse(out);  // (a temporary would die before the loop)
    for (const auto& c : doc["chunks"]) v.push_back(c["length"]);
    return v;
}

TEST(CompatCli, ChunkTakesEachNamesParametersAndMatchesTheLibrary) {
    TempDir tmp;
    const auto data = generate_input("splitmix64:7:300000");
    const auto path = tmp.write("in.bin", data).string();
    struct Case {
        std::string name;
        std::vector<std::string> flags;
        Options options;
    };
    std::vector<Case> cases(5);
    cases[0] = {"fastcdc-rs-v2020", {"--level", "3", "--seed", "0xdeadbeef", "--avg", "8K"}, {}};
    cases[0].options.normalization_level = 3;
    cases[0].options.seed = 0xdeadbeef;
    cases[0].options.normal_size = 8192;
    cases[1] = {"fastcdc-rs-v2016", {"--level", "0"}, {}};
    cases[1].options.normalization_level = 0;
    cases[2] = {"restic-rabin", {"--poly", "1a123aac67ef3", "--min", "1K", "--avg", "4K", "--max", "16K"}, {}};
    cases[2].options.polynomial = 0x1a123aac67ef3;
    cases[2].options.min_size = 1024;
    cases[2].options.normal_size = 4096;
    cases[2].options.max_size = 16384;
    cases[3] = {"borg-buzhash", {"--seed", "4294967295", "--window", "63", "--min", "1K", "--avg", "4K", "--max", "16K"}, {}};
    cases[3].options.seed = 4294967295u;
    cases[3].options.window_size = 63;
    cases[3].options.min_size = 1024;
    cases[3].options.normal_size = 4096;
    cases[3].options.max_size = 16384;
    cases[4] = {"casync-buzhash", {"--min", "1K", "--avg", "4K", "--max", "16K"}, {}};
    cases[4].options.min_size = 1024;
    cases[4].options.normal_size = 4096;
    cases[4].options.max_size = 16384;
    for (const auto& c : cases) {
        std::vector<std::string> args{"chunk", "--json", "-a", c.name};
        args.insert(args.end(), c.flags.begin(), c.flags.end());
        args.push_back(path);
        const auto r = run_tool(args);
        ASSERT_EQ(r.exit_code, 0) << c.name << ": " << r.err;
        EXPECT_EQ(json_lengths(r.out), lengths_memory(make_cut_finder(c.name, c.options), data)) << c.name;
        const auto head = nlohmann::json::parse(r.out);
        if (c.options.seed) { EXPECT_EQ(head["seed"].get<std::uint64_t>(), *c.options.seed) << c.name; }
        if (c.options.window_size) { EXPECT_EQ(head["window"].get<std::size_t>(), *c.options.window_size); }
        if (c.options.normalization_level) { EXPECT_EQ(head["level"].get<int>(), *c.options.normalization_level); }
        if (c.options.polynomial) { EXPECT_EQ(head["polynomial"], "0x1a123aac67ef3"); }
    }
}

TEST(CompatCli, ParametersANameDoesNotTakeAreUsageErrors) {
    TempDir tmp;
    const auto path = tmp.write("in.bin", random_bytes(1000, 1)).string();
    const std::vector<std::vector<std::string>> bad = {
        {"-a", "fastcdc", "--seed", "1"},          {"-a", "fastcdc-rs-v2016", "--seed", "1"},
        {"-a", "casync-buzhash", "--window", "48"}, {"-a", "restic-rabin", "--level", "1"},
        {"-a", "borg-buzhash", "--poly", "11b"},    {"-a", "restic-rabin", "--poly", "xyz"},
        {"-a", "restic-rabin", "--poly", "101"},    {"-a", "fastcdc-rs-v2020", "--level", "4"},
        {"-a", "fastcdc-rs-v2020", "--seed", "-1"}, {"-a", "borg-buzhash", "--seed", "4294967296"},
        {"-a", "borg-buzhash", "--window", "0"},   {"-a", "fastcdc-rs-v2020", "--level", "two"}};
    for (const auto& flags : bad) {
        std::vector<std::string> args{"chunk"};
        args.insert(args.end(), flags.begin(), flags.end());
        args.push_back(path);
        const auto r = run_tool(args);
        EXPECT_EQ(r.exit_code, 2) << flags[1] << " " << flags[2] << " " << flags[3] << ": " << r.err;
        EXPECT_FALSE(r.err.empty());
    }
    const auto r = run_tool({"chunk", "-a", "fastcdc", "--seed", "1", path});
    EXPECT_NE(r.err.find("has no seed"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("fastcdc-rs-v2020, borg-buzhash"), std::string::npos) << r.err;
}

TEST(CompatCli, AlgorithmsListsParametersDefaultsAndOrigins) {
    const auto r = run_tool({"algorithms", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    std::map<std::string, nlohmann::json> by_name;
    for (const auto& a : doc) by_name[a["name"]] = a;
    EXPECT_EQ(by_name["borg-buzhash"]["parameters"]["window"]["default"], 4095);
    EXPECT_EQ(by_name["borg-buzhash"]["parameters"]["seed"]["high"], 4294967295u);
    EXPECT_EQ(by_name["restic-rabin"]["parameters"]["poly"]["default"], 0x3DA3358B4DC173u);
    EXPECT_EQ(by_name["fastcdc-rs-v2020"]["parameters"]["level"]["default"], 1);
    EXPECT_FALSE(by_name["fastcdc-rs-v2016"]["parameters"].contains("seed"));
    EXPECT_TRUE(by_name["casync-buzhash"]["parameters"].empty());
    EXPECT_EQ(by_name["casync-buzhash"]["min"], 16384);
    EXPECT_EQ(by_name["restic-rabin"]["max"], 8388608);
    EXPECT_TRUE(by_name["borg-buzhash"]["sizes"]["min"]["power_of_two"].get<bool>());
    EXPECT_EQ(by_name["fastcdc"]["origin"], "go-cdc-chunkers");
    const auto text = run_tool({"algorithms"});
    EXPECT_NE(text.out.find("seed=0 window=4095"), std::string::npos) << text.out;
}

TEST(CompatCli, AllAndCompareGiveEachNameOnlyWhatItTakes) {
    TempDir tmp;
    tmp.write("d/a.bin", generate_input("text:4:200000"));
    const auto dir = (tmp.path() / "d").string();
    const std::vector<std::string> all{"analyze", "-a", "all", "--seed", "7", "--min", "1K", "--avg", "4K", "--max", "64K"};
    auto args = all;
    args.push_back(dir);
    auto r = run_tool(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("run without seed"), std::string::npos) << r.err;
    args.insert(args.begin() + 1, "--json");
    r = run_tool(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["algorithms"].size(), algorithms().size() - 1);
    r = run_tool({"compare", "--json", "-a", "restic-rabin", "-b", "fastcdc", "--poly", "11b", "--min", "1K", "--avg",
                  "4K", "--max", "64K", dir});
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
    r = run_tool({"compare", "-a", "jc", "-b", "fastcdc", "--poly", "11b", dir});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("neither jc nor fastcdc"), std::string::npos) << r.err;
    // An explicit list: each name gets what it takes; none taking it is refused.
    r = run_tool({"analyze", "--json", "-a", "restic-rabin,casync-buzhash", "--poly", "11b", "--min", "1K", "--avg",
                  "4K", "--max", "64K", dir});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"analyze", "-a", "jc,casync-buzhash", "--window", "64", dir});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("none of jc,casync-buzhash takes one"), std::string::npos) << r.err;
    // resync keeps --seed for its edits; the chunker's is --chunker-seed.
    const auto file = (tmp.path() / "d" / "a.bin").string();
    r = run_tool({"resync", "--json", "-a", "borg-buzhash", "--seed", "5", "--min", "1K", "--avg", "4K",
                  "--max", "64K", "--edit-seed", "3", file});
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace cdc::test
