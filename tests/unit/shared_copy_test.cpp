// SPDX-License-Identifier: Apache-2.0
// The repository carries the boundary contract (docs/spec) and its test
// vectors (tests/vectors) so that a clone tests alone; where the upstream
// copy sits beside the repository (../shared), every file must equal it, so
// that a contract changed upstream cannot pass here against a stale copy.
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <set>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;

const fs::path kUpstream = CDC_UPSTREAM_DIR;

std::set<fs::path> files_under(const fs::path& root) {
    std::set<fs::path> out;
    for (const auto& e : fs::recursive_directory_iterator(root))
        if (e.is_regular_file()) out.insert(fs::relative(e.path(), root));
    return out;
}

void expect_same_tree(const fs::path& ours, const fs::path& upstream) {
    const auto mine = files_under(ours);
    const auto theirs = files_under(upstream);
    EXPECT_EQ(mine, theirs) << ours << " and " << upstream << " hold different files";
    for (const auto& f : theirs) {
        if (!mine.count(f)) continue;
        EXPECT_TRUE(read_text(ours / f) == read_text(upstream / f))
            << (ours / f) << " differs from " << (upstream / f) << ": copy the upstream file into the repository";
    }
}

TEST(SharedCopy, SpecEqualsUpstream) {
    if (!fs::exists(kUpstream / "spec")) GTEST_SKIP() << "no upstream copy at " << kUpstream;
    expect_same_tree(spec_dir(), kUpstream / "spec");
}

TEST(SharedCopy, VectorsEqualUpstream) {
    if (!fs::exists(kUpstream / "testvectors")) GTEST_SKIP() << "no upstream copy at " << kUpstream;
    expect_same_tree(vectors_dir(), kUpstream / "testvectors");
}

TEST(SharedCopy, RepositoryCopiesArePresent) {
    // Whatever sits beside the repository, the suite runs on its own copies.
    EXPECT_TRUE(fs::exists(fs::path(CDC_VECTORS_DIR) / "vectors.jsonl"));
    EXPECT_TRUE(fs::exists(fs::path(CDC_VECTORS_DIR) / "compat" / "vectors.jsonl"));
    EXPECT_TRUE(fs::exists(fs::path(CDC_SPEC_DIR) / "ALGORITHMS.md"));
    EXPECT_TRUE(fs::exists(fs::path(CDC_SPEC_DIR) / "COMPAT.md"));
}

}  // namespace
}  // namespace cdc::test
