// SPDX-License-Identifier: Apache-2.0
// `cdc speed`: its JSON, chunk counts that do not depend on the kernel, and
// its usage errors.
#include "cli_support.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace cdc::test {
namespace {

TEST(SpeedCli, JsonHasBaselineAndOneResultPerAlgorithm) {
    const auto r = run_tool({"speed", "--size", "2MiB", "--json", "-a", "fastcdc,jc-v1.1.0,ultracdc"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_GT(j["baseline_mb_s"].get<double>(), 0.0);
    ASSERT_EQ(j["results"].size(), 3u);
    const char* names[] = {"fastcdc", "jc-v1.1.0", "ultracdc"};
    for (std::size_t i = 0; i < 3; ++i) {
        const auto& row = j["results"][i];
        EXPECT_EQ(row["algorithm"], names[i]);
        EXPECT_GT(row["mb_s"].get<double>(), 0.0);
        EXPECT_GT(row["chunks"].get<std::uint64_t>(), 0u);
        EXPECT_NEAR(row["fraction_of_baseline"].get<double>(),
                    row["mb_s"].get<double>() / j["baseline_mb_s"].get<double>(), 1e-9);
        EXPECT_GT(row["scalar_mb_s"].get<double>(), 0.0);
        EXPECT_NEAR(row["relative_to_scalar"].get<double>(),
                    row["mb_s"].get<double>() / row["scalar_mb_s"].get<double>(), 1e-9);
    }
    // The scalar reference itself: measured once, relative 1.
    const auto s = nlohmann::json::parse(
        run_tool({"speed", "--size", "1MiB", "--json", "--kernel", "scalar", "-a", "jc"}).out)["results"][0];
    EXPECT_EQ(s["kernel"], "scalar");
    EXPECT_EQ(s["mb_s"].get<double>(), s["scalar_mb_s"].get<double>());
    EXPECT_EQ(s["relative_to_scalar"].get<double>(), 1.0);
}

TEST(SpeedCli, ChunkCountsDoNotDependOnTheKernel) {
    std::set<std::string> outputs;
    for (const char* k : {"scalar", "wide", "avx2", "avx512"}) {
        const auto r = run_tool({"speed", "--size", "3MiB", "--data", "text", "--json", "--kernel", k, "-a", "all"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        std::string counts;
        const auto doc = nlohmann::json::parse(r.out);  // (a temporary would die before the loop)
        for (const auto& row : doc["results"])
            counts += row["algorithm"].get<std::string>() + "=" + std::to_string(row["chunks"].get<std::uint64_t>()) + " ";
        outputs.insert(counts);
    }
    EXPECT_EQ(outputs.size(), 1u) << *outputs.begin();
}

// -j: the buffer cut as one stream on several threads, the same chunks as
// on one (8 MiB: two segments or more for the Gear names' default profiles).
TEST(SpeedCli, JobsGiveTheSameChunkCounts) {
    std::set<std::string> outputs;
    for (const char* j : {"1", "2", "3"}) {
        const auto r = run_tool({"speed", "--size", "8MiB", "--json", "-j", j, "--digest", "blake3", "-a",
                                 "fastcdc,jc-v1.1.0,fastcdc4stadia,ultracdc"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const auto doc = nlohmann::json::parse(r.out);
        EXPECT_EQ(doc["jobs"].get<unsigned>(), static_cast<unsigned>(j[0] - '0'));
        std::string counts;
        for (const auto& row : doc["results"])
            counts += row["algorithm"].get<std::string>() + "=" + std::to_string(row["chunks"].get<std::uint64_t>()) + " ";
        outputs.insert(counts);
    }
    EXPECT_EQ(outputs.size(), 1u) << *outputs.begin();
    EXPECT_EQ(run_tool({"speed", "-j", "-1"}).exit_code, 2);
}

// The buffer in huge pages (the default) or 4 KiB ones: the same bytes, the
// same cuts; a size that is no whole number of pages of either kind.
TEST(SpeedCli, PagesGiveTheSameChunks) {
    std::set<std::string> outputs;
    for (const char* pages : {"huge", "small"}) {
        const auto r = run_tool({"speed", "--size", "5000000", "--json", "--pages", pages, "-a", "fastcdc,jc"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const auto doc = nlohmann::json::parse(r.out);
        EXPECT_EQ(doc["pages"], pages);
        std::string counts = std::to_string(doc["checksum"].get<unsigned>()) + " ";
        for (const auto& row : doc["results"])
            counts += row["algorithm"].get<std::string>() + "=" + std::to_string(row["chunks"].get<std::uint64_t>()) + " ";
        outputs.insert(counts);
    }
    EXPECT_EQ(outputs.size(), 1u) << *outputs.begin();
    const auto text = run_tool({"speed", "--size", "1MiB", "--pages", "small", "-a", "fastcdc"});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("(small pages)"), std::string::npos) << text.out;
    EXPECT_EQ(run_tool({"speed", "--pages", "giant"}).exit_code, 2);
}

TEST(SpeedCli, TextOutputDigestAndUsageErrors) {
    const auto r = run_tool({"speed", "--size", "1MiB", "--digest", "blake3", "-a", "fastcdc"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("memory-read"), std::string::npos);
    EXPECT_NE(r.out.find("fastcdc"), std::string::npos);
    EXPECT_NE(r.out.find("X SCALAR"), std::string::npos);
    EXPECT_EQ(run_tool({"speed", "--data", "noise"}).exit_code, 2);
    EXPECT_EQ(run_tool({"speed", "--kernel", "sse9"}).exit_code, 2);
    EXPECT_EQ(run_tool({"speed", "-a", "nosuch"}).exit_code, 2);
    EXPECT_EQ(run_tool({"speed", "--size", "0"}).exit_code, 2);
}

}  // namespace
}  // namespace cdc::test
