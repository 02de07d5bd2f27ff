// Overlapping inputs are counted once (issue 12, item 3): `cdc analyze s s`,
// `cdc analyze s s/docs`, `cdc compare f f` and hard links count each file
// (device, inode) once, and say so in a warning.
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

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
    for (const std::vector<std::string>& paths :
         {std::vector<std::string>{s, s}, {s, docs}, {docs, s}, {s, s + "/a.bin"}, {s + "/", s}}) {
        const auto twice = analyze_json(paths);
        EXPECT_EQ(figures(twice), figures(once)) << paths[0] << " " << paths[1];
        ASSERT_EQ(twice["warnings"].size(), 1u) << twice["warnings"].dump();
        EXPECT_EQ(twice["warnings"][0]["path"], paths[1]);
        EXPECT_NE(twice["warnings"][0]["error"].get<std::string>().find("counted once"), std::string::npos);
    }
    // A hard link inside the tree is the same file too.
    ASSERT_EQ(::link((c.root / "a.bin").c_str(), (c.root / "docs/a-link.bin").c_str()), 0);
    EXPECT_EQ(figures(analyze_json({s})), figures(once));
    const auto text = run_tool({"analyze", s, s});
    EXPECT_EQ(text.exit_code, 0);
    EXPECT_NE(text.err.find("cdc: warning: " + s + ": 4 files already counted"), std::string::npos) << text.err;
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
    ASSERT_EQ(doc["warnings"].size(), 1u);
}

}  // namespace
}  // namespace cdc::test
