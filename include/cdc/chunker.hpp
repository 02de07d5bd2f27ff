// SPDX-License-Identifier: Apache-2.0
// cdc/chunker.hpp — the streaming driver: any source in, chunks out.
//
//   cdc::Chunker chunker("fastcdc-v1.0.0", cdc::FileSource(fd));
//   for (const cdc::Chunk& c : chunker)   // c.bytes valid until the next step
//       store(c.offset, c.bytes);
//   chunker.reset(cdc::MemorySource(bytes));  // same buffer, new stream
//
// One chunker is used by one thread at a time; distinct chunkers are
// independent (they share only immutable tables).
#pragma once

#include <cdc/algorithms.hpp>
#include <cdc/error.hpp>
#include <cdc/options.hpp>
#include <cdc/source.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace cdc {

/// One chunk: its offset in the stream and a view of its bytes. The view is
/// valid until the chunker's next step (next(), ++iterator, reset()) — or, for
/// a memory source, as long as that memory lives.
struct Chunk {
    std::uint64_t offset = 0;
    std::span<const std::byte> bytes;

    std::size_t size() const noexcept { return bytes.size(); }
    const std::uint8_t* data() const noexcept { return reinterpret_cast<const std::uint8_t*>(bytes.data()); }
};

/// What one cut_lengths call did: bytes consumed from the front of its input
/// and chunk lengths written.
struct CutProgress {
    std::size_t bytes = 0;
    std::size_t chunks = 0;
};

/// The one batch cut loop (the driver contract of ALGORITHMS.md section 1:
/// windows of min(max_size, remaining) bytes), shared by the chunker and by
/// everything that cuts buffers (corpus analysis, resync, benchmarks, the
/// bindings). Cuts chunks from the start of `bytes` and writes their lengths
/// to `out`, until `out` is full or no further chunk can be cut: unless
/// `at_end` (the stream ends with these bytes), a chunk is cut only where a
/// full max_size window is present, and the rest waits for more data (call
/// again with it in front). With `at_end`, every byte is consumed once `out`
/// has room for (bytes.size() / min_size + 1) lengths.
CutProgress cut_lengths(const CutFinder& finder, std::span<const std::byte> bytes, bool at_end,
                        std::span<std::uint32_t> out) noexcept;

/// The same, appending every length it can cut to `out`; returns the bytes
/// consumed.
std::size_t cut_lengths(const CutFinder& finder, std::span<const std::byte> bytes, bool at_end,
                        std::vector<std::uint32_t>& out);

/// The same as the vector form of cut_lengths (appends the lengths, returns
/// the bytes consumed), with up to `threads` threads (0: one per hardware
/// thread). The bytes are split into segments; each thread cuts its segment
/// as if a chunk started there, then follows its chain of cuts past the
/// segment's end until it lands on a cut of a later segment: a cut depends
/// only on where its chunk starts (the finder is pure), so from there on
/// both chains are the same. Inputs too short to split, or data where
/// chains never meet (every chunk max_size, each chain offset from the
/// next), cost about one thread's time; the lengths are exact whatever the
/// data. `segment_min`: the shortest segment a thread is given (0:
/// parallel_segment_min; any size is exact, tiny ones make chains meet
/// late, which the tests want). Throws std::bad_alloc.
std::size_t cut_lengths_parallel(const CutFinder& finder, std::span<const std::byte> bytes, bool at_end,
                                 std::vector<std::uint32_t>& out, unsigned threads, std::size_t segment_min = 0);

/// The shortest segment cut_lengths_parallel gives a thread for `finder`:
/// input shorter than twice this is cut by one thread.
std::size_t parallel_segment_min(const CutFinder& finder) noexcept;

/// The size of the buffer a chunker allocates for itself when none is given:
/// 2 x max_size, at least 256 KiB (fewer, larger reads and moves).
std::size_t default_buffer_size(std::size_t max_size) noexcept;

class Chunker {
public:
    /// Creates a chunker for `algorithm` (validated; throws OptionError).
    /// `buffer`, if not empty, is a caller-owned scan buffer of at least
    /// max_size bytes that must outlive the chunker (OptionError if smaller).
    /// A buffer of exactly max_size works but moves the unconsumed tail before
    /// almost every chunk; max_size + 256 KiB (or default_buffer_size) reads
    /// and moves far less;
    /// otherwise the chunker allocates default_buffer_size() bytes the first
    /// time it reads from a Reader. Memory sources need no buffer at all.
    Chunker(std::string_view algorithm, Source source, const Options& options = {},
            std::span<std::byte> buffer = {});
    /// The same with an existing (shareable) cut finder.
    explicit Chunker(std::shared_ptr<const CutFinder> finder, Source source = {},
                     std::span<std::byte> buffer = {});

    Chunker(Chunker&&) noexcept = default;
    Chunker& operator=(Chunker&&) noexcept = default;
    Chunker(const Chunker&) = delete;
    Chunker& operator=(const Chunker&) = delete;
    ~Chunker() = default;

    /// Moves the chunker onto a new stream, keeping its buffer and finder.
    void reset(Source source);

    /// Produces the next chunk into `out`; returns false at the end of the
    /// stream. Throws IoError (or the reader's exception) if the source fails;
    /// after a failure every call rethrows it until reset().
    bool next(Chunk& out);
    std::optional<Chunk> next();

    /// Calls f(const Chunk&) for every remaining chunk; returns their number.
    template <class F>
    std::uint64_t for_each(F&& f) {
        Chunk c;
        std::uint64_t n = 0;
        while (next(c)) {
            f(static_cast<const Chunk&>(c));
            ++n;
        }
        return n;
    }

    /// Writes every remaining chunk to `writer`, one write per chunk; returns
    /// the number of bytes written.
    std::uint64_t copy_to(Writer& writer);

    /// Input iterator over the remaining chunks.
    class iterator {
    public:
        using iterator_concept = std::input_iterator_tag;
        using value_type = Chunk;
        using difference_type = std::ptrdiff_t;
        using reference = const Chunk&;

        iterator() = default;
        reference operator*() const noexcept { return chunk_; }
        const Chunk* operator->() const noexcept { return &chunk_; }
        iterator& operator++() {
            if (!owner_->next(chunk_)) owner_ = nullptr;
            return *this;
        }
        void operator++(int) { ++*this; }
        friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept { return it.owner_ == nullptr; }

    private:
        friend class Chunker;
        explicit iterator(Chunker* owner) : owner_(owner) { ++*this; }
        Chunker* owner_ = nullptr;
        Chunk chunk_{};
    };
    iterator begin() { return iterator(this); }
    std::default_sentinel_t end() const noexcept { return {}; }

    const CutFinder& finder() const noexcept { return *finder_; }
    /// Bytes of the stream consumed so far (the offset of the next chunk).
    std::uint64_t offset() const noexcept { return offset_; }
    /// Size of the scan buffer (0 until one is needed, for internal buffers).
    std::size_t buffer_size() const noexcept { return buffer_.size(); }
    /// True when the scan buffer was supplied by the caller.
    bool uses_caller_buffer() const noexcept { return caller_buffer_; }

private:
    void fill();

    std::shared_ptr<const CutFinder> finder_;
    Source source_;
    std::span<std::byte> buffer_;          // caller-owned or owned_buffer_
    std::unique_ptr<std::byte[]> owned_buffer_;  // uninitialised: never zero-filled
    bool caller_buffer_ = false;
    std::size_t pos_ = 0;                   // next unconsumed byte in buffer_ / memory
    std::size_t end_ = 0;                   // end of valid bytes in buffer_
    bool eof_ = false;
    std::uint64_t offset_ = 0;
    std::exception_ptr failure_;
};

}  // namespace cdc
