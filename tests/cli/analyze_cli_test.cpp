// SPDX-License-Identifier: Apache-2.0
// cdc analyze, compare, resync and sample: JSON keys, figures against
// `cdc chunk` lists, --jobs invariance, stdin, exit codes, error paths.
#include "cli_support.hpp"

#include <cdc/corpus/datagen.hpp>

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <cstdio>
#include <sys/stat.h>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;

struct Corpus {
    TempDir tmp;
    std::vector<fs::path> files;
    Corpus() {
        const auto a = random_bytes(600'000, 11);
        auto b = a;
        b.insert(b.begin() + 500, 100, std::uint8_t{1});
        files.push_back(tmp.write("x/a.bin", a));
        files.push_back(tmp.write("x/b.bin", b));
        files.push_back(tmp.write("y/a-copy.bin", a));
        files.push_back(tmp.write("y/t.txt", generate_input("text:5:200000")));
    }
    std::string dir() const { return tmp.path().string(); }
};

nlohmann::json run_json(const std::vector<std::string>& args, int expected_exit = 0) {
    const auto r = run_tool(args);
    EXPECT_EQ(r.exit_code, expected_exit) << r.err;
    return nlohmann::json::parse(r.out);
}

// Removes the timing fields, which vary from run to run.
nlohmann::json without_timings(nlohmann::json a) {
    for (auto& x : a["algorithms"])
        for (const char* k : {"chunk_mb_s", "wall_mb_s", "cut_seconds", "hash_seconds", "wall_seconds"}) x.erase(k);
    a.erase("wall_seconds");
    a.erase("jobs");
    return a;
}

TEST(CliAnalyze, JsonKeysAndFiguresMatchChunkLists) {
    Corpus c;
    const auto doc = run_json({"analyze", "--json", "-a", "fastcdc,ultracdc", c.dir()});
    ASSERT_TRUE(doc.contains("algorithms"));
    ASSERT_TRUE(doc.contains("errors"));
    EXPECT_TRUE(doc["errors"].empty());
    ASSERT_EQ(doc["algorithms"].size(), 2u);
    for (const auto& r : doc["algorithms"]) {
        for (const char* k : {"algorithm", "files", "bytes", "chunks", "distinct_chunks", "distinct_bytes",
                              "dedup_ratio", "size", "chunk_mb_s", "wall_mb_s"})
            EXPECT_TRUE(r.contains(k)) << k;
        for (const char* k : {"min", "p50", "mean", "p95", "max", "stddev"}) EXPECT_TRUE(r["size"].contains(k)) << k;

        // The independent computation: cdc chunk --csv on every file.
        std::map<std::string, std::uint64_t> distinct;
        std::uint64_t chunks = 0, bytes = 0, min = ~0ull, max = 0;
        for (const auto& f : c.files) {
            const auto out = run_tool({"chunk", "--csv", "-a", r["algorithm"], f.string()});
            ASSERT_EQ(out.exit_code, 0) << out.err;
            std::istringstream in(out.out);
            std::string line;
            std::getline(in, line);  // header
            while (std::getline(in, line)) {
                const auto c1 = line.find(','), c2 = line.rfind(',');
                const std::uint64_t len = std::stoull(line.substr(c1 + 1, c2 - c1 - 1));
                distinct.emplace(line.substr(c2 + 1), len);
                ++chunks;
                bytes += len;
                min = std::min(min, len);
                max = std::max(max, len);
            }
        }
        std::uint64_t distinct_bytes = 0;
        for (const auto& [d, n] : distinct) distinct_bytes += n;
        EXPECT_EQ(r["files"], c.files.size());
        EXPECT_EQ(r["bytes"], bytes);
        EXPECT_EQ(r["chunks"], chunks);
        EXPECT_EQ(r["distinct_chunks"], distinct.size());
        EXPECT_EQ(r["distinct_bytes"], distinct_bytes);
        EXPECT_DOUBLE_EQ(r["dedup_ratio"].get<double>(),
                         static_cast<double>(distinct_bytes) / static_cast<double>(bytes));
        EXPECT_EQ(r["size"]["min"], min);
        EXPECT_EQ(r["size"]["max"], max);
    }
}

TEST(CliAnalyze, SameResultsForJobs1And4) {
    Corpus c;
    const auto one = run_json({"analyze", "--json", "-a", "all", "--jobs", "1", c.dir()});
    const auto four = run_json({"analyze", "--json", "-a", "all", "--jobs", "4", c.dir()});
    EXPECT_EQ(without_timings(one), without_timings(four));
    EXPECT_EQ(one["jobs"], 1);
    EXPECT_EQ(four["jobs"], 4);
}

TEST(CliAnalyze, StdinEqualsFileAndCsv) {
    Corpus c;
    const auto file = run_json({"analyze", "--json", c.files[0].string()});
    const auto r = run_tool({"analyze", "--json", "-"}, c.files[0].string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto in = nlohmann::json::parse(r.out);
    EXPECT_EQ(without_timings(file)["algorithms"], without_timings(in)["algorithms"]);

    const auto csv = run_tool({"analyze", "--csv", "-a", "jc,fixed-v1.0.0", c.dir()});
    ASSERT_EQ(csv.exit_code, 0) << csv.err;
    EXPECT_EQ(csv.out.rfind("algorithm,min_size,avg_size,max_size,files,bytes,chunks,distinct_chunks,distinct_bytes,"
                            "dedup_ratio,",
                            0),
              0u);
    EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 3);
    const auto table = run_tool({"analyze", "-a", "jc", c.dir()});
    ASSERT_EQ(table.exit_code, 0) << table.err;
    EXPECT_NE(table.out.find("DEDUP%"), std::string::npos);
    EXPECT_TRUE(table.err.empty()) << "no progress line when stderr is not a terminal: " << table.err;
}

// --exclude, --exclude-file, --exclude-caches, --exclude-if-present: what
// they leave out is counted (JSON "excluded"), neither an error nor a
// warning, and the figures are those of the files left in.
TEST(CliAnalyze, ExcludesLeaveFilesOutWithoutWarnings) {
    Corpus c;
    const auto only_x = run_json({"analyze", "--json", (c.tmp.path() / "x").string()});
    auto ex = run_tool({"analyze", "--json", "--exclude", "/y", c.dir()});
    ASSERT_EQ(ex.exit_code, 0) << ex.err;
    EXPECT_EQ(ex.err, "");
    auto j = nlohmann::json::parse(ex.out);
    EXPECT_EQ(j["excluded"], 1);  // the directory y, once
    EXPECT_EQ(j["warnings"], nlohmann::json::array());
    EXPECT_EQ(j["files"], 2);
    EXPECT_EQ(j["algorithms"][0]["distinct_bytes"], only_x["algorithms"][0]["distinct_bytes"]);

    // A pattern file with a comment and a negation; --exclude after it.
    const std::string text = "# binaries\n*.bin\n!a-copy.bin\n";
    c.tmp.write("patterns", std::vector<std::uint8_t>(text.begin(), text.end()));
    j = run_json({"analyze", "--json", "--exclude-file", (c.tmp.path() / "patterns").string(), "--exclude",
                  "t.txt", "--exclude", "patterns", c.dir()});
    EXPECT_EQ(j["files"], 1);  // y/a-copy.bin
    EXPECT_EQ(j["excluded"], 4);
    EXPECT_EQ(j["bytes"], 600'000);

    // A cache directory and a marker.
    const std::string tag = "Signature: 8a477f597d28d172789f06886806bc55\n";
    c.tmp.write("x/CACHEDIR.TAG", std::vector<std::uint8_t>(tag.begin(), tag.end()));
    c.tmp.write("y/.nobackup", {});
    j = run_json({"analyze", "--json", "--exclude-caches", "--exclude-if-present", ".nobackup", "--exclude",
                  "patterns", c.dir()});
    EXPECT_EQ(j["files"], 0);
    EXPECT_EQ(j["excluded"], 3);

    // Bad input: usage errors naming the flag.
    for (const std::vector<std::string>& bad :
         {std::vector<std::string>{"--exclude", "a[b"}, {"--exclude", ""}, {"--exclude-file", "/no/such/file"},
          {"--exclude-if-present", "a/b"}}) {
        std::vector<std::string> args = {"analyze", c.dir()};
        args.insert(args.end(), bad.begin(), bad.end());
        const auto r = run_tool(args);
        EXPECT_EQ(r.exit_code, 2) << bad[0] << " " << bad[1];
        EXPECT_NE(r.err.find(bad[0]), std::string::npos) << r.err;
    }
}

TEST(CliAnalyze, ErrorsAreReportedSkippedAndCounted) {
    Corpus c;
    fs::create_symlink(c.tmp.path() / "gone", c.tmp.path() / "x/dangling");
    ASSERT_EQ(::mkfifo((c.tmp.path() / "y/fifo").c_str(), 0600), 0);
    // Without --follow-symlinks the link is skipped; the FIFO is a warning.
    auto r = run_tool({"analyze", "--json", c.dir()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto doc = nlohmann::json::parse(r.out);
    EXPECT_TRUE(doc["errors"].empty());
    EXPECT_EQ(doc["warnings"].size(), 1u);
    EXPECT_NE(r.err.find("FIFO skipped"), std::string::npos) << r.err;
    // With it, the dangling link is an error: exit 3, the others analyzed.
    r = run_tool({"analyze", "--json", "--follow-symlinks", c.dir()});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    doc = nlohmann::json::parse(r.out);
    ASSERT_EQ(doc["errors"].size(), 1u);
    EXPECT_EQ(doc["errors"][0]["path"], (c.tmp.path() / "x/dangling").string());
    EXPECT_EQ(doc["algorithms"][0]["files"], c.files.size());
    EXPECT_NE(r.err.find("dangling"), std::string::npos);
    // --quiet silences warnings, not errors.
    r = run_tool({"analyze", "--quiet", "--follow-symlinks", c.dir()});
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_EQ(r.err.find("FIFO"), std::string::npos);
    EXPECT_NE(r.err.find("dangling"), std::string::npos);
}

// Runs `cdc args...` under script(1) (util-linux, Debian's essential
// bsdutils) so that stderr is a terminal; returns what it printed there.
std::string run_on_terminal(const std::string& args) {
    std::string cmd = "script -qec \"";
    cmd.append(tool_path().string()).append(" ").append(args).append(" >/dev/null\" /dev/null 2>&1");
    std::string out;
    if (std::FILE* p = ::popen(cmd.c_str(), "r")) {
        char buf[4096];
        while (const std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
        ::pclose(p);
    }
    return out;
}

TEST(CliAnalyze, ProgressLineOnlyOnATerminal) {
    TempDir tmp;
    const auto big = tmp.write("big.bin", random_bytes(64 << 20, 8));
    const auto shown = run_on_terminal("analyze -a fastcdc,jc,ultracdc --jobs 1 " + big.string());
    EXPECT_NE(shown.find("MB/s"), std::string::npos) << shown;
    EXPECT_NE(shown.find("ETA"), std::string::npos) << shown;
    const auto quiet = run_on_terminal("analyze --quiet -a fastcdc,jc,ultracdc --jobs 1 " + big.string());
    EXPECT_EQ(quiet.find("ETA"), std::string::npos) << quiet;
}

TEST(CliAnalyze, ReadErrorExitsWith3) {
    // /proc/self/mem fails to read (EIO) even for root; the run goes on.
    Corpus c;
    const auto r = run_tool({"analyze", "--json", "/proc/self/mem", c.files[0].string()});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    ASSERT_EQ(doc["errors"].size(), 1u);
    EXPECT_EQ(doc["errors"][0]["path"], "/proc/self/mem");
    EXPECT_EQ(doc["algorithms"][0]["files"], 1);
    EXPECT_EQ(doc["algorithms"][0]["bytes"], fs::file_size(c.files[0]));
    EXPECT_NE(r.err.find("/proc/self/mem"), std::string::npos);
}

TEST(CliAnalyze, UsageErrorsFailAtOnce) {
    Corpus c;
    auto r = run_tool({"analyze", (c.tmp.path() / "missing").string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("missing"), std::string::npos) << r.err;
    r = run_tool({"analyze", "-a", "nope", c.dir()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("known algorithms"), std::string::npos);
    r = run_tool({"analyze", "--digest", "none", c.dir()});
    EXPECT_EQ(r.exit_code, 2);
    r = run_tool({"analyze", "--avg", "3K", "-a", "fastcdc", c.dir()});
    EXPECT_EQ(r.exit_code, 2);
    r = run_tool({"analyze", "--json", "--csv", c.dir()});
    EXPECT_EQ(r.exit_code, 2);
    r = run_tool({"analyze"});
    EXPECT_EQ(r.exit_code, 2);
}

TEST(CliCompare, ExitCodes) {
    Corpus c;
    // Same algorithm: no regression.
    auto doc = run_json({"compare", "-a", "fastcdc", "-b", "fastcdc", "--json", c.dir()}, 0);
    EXPECT_EQ(doc["regression"], false);
    for (const char* k : {"a", "b"})
        for (const char* f : {"algorithm", "bytes", "chunks", "distinct_chunks", "distinct_bytes", "dedup_ratio", "size"})
            EXPECT_TRUE(doc[k].contains(f)) << k << "." << f;
    // fixed-v1.0.0 misses the shifted copy: worse than fastcdc.
    doc = run_json({"compare", "-a", "fastcdc", "-b", "fixed-v1.0.0", "--json", c.dir()}, 1);
    EXPECT_EQ(doc["regression"], true);
    EXPECT_GT(doc["b"]["dedup_ratio"].get<double>(), doc["a"]["dedup_ratio"].get<double>());
    // The other way round it is an improvement.
    auto r = run_tool({"compare", "-a", "fixed-v1.0.0", "-b", "fastcdc", c.dir()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("ok"), std::string::npos);
    // A huge tolerance accepts the regression.
    r = run_tool({"compare", "-a", "fastcdc", "-b", "fixed-v1.0.0", "--tolerance", "100", c.dir()});
    EXPECT_EQ(r.exit_code, 0);
    // Per-side profiles.
    doc = run_json({"compare", "-a", "fastcdc", "-b", "fastcdc", "--b-avg", "16K", "--b-max", "128K", "--json",
                    "--tolerance", "100", c.dir()});
    EXPECT_EQ(doc["b"]["avg_size"], 16384);
    EXPECT_EQ(doc["a"]["avg_size"], 8192);
    // Usage errors.
    EXPECT_EQ(run_tool({"compare", "-a", "fastcdc", c.dir()}).exit_code, 2);
    EXPECT_EQ(run_tool({"compare", "-a", "fastcdc", "-b", "nope", c.dir()}).exit_code, 2);
    EXPECT_EQ(run_tool({"compare", "-a", "fastcdc", "-b", "jc", (c.tmp.path() / "missing").string()}).exit_code, 2);
    EXPECT_EQ(run_tool({"compare", "-a", "fastcdc", "-b", "jc", "--tolerance", "-1", c.dir()}).exit_code, 2);
}

TEST(CliResync, ZeroEditsAndFormats) {
    TempDir tmp;
    const auto path = tmp.write("f.bin", random_bytes(400'000, 3));
    auto doc = run_json({"resync", "-a", "fastcdc,fixed-v1.0.0,ultracdc", "--edits", "0", "--json", path.string()});
    ASSERT_EQ(doc["results"].size(), 3u);
    for (const auto& r : doc["results"]) {
        EXPECT_DOUBLE_EQ(r["shared_pct"].get<double>(), 100.0);
        EXPECT_EQ(r["chunks_orig"], r["chunks_edited"]);
        EXPECT_TRUE(r.contains("algorithm"));
    }
    // Many inserts: fixed-size chunking loses almost everything, fastcdc not.
    doc = run_json({"resync", "-a", "fastcdc,fixed-v1.0.0", "--edits", "3", "--edit-size", "1", "--trials", "3",
                    "--edit-seed", "5", "--json", path.string()});
    EXPECT_GT(doc["results"][0]["shared_pct"].get<double>(), 80.0);
    EXPECT_LT(doc["results"][1]["shared_pct"].get<double>(), doc["results"][0]["shared_pct"].get<double>());
    EXPECT_EQ(doc["trials"], 3);
    // Same seed, same figures; stdin works.
    const auto again = run_tool({"resync", "-a", "fastcdc,fixed-v1.0.0", "--edits", "3", "--edit-size", "1",
                                 "--trials", "3", "--edit-seed", "5", "--json", "-"},
                                path.string());
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(nlohmann::json::parse(again.out)["results"], doc["results"]);
    for (const char* kind : {"delete", "overwrite", "mixed"}) {
        const auto r = run_tool({"resync", "--edit-kind", kind, "--edits", "4", "--edit-size", "1K", path.string()});
        EXPECT_EQ(r.exit_code, 0) << kind << r.err;
    }
    EXPECT_EQ(run_tool({"resync", "--edit-kind", "append", path.string()}).exit_code, 2);
    EXPECT_EQ(run_tool({"resync", "--trials", "0", path.string()}).exit_code, 2);
    EXPECT_EQ(run_tool({"resync", (tmp.path() / "missing").string()}).exit_code, 2);
    EXPECT_EQ(run_tool({"resync", tmp.path().string()}).exit_code, 2);
}

TEST(CliSample, DeterministicIdempotentAndDedups) {
    TempDir tmp;
    const auto dir = (tmp.path() / "s").string();
    auto r = run_tool({"sample", "-q", dir});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::uint64_t total = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) total += e.file_size();
    EXPECT_GT(total, 100'000'000u);
    EXPECT_LT(total, 250'000'000u);
    const auto first = read_text(fs::path(dir) / ".cdc-sample");
    // A second run leaves it alone.
    r = run_tool({"sample", dir});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("already"), std::string::npos);
    // Regenerated elsewhere: the same bytes.
    const auto dir2 = (tmp.path() / "t").string();
    ASSERT_EQ(run_tool({"sample", "-q", dir2}).exit_code, 0);
    EXPECT_EQ(read_text(fs::path(dir2) / ".cdc-sample"), first);
    EXPECT_EQ(read_text(fs::path(dir2) / "images/disk-v3.img"), read_text(fs::path(dir) / "images/disk-v3.img"));
    // A damaged sample is repaired.
    fs::remove(fs::path(dir2) / "docs/manual-v2.txt");
    r = run_tool({"sample", "-q", dir2});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_text(fs::path(dir2) / "docs/manual-v2.txt"), read_text(fs::path(dir) / "docs/manual-v2.txt"));
    // Another non-empty directory is refused.
    tmp.write("other/file.txt", random_bytes(10, 1));
    r = run_tool({"sample", (tmp.path() / "other").string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("not empty"), std::string::npos) << r.err;

    // Every algorithm finds duplicates in it.
    const auto doc = run_json({"analyze", "--json", "-a", "all", "--quiet", dir});
    EXPECT_EQ(doc["algorithms"].size(), algorithms().size() - 1);  // all but kfastcdc (it needs a key)
    for (const auto& a : doc["algorithms"]) {
        EXPECT_LT(a["dedup_ratio"].get<double>(), 0.8) << a["algorithm"];
        EXPECT_GT(a["dedup_ratio"].get<double>(), 0.1) << a["algorithm"];
    }
}

}  // namespace
}  // namespace cdc::test
