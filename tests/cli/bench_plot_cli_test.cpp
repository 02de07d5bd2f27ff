// SPDX-License-Identifier: Apache-2.0
// cdc bench run|plot and cdc plot: output formats, PNG files, exit codes.
#include "cli_support.hpp"

#include "plot.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace cdc::test {
namespace {

// 150 files, ~30 MB: long enough for several samples at 10 ms.
const TempDir& tree() {
    static TempDir t;
    static bool made = false;
    if (!made) {
        for (std::size_t i = 0; i < 150; ++i)
            t.write(fmt::format("d{}/f{:03}.bin", i % 5, i), random_bytes(50000 + (i * 7919) % 300000, i + 1));
        made = true;
    }
    return t;
}

void expect_png(const std::filesystem::path& p) {
    const auto size = plot::read_png_size(p);
    ASSERT_TRUE(size.has_value()) << p << " is not a PNG";
    EXPECT_EQ(size->first, 1200u) << p;
    EXPECT_EQ(size->second, 700u) << p;
}

TEST(CliBench, JsonHasSummaryAndSampledSeries) {
    const auto r = run_tool({"bench", "run", tree().path().string(), "-c", "8", "--sample-ms", "10",
                             "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    const auto& s = j.at("summary");
    for (const char* key : {"algorithm", "files", "bytes", "chunks", "elapsed_s", "mb_per_s", "peak_rss_mb",
                            "cpu_user_s", "cpu_sys_s", "buffer_allocations", "buffer_allocated_bytes", "concurrency",
                            "pooled", "sample_ms"})
        EXPECT_TRUE(s.contains(key)) << key;
    EXPECT_EQ(s["files"], 150);
    EXPECT_EQ(s["buffer_allocations"], 150) << "unpooled: one buffer per file";
    EXPECT_EQ(s["sample_ms"], 10);
    EXPECT_GT(s["peak_rss_mb"].get<double>(), 0);
    const auto& samples = j.at("samples");
    ASSERT_GE(samples.size(), 2u);
    EXPECT_EQ(samples.back()["files"], 150);
    EXPECT_EQ(samples.back()["bytes"], s["bytes"]);
    // Sampled at roughly the requested interval. The schedule is deadline
    // based (sample k is due at k x 10 ms, later after a stall), so sample k
    // is never early; a loaded machine may delay it, hence generous upper
    // bounds. samples[0] (t = 0) and the last one (at the end) are outside
    // the schedule.
    const std::size_t scheduled = samples.size() - 2;
    for (std::size_t k = 1; k <= scheduled; ++k) EXPECT_GE(samples[k]["t_s"].get<double>(), 0.010 * static_cast<double>(k) - 1e-6) << k;
    if (scheduled >= 2) {
        const double mean_gap = samples[scheduled]["t_s"].get<double>() / static_cast<double>(scheduled);
        EXPECT_LE(mean_gap, 0.5) << "mean interval";
    }
    const double elapsed = s["elapsed_s"].get<double>();
    EXPECT_LE(static_cast<double>(samples.size()), elapsed / 0.010 + 3);
}

TEST(CliBench, PooledTextAndCsv) {
    auto r = run_tool({"bench", "run", tree().path().string(), "-c", "20", "--pooled"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* key : {"files        150", "peak RSS", "allocations  20 buffers", "throughput", "CPU"})
        EXPECT_NE(r.out.find(key), std::string::npos) << key << "\n" << r.out;
    r = run_tool({"bench", "run", tree().path().string(), "--csv", "--sample-ms", "5"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "t_s,files,bytes,chunks,rss_mb,cpu_user_s,cpu_sys_s");
    EXPECT_GE(std::count(r.out.begin(), r.out.end(), '\n'), 3);
}

TEST(CliBench, PlotDirectAndFromSavedRuns) {
    TempDir out;
    auto a = run_tool({"bench", "run", tree().path().string(), "-c", "4", "--json", "--plot",
                       (out.path() / "direct").string()});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    expect_png(out.path() / "direct" / "memory-over-time.png");
    expect_png(out.path() / "direct" / "cpu-over-time.png");
    auto b = run_tool({"bench", "run", tree().path().string(), "-c", "4", "--pooled", "--json"});
    ASSERT_EQ(b.exit_code, 0) << b.err;
    std::ofstream(out.path() / "a.json") << a.out;
    std::ofstream(out.path() / "b.json") << b.out;
    const auto r = run_tool({"bench", "plot", (out.path() / "a.json").string(), (out.path() / "b.json").string(),
                             "--labels", "unpooled", "--labels", "pooled", "-o", (out.path() / "saved").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // The files written, one per line (as cdc plot names them).
    EXPECT_EQ(r.out, fmt::format("{}\n{}\n", (out.path() / "saved" / "memory-over-time.png").string(),
                                 (out.path() / "saved" / "cpu-over-time.png").string()));
    expect_png(out.path() / "saved" / "memory-over-time.png");
    expect_png(out.path() / "saved" / "cpu-over-time.png");
}

// A short run (a few samples) is drawn as what was measured: CPU as steps
// (an average over each interval between samples), memory with a marker on
// each sample, and the subtitle says how many there are. The charts are
// read from what the tool hands the cdc-plot helper.
// A cdc-plot that keeps each chart it is handed as PNG.json beside the PNG.
std::filesystem::path spy_plot(const std::filesystem::path& dir) {
    const auto real = tool_path().parent_path() / "cdc-plot";
    const auto spy = dir / "spy-plot";
    std::ofstream(spy) << "#!/bin/sh\nmkdir -p \"$(dirname \"$2\")\" && cp \"$1\" \"$2.json\" || exit 1\nexec '"
                       << real.string() << "' \"$@\"\n";
    std::filesystem::permissions(spy, std::filesystem::perms::owner_all);
    return spy;
}

TEST(CliBench, ShortRunsShowTheirSamples) {
    TempDir out;
    const auto spy = spy_plot(out.path());
    ::setenv("CDC_PLOT", spy.c_str(), 1);
    const auto r = run_tool({"bench", "run", "-q", "--sample-ms", "3600000", "--plot", (out.path() / "g").string(),
                             tree().path().string()});
    ::unsetenv("CDC_PLOT");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto cpu = nlohmann::json::parse(read_text(out.path() / "g" / "cpu-over-time.png.json"));
    const auto mem = nlohmann::json::parse(read_text(out.path() / "g" / "memory-over-time.png.json"));
    EXPECT_EQ(cpu["kind"], "steps");
    EXPECT_EQ(cpu["series"][0]["x"].size(), cpu["series"][0]["y"].size() + 1) << cpu.dump();
    EXPECT_EQ(mem["kind"], "lines");
    EXPECT_TRUE(mem["markers"].get<bool>());
    const std::size_t samples = mem["series"][0]["x"].size();
    EXPECT_LE(samples, 3u) << "one sample an hour: the first and the last";
    EXPECT_NE(mem["subtitle"].get<std::string>().find(fmt::format("({} samples)", samples)), std::string::npos)
        << mem["subtitle"];
    expect_png(out.path() / "g" / "cpu-over-time.png");
}

TEST(CliPlot, TheDedupSweepSaysLowerIsBetter) {
    TempDir out;
    const auto spy = spy_plot(out.path());
    ::setenv("CDC_PLOT", spy.c_str(), 1);
    const auto p = run_tool({"plot", "-q", "--chart", "dedup-sweep", "-a", "fastcdc", "--scales", "0.5,1", "-o",
                             (out.path() / "s").string(), tree().path().string()});
    ::unsetenv("CDC_PLOT");
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const auto sweep = nlohmann::json::parse(read_text(out.path() / "s" / "compare-dedup-sweep.png.json"));
    EXPECT_NE(sweep["y_label"].get<std::string>().find("lower is better"), std::string::npos) << sweep["y_label"];
}

TEST(CliBench, UsageErrors) {
    TempDir out;
    EXPECT_EQ(run_tool({"bench", "run", (out.path() / "nope").string()}).exit_code, 2);
    EXPECT_EQ(run_tool({"bench", "run", tree().path().string(), "--json", "--csv"}).exit_code, 2);
    EXPECT_EQ(run_tool({"bench", "run", tree().path().string(), "-c", "0"}).exit_code, 2);
    EXPECT_EQ(run_tool({"bench", "run", tree().path().string(), "-a", "nope"}).exit_code, 2);
    EXPECT_EQ(run_tool({"bench", "run", tree().path().string(), "--pooled", "--buffer", "1K"}).exit_code, 2);
    EXPECT_EQ(run_tool({"bench"}).exit_code, 2);
    std::ofstream(out.path() / "x.json") << "{}";
    const auto r = run_tool({"bench", "plot", (out.path() / "x.json").string(), "-o", out.path().string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("not a cdc bench run"), std::string::npos) << r.err;
    EXPECT_EQ(run_tool({"bench", "plot", (out.path() / "x.json").string(), "--labels", "a,b", "-o",
                        out.path().string()})
                  .exit_code,
              2);
}

TEST(CliPlot, AllKindsWriteEveryGraph) {
    TempDir in, out;
    const auto data = random_bytes(1 << 20, 77);
    in.write("a.bin", data);
    in.write("copy/a.bin", data);
    in.write("b.bin", random_bytes(300000, 78));
    const auto r = run_tool({"plot", "-a", "fastcdc,jc-v1.1.0", "--edits", "4", "--trials", "1", "--scales",
                             "0.5,1,2", "-o", out.path().string(), in.path().string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* algo : {"fastcdc", "jc-v1.1.0"})
        for (const char* file : {"chunk-distribution.png", "chunk-size-cdf.png", "resync-impact.png", "dedup-sweep.png"})
            expect_png(out.path() / algo / file);
    for (const char* kind : {"distribution", "cdf", "resync", "dedup-sweep"})
        expect_png(out.path() / fmt::format("compare-{}.png", kind));
    EXPECT_NE(r.out.find("compare-cdf.png"), std::string::npos) << "lists the files written";
}

TEST(CliPlot, OneKindOnly) {
    TempDir in, out;
    in.write("a.bin", random_bytes(200000, 1));
    const auto r = run_tool({"plot", "-q", "--chart", "cdf", "-a", "ultracdc", "-o", out.path().string(),
                             in.path().string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.out.empty());
    expect_png(out.path() / "ultracdc" / "chunk-size-cdf.png");
    expect_png(out.path() / "compare-cdf.png");
    EXPECT_FALSE(std::filesystem::exists(out.path() / "ultracdc" / "chunk-distribution.png"));
    EXPECT_FALSE(std::filesystem::exists(out.path() / "compare-resync.png"));
}

TEST(CliPlot, UsageErrors) {
    TempDir in, out;
    in.write("a.bin", random_bytes(1000, 1));
    EXPECT_EQ(run_tool({"plot", "--chart", "pie", "-o", out.path().string(), in.path().string()}).exit_code, 2);
    EXPECT_EQ(run_tool({"plot", "-a", "nope", "-o", out.path().string(), in.path().string()}).exit_code, 2);
    EXPECT_EQ(run_tool({"plot", "-o", out.path().string(), (in.path() / "missing").string()}).exit_code, 2);
    EXPECT_EQ(run_tool({"plot", "--scales", "1,x", "-o", out.path().string(), in.path().string()}).exit_code, 2);
    TempDir empty;
    empty.write("e.bin", {});
    EXPECT_EQ(run_tool({"plot", "-o", out.path().string(), empty.path().string()}).exit_code, 2);
}

// The tool draws its PNGs through the cdc-plot helper process: a missing or
// failing helper is a clear error naming it, with exit code 4 and no PNG.
TEST(CliPlot, MissingOrFailingHelperIsAClearError) {
    TempDir in, out;
    in.write("a.bin", random_bytes(200000, 1));
    const std::vector<std::string> args{"plot", "-q", "--chart", "cdf", "-a", "fastcdc", "-o", out.path().string(),
                                        in.path().string()};
    ::setenv("CDC_PLOT", "/nonexistent/cdc-plot", 1);
    const auto missing = run_tool(args);
    ::setenv("CDC_PLOT", "/bin/false", 1);
    const auto failing = run_tool(args);
    ::unsetenv("CDC_PLOT");
    EXPECT_EQ(missing.exit_code, 4) << missing.err;
    EXPECT_NE(missing.err.find("cdc-plot"), std::string::npos) << missing.err;
    EXPECT_NE(missing.err.find("/nonexistent/cdc-plot"), std::string::npos) << missing.err;
    EXPECT_EQ(failing.exit_code, 4) << failing.err;
    EXPECT_NE(failing.err.find("/bin/false"), std::string::npos) << failing.err;
    EXPECT_FALSE(std::filesystem::exists(out.path() / "compare-cdf.png"));
    const auto fine = run_tool(args);  // control: the helper next to the tool works
    EXPECT_EQ(fine.exit_code, 0) << fine.err;
    expect_png(out.path() / "compare-cdf.png");
}

}  // namespace
}  // namespace cdc::test
