// SPDX-License-Identifier: Apache-2.0
// Overlapping inputs are counted once (issue 12, item 3): `cdc analyze s s`,
// `cdc analyze s s/docs`, `cdc compare f f` and hard links count each file
// (device, inode) once, and say so in a warning.
#include "cli_support.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <utility>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;

struct Corpus {
    TempDir tmp;
    fs::path root = tmp.path() / "s";
    Corpus() {
        tmp.write("s/a.bin", random_bytes(300'000, 1));
        tmp.write("s/docs/b.bin", random_bytes(200'000, 2));
        tmp.write("s/docs/c.bin", random_bytes(100'000, 3));
    }
};

nlohmann::json analyze_json(const std::vector<std::string>& paths, int expected_exit = 0) {
    std::vector<std::string> args{"analyze", "--json", "-a", "fastcdc"};
    args.insert(args.end(), paths.begin(), paths.end());
    const auto r = run_tool(args);
    EXPECT_EQ(r.exit_code, expected_exit) << r.err;
    return nlohmann::json::parse(r.out);
}

// The figures that must not depend on how the same files were named.
nlohmann::json figures(const nlohmann::json& doc) {
    const auto& a = doc["algorithms"][0];
    return {{"files", doc["files"]}, {"bytes", doc["bytes"]}, {"chunks", a["chunks"]},
            {"distinct_chunks", a["distinct_chunks"]}, {"distinct_bytes", a["distinct_bytes"]}};
}

TEST(CliOverlap, AnalyzeCountsEachFileOnce) {
    Corpus c;
    const std::string s = c.root.string(), docs = (c.root / "docs").string();
    const auto once = analyze_json({s});
    EXPECT_EQ(once["files"], 3);
    EXPECT_EQ(once["bytes"], 600'000);
    EXPECT_TRUE(once["warnings"].empty());
    // A directory reached again is walked once, with a warning naming the
    // path that repeated it.
    for (const auto& [paths, repeated] : std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{s, s}, s}, {{s, docs}, docs}, {{docs, s}, docs}, {{s + "/", s}, s}}) {
        const auto twice = analyze_json(paths);
        EXPECT_EQ(figures(twice), figures(once)) << paths[0] << " " << paths[1];
        ASSERT_EQ(twice["warnings"].size(), 1u) << twice["warnings"].dump();
        EXPECT_EQ(twice["warnings"][0]["path"], repeated);
        EXPECT_NE(twice["warnings"][0]["error"].get<std::string>().find("counted once"), std::string::npos);
    }
    // A file reached again (named twice, or a hard link) is counted once: the
    // JSON counts the paths left out, the text says so on stderr.
    const auto file_twice = analyze_json({s, s + "/a.bin"});
    EXPECT_EQ(figures(file_twice), figures(once));
    EXPECT_EQ(file_twice["duplicates_skipped"], 1);
    ASSERT_EQ(::link((c.root / "a.bin").c_str(), (c.root / "docs/a-link.bin").c_str()), 0);
    const auto linked = analyze_json({s});
    EXPECT_EQ(figures(linked), figures(once));
    EXPECT_EQ(linked["duplicates_skipped"], 1);
    const auto text = run_tool({"analyze", s, s + "/a.bin"});  // a.bin twice, and its hard link
    EXPECT_EQ(text.exit_code, 0);
    EXPECT_NE(text.err.find("cdc: warning: 2 path(s) led to files already counted"), std::string::npos) << text.err;
    const auto dir_text = run_tool({"analyze", s, s});
    EXPECT_NE(dir_text.err.find("cdc: warning: " + s + ": already walked"), std::string::npos) << dir_text.err;
}

TEST(CliOverlap, CompareOfAFileWithItself) {
    Corpus c;
    const std::string f = (c.root / "a.bin").string();
    const auto r = run_tool({"compare", "-a", "fastcdc", "-b", "jc", "--json", f, f});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    for (const char* side : {"a", "b"}) {
        EXPECT_EQ(doc[side]["files"], 1) << side;
        EXPECT_EQ(doc[side]["bytes"], 300'000) << side;
        EXPECT_EQ(doc[side]["distinct_bytes"], doc[side]["bytes"]) << side << ": no dedup from counting f twice";
    }
    EXPECT_NE(r.err.find("each file is counted once"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cdc::test
