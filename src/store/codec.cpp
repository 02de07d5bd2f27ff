// SPDX-License-Identifier: Apache-2.0
#include "codec.hpp"

#include <fmt/format.h>
#include <zstd.h>

#include <memory>
#include <new>
#include <stdexcept>
#include <string>

namespace cdc::store::detail {

Compressor::Compressor(int level) : ctx_(ZSTD_createCCtx()), level_(level) {
    if (!ctx_) throw std::bad_alloc();
    if (level_ > 0) ZSTD_CCtx_setParameter(ctx_, ZSTD_c_compressionLevel, level_);
    // The record already carries the raw size and a checksum.
    ZSTD_CCtx_setParameter(ctx_, ZSTD_c_checksumFlag, 0);
    ZSTD_CCtx_setParameter(ctx_, ZSTD_c_contentSizeFlag, 1);
}

Compressor::~Compressor() { ZSTD_freeCCtx(ctx_); }

Codec Compressor::compress(std::span<const std::byte> raw, std::vector<std::byte>& out) {
    if (level_ == 0 || raw.empty()) return Codec::raw;
    out.resize(ZSTD_compressBound(raw.size()));
    const std::size_t n = ZSTD_compress2(ctx_, out.data(), out.size(), raw.data(), raw.size());
    if (ZSTD_isError(n) || n >= raw.size()) return Codec::raw;
    out.resize(n);
    return Codec::zstd;
}

void Compressor::compress_frame(std::span<const std::byte> raw, std::vector<std::byte>& out) {
    out.resize(ZSTD_compressBound(raw.size()));
    const std::size_t n = ZSTD_compress2(ctx_, out.data(), out.size(), raw.data(), raw.size());
    if (ZSTD_isError(n)) throw std::runtime_error(std::string("zstd: ").append(ZSTD_getErrorName(n)));
    out.resize(n);
}

std::optional<std::uint64_t> frame_content_size(std::span<const std::byte> frame) noexcept {
    const unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
    if (declared == ZSTD_CONTENTSIZE_UNKNOWN || declared == ZSTD_CONTENTSIZE_ERROR) return std::nullopt;
    return static_cast<std::uint64_t>(declared);
}

std::uint64_t stored_size_bound(std::uint64_t raw_size) noexcept {
    return ZSTD_compressBound(static_cast<std::size_t>(raw_size));
}

Compressor& thread_compressor(int level) {
    thread_local std::unique_ptr<Compressor> c;
    thread_local int c_level = -1;
    if (!c || c_level != level) {
        c = std::make_unique<Compressor>(level);
        c_level = level;
    }
    return *c;
}

Decompressor::Decompressor() : ctx_(ZSTD_createDCtx()) {
    if (!ctx_) throw std::bad_alloc();
}

Decompressor::~Decompressor() { ZSTD_freeDCtx(ctx_); }

bool Decompressor::decompress(std::span<const std::byte> frame, std::span<std::byte> out) {
    // A frame must declare its content size and decode to exactly that many
    // bytes: a damaged frame never writes past `out`.
    const unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
    if (declared != out.size()) return false;
    const std::size_t n = ZSTD_decompressDCtx(ctx_, out.data(), out.size(), frame.data(), frame.size());
    return !ZSTD_isError(n) && n == out.size();
}

void check_zstd_level(int level) {
    if (level < 0 || level > ZSTD_maxCLevel())
        throw OptionError(fmt::format("zstd level {} is invalid: must be 0 (store raw) to {}", level, ZSTD_maxCLevel()),
                          "zstd_level");
}

}  // namespace cdc::store::detail
