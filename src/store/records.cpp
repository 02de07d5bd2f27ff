// Records read back and checked (records.hpp).
#include "records.hpp"

#include "codec.hpp"
#include "../io/open_files.hpp"

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

Codec read_record(const PackReader& pack, const Location& loc, const ChunkId& id, std::vector<std::byte>& buf,
                  std::string_view context) {
    const std::size_t n = kRecordHeaderSize + loc.stored_size;
    buf.resize(n);
    const std::size_t got = pack.read_at(loc.offset, buf);
    return check_record(std::span<const std::byte>(buf).first(got), loc, id, context);
}

Codec check_record(std::span<const std::byte> record, const Location& loc, const ChunkId& id,
                   std::string_view context) {
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
    if (header->raw_size != loc.raw_size || header->stored_size != loc.stored_size)
        throw DamageError(chunk_problem(context, id, loc, "the record's sizes differ from the index"));
    if (!record_checksum_ok(h, record.subspan(kRecordHeaderSize, loc.stored_size)))
        throw DamageError(chunk_problem(context, id, loc, "checksum mismatch (damaged bytes)"));
    if (header->codec == Codec::raw && header->stored_size != header->raw_size)
        throw DamageError(chunk_problem(context, id, loc, "a raw record whose sizes differ"));
    return header->codec;
}

void decode_record_into(std::span<const std::byte> record, const Location& loc, const ChunkId& id,
                        std::span<std::byte> out, std::string_view context) {
    const Codec codec = check_record(record, loc, id, context);
    const auto payload = record.subspan(kRecordHeaderSize, loc.stored_size);
    if (codec == Codec::raw) {
        if (!payload.empty()) std::memcpy(out.data(), payload.data(), payload.size());
        return;
    }
    thread_local Decompressor d;
    if (!d.decompress(payload, out))
        throw DamageError(chunk_problem(context, id, loc, fmt::format("the zstd frame does not decode to {} bytes",
                                                                      loc.raw_size)));
}

void read_chunk_into(const PackReader& pack, const Location& loc, const ChunkId& id, std::vector<std::byte>& buf,
                     std::span<std::byte> out, std::string_view context) {
    read_record(pack, loc, id, buf, context);
    decode_record_into(buf, loc, id, out, context);
}

}  // namespace cdc::store::detail
