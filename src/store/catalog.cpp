// SPDX-License-Identifier: Apache-2.0
// What every catalog shares, engine aside: the checks of index rows and the
// walk over a manifest's chunks.
#include "catalog.hpp"

#include "codec.hpp"
#include "format.hpp"
#include "store_impl.hpp"

#include <fmt/format.h>

#include <charconv>

namespace cdc::store::detail {

ChunkId to_id(std::span<const std::uint8_t> bytes, const std::string& context) {
    if (bytes.size() != 32)
        throw DamageError(fmt::format("{}: a chunk id of {} bytes in the index", context, bytes.size()));
    ChunkId id;
    std::memcpy(id.data(), bytes.data(), 32);
    return id;
}

std::uint64_t checked_max_chunk(const std::unordered_map<std::string, std::string>& settings) {
    std::uint64_t max_raw = kMaxChunkSizeLimit;
    if (const auto it = settings.find("max_size"); it != settings.end()) {
        const std::string& v = it->second;
        std::uint64_t n = 0;
        const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec == std::errc() && end == v.data() + v.size() && n > 0) max_raw = std::min<std::uint64_t>(n, max_raw);
    }
    return max_raw;
}

CatalogCheck::CatalogCheck(std::uint64_t max_raw, std::function<std::uint64_t(std::uint64_t)> length)
    : max_raw_(max_raw), length_(std::move(length)) {}

std::uint64_t CatalogCheck::pack_length(std::uint64_t pack, bool fresh) {
    if (!fresh)
        if (const auto it = lengths_.find(pack); it != lengths_.end()) return it->second;
    const std::uint64_t length = length_(pack);
    lengths_[pack] = length;
    return length;
}

Location CatalogCheck::location(const ChunkId& id, std::int64_t pack, std::int64_t offset, std::int64_t raw_size,
                                std::int64_t stored_size, std::string_view context) {
    Location loc;
    loc.pack = static_cast<std::uint64_t>(pack);
    loc.offset = static_cast<std::uint64_t>(offset);
    auto damage = [&](const std::string& why) {
        throw DamageError(chunk_problem(context, id, loc, fmt::format("the index is damaged: {}", why)));
    };
    if (pack <= 0 || offset < 0) damage(fmt::format("pack {}, offset {}", pack, offset));
    if (raw_size < 0 || static_cast<std::uint64_t>(raw_size) > max_raw_)
        damage(fmt::format("a raw size of {} bytes (the store's chunks have at most {})", raw_size, max_raw_));
    loc.raw_size = static_cast<std::uint32_t>(raw_size);
    const std::uint64_t bound = stored_size_bound(loc.raw_size);
    if (stored_size < 0 || static_cast<std::uint64_t>(stored_size) > bound)
        damage(fmt::format("a stored size of {} bytes for {} raw bytes (at most {})", stored_size, raw_size, bound));
    loc.stored_size = static_cast<std::uint32_t>(stored_size);
    const std::uint64_t end = loc.offset + kRecordHeaderSize + loc.stored_size;
    if (loc.offset < kPackHeaderSize) damage(fmt::format("a record at offset {}, inside the pack's header", offset));
    // (A pack another writer appended to since it was cached: asked again.)
    if (end > pack_length(loc.pack, false) && end > pack_length(loc.pack, true)) {
        const std::uint64_t length = pack_length(loc.pack, false);
        damage(length == 0 ? std::string("its pack is not in the index")
                           : fmt::format("a record ending at {}, beyond its pack's committed length {}", end, length));
    }
    return loc;
}

void Catalog::find_many(std::span<const std::string> names,
                        const std::function<void(std::size_t, std::optional<ManifestInfo>)>& f) {
    for (std::size_t i = 0; i < names.size(); ++i) f(i, find(names[i]));
}

void Catalog::stored_files_with_lists(
    std::span<const std::string> names, std::uint64_t max_chunks,
    const std::function<void(std::size_t, const std::optional<StoredFile>&, ListReader*)>& f) {
    for (std::size_t i = 0; i < names.size(); ++i) {
        const auto file = stored_file(names[i]);
        std::unique_ptr<ListReader> list;
        if (file && file->chunks <= max_chunks) list = read_list(file->row);
        f(i, file, list.get());
    }
}

void Catalog::chunk_sizes(std::span<const ChunkId> ids, const std::function<void(std::size_t, std::uint32_t)>& f) {
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (const auto size = chunk_size(ids[i])) f(i, *size);
}

void Catalog::find_chunks(std::span<const ChunkId> ids, std::string_view context,
                          const std::function<void(std::size_t, const std::optional<Location>&)>& f) {
    for (std::size_t i = 0; i < ids.size(); ++i) f(i, find_chunk(ids[i], context));
}

std::uint64_t for_each_listed_chunk(Catalog& catalog, std::int64_t row, std::string_view name, std::uint64_t limit,
                                    const std::function<void(const ChunkId&, const Location&, std::uint64_t)>& f) {
    const std::unique_ptr<ListReader> list = catalog.read_list(row);
    const std::string context = fmt::format("'{}': ", name);
    std::uint64_t index = 0;
    std::uint32_t seq = 0;
    std::vector<std::uint8_t> ids;
    std::vector<ChunkId> row_ids;
    while (index < limit && list->next(seq, ids)) {
        // A row's ids looked up at once (one round trip for a shared catalog).
        row_ids.clear();
        for (std::size_t i = 0; i + 32 <= ids.size() && index + row_ids.size() < limit; i += 32) {
            ChunkId id;
            std::memcpy(id.data(), ids.data() + i, id.size());
            row_ids.push_back(id);
        }
        catalog.find_chunks(row_ids, context, [&](std::size_t i, const std::optional<Location>& loc) {
            if (!loc)
                throw DamageError(fmt::format("'{}': chunk {} (number {} of the file) is missing from the index", name,
                                              to_hex(row_ids[i]), index));
            f(row_ids[i], *loc, index);
            ++index;
        });
    }
    return index;
}

}  // namespace cdc::store::detail
