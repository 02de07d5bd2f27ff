// SPDX-License-Identifier: Apache-2.0
// The cdc tool: chunk, algorithms, gen; output formats and exit codes.
#include "cli_support.hpp"

#include <cdc/corpus/datagen.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

namespace cdc::test {
namespace {

std::vector<std::string> lines(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

TEST(CliChunk, CsvMatchesLibrary) {
    TempDir tmp;
    const auto data = generate_input("text:3:400000");
    const auto path = tmp.write("in.txt", data);
    const auto r = run_tool({"chunk", "-a", "jc-v1.1.0", "--avg", "16K", "--csv", path.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rows = lines(r.out);
    ASSERT_FALSE(rows.empty());
    EXPECT_EQ(rows[0], "offset,length,digest");
    Options o;
    o.normal_size = 16384;
    Chunker c("jc-v1.1.0", MemorySource(std::span<const std::uint8_t>(data)), o);
    std::size_t i = 1;
    for (const Chunk& ch : c) {
        ASSERT_LT(i, rows.size());
        EXPECT_EQ(rows[i], fmt::format("{},{},{}", ch.offset, ch.size(), compute_digest(DigestKind::blake3, ch.bytes).hex()));
        ++i;
    }
    EXPECT_EQ(i, rows.size());
}

TEST(CliChunk, StdinEqualsFileAndFormats) {
    TempDir tmp;
    const auto data = random_bytes(300000, 4);
    const auto path = tmp.write("in.bin", data);
    const auto a = run_tool({"chunk", "-a", "ultracdc", "--digest", "xxh3", path.string()});
    const auto b = run_tool({"chunk", "-a", "ultracdc", "--digest", "xxh3", "-"}, path.string());
    ASSERT_EQ(a.exit_code, 0) << a.err;
    EXPECT_EQ(a.out, b.out);
    const auto first = lines(a.out).at(0);
    EXPECT_NE(first.find(" 0 "), std::string::npos);
    EXPECT_EQ(first.size() - first.find_last_of(' ') - 1, 32u) << "xxh3-128 is 32 hex digits";

    const auto j = run_tool({"chunk", "-a", "fastcdc", "--json", "--digest", "sha256", path.string()});
    ASSERT_EQ(j.exit_code, 0) << j.err;
    const auto doc = nlohmann::json::parse(j.out);
    EXPECT_EQ(doc["algorithm"], "fastcdc");
    EXPECT_EQ(doc["bytes"], data.size());
    EXPECT_EQ(doc["chunks"].size(), doc["count"].get<std::size_t>());
    EXPECT_EQ(doc["chunks"][0]["digest"].get<std::string>().size(), 64u);
}

// -j: the same rows on any number of threads, from a file or a pipe; the
// input is longer than one window of the parallel path (64 MiB), so that a
// window's uncut tail moves on to the next.
TEST(CliChunk, ThreadsGiveTheSameChunks) {
    TempDir tmp;
    auto data = random_bytes(std::size_t{66} << 20, 9);
    std::fill(data.begin() + (std::size_t{20} << 20), data.begin() + (std::size_t{23} << 20), std::uint8_t{0});
    const auto path = tmp.write("big.bin", data);
    const auto one = run_tool({"chunk", "-j", "1", "--csv", path.string()});
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_GT(lines(one.out).size(), 5000U);
    for (const char* jobs : {"2", "3", "0"}) {
        const auto r = run_tool({"chunk", "-j", jobs, "--csv", path.string()});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(r.out, one.out) << "-j " << jobs;
    }
    const auto piped = run_tool({"chunk", "-j", "2", "--csv", "-"}, path.string());
    ASSERT_EQ(piped.exit_code, 0) << piped.err;
    EXPECT_EQ(piped.out, one.out);
    const auto bad = run_tool({"chunk", "-j", "x", path.string()});
    EXPECT_NE(bad.exit_code, 0);
}

TEST(CliChunk, KeyChangesCutPoints) {
    TempDir tmp;
    const auto path = tmp.write("in.bin", random_bytes(300000, 6));
    const std::string key = "030a11181f262d343b424950575e656c737a81888f969da4abb2b9c0c7ced5dc";
    const auto plain = run_tool({"chunk", "-a", "fastcdc", "--digest", "none", path.string()});
    const auto keyed = run_tool({"chunk", "-a", "kfastcdc", "--key", key, "--digest", "none", path.string()});
    ASSERT_EQ(keyed.exit_code, 0) << keyed.err;
    EXPECT_NE(plain.out, keyed.out);
}

TEST(CliChunk, ErrorsHaveMessagesAndExitCodes) {
    TempDir tmp;
    const auto path = tmp.write("in.bin", random_bytes(1000, 1));
    auto r = run_tool({"chunk", "-a", "nope", path.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("known algorithms are"), std::string::npos) << r.err;
    r = run_tool({"chunk", "--min", "8Q", path.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--min = '8Q'"), std::string::npos) << r.err;
    r = run_tool({"chunk", (tmp.path() / "missing").string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("missing"), std::string::npos) << r.err;
    r = run_tool({"chunk", tmp.path().string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
    r = run_tool({"chunk", "-a", "kfastcdc", path.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("requires a 32-byte key"), std::string::npos) << r.err;
    r = run_tool({"chunk", "--avg", "8K", "--max", "8K", path.string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("max_size = 8192"), std::string::npos) << r.err;
    r = run_tool({"chunk", "--csv", "--json", path.string()});
    EXPECT_EQ(r.exit_code, 2);
    r = run_tool({"chunk", "--help"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("--digest"), std::string::npos);
}

TEST(CliAlgorithms, ListsEveryName) {
    const auto r = run_tool({"algorithms", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    ASSERT_EQ(doc.size(), algorithms().size());
    for (std::size_t i = 0; i < doc.size(); ++i) EXPECT_EQ(doc[i]["name"], algorithms()[i].name);
    const auto text = run_tool({"algorithms"});
    EXPECT_NE(text.out.find("fastcdc4stadia"), std::string::npos);
}

TEST(CliGen, WritesSpecsAndRefusesToOverwrite) {
    TempDir tmp;
    const auto out = tmp.path() / "g.bin";
    auto r = run_tool({"gen", "splitmix64:1:16", "-o", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_text(out).size(), 16u);
    r = run_tool({"gen", "splitmix64:1:16", "-o", out.string()});
    EXPECT_EQ(r.exit_code, 2);
    r = run_tool({"gen", "bogus"});
    EXPECT_EQ(r.exit_code, 2);
}

// The library names fields; each command says which of its flags set one.
TEST(Cli, OptionErrorsNameTheCommandsOwnFlag) {
    TempDir tmp;
    const auto f = tmp.write("f", random_bytes(10000, 1));
    const auto plot = run_tool({"plot", "--edit-kind", "bogus", "-o", (tmp.path() / "g").string(), f.string()});
    EXPECT_EQ(plot.exit_code, 2);
    EXPECT_NE(plot.err.find("edit_kind = 'bogus' is invalid"), std::string::npos) << plot.err;
    EXPECT_NE(plot.err.find("(option --edit-kind)"), std::string::npos) << plot.err;
    const auto resync = run_tool({"resync", "--edit-kind", "bogus", f.string()});
    EXPECT_EQ(resync.exit_code, 2);
    EXPECT_NE(resync.err.find("(option --edit-kind)"), std::string::npos) << resync.err;
    const auto chunk = run_tool({"chunk", "-a", "fastcdc", "--avg", "1000", f.string()});
    EXPECT_EQ(chunk.exit_code, 2);
    EXPECT_NE(chunk.err.find("normal_size = 1000 is invalid"), std::string::npos) << chunk.err;
    EXPECT_NE(chunk.err.find("(option --avg)"), std::string::npos) << chunk.err;
}

}  // namespace
}  // namespace cdc::test
