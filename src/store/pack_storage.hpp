// SPDX-License-Identifier: Apache-2.0
// The pack storage: where a store's packs live (docs/STORE.md, "Packs").
// Nothing outside an implementation of this interface opens a pack: the
// writer appends through a PackSink, readers read ranges through a
// PackReader, gc and verify list, cut and delete through PackStorage. A
// directory of files is the first implementation (dir_packs.hpp); object
// storage (S3) is the next, so nothing here assumes a local descriptor: a
// sink may not be reopenable (reopen() returns nullptr), a read is a range.
#pragma once

#include <cdc/store.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace cdc::store::detail {

/// One pack open for reading.
class PackReader {
public:
    virtual ~PackReader() = default;
    /// Reads up to out.size() bytes at `offset`; fewer only at the end of the
    /// pack. StoreError on an I/O error.
    virtual std::size_t read_at(std::uint64_t offset, std::span<std::byte> out) const = 0;
    /// The pack's current length.
    virtual std::uint64_t size() const = 0;
    /// How a reader of many records (OrderedDecoder) best groups those that
    /// lie close together: one read of at most `max_bytes`, taking up to
    /// `max_gap` bytes between two records for nothing rather than reading
    /// them apart.
    struct Runs {
        std::uint64_t max_bytes = std::uint64_t{1} << 20;
        std::uint64_t max_gap = 0;
    };
    virtual Runs runs() const { return {}; }
    /// Bytes read in place rather than copied out: `bytes` stays valid while
    /// `keep` is held.
    struct View {
        std::span<const std::byte> bytes;
        std::shared_ptr<const void> keep;
    };
    /// `n` bytes at `offset` in place, when the reader holds them in memory
    /// whole (S3: within one block of its cache); else an empty view, and
    /// the caller reads them with read_at.
    virtual View view_at(std::uint64_t /*offset*/, std::size_t /*n*/) const { return {}; }
};

/// One pack open for appending, by one writer for as long as it holds it
/// (no other writer appends to it meanwhile).
class PackSink {
public:
    virtual ~PackSink() = default;
    virtual std::uint64_t id() const = 0;
    /// Bytes in the pack (header included), appended ones too.
    virtual std::uint64_t size() const = 0;
    /// Appends; StoreError on failure, after which the sink takes no more
    /// (bytes beyond the last synced length are an interrupted writer's tail).
    virtual void append(std::span<const std::uint8_t> bytes) = 0;
    /// Makes everything appended durable.
    virtual void sync() = 0;
    /// Whether the sink takes no more once synced: in object storage a pack
    /// becomes an object, whole, at its sync (the appender starts another).
    virtual bool sealed() const { return false; }
};

class PackStorage {
public:
    virtual ~PackStorage() = default;
    /// Where pack `id` is, for messages (a path, a URL).
    virtual std::string describe(std::uint64_t id) const = 0;
    /// Creates pack `id` with its header written (not yet durable: sync the
    /// sink, then sync_names()); nullptr if it exists already (another
    /// writer's, or an orphan gc will reclaim).
    virtual std::unique_ptr<PackSink> create(std::uint64_t id) = 0;
    /// Continues pack `id` if no other writer holds it: once it is held,
    /// `committed()` gives its committed length (asked only then: another
    /// writer may have committed more before letting it go; nullopt: leave
    /// it), bytes beyond are cut off. nullptr if it is held, shorter than
    /// that, gone, or if this storage cannot append to a pack.
    virtual std::unique_ptr<PackSink> reopen(std::uint64_t id,
                                             const std::function<std::optional<std::uint64_t>()>& committed) = 0;
    /// Makes the packs created or removed since the last call durable by
    /// name (their directory entries; their bytes are each sink's sync).
    virtual void sync_names() = 0;
    /// Opens pack `id` for reading: nullptr if there is none, DamageError if
    /// what is there is not a plain pack (a link, a directory), StoreError if
    /// it cannot be opened.
    virtual std::unique_ptr<PackReader> open(std::uint64_t id) const = 0;
    /// Every pack present and its length.
    virtual std::map<std::uint64_t, std::uint64_t> list() const = 0;
    /// Deletes pack `id` if it is there (durable at the next sync_names()).
    virtual void remove(std::uint64_t id) = 0;
    /// Cuts pack `id` back to `length` (an interrupted writer's tail), if it
    /// can be opened.
    virtual void truncate(std::uint64_t id, std::uint64_t length) = 0;
    /// Reclaims what interrupted writers left that list() does not show
    /// (S3: unfinished multipart uploads, pack id reservations) for the
    /// packs of ids up to `up_to`; called by gc with no writer running, or,
    /// beside writers, with the last pack id taken before its mark (every
    /// session that could still be writing those has ended).
    virtual void reclaim_incomplete(std::uint64_t /*up_to*/) {}
};

}  // namespace cdc::store::detail
