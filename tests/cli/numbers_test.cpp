// SPDX-License-Identifier: Apache-2.0
// Every numeric option is bounded and validated (issue 12, item 4): a bad
// value is a usage error (exit 2) naming the option and the value — never
// std::bad_alloc, a library's raw text or a wrapped integer — and `cdc gen`
// streams its output in constant memory.
#include "cli_support.hpp"

#include <cdc/corpus/datagen.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;

struct Case {
    std::vector<std::string> args;  // FILE and DIR stand for a 100 kB file and its directory
    std::string expected;           // in the message: "--option = 'value' is invalid"
};

TEST(CliNumbers, BadValuesAreUsageErrorsNamingOptionAndValue) {
    TempDir tmp;
    const std::string file = tmp.write("in/f", random_bytes(100'000, 5)).string();
    const std::string dir = (tmp.path() / "in").string(), out = (tmp.path() / "g").string();
    const std::vector<Case> cases = {
        {{"bench", "run", "DIR", "-c", "-1"}, "--concurrency = '-1' is invalid"},
        {{"bench", "run", "DIR", "-c", "18446744073709551617"}, "--concurrency = '18446744073709551617' is invalid"},
        {{"bench", "run", "DIR", "-c", "1000000"}, "--concurrency = '1000000' is invalid"},  // the buffers don't fit
        {{"bench", "run", "DIR", "--pooled", "--buffer", "1T"}, "--buffer = '1T' is invalid"},
        {{"bench", "run", "DIR", "--pooled", "--buffer", "16K"}, "--buffer = '16K' is invalid"},  // < max
        {{"bench", "run", "DIR", "--threads", "100000000"}, "--threads = '100000000' is invalid"},
        {{"bench", "run", "DIR", "--sample-ms", "0"}, "--sample-ms = '0' is invalid"},
        {{"bench", "run", "DIR", "--sample-ms", "99999999999999"}, "--sample-ms = '99999999999999' is invalid"},
        {{"speed", "--size", "1T", "-a", "fastcdc"}, "--size = '1T' is invalid"},
        {{"speed", "--size", "0", "-a", "fastcdc"}, "--size = '0' is invalid"},
        {{"speed", "--runs", "-5"}, "--runs = '-5' is invalid"},
        {{"speed", "--runs", "99999999999"}, "--runs = '99999999999' is invalid"},
        {{"resync", "--edits", "100000000", "FILE"}, "--edits = '100000000' is invalid"},
        {{"resync", "--edits", "10", "--edit-size", "1G", "FILE"}, "--edits = '10' is invalid"},  // beyond the file
        {{"resync", "--edits", "100001", "FILE"}, "--edits = '100001' is invalid"},  // 100001 x 1 byte > 100 kB
        {{"resync", "--edit-size", "0", "FILE"}, "--edit-size = '0' is invalid"},
        {{"resync", "--trials", "1000000000000", "FILE"}, "--trials = '1000000000000' is invalid"},
        {{"resync", "--edit-seed", "-1", "FILE"}, "--edit-seed = '-1' is invalid"},
        {{"resync", "--seed", "-1", "FILE"}, "--seed = '-1' is invalid"},
        {{"plot", "--scales", "1e300", "-o", "OUT", "FILE"}, "--scales = '1e300' is invalid"},
        {{"plot", "--scales", "1,nan", "-o", "OUT", "FILE"}, "--scales = 'nan' is invalid"},
        {{"plot", "--scales", "0.001", "-a", "fastcdc", "-o", "OUT", "FILE"}, "--scales = '0.001' is invalid"},
        {{"plot", "--edits", "100000000000", "-o", "OUT", "FILE"}, "--edits = '100000000000' is invalid"},
        {{"plot", "--chart", "resync", "--edits", "1000", "--edit-size", "1K", "-o", "OUT", "FILE"},
         "--edits = '1000' is invalid"},  // 1000 x 1 KiB > the 100 kB of input
        {{"plot", "--edit-size", "1T", "-o", "OUT", "FILE"}, "--edit-size = '1T' is invalid"},
        {{"plot", "--chart", "resync", "--resync-bytes", "1T", "-o", "OUT", "FILE"}, "--resync-bytes = '1T' is invalid"},
        {{"plot", "--bins", "-1", "-o", "OUT", "FILE"}, "--bins = '-1' is invalid"},
        {{"plot", "--trials", "0", "-o", "OUT", "FILE"}, "--trials = '0' is invalid"},
        {{"plot", "-j", "99999", "-o", "OUT", "FILE"}, "--jobs = '99999' is invalid"},
        {{"analyze", "--jobs", "-1", "DIR"}, "--jobs = '-1' is invalid"},
        {{"compare", "-a", "fastcdc", "-b", "jc", "--jobs", "1x", "DIR"}, "--jobs = '1x' is invalid"},
        {{"compare", "-a", "fastcdc", "-b", "jc", "--tolerance", "abc", "DIR"}, "--tolerance = 'abc' is invalid"},
        {{"compare", "-a", "fastcdc", "-b", "jc", "--tolerance", "-1", "DIR"}, "--tolerance = '-1' is invalid"},
        {{"dupes", "--max-open", "99999999999999999", "DIR"}, "--max-open = '99999999999999999' is invalid"},
        {{"dupes", "--max-open", "0", "DIR"}, "--max-open = '0' is invalid"},
        {{"gen", "zeros:18446744073709551616"}, "SPEC's length = '18446744073709551616' is invalid: too large"},
    };
    for (const Case& c : cases) {
        std::vector<std::string> args;
        for (const auto& a : c.args) args.push_back(a == "FILE" ? file : a == "DIR" ? dir : a == "OUT" ? out : a);
        const auto r = run_tool(args);
        const std::string cmd = fmt::format("{}", fmt::join(c.args, " "));
        EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.err;
        EXPECT_NE(r.err.find(c.expected), std::string::npos) << cmd << ": " << r.err;
        for (const char* raw : {"bad_alloc", "std::", "Could not convert", "json.exception", "max_size()"})
            EXPECT_EQ(r.err.find(raw), std::string::npos) << cmd << ": " << r.err;
        EXPECT_FALSE(fs::exists(out)) << cmd << ": a usage error writes nothing";
    }
}

TEST(CliNumbers, GenStreamsInConstantMemory) {
    // 160 MiB of each kind against 1 MiB of it: the whole output was one
    // vector before. Compared with the small run, not with a fixed figure, so
    // that the sanitizers' own memory (~90 MB under ASan) does not count.
    const auto peak_kib = [](const std::string& spec) {
        struct rusage ru {};
        EXPECT_EQ(wait_exit(spawn_tool({"gen", spec}), &ru), 0) << spec;
        return ru.ru_maxrss;
    };
    for (const std::string kind : {"zeros:", "splitmix64:7:", "text:3:"}) {
        const long small = peak_kib(kind + "1048576");
        const long large = peak_kib(kind + "167772160");
        EXPECT_LT(large, small + 32 * 1024) << kind << ": " << large << " KiB resident for 160 MiB, " << small
                                            << " KiB for 1 MiB";
    }
    // Streamed in blocks, the bytes are those of the whole-vector generator.
    TempDir tmp;
    for (const char* spec : {"splitmix64:7:3000017", "text:3:3000017", "repeat:abc:3000017", "byte42", "empty"}) {
        const fs::path f = tmp.path() / "out";
        fs::remove(f);
        ASSERT_EQ(run_tool({"gen", spec, "-o", f.string()}).exit_code, 0) << spec;
        const auto want = generate_input(spec);
        EXPECT_EQ(read_text(f), std::string(want.begin(), want.end())) << spec;
    }
}

}  // namespace
}  // namespace cdc::test
