// SPDX-License-Identifier: Apache-2.0
// cdc::analyze and cdc::walk_inputs: figures against an independent
// computation, identical results for any job count and buffer size, and the
// walk's and the reader's error paths.
#include <cdc/corpus/analyze.hpp>

#include "test_support.hpp"

#include <cdc/corpus/datagen.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc {
namespace {

namespace fs = std::filesystem;

// A small corpus with exact copies, a shifted version and text.
struct Corpus {
    test::TempDir tmp;
    std::vector<fs::path> files;
    Corpus() {
        const auto a = test::random_bytes(700'000, 1);
        auto b = a;
        b.insert(b.begin() + 1000, 77, std::uint8_t{5});
        const auto t = generate_input("text:2:300000");
        files.push_back(tmp.write("one/a.bin", a));
        files.push_back(tmp.write("one/copy-of-a.bin", a));
        files.push_back(tmp.write("two/b.bin", b));
        files.push_back(tmp.write("two/deep/t.txt", t));
        files.push_back(tmp.write("two/deep/empty", {}));
        files.push_back(tmp.write("small.bin", test::random_bytes(100, 9)));
    }
};

std::vector<std::uint8_t> read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Expected {
    std::uint64_t bytes = 0, chunks = 0, distinct_chunks = 0, distinct_bytes = 0;
    std::vector<std::uint64_t> sizes;
};

// The independent computation: cdc::Chunker over each file in memory, a
// std::map of full hex digests.
Expected expected(const std::vector<fs::path>& files, const std::string& algo, const Options& o = {}) {
    Expected e;
    std::map<std::string, std::size_t> seen;
    for (const auto& f : files) {
        const auto data = read_file(f);
        Chunker c(algo, MemorySource(std::span<const std::uint8_t>(data)), o);
        for (const Chunk& ch : c) {
            ++e.chunks;
            e.bytes += ch.size();
            e.sizes.push_back(ch.size());
            seen.emplace(compute_digest(DigestKind::sha256, ch.bytes).hex(), ch.size());
        }
    }
    e.distinct_chunks = seen.size();
    for (const auto& [d, s] : seen) e.distinct_bytes += s;
    std::sort(e.sizes.begin(), e.sizes.end());
    return e;
}

void expect_matches(const AlgorithmResult& r, const Expected& e) {
    EXPECT_EQ(r.bytes, e.bytes) << r.algorithm;
    EXPECT_EQ(r.chunks, e.chunks) << r.algorithm;
    EXPECT_EQ(r.distinct_chunks, e.distinct_chunks) << r.algorithm;
    EXPECT_EQ(r.distinct_bytes, e.distinct_bytes) << r.algorithm;
    ASSERT_FALSE(e.sizes.empty());
    EXPECT_EQ(r.sizes.min(), e.sizes.front());
    EXPECT_EQ(r.sizes.max(), e.sizes.back());
    EXPECT_EQ(r.sizes.p50(), e.sizes[(e.sizes.size() + 1) / 2 - 1]);
}

AnalyzeOptions options_for(std::vector<std::string> names, unsigned jobs) {
    AnalyzeOptions o;
    for (auto& n : names) o.algorithms.push_back(make_cut_finder(n));
    o.jobs = jobs;
    return o;
}

TEST(Analyze, MatchesAnIndependentComputation) {
    Corpus c;
    const auto report = analyze({c.tmp.path().string()}, options_for({"fastcdc", "ultracdc", "fixed-v1.0.0", "jc-v1.1.0"}, 1));
    ASSERT_EQ(report.algorithms.size(), 4u);
    EXPECT_TRUE(report.errors.empty());
    EXPECT_EQ(report.files, c.files.size());
    for (const auto& r : report.algorithms) {
        EXPECT_EQ(r.files, c.files.size());
        expect_matches(r, expected(c.files, r.algorithm));
        EXPECT_LT(r.dedup_ratio(), 1.0) << "the copy dedups";
        EXPECT_EQ(r.sizes.count(), r.chunks);
    }
    // Content-defined chunking also finds the shifted version.
    EXPECT_LT(report.algorithms[0].dedup_ratio(), report.algorithms[2].dedup_ratio());
}

TEST(Analyze, IdenticalForAnyJobsAndBufferSize) {
    Corpus c;
    const std::vector<std::string> names = {"fastcdc", "fastcdc4stadia", "fixed-v1.0.0"};
    const auto one = analyze({c.tmp.path().string()}, options_for(names, 1));
    for (unsigned jobs : {2u, 4u, 7u}) {
        for (std::size_t read_size : {std::size_t{0}, std::size_t{1}, std::size_t{4097}}) {
            auto o = options_for(names, jobs);
            o.read_size = read_size;
            const auto other = analyze({c.tmp.path().string()}, o);
            ASSERT_EQ(other.algorithms.size(), names.size());
            for (std::size_t k = 0; k < names.size(); ++k) {
                const auto& a = one.algorithms[k];
                const auto& b = other.algorithms[k];
                EXPECT_EQ(a.files, b.files);
                EXPECT_EQ(a.bytes, b.bytes);
                EXPECT_EQ(a.chunks, b.chunks) << names[k] << " jobs " << jobs << " read " << read_size;
                EXPECT_EQ(a.distinct_chunks, b.distinct_chunks);
                EXPECT_EQ(a.distinct_bytes, b.distinct_bytes);
                EXPECT_TRUE(a.sizes == b.sizes);
            }
        }
    }
}

TEST(Analyze, KeptIndexesMergeIntoTheFiguresOfOneRun) {
    // The files analyzed in two halves, their indexes merged, give the
    // distinct figures of one run over all of them.
    Corpus c;
    const std::vector<std::string> names = {"fastcdc", "ultracdc"};
    const auto whole = analyze({c.tmp.path().string()}, options_for(names, 2));
    auto o = options_for(names, 1);
    o.keep_indexes = true;
    std::vector<std::string> halves[2];
    for (std::size_t i = 0; i < c.files.size(); ++i) halves[i % 2].push_back(c.files[i].string());
    const auto first = analyze(halves[0], o);   // a.bin, b.bin, ...
    const auto second = analyze(halves[1], o);  // copy-of-a.bin, ...
    for (std::size_t k = 0; k < names.size(); ++k) {
        ASSERT_TRUE(first.algorithms[k].index && second.algorithms[k].index);
        EXPECT_EQ(first.algorithms[k].index->distinct_chunks(), first.algorithms[k].distinct_chunks);
        DedupIndex merged;
        for (const auto* r : {&first, &second}) {
            r->algorithms[k].index->for_each([&](const DedupIndex::Entry& e) {
                Digest d;
                std::memcpy(d.bytes.data(), e.key.data(), e.key.size());
                d.size = DedupIndex::kKeyBytes;
                merged.insert(d, e.size);
            });
        }
        EXPECT_EQ(merged.distinct_chunks(), whole.algorithms[k].distinct_chunks) << names[k];
        EXPECT_EQ(merged.distinct_bytes(), whole.algorithms[k].distinct_bytes) << names[k];
        EXPECT_LT(merged.distinct_bytes(), first.algorithms[k].distinct_bytes + second.algorithms[k].distinct_bytes);
    }
    EXPECT_FALSE(whole.algorithms[0].index) << "kept only when asked";
}

TEST(Analyze, OneFileIsHashedByEveryWorker) {
    // One file, several jobs: the owner cuts, the others fingerprint its
    // buffers; small buffers make many hand-overs.
    test::TempDir tmp;
    auto data = test::random_bytes(3'000'000, 21);
    data.insert(data.end(), data.begin(), data.begin() + 1'000'000);  // a repeat
    const auto path = tmp.write("one.bin", data);
    for (unsigned jobs : {1u, 2u, 3u}) {
        auto o = options_for({"fastcdc", "ultracdc"}, jobs);
        o.read_size = 70'000;
        const auto r = analyze({path.string()}, o);
        EXPECT_TRUE(r.errors.empty());
        expect_matches(r.algorithms[0], expected({path}, "fastcdc"));
        expect_matches(r.algorithms[1], expected({path}, "ultracdc"));
        EXPECT_LT(r.algorithms[0].dedup_ratio(), 0.8);
    }
}

TEST(Analyze, SeveralAlgorithmsInOnePassEqualSeparateRuns) {
    Corpus c;
    AnalyzeOptions o;
    Options small;
    small.min_size = 512;
    small.normal_size = 2048;
    small.max_size = 8192;
    const std::vector<AlgorithmSpec> specs = {{"fastcdc", small}, {"ultracdc", {}}, {"jc", small}};
    for (const auto& s : specs) o.algorithms.push_back(make_cut_finder(s));
    o.read_size = 3000;  // cursors far apart relative to the buffer
    const auto together = analyze({c.tmp.path().string()}, o);
    for (std::size_t k = 0; k < o.algorithms.size(); ++k) {
        expect_matches(together.algorithms[k], expected(c.files, specs[k].name, specs[k].options));
        AnalyzeOptions alone;
        alone.algorithms = {o.algorithms[k]};
        const auto r = analyze({c.tmp.path().string()}, alone);
        EXPECT_EQ(r.algorithms[0].distinct_bytes, together.algorithms[k].distinct_bytes);
    }
}

TEST(Analyze, DigestsAgree) {
    Corpus c;
    for (auto d : {DigestKind::sha256, DigestKind::xxh3}) {
        auto o = options_for({"fastcdc"}, 2);
        o.digest = d;
        const auto r = analyze({c.tmp.path().string()}, o);
        expect_matches(r.algorithms[0], expected(c.files, "fastcdc"));
    }
}

TEST(Analyze, BadOptionsFailBeforeReading) {
    Corpus c;
    AnalyzeOptions none;
    EXPECT_THROW(analyze({c.tmp.path().string()}, none), OptionError);
    EXPECT_THROW(options_for({"nope"}, 1), OptionError);  // (resolved into finders before analyze)
    AnalyzeOptions null_finder;
    null_finder.algorithms.push_back(nullptr);
    EXPECT_THROW(analyze({c.tmp.path().string()}, null_finder), OptionError);
    auto no_digest = options_for({"fastcdc"}, 1);
    no_digest.digest = DigestKind::none;
    EXPECT_THROW(analyze({c.tmp.path().string()}, no_digest), OptionError);
    EXPECT_THROW(analyze({(c.tmp.path() / "missing").string()}, options_for({"fastcdc"}, 1)), IoError);
}

TEST(Analyze, ProgressReachesTheTotal) {
    Corpus c;
    auto o = options_for({"fastcdc"}, 2);
    std::vector<AnalyzeProgress> seen;
    std::mutex m;
    o.progress = [&](const AnalyzeProgress& p) {
        std::lock_guard lock(m);
        seen.push_back(p);
    };
    o.progress_interval = 0.001;
    const auto r = analyze({c.tmp.path().string()}, o);
    ASSERT_FALSE(seen.empty());
    EXPECT_TRUE(seen.back().finished);
    EXPECT_EQ(seen.back().bytes_done, r.bytes);
    EXPECT_EQ(seen.back().bytes_total, r.bytes);
    EXPECT_EQ(seen.back().files_done, c.files.size());
}

TEST(Walk, SymlinksSpecialFilesAndLoops) {
    test::TempDir tmp;
    tmp.write("d/real.bin", test::random_bytes(1000, 1));
    fs::create_symlink(tmp.path() / "d/real.bin", tmp.path() / "d/link.bin");
    fs::create_symlink(tmp.path() / "d/missing", tmp.path() / "d/dangling");
    fs::create_directory_symlink(tmp.path() / "d", tmp.path() / "d/loop");
    ASSERT_EQ(::mkfifo((tmp.path() / "d/fifo").c_str(), 0600), 0);

    const auto plain = walk_inputs({(tmp.path() / "d").string()});
    ASSERT_EQ(plain.files.size(), 1u);
    EXPECT_EQ(plain.symlinks_skipped, 3u);
    EXPECT_TRUE(plain.errors.empty());
    ASSERT_EQ(plain.warnings.size(), 1u);
    EXPECT_NE(plain.warnings[0].message.find("FIFO"), std::string::npos);

    WalkOptions follow;
    follow.follow_symlinks = true;
    const auto f = walk_inputs({(tmp.path() / "d").string()}, follow);
    EXPECT_EQ(f.files.size(), 1u) << "real.bin and link.bin are one file, counted once";
    EXPECT_EQ(f.duplicates_skipped, 1u);
    ASSERT_EQ(f.errors.size(), 1u);
    EXPECT_NE(f.errors[0].path.find("dangling"), std::string::npos);
    EXPECT_EQ(f.warnings.size(), 2u) << "the FIFO and the loop";

    // A symlink named on the command line is followed.
    const auto top = walk_inputs({(tmp.path() / "d/link.bin").string()});
    EXPECT_EQ(top.files.size(), 1u);
    EXPECT_THROW(walk_inputs({(tmp.path() / "d/dangling").string()}), IoError);
}

TEST(Analyze, DanglingSymlinkIsAnErrorAndTheRunGoesOn) {
    Corpus c;
    fs::create_symlink(c.tmp.path() / "nowhere", c.tmp.path() / "one/dangling");
    auto o = options_for({"fastcdc"}, 2);
    o.follow_symlinks = true;
    const auto r = analyze({c.tmp.path().string()}, o);
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_NE(r.errors[0].path.find("dangling"), std::string::npos);
    EXPECT_EQ(r.files, c.files.size());
    expect_matches(r.algorithms[0], expected(c.files, "fastcdc"));
}

TEST(Analyze, ExclusionsLeaveFilesOutAndAreCounted) {
    Corpus c;
    auto o = options_for({"fastcdc"}, 2);
    const auto all = analyze({c.tmp.path().string()}, o);
    ASSERT_GT(all.files, 1u);
    o.exclude.patterns.add("*.bin");
    o.exclude.patterns.add("!small.bin");
    const auto some = analyze({c.tmp.path().string()}, o);
    EXPECT_EQ(some.files, 3u);  // two/deep/t.txt, two/deep/empty, small.bin
    EXPECT_EQ(some.excluded, 3u);
    EXPECT_EQ(some.algorithms[0].bytes, 300'000u + 100u);
    EXPECT_TRUE(some.errors.empty());
    EXPECT_TRUE(some.warnings.empty());
    AnalyzeOptions marked = options_for({"fastcdc"}, 2);
    marked.exclude.if_present = {"a-name-no-corpus-file-has"};
    EXPECT_EQ(analyze({c.tmp.path().string()}, marked).files, all.files);
}

TEST(Analyze, ReadErrorInsideATreeIsRecordedAndSkipped) {
    // Tests run as root, for whom chmod 000 makes nothing unreadable. A real
    // read(2) failure that root gets too: /proc/self/mem at offset 0 (EIO).
    Corpus c;
    fs::create_symlink("/proc/self/mem", c.tmp.path() / "one/mem");
    auto o = options_for({"fastcdc", "jc"}, 2);
    o.follow_symlinks = true;
    const auto r = analyze({c.tmp.path().string()}, o);
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_EQ(r.errors[0].path, (c.tmp.path() / "one/mem").string());
    EXPECT_NE(r.errors[0].message.find("read '"), std::string::npos) << r.errors[0].message;
    EXPECT_EQ(r.files, c.files.size());
    expect_matches(r.algorithms[0], expected(c.files, "fastcdc"));
    expect_matches(r.algorithms[1], expected(c.files, "jc"));
}

TEST(Analyze, AFileOfATreeSwappedSinceTheWalkIsNeitherWaitedOnNorFollowed) {
    // Between the walk and the read a file's owner may swap it for a FIFO
    // (the run would block on it) or for a link to a file only the reader
    // may read. Both are errors naming the file; the rest is analyzed.
    Corpus c;
    const auto secret = c.tmp.write("secret.bin", test::random_bytes(5000, 3));
    const WalkResult w = walk_inputs({(c.tmp.path() / "one").string(), (c.tmp.path() / "small.bin").string()});
    ASSERT_EQ(w.files.size(), 3u);
    for (const auto& f : w.files) EXPECT_EQ(f.in_tree, f.path.find("small.bin") == std::string::npos) << f.path;
    fs::remove(c.files[0]);
    ASSERT_EQ(::mkfifo(c.files[0].c_str(), 0600), 0);
    fs::remove(c.files[1]);
    fs::create_symlink(secret, c.files[1]);
    const auto r = analyze(w, options_for({"fastcdc"}, 2));
    ASSERT_EQ(r.errors.size(), 2u);
    EXPECT_EQ(r.errors[0].path, c.files[0].string());
    EXPECT_NE(r.errors[0].message.find("became a FIFO"), std::string::npos) << r.errors[0].message;
    EXPECT_EQ(r.errors[1].path, c.files[1].string());
    EXPECT_NE(r.errors[1].message.find("symbolic link"), std::string::npos) << r.errors[1].message;
    EXPECT_EQ(r.files, 1u);
    EXPECT_EQ(r.bytes, 100u) << "small.bin only: the link's target is not read";
}

// Removes a directory tree by file descriptors (works past PATH_MAX).
void remove_tree_at(int parent, const char* name) {
    const int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (fd >= 0) {
        if (DIR* d = ::fdopendir(fd)) {
            std::vector<std::string> names;
            while (const dirent* e = ::readdir(d))
                if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
            for (const auto& n : names)
                if (::unlinkat(::dirfd(d), n.c_str(), 0) != 0) remove_tree_at(::dirfd(d), n.c_str());
            ::closedir(d);
        } else {
            ::close(fd);
        }
    }
    ::unlinkat(parent, name, AT_REMOVEDIR);
}

TEST(Analyze, UnreachableDirectoryInsideATreeIsAnError) {
    // Root reads everything, but no one can name a path longer than
    // PATH_MAX: a tree nested deeper than that gives a real walk error
    // (ENAMETOOLONG) that the walk records before going on.
    Corpus c;
    const std::string segment(200, 'd');
    int fd = ::open(c.tmp.path().c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::mkdirat(fd, "deep", 0700), 0);
    int cur = ::openat(fd, "deep", O_RDONLY | O_DIRECTORY);
    for (int level = 0; level < 25; ++level) {  // 25 x 201 bytes > 4096
        ASSERT_EQ(::mkdirat(cur, segment.c_str(), 0700), 0);
        const int next = ::openat(cur, segment.c_str(), O_RDONLY | O_DIRECTORY);
        ::close(cur);
        cur = next;
        ASSERT_GE(cur, 0);
    }
    const int file = ::openat(cur, "lost.bin", O_WRONLY | O_CREAT, 0600);
    ASSERT_GE(file, 0);
    ASSERT_EQ(::write(file, "data", 4), 4);
    ::close(file);
    ::close(cur);

    const auto r = analyze({c.tmp.path().string()}, options_for({"fastcdc"}, 2));
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_NE(r.errors[0].message.find("too long"), std::string::npos) << r.errors[0].message;
    EXPECT_EQ(r.files, c.files.size());
    expect_matches(r.algorithms[0], expected(c.files, "fastcdc"));
    remove_tree_at(fd, "deep");
    ::close(fd);
}

TEST(Analyze, FileVanishedOrReplacedBetweenWalkAndRead) {
    Corpus c;
    const WalkResult walk = walk_inputs({c.tmp.path().string()});
    ASSERT_EQ(walk.files.size(), c.files.size());
    fs::remove(c.files[2]);                              // two/b.bin vanishes
    fs::remove(c.files[5]);                              // small.bin becomes a directory
    fs::create_directory(c.files[5]);
    const auto r = analyze(walk, options_for({"fastcdc"}, 3));
    ASSERT_EQ(r.errors.size(), 2u);
    EXPECT_EQ(r.errors[0].path, c.files[5].string());   // sorted by path
    EXPECT_NE(r.errors[0].message.find("directory"), std::string::npos);
    EXPECT_EQ(r.errors[1].path, c.files[2].string());
    EXPECT_NE(r.errors[1].message.find("No such file"), std::string::npos) << r.errors[1].message;
    EXPECT_EQ(r.files, c.files.size() - 2);
    expect_matches(r.algorithms[0], expected({c.files[0], c.files[1], c.files[3], c.files[4]}, "fastcdc"));
}

TEST(Analyze, NamedFifoIsReadAsAStream) {
    test::TempDir tmp;
    const auto data = test::random_bytes(300'000, 4);
    const auto src = tmp.write("src.bin", data);
    const auto fifo = tmp.path() / "pipe";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::thread writer([&] {
        std::ofstream out(fifo, std::ios::binary);
        out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    });
    const auto r = analyze({fifo.string()}, options_for({"fastcdc"}, 1));
    writer.join();
    EXPECT_TRUE(r.errors.empty());
    expect_matches(r.algorithms[0], expected({src}, "fastcdc"));
}

}  // namespace
}  // namespace cdc
