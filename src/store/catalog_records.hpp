// SPDX-License-Identifier: Apache-2.0
// Catalog records: the manifests and the settings, written into the pack
// storage as well as into the catalog, so that the pack storage alone can
// rebuild a lost catalog (docs/STORE.md, "Catalog records in the packs").
//
// They are ordinary chunk records (raw codec, sealed in an encrypted store,
// id = the store's chunk id of their bytes): verify checks them, gc keeps
// the ones a committed manifest names in its `records` column and copies
// them like any other. Their bytes start with a magic that tells them from
// file data when the packs are scanned:
//   settings record: "CDCSETS1" CBOR{key: value} (the settings a store is
//                    opened with; the same bytes for every writer: one copy)
//   manifest piece:  "CDCMREC1" uid(16) index(u32 LE) flags(u8: 1 = last)
//                    body
// The bodies of one manifest's pieces (the same random uid, indexes 0..N-1,
// the last flagged) concatenated are its stream: the chunk ids of its list
// (32 bytes each, in file order), then a CBOR trailer, then the trailer's
// length (u32 LE).
#pragma once

#include "catalog.hpp"

#include <cdc/store.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cdc::store::detail {

inline constexpr std::string_view kSettingsRecordMagic = "CDCSETS1";
inline constexpr std::string_view kManifestPieceMagic = "CDCMREC1";
inline constexpr std::size_t kPieceHeaderSize = 8 + 16 + 4 + 1;
/// Settings that change after init (not part of the settings record).
bool volatile_setting(std::string_view key);

/// The settings record's bytes for these settings (sorted, volatile ones left out).
std::vector<std::byte> settings_record(const std::unordered_map<std::string, std::string>& settings);
/// The settings a record holds, if `bytes` is one (nullopt: not one, or damaged).
std::optional<std::map<std::string, std::string>> parse_settings_record(std::span<const std::byte> bytes);

/// What a manifest's stream ends with.
struct ManifestTrailer {
    FileMeta meta;
    std::uint64_t size = 0;
    std::uint64_t chunks = 0;
    ChunkId digest{};
    std::string algorithm;
    Profile profile;       ///< min, normal, max sizes and keyed
    std::int64_t time_ns = 0;  ///< when its writer flushed it (the newest of a name wins at a rebuild)
};
/// The trailer's CBOR followed by its length.
std::vector<std::uint8_t> encode_trailer(const ManifestTrailer& t);
/// The trailer at the end of a stream and the number of id bytes before
/// it; nullopt if the stream does not end with a valid one.
std::optional<std::pair<ManifestTrailer, std::size_t>> decode_trailer(std::span<const std::uint8_t> stream);

/// A piece's bytes.
std::vector<std::byte> manifest_piece(const std::array<std::uint8_t, 16>& uid, std::uint32_t index, bool last,
                                      std::span<const std::uint8_t> body);
struct ManifestPiece {
    std::array<std::uint8_t, 16> uid{};
    std::uint32_t index = 0;
    bool last = false;
    std::vector<std::uint8_t> body;
};
/// The piece `bytes` is, if it is one.
std::optional<ManifestPiece> parse_manifest_piece(std::span<const std::byte> bytes);
/// Body bytes per piece for a store whose largest chunk is `max_chunk`
/// (0: too small a chunk size for pieces, which are then not written).
std::size_t piece_body_size(std::uint64_t max_chunk);

/// 16 random bytes (a manifest's uid).
std::array<std::uint8_t, 16> random_uid();

}  // namespace cdc::store::detail
