// SPDX-License-Identifier: Apache-2.0
// The engine of cdc bench run (tools/cdc/bench_run.hpp).
#include "test_support.hpp"

#include "bench_run.hpp"

#include <fmt/format.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

namespace cdc::test {
namespace {

struct Tree {
    TempDir dir;
    std::vector<std::filesystem::path> files;
    std::uint64_t bytes = 0;
    std::uint64_t chunks = 0;  // fastcdc defaults, from the library
};

std::unique_ptr<Tree> make_tree(std::size_t n, std::size_t max_size, std::uint64_t seed) {
    auto tp = std::make_unique<Tree>();
    Tree& t = *tp;
    auto finder = make_cut_finder("fastcdc");
    for (std::size_t i = 0; i < n; ++i) {
        const auto data = random_bytes((seed * 7919 + i * 104729) % max_size, seed + i);
        t.files.push_back(t.dir.write(fmt::format("d{}/f{:03}.bin", i % 3, i), data));
        t.bytes += data.size();
        t.chunks += lengths_memory(finder, data).size();
    }
    return tp;
}

TEST(BenchRun, CountsEveryFileByteAndChunk) {
    const auto tree = make_tree(40, 300000, 1);
    const Tree& t = *tree;
    for (bool pooled : {false, true}) {
        for (std::size_t concurrency : {1u, 7u, 100u}) {
            tools::BenchConfig c;
            c.files = tools::list_files(t.dir.path()).files;
            c.concurrency = concurrency;
            c.pooled = pooled;
            c.sample_interval = std::chrono::milliseconds(5);
            const auto r = tools::run_bench(c);
            SCOPED_TRACE(fmt::format("pooled {} concurrency {}", pooled, concurrency));
            EXPECT_EQ(r.summary.files, t.files.size());
            EXPECT_EQ(r.summary.bytes, t.bytes);
            EXPECT_EQ(r.summary.chunks, t.chunks);
            EXPECT_EQ(r.summary.errors, 0u);
            EXPECT_EQ(r.summary.concurrency, concurrency);
            EXPECT_LE(r.summary.threads, concurrency);
            EXPECT_EQ(r.summary.buffer_size, default_buffer_size(resolve_profile("fastcdc", {}).max_size));
            // Unpooled: one buffer per chunker = per file; pooled: one per lane.
            const std::uint64_t want = pooled ? std::min<std::uint64_t>(concurrency, t.files.size()) : t.files.size();
            EXPECT_EQ(r.summary.buffer_allocations, want);
            EXPECT_EQ(r.summary.buffer_allocated_bytes, want * r.summary.buffer_size);
            EXPECT_GT(r.summary.peak_rss_mb, 0);
            ASSERT_GE(r.samples.size(), 2u);
            EXPECT_EQ(r.samples.back().files, t.files.size());
            EXPECT_EQ(r.samples.back().bytes, t.bytes);
            for (std::size_t i = 1; i < r.samples.size(); ++i) {
                EXPECT_GE(r.samples[i].t_s, r.samples[i - 1].t_s);
                EXPECT_GE(r.samples[i].files, r.samples[i - 1].files);
                EXPECT_GE(r.samples[i].bytes, r.samples[i - 1].bytes);
            }
        }
    }
}

TEST(BenchRun, SmallPooledBufferAndThreads) {
    const auto tree = make_tree(12, 200000, 2);
    const Tree& t = *tree;
    tools::BenchConfig c;
    c.files = t.files;
    c.concurrency = 5;
    c.threads = 2;
    c.pooled = true;
    c.buffer_size = resolve_profile("fastcdc", {}).max_size;  // exactly MaxSize
    const auto r = tools::run_bench(c);
    EXPECT_EQ(r.summary.chunks, t.chunks);
    EXPECT_EQ(r.summary.threads, 2u);
    EXPECT_EQ(r.summary.buffer_allocations, 5u);
    EXPECT_EQ(r.summary.buffer_size, c.buffer_size);
}

TEST(BenchRun, MissingFilesAreCountedAndSkipped) {
    const auto tree = make_tree(5, 100000, 3);
    const Tree& t = *tree;
    tools::BenchConfig c;
    c.files = t.files;
    c.files.insert(c.files.begin() + 2, t.dir.path() / "vanished.bin");
    c.concurrency = 3;
    const auto r = tools::run_bench(c);
    EXPECT_EQ(r.summary.files, 5u);
    EXPECT_EQ(r.summary.errors, 1u);
    EXPECT_EQ(r.summary.chunks, t.chunks);
    EXPECT_NE(r.summary.first_error.find("vanished.bin"), std::string::npos) << r.summary.first_error;
}

TEST(BenchRun, BadOptionsThrow) {
    tools::BenchConfig c;
    c.concurrency = 0;
    EXPECT_THROW(tools::run_bench(c), OptionError);
    c.concurrency = 1;
    c.pooled = true;
    c.buffer_size = 1000;  // < MaxSize
    EXPECT_THROW(tools::run_bench(c), OptionError);
    c.buffer_size = 0;
    c.algorithm = "nope";
    EXPECT_THROW(tools::run_bench(c), OptionError);
}

TEST(BenchRun, ListFilesIsRecursive) {
    const auto tree = make_tree(9, 1000, 4);
    const Tree& t = *tree;
    auto want = t.files;
    std::sort(want.begin(), want.end());
    auto got = tools::list_files(t.dir.path());
    std::sort(got.files.begin(), got.files.end());
    EXPECT_EQ(got.files, want);
    EXPECT_TRUE(got.errors.empty());
    EXPECT_EQ(tools::list_files(t.files[0]).files, std::vector<std::filesystem::path>{t.files[0]});
    EXPECT_THROW(tools::list_files(t.dir.path() / "nope"), IoError);
}

TEST(BenchRun, CpuUtilisationFromCumulativeSamples) {
    std::vector<tools::BenchSample> s(4);
    s[0] = {0.0, 0, 0, 0, 1, 0.0, 0.0};
    s[1] = {0.5, 0, 0, 0, 1, 0.4, 0.1};   // 0.5 s CPU in 0.5 s: 100 %
    s[2] = {1.0, 0, 0, 0, 1, 1.2, 0.3};   // 1.0 s in 0.5 s: 200 %
    s[3] = {1.0, 0, 0, 0, 1, 1.2, 0.3};   // no time passed: no point
    const auto cpu = tools::cpu_utilisation(s);
    ASSERT_EQ(cpu.size(), 2u);
    EXPECT_DOUBLE_EQ(cpu[0].t_s, 0.5);
    EXPECT_DOUBLE_EQ(cpu[0].from_s, 0.0);
    EXPECT_DOUBLE_EQ(cpu[1].from_s, 0.5);
    EXPECT_NEAR(cpu[0].percent, 100.0, 1e-9);
    EXPECT_NEAR(cpu[1].percent, 200.0, 1e-9);
    EXPECT_TRUE(tools::cpu_utilisation({}).empty());
}

TEST(BenchRun, JsonRoundTripAndCsv) {
    const auto tree = make_tree(6, 100000, 5);
    const Tree& t = *tree;
    tools::BenchConfig c;
    c.files = t.files;
    c.concurrency = 2;
    c.pooled = true;
    const auto r = tools::run_bench(c);
    const auto j = tools::to_json(r);
    for (const char* key : {"algorithm", "min_size", "avg_size", "max_size", "concurrency", "threads", "pooled",
                            "buffer_size", "files", "errors", "bytes", "chunks", "elapsed_s", "mb_per_s",
                            "start_rss_mb", "peak_rss_mb", "max_sampled_rss_mb", "cpu_user_s", "cpu_sys_s",
                            "buffer_allocations", "buffer_allocated_bytes", "buffer_allocated_mb", "sample_ms"})
        EXPECT_TRUE(j["summary"].contains(key)) << key;
    ASSERT_EQ(j["samples"].size(), r.samples.size());
    for (const char* key : {"t_s", "files", "bytes", "chunks", "rss_mb", "cpu_user_s", "cpu_sys_s"})
        EXPECT_TRUE(j["samples"][0].contains(key)) << key;
    const auto back = tools::bench_result_from_json(nlohmann::json::parse(j.dump()));
    EXPECT_EQ(back.summary.files, r.summary.files);
    EXPECT_EQ(back.summary.chunks, r.summary.chunks);
    EXPECT_EQ(back.summary.pooled, true);
    EXPECT_DOUBLE_EQ(back.summary.peak_rss_mb, r.summary.peak_rss_mb);
    ASSERT_EQ(back.samples.size(), r.samples.size());
    EXPECT_EQ(back.samples.back().bytes, r.samples.back().bytes);
    EXPECT_THROW(tools::bench_result_from_json(nlohmann::json::parse(R"({"summary":{},"samples":[]})")),
                 std::runtime_error);

    const std::string csv = tools::samples_csv(r.samples);
    EXPECT_EQ(csv.substr(0, csv.find('\n')), "t_s,files,bytes,chunks,rss_mb,cpu_user_s,cpu_sys_s");
    EXPECT_EQ(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')), r.samples.size() + 1);
}

}  // namespace
}  // namespace cdc::test
