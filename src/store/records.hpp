// SPDX-License-Identifier: Apache-2.0
// Reading a chunk's record back from its pack and checking it against the
// index (the header, the id, the sizes, the checksum; decoding into raw
// bytes), and the packs one reader holds open: what get, read_chunks,
// verify, gc and the read-back of stored chunks share.
#pragma once

#include "catalog.hpp"
#include "format.hpp"
#include "pack_storage.hpp"

#include <cdc/store.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cdc::crypto {
class Sealer;
}

namespace cdc::store::detail {

/// Pack files one reader keeps open at once by default: an eighth of the
/// soft RLIMIT_NOFILE, at most 512 (a file can span thousands of packs, a
/// server runs several readers). Beyond, a reader finishes what is in flight
/// and closes them.
std::size_t default_max_open_packs();

/// The packs one operation reads, opened on demand, at most `max_open` at
/// once: a reader whose reads are still in flight asks needs_room() first
/// and, if so, waits for them and calls close_all(); one that reads each
/// pack at once uses read().
class PackFiles {
public:
    explicit PackFiles(const PackStorage& storage, std::size_t max_open = default_max_open_packs())
        : storage_(storage), max_open_(std::max<std::size_t>(max_open, 1)) {}
    /// DamageError if the pack is missing, StoreError if it cannot be
    /// opened otherwise (EMFILE: needs_room() was not asked).
    const PackReader& reader(std::uint64_t pack);
    /// Whether opening `pack` would pass the bound.
    bool needs_room(std::uint64_t pack) const { return open_.size() >= max_open_ && !open_.contains(pack); }
    /// reader() for a caller done with every pack it got before: at the
    /// bound, closes them first.
    const PackReader& read(std::uint64_t pack) {
        if (needs_room(pack)) close_all();
        return reader(pack);
    }
    void close_all() { open_.clear(); }
    std::size_t open_count() const noexcept { return open_.size(); }

private:
    const PackStorage& storage_;
    std::size_t max_open_;
    std::unordered_map<std::uint64_t, std::unique_ptr<PackReader>> open_;
};
// `sealer`: the store's data key in an encrypted store (every record must
// be sealed, and its tag is checked when it is decoded), nullptr in a plain
// one (no record may be sealed). A record of the other kind is damage: an
// unsealed record slipped into an encrypted store is refused, never read.

/// Reads the record of `id` at `loc` into buf (header + payload) and checks
/// it: header, id, sizes, checksum (not a sealed payload's tag: decoding
/// does that). Throws DamageError("<context>chunk <id> (pack P, offset O):
/// <reason>"). Returns the codec.
Codec read_record(const PackReader& pack, const Location& loc, const ChunkId& id, std::vector<std::byte>& buf,
                  std::string_view context, const crypto::Sealer* sealer);
/// The record's bytes at `loc` read into buf (fewer at the end of the
/// pack), unchecked: for decode_record_into or stored_payload, which check.
std::span<const std::byte> read_record_bytes(const PackReader& pack, const Location& loc, std::vector<std::byte>& buf);
/// The checks of read_record on a record read already (its bytes from
/// loc.offset; fewer than the record: truncated).
Codec check_record(std::span<const std::byte> record, const Location& loc, const ChunkId& id,
                   std::string_view context, const crypto::Sealer* sealer);
/// check_record, then the raw bytes into `out` (out.size() == loc.raw_size).
/// A sealed record's checksum is not computed: its tag, checked as it is
/// opened, covers the same bytes (a record failing it is reported as
/// damaged when its checksum fails too, else as altered).
void decode_record_into(std::span<const std::byte> record, const Location& loc, const ChunkId& id,
                        std::span<std::byte> out, std::string_view context, const crypto::Sealer* sealer);
/// The record read and decoded (decode_record_into) into `out` (out.size() == loc.raw_size).
void read_chunk_into(const PackReader& pack, const Location& loc, const ChunkId& id, std::vector<std::byte>& buf,
                     std::span<std::byte> out, std::string_view context, const crypto::Sealer* sealer);
/// check_record, then the stored form of the chunk (a zstd frame or the raw
/// bytes, as the codec says) into `out`: a plain record's payload, a sealed
/// one's opened (its tag checked instead of its checksum, as
/// decode_record_into). Returns the codec.
Codec stored_payload(std::span<const std::byte> record, const Location& loc, const ChunkId& id,
                     std::vector<std::byte>& out, std::string_view context, const crypto::Sealer* sealer);
/// Bytes a sealed record's payload has beyond its stored form: nonce and
/// tag, and in the first form the sealed raw size (44 or 32).
std::size_t sealed_overhead(const RecordHeader& h) noexcept;
/// A sealed record opened (open_record).
struct OpenedRecord {
    std::span<const std::byte> form;  ///< the stored form: a zstd frame or the raw bytes, as the codec says
    /// The raw size the record declares: sealed ahead of the form (first
    /// form), or the raw bytes' length or the frame's declared size
    /// (compact form; empty when a frame declares none).
    std::optional<std::uint64_t> raw_size;
};
/// Opens the sealed payload of the record whose decoded header is `h`
/// (`record`: header + h.stored_size payload bytes, at least
/// sealed_overhead(h) of them) into `plain`. The tag covers the payload and
/// the header's first 48 bytes (the id and flags among them). Throws
/// crypto::AuthenticationError.
OpenedRecord open_record(const crypto::Sealer& sealer, const RecordHeader& h, std::span<const std::byte> record,
                         std::vector<std::byte>& plain);

/// The DamageError text for a chunk.
std::string chunk_problem(std::string_view context, const ChunkId& id, const Location& loc, std::string_view reason);

}  // namespace cdc::store::detail
