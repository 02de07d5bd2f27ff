// SPDX-License-Identifier: Apache-2.0
// Records read back and checked (records.hpp).
#include "records.hpp"

#include "codec.hpp"
#include "../io/open_files.hpp"
#include "seal.hpp"  // (src/crypto)

#include <fmt/format.h>

#include <cstring>

namespace cdc::store::detail {

std::size_t default_max_open_packs() { return cdc::detail::open_files_budget(8, 512); }

const PackReader& PackFiles::reader(std::uint64_t pack) {
    if (auto it = open_.find(pack); it != open_.end()) return *it->second;
    auto reader = storage_.open(pack);
    if (!reader) throw DamageError(fmt::format("pack '{}' is missing", storage_.describe(pack)));
    return *open_.emplace(pack, std::move(reader)).first->second;
}

std::string chunk_problem(std::string_view context, const ChunkId& id, const Location& loc, std::string_view reason) {
    return fmt::format("{}chunk {} (pack {:08}, offset {}): {}", context, to_hex(id), loc.pack, loc.offset, reason);
}

std::span<const std::byte> read_record_bytes(const PackReader& pack, const Location& loc, std::vector<std::byte>& buf) {
    buf.resize(kRecordHeaderSize + loc.stored_size);
    const std::size_t got = pack.read_at(loc.offset, buf);
    return std::span<const std::byte>(buf).first(got);
}

namespace {

// check_record's checks; the checksum only when `checksum` (a sealed record
// about to be opened has its tag checked instead, which covers the same
// bytes: open_sealed looks at the checksum only to word a failure).
RecordHeader check_record_impl(std::span<const std::byte> record, const Location& loc, const ChunkId& id,
                               std::string_view context, const crypto::Sealer* sealer, bool checksum);

std::uint32_t get_u32le(const std::byte* b) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(b);
    return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
           static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

}  // namespace

std::size_t sealed_overhead(const RecordHeader& h) noexcept {
    return h.compact ? crypto::kShortSealOverhead : crypto::kSealOverhead + kSealedSizeBytes;
}

namespace {

std::size_t nonce_bytes(const RecordHeader& h) noexcept {
    return h.compact ? crypto::kShortNonceBytes : crypto::kNonceBytes;
}

// The sealed payload's plain bytes (sealed_plain_size(h) of them) into `out`.
void open_record_into(const crypto::Sealer& sealer, const RecordHeader& h, std::span<const std::byte> record,
                      std::span<std::byte> out) {
    const auto* hp = reinterpret_cast<const std::uint8_t*>(record.data());
    sealer.open(crypto::SealKind::record, std::span(h.id), std::span(hp, kRecordAuthenticatedBytes),
                std::span(hp + kRecordHeaderSize, h.stored_size),
                std::span(reinterpret_cast<std::uint8_t*>(out.data()), out.size()), nonce_bytes(h));
}

std::size_t sealed_plain_size(const RecordHeader& h) noexcept {
    return h.stored_size - nonce_bytes(h) - crypto::kTagBytes;
}

}  // namespace

OpenedRecord open_record(const crypto::Sealer& sealer, const RecordHeader& h, std::span<const std::byte> record,
                         std::vector<std::byte>& plain) {
    plain.resize(sealed_plain_size(h));
    open_record_into(sealer, h, record, plain);
    const std::span<const std::byte> all(plain);
    if (!h.compact) return {all.subspan(kSealedSizeBytes), get_u32le(plain.data())};
    if (h.codec == Codec::raw) return {all, all.size()};
    return {all, frame_content_size(all)};
}

Codec read_record(const PackReader& pack, const Location& loc, const ChunkId& id, std::vector<std::byte>& buf,
                  std::string_view context, const crypto::Sealer* sealer) {
    return check_record(read_record_bytes(pack, loc, buf), loc, id, context, sealer);
}

Codec check_record(std::span<const std::byte> record, const Location& loc, const ChunkId& id,
                   std::string_view context, const crypto::Sealer* sealer) {
    return check_record_impl(record, loc, id, context, sealer, true).codec;
}

namespace {

RecordHeader check_record_impl(std::span<const std::byte> record, const Location& loc, const ChunkId& id,
                               std::string_view context, const crypto::Sealer* sealer, bool checksum) {
    const std::size_t n = kRecordHeaderSize + loc.stored_size;
    if (record.size() < n)
        throw DamageError(chunk_problem(context, id, loc,
                                        fmt::format("the pack ends {} bytes into the {}-byte record (truncated)",
                                                    record.size(), n)));
    const auto* h = reinterpret_cast<const std::uint8_t*>(record.data());
    const auto header = decode_record(h);
    if (!header) throw DamageError(chunk_problem(context, id, loc, "no valid record header there"));
    if (header->id != id)
        throw DamageError(chunk_problem(context, id, loc, fmt::format("the record there is chunk {}", to_hex(header->id))));
    if (header->encrypted != (sealer != nullptr))
        throw DamageError(chunk_problem(context, id, loc,
                                        sealer ? "an unsealed record in an encrypted store (not written by this store)"
                                               : "a sealed record in an unencrypted store"));
    const std::uint32_t header_raw = header->encrypted ? 0 : loc.raw_size;
    if (header->raw_size != header_raw || header->stored_size != loc.stored_size)
        throw DamageError(chunk_problem(context, id, loc, "the record's sizes differ from the index"));
    if (checksum && !record_checksum_ok(h, record.subspan(kRecordHeaderSize, loc.stored_size)))
        throw DamageError(chunk_problem(context, id, loc, "checksum mismatch (damaged bytes)"));
    if (header->encrypted) {
        if (loc.stored_size < sealed_overhead(*header))
            throw DamageError(chunk_problem(context, id, loc, "a sealed record too short to hold a payload"));
    } else if (header->codec == Codec::raw && header->stored_size != header->raw_size) {
        throw DamageError(chunk_problem(context, id, loc, "a raw record whose sizes differ"));
    }
    return *header;
}

// Opens a checked sealed record's payload into `plain`: a flipped byte, a
// record moved under another id or one sealed under another key fails
// here. Returns the stored form.
// Runs `open` (an opening of `record`), a failed tag becoming the DamageError
// that names it.
template <class Open>
auto opened_or_damage(Open&& open, std::span<const std::byte> record, const Location& loc, const ChunkId& id,
                      std::string_view context) {
    try {
        return open();
    } catch (const crypto::AuthenticationError&) {
        // (bytes damaged without intent fail the checksum too: said so)
        const auto* h = reinterpret_cast<const std::uint8_t*>(record.data());
        if (!record_checksum_ok(h, record.subspan(kRecordHeaderSize, loc.stored_size)))
            throw DamageError(chunk_problem(context, id, loc, "checksum mismatch (damaged bytes)"));
        throw DamageError(chunk_problem(context, id, loc,
                                        "its authentication tag does not match (altered, moved or replayed bytes, "
                                        "or sealed under another key)"));
    }
}

constexpr std::string_view kSealedSizeDiffers = "the sealed raw size differs from the index";

std::span<const std::byte> open_sealed(std::span<const std::byte> record, const RecordHeader& header,
                                       const Location& loc, const ChunkId& id, std::vector<std::byte>& plain,
                                       std::string_view context, const crypto::Sealer& sealer) {
    const OpenedRecord opened =
        opened_or_damage([&] { return open_record(sealer, header, record, plain); }, record, loc, id, context);
    if (opened.raw_size != loc.raw_size)
        throw DamageError(chunk_problem(context, id, loc, kSealedSizeDiffers));
    return opened.form;
}

void decode_payload(Codec codec, std::span<const std::byte> payload, const Location& loc, const ChunkId& id,
                    std::span<std::byte> out, std::string_view context) {
    if (codec == Codec::raw) {
        if (payload.size() != out.size())
            throw DamageError(chunk_problem(context, id, loc, "a raw record whose sizes differ"));
        if (!payload.empty()) std::memcpy(out.data(), payload.data(), payload.size());
        return;
    }
    thread_local Decompressor d;
    if (!d.decompress(payload, out))
        throw DamageError(chunk_problem(context, id, loc, fmt::format("the zstd frame does not decode to {} bytes",
                                                                      loc.raw_size)));
}

}  // namespace

void decode_record_into(std::span<const std::byte> record, const Location& loc, const ChunkId& id,
                        std::span<std::byte> out, std::string_view context, const crypto::Sealer* sealer) {
    // (a sealed record's tag is checked as it is opened: no checksum first)
    const RecordHeader header = check_record_impl(record, loc, id, context, sealer, sealer == nullptr);
    if (sealer == nullptr) {
        decode_payload(header.codec, record.subspan(kRecordHeaderSize, loc.stored_size), loc, id, out, context);
        return;
    }
    if (header.compact && header.codec == Codec::raw) {
        // Raw bytes are what is sealed: opened straight into `out`, not
        // through a buffer and a copy (a failed tag leaves `out` wiped).
        if (sealed_plain_size(header) != out.size())
            throw DamageError(chunk_problem(context, id, loc, kSealedSizeDiffers));
        opened_or_damage([&] { open_record_into(*sealer, header, record, out); }, record, loc, id, context);
        return;
    }
    thread_local std::vector<std::byte> plain;
    decode_payload(header.codec, open_sealed(record, header, loc, id, plain, context, *sealer), loc, id, out,
                   context);
}

Codec stored_payload(std::span<const std::byte> record, const Location& loc, const ChunkId& id,
                     std::vector<std::byte>& out, std::string_view context, const crypto::Sealer* sealer) {
    const RecordHeader header = check_record_impl(record, loc, id, context, sealer, sealer == nullptr);
    if (sealer == nullptr) {
        const auto payload = record.subspan(kRecordHeaderSize, loc.stored_size);
        out.assign(payload.begin(), payload.end());
        return header.codec;
    }
    thread_local std::vector<std::byte> plain;
    const auto payload = open_sealed(record, header, loc, id, plain, context, *sealer);
    out.assign(payload.begin(), payload.end());
    return header.codec;
}

void read_chunk_into(const PackReader& pack, const Location& loc, const ChunkId& id, std::vector<std::byte>& buf,
                     std::span<std::byte> out, std::string_view context, const crypto::Sealer* sealer) {
    decode_record_into(read_record_bytes(pack, loc, buf), loc, id, out, context, sealer);
}

}  // namespace cdc::store::detail
