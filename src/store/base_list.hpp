// SPDX-License-Identifier: Apache-2.0
// The chunk list of a committed file, compared with a new version of it as
// the new version is put under the same name (Writer::put_file). While the
// new chunks equal the stored file's, in order, its bytes are the stored
// file's bytes (a chunk id is the BLAKE3 of its bytes), so the whole-file
// BLAKE3 pass can wait: if the whole list matches, the stored digest is the
// new file's and the pass is skipped (a re-put of an unchanged file costs
// chunking and chunk hashing only). At the first difference the matched
// chunks are read back from the packs, in order, for the whole-file pass,
// and the put goes on as for any file.
//
// The list is read on a catalog connection of its own inside one read view,
// held while matching: the chunks read back are those that were compared,
// even if another writer replaces or removes the file meanwhile (chunks
// leave the packs only in gc, which waits for the writer's shared lock).
// Memory: one row of ids (kIdsPerSegment x 32 bytes); reading back, three
// blocks of 2 MiB.
#pragma once

#include "catalog.hpp"
#include "pack_storage.hpp"
#include "records.hpp"

#include <cdc/digest.hpp>
#include <cdc/store.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cdc::store::detail {

/// What a look for a file by name found (BaseList::open over a network):
/// for a caller that would otherwise ask again.
struct NameLook {
    bool done = false;  ///< looked up (outside a view)
    std::optional<StoredFile> file;
};

class BaseList {
public:
    /// The committed file `name`, read on `catalog` (a connection used by
    /// nothing else until the BaseList is gone), if it exists with at least
    /// `min_chunks` chunks; nullptr otherwise. `look`: what the look by
    /// name outside a view found, when the catalog is a round trip away.
    static std::unique_ptr<BaseList> open(Catalog& catalog, const PackStorage& packs, const crypto::Sealer* sealer,
                                          const std::string& name, std::uint64_t min_chunks,
                                          NameLook* look = nullptr);
    /// A committed file whose chunk list starts with `first` and has 2
    /// chunks or more (the most recently committed if several), if any: a
    /// large file put under a name the store does not hold may be one it
    /// holds under another (a new snapshot of a tree). Found by the
    /// catalog's first-id lookup (files_starting_with), which needs
    /// Catalog::upgrade_for_writing on a store of an earlier version.
    /// Among several, one of `size` if given comes first, then the one whose
    /// name ends most like `name` (the put's: a tree put again under a new
    /// prefix finds each file's own earlier version, not a sibling version
    /// of the same size that starts alike), then the most recent.
    static std::unique_ptr<BaseList> open_similar(Catalog& catalog, const PackStorage& packs,
                                                  const crypto::Sealer* sealer, const ChunkId& first,
                                                  std::optional<std::uint64_t> size, std::string_view name = {});
    ~BaseList();
    BaseList(const BaseList&) = delete;
    BaseList& operator=(const BaseList&) = delete;

    /// Compares the next chunks of the new version with the base's next ones:
    /// true if all equal (they count as matched), false at a difference (the
    /// list then stops matching for good, and none of these count: the
    /// matched chunks are those of earlier calls).
    bool match(std::span<const Digest> ids) {
        return match_n(ids.size(), [&](std::size_t i) { return ids[i].bytes.data(); });
    }
    bool match(std::span<const ChunkId> ids) {
        return match_n(ids.size(), [&](std::size_t i) { return ids[i].data(); });
    }
    /// True if every chunk of the base was matched (call after the last match).
    bool complete();
    std::uint64_t matched_chunks() const noexcept { return matched_chunks_; }
    const ChunkId& digest() const noexcept { return digest_; }
    std::uint64_t size() const noexcept { return size_; }
    /// The stored version's row and metadata (a writer keeps that row when
    /// nothing differs: ManifestDraft::keep_row).
    std::int64_t manifest_row() const noexcept { return manifest_; }
    std::uint32_t mode() const noexcept { return mode_; }
    std::int64_t mtime_ns() const noexcept { return mtime_ns_; }
    std::uint64_t chunk_count() const noexcept { return chunks_; }
    /// The stored file's name (another than the put's for open_similar).
    const std::string& name() const noexcept { return name_; }

    /// Reads the matched chunks back (decoded on two threads, record checks
    /// included) and hands their bytes to `f` in file order, in blocks of
    /// about 2 MiB (valid during the call; at most 3 blocks in memory). Ends
    /// the snapshot. DamageError naming the file and the chunk if one cannot
    /// be read.
    void read_matched(const std::function<void(std::span<const std::byte>)>& f);

private:
    explicit BaseList(Catalog& catalog) : catalog_(catalog) {}
    /// Takes `file` as the base, its list read now (`if_there`: found
    /// before the view began, read only while the view still holds it).
    void take(const StoredFile& file, bool if_there = false);
    bool load_row();
    /// True if the next base id equals the 32 bytes at `id` (consumes it).
    bool next_equals(const std::uint8_t* id);
    template <class IdAt>
    bool match_n(std::size_t n, IdAt id_at) {
        if (!matching_) return false;
        for (std::size_t i = 0; i < n; ++i) {
            if (!next_equals(id_at(i))) {
                matching_ = false;
                return false;
            }
        }
        matched_chunks_ += n;
        return true;
    }

    Catalog& catalog_;
    const PackStorage* packs_ = nullptr;
    const crypto::Sealer* sealer_ = nullptr;  // an encrypted store's key (records.hpp)
    std::string name_;
    bool viewing_ = false;  // catalog_'s read view is this list's
    std::int64_t manifest_ = 0;
    ChunkId digest_{};
    std::uint64_t size_ = 0;
    std::uint64_t chunks_ = 0;
    std::uint32_t mode_ = 0;
    std::int64_t mtime_ns_ = 0;
    std::unique_ptr<ListReader> rows_;
    std::vector<std::uint8_t> row_;  // ids of the current row
    std::size_t pos_ = 0;            // next id in row_ (bytes)
    bool matching_ = true;
    bool rows_done_ = false;
    std::uint64_t matched_chunks_ = 0;
};

}  // namespace cdc::store::detail
