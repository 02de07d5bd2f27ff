// SPDX-License-Identifier: Apache-2.0
// zstd for chunk payloads: one context per thread, reused (no allocation per
// chunk). A chunk that zstd does not shrink is kept raw.
#pragma once

#include <cdc/store.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;

namespace cdc::store::detail {

class Compressor {
public:
    explicit Compressor(int level);
    ~Compressor();
    Compressor(const Compressor&) = delete;
    Compressor& operator=(const Compressor&) = delete;

    /// Compresses `raw` into out (resized); returns Codec::zstd, or Codec::raw
    /// (out untouched) when the frame would not be smaller or level is 0.
    Codec compress(std::span<const std::byte> raw, std::vector<std::byte>& out);
    /// Always a zstd frame (content size declared, no checksum), even when it
    /// is not smaller than `raw`: what a push client sends, so that the server
    /// stores what it receives without compressing it again. Throws on a zstd
    /// error.
    void compress_frame(std::span<const std::byte> raw, std::vector<std::byte>& out);

private:
    ZSTD_CCtx_s* ctx_ = nullptr;
    int level_;
};

/// This thread's compressor at `level` (a zstd context is costly to create
/// and cannot be shared between threads); remade when the level changes.
Compressor& thread_compressor(int level);

class Decompressor {
public:
    Decompressor();
    ~Decompressor();
    Decompressor(const Decompressor&) = delete;
    Decompressor& operator=(const Decompressor&) = delete;

    /// Decompresses one frame into exactly out.size() bytes; false if the
    /// frame is invalid or does not decode to exactly that size.
    bool decompress(std::span<const std::byte> frame, std::span<std::byte> out);

private:
    ZSTD_DCtx_s* ctx_ = nullptr;
};

/// The raw size a zstd frame declares (its frame content size); empty if it
/// declares none or is no frame.
std::optional<std::uint64_t> frame_content_size(std::span<const std::byte> frame) noexcept;

/// The largest payload a record of `raw_size` bytes may have (zstd's bound:
/// a record is never larger; one kept raw has exactly raw_size).
std::uint64_t stored_size_bound(std::uint64_t raw_size) noexcept;

/// Valid levels: 0 (store raw) .. ZSTD_maxCLevel(); OptionError otherwise.
void check_zstd_level(int level);

}  // namespace cdc::store::detail
