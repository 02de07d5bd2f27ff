// SPDX-License-Identifier: Apache-2.0
// Human output that cannot be misread: savings said as savings, sizes
// written one way in every table, columns that hold their contents.
#include "cli_support.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sstream>

namespace cdc::test {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

// store stats says how much dedup and compression save ("space saved", and
// how many times smaller), never a bare percentage of what is kept.
TEST(CliOutput, StoreStatsSaysSpaceSaved) {
    TempDir tmp;
    // Two files that share all chunks but their last (equal files would be
    // one content manifest: dedup before the chunks): dedup about halves them.
    auto data = random_bytes(8 << 20, 7);
    tmp.write("in/a.bin", data);
    data.back() ^= 1;
    tmp.write("in/b.bin", data);
    const std::string store = (tmp.path() / "s").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", "-q", store}).exit_code, 0);
    ASSERT_EQ(run_tool({"store", "put", "-q", store, (tmp.path() / "in").string(), "--name", "in"}).exit_code, 0);
    const auto r = run_tool({"store", "stats", store});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("dedup: 2.00x smaller, 50.0% space saved"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("compression: "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("dedup 50.00%"), std::string::npos) << r.out;
    const auto j = json_of(run_tool({"store", "stats", "--json", store}));
    // (The snapshot's header and trees are a few hundred bytes of its own.)
    EXPECT_NEAR(j["dedup_space_saved"].get<double>(), 0.5, 1e-3);
    EXPECT_NEAR(j["dedup_ratio"].get<double>(), 0.5, 1e-3);  // the share kept, as before
    EXPECT_LT(j["space_saved"].get<double>(), 0.5);           // random data: zstd saves nothing, the index costs
}

// compare writes profiles as analyze does (512K/1M/8M), and its columns are
// as wide as its longest label: every row of the table has one length.
TEST(CliOutput, CompareColumnsFitAndSizesReadLikeAnalyze) {
    TempDir tmp;
    const auto f = tmp.write("f", random_bytes(3 << 20, 9)).string();
    const auto r = run_tool({"compare", "-a", "restic-rabin", "-b", "fastcdc", f});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rows = lines_of(r.out);
    ASSERT_GT(rows.size(), 3u);
    EXPECT_NE(rows[0].find("A: restic-rabin 512K/1M/8M"), std::string::npos) << rows[0];
    EXPECT_NE(rows[0].find("B: fastcdc 2K/8K/64K"), std::string::npos) << rows[0];
    for (std::size_t i = 1; i + 1 < rows.size(); ++i) EXPECT_EQ(rows[i].size(), rows[0].size()) << r.out;
    const auto a = run_tool({"analyze", "-a", "restic-rabin", f});
    EXPECT_NE(a.out.find("512K/1M/8M"), std::string::npos) << a.out;
}

}  // namespace
}  // namespace cdc::test
