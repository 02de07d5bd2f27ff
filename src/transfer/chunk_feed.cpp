// SPDX-License-Identifier: Apache-2.0
#include "chunk_feed.hpp"

#include <cdc/chunker.hpp>
#include <cdc/digest.hpp>
#include <cdc/error.hpp>
#include <cdc/source.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace cdc::transfer {

namespace {
constexpr std::size_t kSlots = ChunkFeed::kSegments;
constexpr std::size_t kDigestBatch = 64;

/// Sizes `g`'s ids and starts to its lengths; fills the starts.
void lay_out(ChunkFeed::Segment& g) {
    g.ids.resize(g.lengths.size());
    g.starts.resize(g.lengths.size());
    for (std::size_t i = 0, at = 0; i < g.lengths.size(); at += g.lengths[i], ++i) g.starts[i] = at;
}

/// The ids of chunks [b, e) of `g`, kDigestBatch at a time.
void hash_ids(ChunkFeed::Segment& g, std::size_t b, std::size_t e) {
    Digest digests[kDigestBatch];
    for (std::size_t i = b; i < e; i += kDigestBatch) {
        const std::size_t m = std::min(kDigestBatch, e - i);
        const std::size_t len = g.starts[i + m - 1] + g.lengths[i + m - 1] - g.starts[i];
        compute_digests(DigestKind::blake3, {g.bytes.data() + g.starts[i], len},
                        std::span<const std::uint32_t>(g.lengths.data() + i, m), std::span<Digest>(digests, m));
        for (std::size_t j = 0; j < m; ++j) std::memcpy(g.ids[i + j].data(), digests[j].bytes.data(), 32);
    }
}
}  // namespace

ChunkFeed::ChunkFeed(std::shared_ptr<const CutFinder> finder, Reader& reader, std::size_t read_size,
                     std::optional<std::uint64_t> size_hint)
    : finder_(std::move(finder)), read_size_(read_size), ready_(kSlots) {
    if (size_hint && *size_hint <= kInlineBytes) {
        inline_reader_ = &reader;
        inline_bytes_.resize(static_cast<std::size_t>(*size_hint) + 1);  // (+1: the end is seen in one read)
        return;
    }
    slots_.resize(kSlots);
    pool_.emplace(1);
    const std::size_t capacity = read_size_ + finder_->profile().max_size;
    for (auto& s : slots_) {
        s.data = std::make_unique_for_overwrite<std::byte[]>(capacity);
        free_.push_back(&s);
    }
    ready_.start([this, &reader] { run(reader); });
}

ChunkFeed::~ChunkFeed() = default;

void ChunkFeed::run(Reader& reader) {
    const std::size_t capacity = read_size_ + finder_->profile().max_size;
    {
        Slot* prev = nullptr;
        std::size_t prev_cut = 0;
        std::uint64_t offset = 0;
        bool eof = false;
        while (!eof || (prev && prev_cut < prev->size)) {
            Slot* s = nullptr;
            ready_.wait([&] { return !free_.empty(); });
            ready_.update([&] {
                s = free_.front();
                free_.pop_front();
            });
            // The bytes the previous segment could not cut yet come first.
            std::size_t size = 0;
            if (prev) {
                const std::size_t tail = prev->size - prev_cut;
                if (tail) std::memmove(s->data.get(), prev->data.get() + prev_cut, tail);
                size = tail;
            }
            if (!eof) {
                const FillResult got = read_at_least(reader, {s->data.get() + size, capacity - size}, capacity - size);
                size += got.bytes;
                eof = got.end;
            }
            s->size = size;
            Segment& g = s->segment;
            g.lengths.clear();
            const std::size_t cut = cut_lengths(*finder_, {s->data.get(), size}, eof, g.lengths);
            g.offset = offset;
            g.bytes = {s->data.get(), cut};
            lay_out(g);
            // The ids, in parts hashed side by side (this thread helps).
            const std::size_t n = g.lengths.size();
            const std::size_t parts = pool_->threads() + 1;  // the worker and this thread
            const std::size_t per = std::max(kDigestBatch, (n + parts - 1) / parts);
            std::atomic<std::size_t> left{0};
            for (std::size_t b = 0; b < n; b += per) {
                const std::size_t e = std::min(n, b + per);
                left.fetch_add(1);
                pool_->submit([&g, &left, b, e] {
                    hash_ids(g, b, e);
                    left.fetch_sub(1);
                });
            }
            pool_->wait([&] { return left.load() == 0; });
            offset += cut;
            prev = s;
            prev_cut = cut;
            ready_.push(s);
        }
    }
}

ChunkFeed::Segment* ChunkFeed::next_inline() {
    Reader& reader = *inline_reader_;
    inline_reader_ = nullptr;
    std::size_t size = 0;
    for (;;) {  // (a file that grew since its size was taken: read on; its reader says it changed)
        if (size == inline_bytes_.size()) inline_bytes_.resize(inline_bytes_.size() * 2);
        const FillResult got = read_at_least(reader, {inline_bytes_.data() + size, inline_bytes_.size() - size},
                                             inline_bytes_.size() - size);
        size += got.bytes;
        if (got.end) break;
    }
    if (size == 0) return nullptr;
    Segment& g = inline_segment_;
    const std::span<const std::byte> all(inline_bytes_.data(), size);
    cut_lengths(*finder_, all, true, g.lengths);
    g.offset = 0;
    g.bytes = all;
    lay_out(g);
    hash_ids(g, 0, g.lengths.size());
    return &g;
}

ChunkFeed::Segment* ChunkFeed::next() {
    if (inline_reader_) return next_inline();
    if (slots_.empty()) return nullptr;  // (inline: its one segment was handed out)
    Slot* s = nullptr;
    return ready_.next(s) ? &s->segment : nullptr;
}

void ChunkFeed::release(Segment* segment) {
    if (segment == &inline_segment_) return;
    for (auto& s : slots_)
        if (&s.segment == segment) ready_.update([&] { free_.push_back(&s); });
}

}  // namespace cdc::transfer
