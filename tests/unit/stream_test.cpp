// SPDX-License-Identifier: Apache-2.0
// The driver: the same cut points whatever the reader does, caller-owned
// buffers, reset, iteration forms, and failures.
#include "test_support.hpp"

#include <cdc/corpus/datagen.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <ranges>
#include <sys/time.h>
#include <thread>
#include <unistd.h>

namespace cdc::test {
namespace {

static_assert(std::ranges::input_range<Chunker>);

std::vector<std::uint8_t> mixed_data() {
    // random, then text, then zeros, then a repeat: every algorithm cuts
    // differently in each region.
    std::vector<std::uint8_t> v = random_bytes(300000, 11);
    auto text = generate_input("text:5:200000");
    v.insert(v.end(), text.begin(), text.end());
    v.insert(v.end(), 150000, 0);
    auto rep = generate_input("repeat:abc:70001");
    v.insert(v.end(), rep.begin(), rep.end());
    return v;
}

std::vector<std::shared_ptr<const CutFinder>> finders() {
    std::vector<std::shared_ptr<const CutFinder>> out;
    Options small;
    small.min_size = 512;
    small.normal_size = 2048;
    small.max_size = 8192;
    for (const auto& a : algorithms()) {
        Options o;
        if (a.key == KeyUse::required) o.key = Key{1, 2, 3};
        out.push_back(make_cut_finder(a.name, o));
        Options s = small;
        s.key = o.key;
        if (a.content_defined) out.push_back(make_cut_finder(a.name, s));
    }
    return out;
}

// cut_lengths_parallel: the lengths of cut_lengths whatever the number of
// threads, where the segments' chains meet at once (random data), late
// (a zero run across a segment start: max_size chunks, offset from the
// true chain's, until the data changes) or never (zeros to the end).
TEST(CutLengthsParallel, EqualsTheSequentialLoopForEveryThreadCount) {
    std::vector<std::uint8_t> data = random_bytes(std::size_t{5} << 19, 21);
    data.insert(data.end(), std::size_t{3} << 19, 0);
    const auto text = generate_input("text:7:1500000");
    data.insert(data.end(), text.begin(), text.end());
    const auto more = random_bytes(std::size_t{1} << 20, 22);
    data.insert(data.end(), more.begin(), more.end());
    std::vector<std::uint8_t> zeros_tail = data;
    zeros_tail.insert(zeros_tail.end(), std::size_t{5} << 20, 0);
    std::size_t split = 0;
    for (const auto& f : finders()) {
        if (2 * parallel_segment_min(*f) > data.size()) continue;
        SCOPED_TRACE(std::string(f->name()) + " max=" + std::to_string(f->profile().max_size));
        for (const auto* input : {&data, &zeros_tail}) {
            const auto bytes = std::as_bytes(std::span(*input));
            for (const bool at_end : {true, false}) {
                std::vector<std::uint32_t> expected;
                const std::size_t consumed = cut_lengths(*f, bytes, at_end, expected);
                for (const unsigned threads : {0U, 3U, 64U}) {
                    SCOPED_TRACE("threads=" + std::to_string(threads) + " at_end=" + std::to_string(at_end));
                    std::vector<std::uint32_t> got{7};  // appended to, as cut_lengths does
                    EXPECT_EQ(cut_lengths_parallel(*f, bytes, at_end, got, threads), consumed);
                    ASSERT_EQ(got.front(), 7U);
                    got.erase(got.begin());
                    EXPECT_EQ(got, expected);
                }
            }
        }
        ++split;
    }
    EXPECT_GE(split, 10U);  // the Gear names and the others at the small profile
}

// Tiny segments (down to one byte): chains that meet several segments on,
// extensions across segments whose chains are empty (not at the end: the
// last max_size bytes cut nothing), on the mixed data of every name.
TEST(CutLengthsParallel, TinySegmentsAreExact) {
    const auto data = mixed_data();
    const auto bytes = std::as_bytes(std::span(data)).first(200000);
    for (const auto& f : finders()) {
        SCOPED_TRACE(std::string(f->name()) + " max=" + std::to_string(f->profile().max_size));
        for (const bool at_end : {true, false}) {
            std::vector<std::uint32_t> expected;
            const std::size_t consumed = cut_lengths(*f, bytes, at_end, expected);
            for (const std::size_t segment : {std::size_t{1}, std::size_t{777}, f->profile().max_size / 3 + 1,
                                              std::size_t{40000}}) {
                SCOPED_TRACE("segment=" + std::to_string(segment) + " at_end=" + std::to_string(at_end));
                std::vector<std::uint32_t> got;
                EXPECT_EQ(cut_lengths_parallel(*f, bytes, at_end, got, 7, segment), consumed);
                EXPECT_EQ(got, expected);
            }
        }
    }
}

// One thread, or an input shorter than two segments: the sequential loop.
TEST(CutLengthsParallel, ShortInputsAndOneThread) {
    const auto f = make_cut_finder("fastcdc");
    const auto data = random_bytes(300000, 5);
    const auto bytes = std::as_bytes(std::span(data));
    std::vector<std::uint32_t> expected;
    cut_lengths(*f, bytes, true, expected);
    for (const unsigned threads : {1U, 4U}) {
        std::vector<std::uint32_t> got;
        EXPECT_EQ(cut_lengths_parallel(*f, bytes, true, got, threads), data.size());
        EXPECT_EQ(got, expected);
    }
    std::vector<std::uint32_t> none;
    EXPECT_EQ(cut_lengths_parallel(*f, {}, true, none, 4), 0U);
    EXPECT_TRUE(none.empty());
}

// cut_lengths, the batch loop behind every consumer: the chunker's cuts
// whether given everything at once, piece by piece as data arrives (the
// uncut tail moved to the front with the next piece, as a stream driver
// does), or with room for only a few lengths per call.
TEST(CutLengths, WholePiecewiseAndBoundedAgreeWithTheChunker) {
    const auto data = mixed_data();
    const auto bytes = std::as_bytes(std::span(data));
    for (const auto& f : finders()) {
        SCOPED_TRACE(std::string(f->name()) + " max=" + std::to_string(f->profile().max_size));
        const auto expected = lengths_memory(f, data);

        std::vector<std::uint32_t> whole;
        EXPECT_EQ(cut_lengths(*f, bytes, true, whole), data.size());
        EXPECT_EQ(std::vector<std::size_t>(whole.begin(), whole.end()), expected);

        // Not at the end: only chunks with a full max_size window are cut.
        std::vector<std::uint32_t> part;
        const std::size_t consumed = cut_lengths(*f, bytes, false, part);
        EXPECT_LT(data.size() - consumed, f->profile().max_size);
        EXPECT_TRUE(std::equal(part.begin(), part.end(), whole.begin()));

        std::vector<std::uint32_t> pieces;
        std::size_t cut = 0;
        for (std::size_t end = 0; end < data.size();) {
            end = std::min(data.size(), end + 50000 + end % 7777);
            cut += cut_lengths(*f, bytes.subspan(cut, end - cut), end == data.size(), pieces);
        }
        EXPECT_EQ(cut, data.size());
        EXPECT_EQ(pieces, whole);

        std::vector<std::uint32_t> bounded;
        std::array<std::uint32_t, 3> room{};
        for (std::size_t pos = 0; pos < data.size();) {
            const CutProgress p = cut_lengths(*f, bytes.subspan(pos), true, room);
            ASSERT_GT(p.chunks, 0u);
            ASSERT_LE(p.chunks, room.size());
            bounded.insert(bounded.end(), room.begin(), room.begin() + static_cast<std::ptrdiff_t>(p.chunks));
            pos += p.bytes;
        }
        EXPECT_EQ(bounded, whole);
    }
    // Nothing to cut: no length, nothing consumed, whatever the room.
    const auto f = make_cut_finder("fastcdc");
    std::array<std::uint32_t, 1> one{};
    EXPECT_EQ(cut_lengths(*f, {}, true, one).chunks, 0u);
    EXPECT_EQ(cut_lengths(*f, bytes.first(100), false, one).bytes, 0u);
    EXPECT_EQ(cut_lengths(*f, bytes, true, std::span<std::uint32_t>()).bytes, 0u);
}

TEST(Stream, ReadSizesDoNotChangeCutPoints) {
    const auto data = mixed_data();
    const std::vector<std::vector<std::size_t>> scripts = {
        {1}, {1, 7, 4096, 65537, 13}, {0, 0, 0, 5000}, {3, 0, 0, 100000}, {1 << 20}};
    for (const auto& f : finders()) {
        SCOPED_TRACE(std::string(f->name()) + " max=" + std::to_string(f->profile().max_size));
        const auto expected = lengths_memory(f, data);
        ASSERT_FALSE(expected.empty());
        for (const auto& script : scripts) {
            for (bool end_with_data : {false, true}) {
                ScriptedReader r(data, script, end_with_data);
                EXPECT_EQ(lengths_stream(f, r), expected) << "script[0]=" << script[0] << " end=" << end_with_data;
            }
        }
        std::vector<std::byte> exact(f->profile().max_size);
        ScriptedReader r(data, {1, 7, 4096, 65537, 13});
        EXPECT_EQ(lengths_stream(f, r, exact), expected) << "caller buffer of exactly MaxSize";
    }
}

TEST(Stream, EmptyStreamHasNoChunk) {
    const std::vector<std::uint8_t> none;
    for (const auto& f : finders()) {
        EXPECT_TRUE(lengths_memory(f, none).empty());
        ScriptedReader r(none, {0, 0, 10}, true);
        EXPECT_TRUE(lengths_stream(f, r).empty());
    }
}

TEST(Stream, MemorySourceIsZeroCopy) {
    const auto data = random_bytes(200000, 3);
    Chunker c("fastcdc", MemorySource(std::span<const std::uint8_t>(data)));
    for (const Chunk& ch : c) EXPECT_EQ(ch.data(), data.data() + ch.offset);
    EXPECT_EQ(c.buffer_size(), 0u);
}

TEST(Stream, CallbackCopyAndIteratorAgree) {
    const auto data = mixed_data();
    const auto f = make_cut_finder("jc-v1.1.0");
    const auto expected = lengths_memory(f, data);

    Chunker a(f, MemorySource(std::span<const std::uint8_t>(data)));
    std::vector<std::size_t> got;
    EXPECT_EQ(a.for_each([&](const Chunk& c) { got.push_back(c.size()); }), expected.size());
    EXPECT_EQ(got, expected);

    struct Collect : Writer {
        std::vector<std::byte> all;
        std::vector<std::size_t> sizes;
        void write(std::span<const std::byte> chunk) override {
            all.insert(all.end(), chunk.begin(), chunk.end());
            sizes.push_back(chunk.size());
        }
    } sink;
    ScriptedReader r(data, {999});
    Chunker b(f, ReaderSource(r));
    EXPECT_EQ(b.copy_to(sink), data.size());
    EXPECT_EQ(sink.sizes, expected);
    EXPECT_TRUE(std::equal(sink.all.begin(), sink.all.end(), reinterpret_cast<const std::byte*>(data.data())));

    Chunker d(f, MemorySource(std::span<const std::uint8_t>(data)));
    std::vector<std::size_t> viaopt;
    while (auto c = d.next()) viaopt.push_back(c->size());
    EXPECT_EQ(viaopt, expected);
    EXPECT_EQ(d.offset(), data.size());
}

TEST(Stream, ResetKeepsTheBuffer) {
    const auto one = random_bytes(500000, 1);
    const auto two = generate_input("text:9:300000");
    const auto f = make_cut_finder("fastcdc");
    ScriptedReader r1(one, {65536});
    Chunker c(f, ReaderSource(r1));
    std::vector<std::size_t> first;
    const std::byte* buffer_start = nullptr;
    for (const Chunk& ch : c) {
        if (!buffer_start) buffer_start = ch.bytes.data();
        first.push_back(ch.size());
    }
    EXPECT_EQ(first, lengths_memory(f, one));
    const std::size_t size = c.buffer_size();
    EXPECT_EQ(size, default_buffer_size(65536));

    ScriptedReader r2(two, {4096});
    c.reset(ReaderSource(r2));
    std::vector<std::size_t> second;
    bool first_chunk = true;
    for (const Chunk& ch : c) {
        if (first_chunk) {
            EXPECT_EQ(ch.bytes.data(), buffer_start) << "buffer was reallocated";
        }
        first_chunk = false;
        EXPECT_EQ(c.buffer_size(), size);
        second.push_back(ch.size());
    }
    EXPECT_EQ(second, lengths_memory(f, two));
    EXPECT_EQ(c.offset(), two.size());
}

TEST(Stream, CallerBufferIsUsed) {
    const auto data = random_bytes(400000, 8);
    std::vector<std::byte> buf(70000);
    ScriptedReader r(data, {12345});
    Chunker c("fastcdc", ReaderSource(r), {}, buf);
    EXPECT_TRUE(c.uses_caller_buffer());
    for (const Chunk& ch : c) {
        EXPECT_GE(ch.bytes.data(), buf.data());
        EXPECT_LE(ch.bytes.data() + ch.size(), buf.data() + buf.size());
    }
}

// Delivers `good` bytes, then throws.
class FailingReader final : public Reader {
public:
    FailingReader(std::span<const std::uint8_t> data, std::size_t good) : data_(data), good_(good) {}
    ReadResult read(std::span<std::byte> buffer) override {
        if (pos_ >= good_) throw IoError("disk on fire");
        const std::size_t n = std::min({buffer.size(), good_ - pos_, std::size_t{5000}});
        std::memcpy(buffer.data(), data_.data() + pos_, n);
        pos_ += n;
        return {n, false};
    }

private:
    std::span<const std::uint8_t> data_;
    std::size_t good_;
    std::size_t pos_ = 0;
};

TEST(Stream, ReaderFailingMidwayIsAnErrorAndNoPartialChunk) {
    const auto data = random_bytes(1000000, 21);
    for (const auto& f : finders()) {
        SCOPED_TRACE(std::string(f->name()));
        const auto full = lengths_memory(f, data);
        const std::size_t good = 300001;
        FailingReader r(data, good);
        Chunker c(f, ReaderSource(r));
        std::vector<std::size_t> got;
        std::size_t emitted = 0;
        bool failed = false;
        try {
            for (const Chunk& ch : c) {
                got.push_back(ch.size());
                emitted += ch.size();
            }
        } catch (const IoError& e) {
            failed = true;
            EXPECT_STREQ(e.what(), "disk on fire");
        }
        EXPECT_TRUE(failed);
        EXPECT_LT(emitted, good);
        // Every chunk handed out is one the full stream has too: none is a
        // premature "final" chunk made of the buffered bytes.
        ASSERT_LE(got.size(), full.size());
        EXPECT_TRUE(std::equal(got.begin(), got.end(), full.begin()));
        Chunk ch;
        EXPECT_THROW((void)c.next(ch), IoError) << "the failure sticks until reset";
    }
}

TEST(Stream, StuckReaderIsAnError) {
    FunctionReader stuck([](std::span<std::byte>) { return ReadResult{0, false}; });
    Chunker c("fastcdc", ReaderSource(stuck));
    EXPECT_THROW((void)c.next(), IoError);
}

TEST(Stream, ReaderClaimingTooManyBytesIsAnError) {
    FunctionReader liar([](std::span<std::byte> b) { return ReadResult{b.size() + 1, false}; });
    Chunker c("fastcdc", ReaderSource(liar));
    EXPECT_THROW((void)c.next(), IoError);
}

TEST(Stream, OpenErrorsAreIoErrors) {
    EXPECT_THROW((void)FileSource(std::filesystem::path("/nonexistent/cdc/test")), IoError);
    Chunker c("fastcdc", FileSource(std::filesystem::path("/")));  // a directory: read() fails with EISDIR
    EXPECT_THROW((void)c.next(), IoError);
}

void write_all_slowly(int fd, std::span<const std::uint8_t> data, std::size_t piece) {
    std::size_t pos = 0;
    while (pos < data.size()) {
        const std::size_t n = std::min(piece, data.size() - pos);
        const ssize_t w = ::write(fd, data.data() + pos, n);
        if (w < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            break;
        }
        pos += static_cast<std::size_t>(w);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ::close(fd);
}

TEST(Stream, FdReaderThroughAPipeWithSignals) {
    const auto data = mixed_data();
    const auto f = make_cut_finder("ultracdc");
    const auto expected = lengths_memory(f, data);
    // A handler without SA_RESTART makes blocked reads fail with EINTR.
    struct sigaction sa {};
    sa.sa_handler = [](int) {};
    sigemptyset(&sa.sa_mask);
    struct sigaction old {};
    ASSERT_EQ(sigaction(SIGALRM, &sa, &old), 0);
    itimerval timer{{0, 300}, {0, 300}};
    ASSERT_EQ(setitimer(ITIMER_REAL, &timer, nullptr), 0);
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    std::thread writer(write_all_slowly, fds[1], std::span<const std::uint8_t>(data), 7001);
    Chunker c(f, FileSource(fds[0], "pipe"));
    std::vector<std::size_t> got;
    for (const Chunk& ch : c) got.push_back(ch.size());
    writer.join();
    itimerval off{};
    setitimer(ITIMER_REAL, &off, nullptr);
    sigaction(SIGALRM, &old, nullptr);
    ::close(fds[0]);
    EXPECT_EQ(got, expected);
}

TEST(Stream, FdReaderOnNonBlockingPipe) {
    const auto data = random_bytes(400000, 77);
    const auto f = make_cut_finder("jc");
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_NONBLOCK), 0);
    std::thread writer(write_all_slowly, fds[1], std::span<const std::uint8_t>(data), 30000);
    Chunker c(f, FileSource(fds[0], "pipe"));
    std::vector<std::size_t> got;
    for (const Chunk& ch : c) got.push_back(ch.size());
    writer.join();
    ::close(fds[0]);
    EXPECT_EQ(got, lengths_memory(f, data));
}

}  // namespace
}  // namespace cdc::test
