// SPDX-License-Identifier: Apache-2.0
// The driver of ALGORITHMS.md section 1: windows of min(MaxSize, remaining)
// bytes, whatever the reader's read sizes.
#include <cdc/chunker.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace cdc {

CutProgress cut_lengths(const CutFinder& finder, std::span<const std::byte> bytes, bool at_end,
                        std::span<std::uint32_t> out) noexcept {
    const std::size_t max = finder.profile().max_size;
    const auto* data = reinterpret_cast<const std::uint8_t*>(bytes.data());
    CutProgress done;
    while (done.chunks < out.size()) {
        const std::size_t avail = bytes.size() - done.bytes;
        if (avail == 0 || (avail < max && !at_end)) break;
        const std::size_t cut = finder.find(data + done.bytes, std::min(avail, max));
        out[done.chunks++] = static_cast<std::uint32_t>(cut);  // cut <= max_size <= 1 GiB
        done.bytes += cut;
    }
    return done;
}

std::size_t cut_lengths(const CutFinder& finder, std::span<const std::byte> bytes, bool at_end,
                        std::vector<std::uint32_t>& out) {
    // Every chunk but the stream's last holds at least min_size bytes.
    const std::size_t old = out.size();
    out.resize(old + bytes.size() / finder.profile().min_size + 1);
    const CutProgress done = cut_lengths(finder, bytes, at_end, std::span(out).subspan(old));
    out.resize(old + done.chunks);
    return done.bytes;
}

std::size_t default_buffer_size(std::size_t max_size) noexcept {
    return std::max<std::size_t>(2 * max_size, std::size_t{256} * 1024);
}

Chunker::Chunker(std::string_view algorithm, Source source, const Options& options, std::span<std::byte> buffer)
    : Chunker(make_cut_finder(algorithm, options), std::move(source), buffer) {}

Chunker::Chunker(std::shared_ptr<const CutFinder> finder, Source source, std::span<std::byte> buffer)
    : finder_(std::move(finder)), source_(std::move(source)), buffer_(buffer), caller_buffer_(!buffer.empty()) {
    if (!finder_) throw OptionError("chunker: finder is null");
    const std::size_t max = finder_->profile().max_size;
    if (caller_buffer_ && buffer_.size() < max)
        throw OptionError(fmt::format("buffer = {} bytes is invalid: a caller-owned buffer must hold at least "
                                      "max_size ({}) bytes",
                                      buffer_.size(), max));
}

void Chunker::reset(Source source) {
    source_ = std::move(source);
    pos_ = end_ = 0;
    eof_ = false;
    offset_ = 0;
    failure_ = nullptr;
}

void Chunker::fill() {
    const std::size_t max = finder_->profile().max_size;
    if (buffer_.empty()) {
        const std::size_t size = default_buffer_size(max);
        owned_buffer_ = std::make_unique_for_overwrite<std::byte[]>(size);
        buffer_ = std::span<std::byte>(owned_buffer_.get(), size);
    }
    // Keep the unconsumed tail, moved to the front when a full window would
    // not fit behind it.
    if (pos_ + max > buffer_.size()) {
        const std::size_t live = end_ - pos_;
        if (live > 0) std::memmove(buffer_.data(), buffer_.data() + pos_, live);
        pos_ = 0;
        end_ = live;
    }
    const FillResult r = read_at_least(*source_.reader_ptr(), buffer_.subspan(end_), max - (end_ - pos_));
    end_ += r.bytes;
    eof_ = r.end;
}

bool Chunker::next(Chunk& out) {
    if (failure_) std::rethrow_exception(failure_);
    const std::size_t max = finder_->profile().max_size;
    const std::byte* base;
    std::size_t avail;
    if (source_.is_memory()) {
        const auto mem = source_.memory_bytes();
        base = mem.data() + pos_;
        avail = mem.size() - pos_;
    } else {
        if (!eof_ && end_ - pos_ < max) {
            try {
                fill();
            } catch (...) {
                failure_ = std::current_exception();
                throw;
            }
        }
        base = buffer_.data() + pos_;
        avail = end_ - pos_;
    }
    std::uint32_t cut = 0;
    // (fill() stops short of a full window only at the end of the stream)
    if (cut_lengths(*finder_, {base, avail}, true, std::span(&cut, 1)).chunks == 0) return false;
    out.offset = offset_;
    out.bytes = std::span<const std::byte>(base, cut);
    pos_ += cut;
    offset_ += cut;
    return true;
}

std::optional<Chunk> Chunker::next() {
    Chunk c;
    if (!next(c)) return std::nullopt;
    return c;
}

std::uint64_t Chunker::copy_to(Writer& writer) {
    std::uint64_t total = 0;
    Chunk c;
    while (next(c)) {
        writer.write(c.bytes);
        total += c.size();
    }
    return total;
}

}  // namespace cdc
