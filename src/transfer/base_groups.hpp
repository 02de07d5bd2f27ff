// SPDX-License-Identifier: Apache-2.0
// The groups of chunks (protocol.hpp: for_each_group) of the committed file a
// push replaces, for a client that sends GroupLists: a group the stored file
// has is taken from it, so the client need not list its chunks one by one.
//
// The stored file's list (store::StoredList, from the ingest door) is read
// once, in one snapshot held until the BaseGroups is gone: the ids handed out are
// those of the file as it was then, even if another writer replaces it
// meanwhile, and their chunks stay in the packs (gc waits for the pushing
// session's shared lock). A group found here says which chunks the client
// means, not that its bytes are right: the whole-file BLAKE3 the server
// computes over the chunks (read back) still decides the commit.
//
// Memory: 32 bytes per group (at most kMaxGroups: beyond, groups are not
// remembered and travel as ids) and kRowsKept rows of ids (128 KiB each).
#pragma once

#include "../store/ingest.hpp"

#include <cdc/store.hpp>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cdc::transfer {

class BaseGroups {
public:
    /// Groups remembered at most, about (a file of ~4M chunks: 32 GB at 8
    /// KiB); the rest of a longer list is neither read nor remembered (its
    /// groups travel as ids).
    static constexpr std::size_t kMaxGroups = std::size_t{1} << 18;

    /// The groups of the committed file `list` reads (nullptr: none, or
    /// one without chunks). `max_groups`: the cap (tests lower it); the
    /// list is read up to it. DamageError if the list is not as long as
    /// its manifest says.
    static std::unique_ptr<BaseGroups> open(std::unique_ptr<store::StoredList> list,
                                            std::size_t max_groups = kMaxGroups);
    ~BaseGroups();
    BaseGroups(const BaseGroups&) = delete;
    BaseGroups& operator=(const BaseGroups&) = delete;

    /// The index of the first chunk of a group of the stored file with this
    /// digest and `count` chunks, if it has one. Of several (content that
    /// repeats), the one starting at `near` if there is one, else the first
    /// after it, else the last before it: a version's groups are found in
    /// the stored order, so the rows of ids they need are read once.
    std::optional<std::uint64_t> find(const store::ChunkId& digest, std::size_t count, std::uint64_t near = 0) const;
    /// Appends the stored file's ids [first, first + count) to `out`.
    /// DamageError if the list is shorter.
    void append_ids(std::uint64_t first, std::size_t count, std::vector<store::ChunkId>& out);
    std::size_t group_count() const noexcept { return groups_.size(); }

private:
    struct Group {
        std::array<std::uint8_t, 16> key;  // the digest's first 16 bytes
        std::uint64_t first;
        std::uint32_t count;
    };
    struct Row {
        std::uint32_t seq;
        std::uint64_t first;  // index of its first id
    };
    BaseGroups() = default;
    /// Reads the list (chunks_ ids) and cuts its groups.
    void read_groups();
    /// Row r of rows_, read if it is not among the rows kept; nullptr if
    /// the snapshot lacks it.
    const std::vector<std::uint8_t>* load_row(std::size_t r);
    /// Rows of ids kept, the least recently used replaced (groups of
    /// repeated content point back into earlier rows).
    static constexpr std::size_t kRowsKept = 8;
    struct KeptRow {
        std::size_t row = SIZE_MAX;
        std::uint64_t used = 0;
        std::vector<std::uint8_t> ids;
    };

    std::unique_ptr<store::StoredList> list_;
    std::string name_;
    std::uint64_t chunks_ = 0;
    std::size_t max_groups_ = kMaxGroups;
    std::vector<Group> groups_;  // sorted by key
    std::vector<Row> rows_;
    std::array<KeptRow, kRowsKept> kept_;
    std::uint64_t uses_ = 0;
};

}  // namespace cdc::transfer
