// SPDX-License-Identifier: Apache-2.0
// No silent skips (issue 12, item 5): `cdc bench run` and `cdc plot` report
// every input they could not read — an unreadable file or directory, a path
// too long for the kernel — and exit 3 like `cdc analyze`; a plot without
// any data writes nothing and fails. The tool runs as nobody (root ignores
// chmod 000), so these tests need root.
#include "cli_support.hpp"
#include "dupes_support.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;

constexpr unsigned kNobody = 65534;

// A tree nobody can read most of: two readable files, an unreadable file,
// an unreadable directory (holding a file), and a directory chain whose
// full path is longer than PATH_MAX (holding a file).
struct Tree {
    TempDir tmp;
    fs::path root = tmp.path() / "t";
    fs::path out = tmp.path() / "out";
    std::string deep_file;
    Tree() {
        set_mode(tmp.path(), 0755);
        write_file(root / "ok1", random_bytes(200'000, 1));
        write_file(root / "ok2", random_bytes(150'000, 2));
        write_file(root / "secret", random_bytes(100'000, 3));
        set_mode(root / "secret", 0);
        write_file(root / "locked/inside", random_bytes(100'000, 4));
        set_mode(root / "locked", 0);
        deep_file = write_beyond_path_max(root, "deep", random_bytes(50'000, 5)).string();
    }
    ~Tree() { set_mode(root / "locked", 0755); }
};

// Every skipped input is named on stderr.
void expect_named(const std::string& err, const std::vector<std::string>& names) {
    for (const auto& n : names) EXPECT_NE(err.find(n), std::string::npos) << n << " not reported in:\n" << err;
}

TEST(CliSkips, BenchRunReportsWhatItCannotRead) {
    CDC_REQUIRE_ROOT();
    Tree t;
    const auto r = run_tool_as(kNobody, kNobody, {"bench", "run", t.root.string(), "--json"});
    ASSERT_NE(r.exit_code, 100) << "cannot drop to nobody";
    EXPECT_EQ(r.exit_code, 3) << r.err;
    expect_named(r.err, {"secret", "locked", "File name too long"});
    const auto doc = nlohmann::json::parse(r.out);
    EXPECT_EQ(doc["summary"]["files"], 2) << r.out;
    EXPECT_EQ(doc["summary"]["errors"], 3) << r.out;  // secret, locked/, the deep directory
}

TEST(CliSkips, PlotReportsWhatItCannotRead) {
    CDC_REQUIRE_ROOT();
    Tree t;
    fs::create_directories(t.out);
    set_mode(t.out, 0777);
    // The resync input and the dedup sweep read the files again: a file
    // unreadable there was left out in silence.
    for (const char* kind : {"resync", "dedup-sweep", "cdf"}) {
        const auto r = run_tool_as(kNobody, kNobody,
                                   {"plot", "-q", "--chart", kind, "-a", "fastcdc", "--edits", "4", "--scales", "0.5,1",
                                    "-o", (t.out / kind).string(), t.root.string()});
        ASSERT_NE(r.exit_code, 100) << "cannot drop to nobody";
        EXPECT_EQ(r.exit_code, 3) << kind << ": " << r.err;
        expect_named(r.err, {"secret", "locked", "File name too long"});
        EXPECT_NE(r.err.find("3 input(s) skipped"), std::string::npos) << kind << ": " << r.err;
        EXPECT_TRUE(fs::exists(t.out / kind / "fastcdc")) << kind << ": the readable files are plotted";
    }
}

TEST(CliSkips, PlotWithoutDataWritesNothingAndFails) {
    CDC_REQUIRE_ROOT();
    Tree t;
    fs::create_directories(t.out);
    set_mode(t.out, 0777);
    const fs::path graphs = t.out / "g";
    // Only inputs nobody can read: their sizes are known (stat works), their
    // bytes are not.
    const auto r = run_tool_as(kNobody, kNobody,
                               {"plot", "-a", "fastcdc", "-o", graphs.string(), (t.root / "secret").string()});
    ASSERT_NE(r.exit_code, 100) << "cannot drop to nobody";
    EXPECT_NE(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("no graph written"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_FALSE(fs::exists(graphs)) << "nothing may be written without data";
}

}  // namespace
}  // namespace cdc::test
