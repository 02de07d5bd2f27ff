// SPDX-License-Identifier: Apache-2.0
// Catalog records in the packs (catalog_records.hpp).
#include "catalog_records.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/random.h>

namespace cdc::store::detail {

namespace {

using json = nlohmann::json;

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

std::uint32_t get_u32(const std::uint8_t* p) {
    return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
           static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

bool starts_with(std::span<const std::byte> bytes, std::string_view magic) {
    return bytes.size() >= magic.size() && std::memcmp(bytes.data(), magic.data(), magic.size()) == 0;
}

json::binary_t binary_of(std::span<const std::uint8_t> b) { return json::binary_t(std::vector<std::uint8_t>(b.begin(), b.end())); }

}  // namespace

// (gc_epoch, gc_mark and snapshot_commits: pg_catalog.hpp's kGcEpochKey,
// kGcMarkKey and kSnapshotCommitsKey, which change as gc and writers run)
bool volatile_setting(std::string_view key) {
    return key == "gc_epoch" || key == "gc_mark" || key == "snapshot_commits";
}

std::vector<std::byte> settings_record(const std::unordered_map<std::string, std::string>& settings) {
    // (json objects are std::map: sorted keys, the same bytes for the same settings)
    json j = json::object();
    for (const auto& [k, v] : settings)
        if (!volatile_setting(k)) j[k] = v;
    const std::vector<std::uint8_t> cbor = json::to_cbor(j);
    std::vector<std::byte> out(kSettingsRecordMagic.size() + cbor.size());
    std::memcpy(out.data(), kSettingsRecordMagic.data(), kSettingsRecordMagic.size());
    std::memcpy(out.data() + kSettingsRecordMagic.size(), cbor.data(), cbor.size());
    return out;
}

std::optional<std::map<std::string, std::string>> parse_settings_record(std::span<const std::byte> bytes) {
    if (!starts_with(bytes, kSettingsRecordMagic)) return std::nullopt;
    const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data()) + kSettingsRecordMagic.size();
    const json j = json::from_cbor(p, p + (bytes.size() - kSettingsRecordMagic.size()), true, false);
    if (!j.is_object()) return std::nullopt;
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : j.items()) {
        if (!v.is_string()) return std::nullopt;
        out[k] = v.get<std::string>();
    }
    return out;
}

std::vector<std::uint8_t> encode_trailer(const ManifestTrailer& t) {
    const auto name = std::span(reinterpret_cast<const std::uint8_t*>(t.meta.name.data()), t.meta.name.size());
    const json j = {
        {"v", 1},
        {"name", binary_of(name)},
        {"mode", t.meta.mode},
        {"mtime_ns", t.meta.mtime_ns},
        {"size", t.size},
        {"chunks", t.chunks},
        {"digest", binary_of(t.digest)},
        {"algorithm", t.algorithm},
        {"min", t.profile.min_size},
        {"normal", t.profile.normal_size},
        {"max", t.profile.max_size},
        {"keyed", t.profile.keyed},
        {"time_ns", t.time_ns},
    };
    std::vector<std::uint8_t> out = json::to_cbor(j);
    put_u32(out, static_cast<std::uint32_t>(out.size()));
    return out;
}

std::optional<std::pair<ManifestTrailer, std::size_t>> decode_trailer(std::span<const std::uint8_t> stream) {
    if (stream.size() < 4) return std::nullopt;
    const std::uint32_t n = get_u32(stream.data() + stream.size() - 4);
    if (n > stream.size() - 4) return std::nullopt;
    const std::size_t ids = stream.size() - 4 - n;
    if (ids % 32 != 0) return std::nullopt;
    const json j = json::from_cbor(stream.data() + ids, stream.data() + ids + n, true, false);
    try {
        if (!j.is_object() || j.value("v", 0) != 1) return std::nullopt;
        ManifestTrailer t;
        const auto& name = j.at("name").get_binary();
        t.meta.name.assign(name.begin(), name.end());
        t.meta.mode = j.at("mode").get<std::uint32_t>();
        t.meta.mtime_ns = j.at("mtime_ns").get<std::int64_t>();
        t.size = j.at("size").get<std::uint64_t>();
        t.chunks = j.at("chunks").get<std::uint64_t>();
        const auto& digest = j.at("digest").get_binary();
        if (digest.size() != t.digest.size()) return std::nullopt;
        std::copy(digest.begin(), digest.end(), t.digest.begin());
        t.algorithm = j.at("algorithm").get<std::string>();
        t.profile.min_size = j.at("min").get<std::size_t>();
        t.profile.normal_size = j.at("normal").get<std::size_t>();
        t.profile.max_size = j.at("max").get<std::size_t>();
        t.profile.keyed = j.at("keyed").get<bool>();
        t.time_ns = j.at("time_ns").get<std::int64_t>();
        if (t.chunks != ids / 32 || t.meta.name.empty()) return std::nullopt;
        return std::pair{std::move(t), ids};
    } catch (const json::exception&) {
        return std::nullopt;
    }
}

std::vector<std::byte> manifest_piece(const std::array<std::uint8_t, 16>& uid, std::uint32_t index, bool last,
                                      std::span<const std::uint8_t> body) {
    std::vector<std::uint8_t> out;
    out.reserve(kPieceHeaderSize + body.size());
    out.insert(out.end(), kManifestPieceMagic.begin(), kManifestPieceMagic.end());
    out.insert(out.end(), uid.begin(), uid.end());
    put_u32(out, index);
    out.push_back(last ? 1 : 0);
    out.insert(out.end(), body.begin(), body.end());
    std::vector<std::byte> bytes(out.size());
    std::memcpy(bytes.data(), out.data(), out.size());
    return bytes;
}

std::optional<ManifestPiece> parse_manifest_piece(std::span<const std::byte> bytes) {
    if (!starts_with(bytes, kManifestPieceMagic) || bytes.size() < kPieceHeaderSize) return std::nullopt;
    const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
    ManifestPiece m;
    std::memcpy(m.uid.data(), p + 8, 16);
    m.index = get_u32(p + 24);
    if (p[28] > 1) return std::nullopt;
    m.last = p[28] == 1;
    m.body.assign(p + kPieceHeaderSize, p + bytes.size());
    return m;
}

std::size_t piece_body_size(std::uint64_t max_chunk) {
    const std::uint64_t record = std::min<std::uint64_t>(max_chunk, std::uint64_t{1} << 20);
    return record >= kPieceHeaderSize + 64 ? static_cast<std::size_t>(record - kPieceHeaderSize) : 0;
}

std::array<std::uint8_t, 16> random_uid() {
    std::array<std::uint8_t, 16> b{};
    std::size_t got = 0;
    while (got < b.size()) {
        const ssize_t n = ::getrandom(b.data() + got, b.size() - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw StoreError(fmt::format("getrandom: {}", std::strerror(errno)));
        }
        got += static_cast<std::size_t>(n);
    }
    return b;
}

}  // namespace cdc::store::detail
