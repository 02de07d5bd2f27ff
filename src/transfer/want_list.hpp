// SPDX-License-Identifier: Apache-2.0
// A chunk list a pull answers (a file's, or a tree's contents'): which of
// its chunks it wants from the server, and where the bytes of the others
// are: a seed's, read back and checked, or the first occurrence of a chunk
// the list repeats. The file pull and the tree pull share it.
#pragma once

#include "protocol.hpp"
#include "seed_index.hpp"

#include <cdc/store.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <unordered_map>
#include <vector>

namespace cdc::transfer {

struct WantList {
    static constexpr std::size_t kNoSlot = std::numeric_limits<std::size_t>::max();

    std::vector<store::ChunkId> ids;
    std::vector<std::uint32_t> sizes;
    std::vector<bool> wanted;
    std::vector<std::size_t> slot;  ///< where the bytes of a chunk not wanted are (or will be)
    std::vector<std::byte> local;   ///< seed bytes, and wanted chunks that recur in the list
    std::size_t remaining = 0;      ///< wanted chunks not received yet
    std::size_t next_data = 0;
    std::size_t next_write = 0;

    /// Marks the chunks to ask for (ids and sizes set); returns the bytes
    /// taken from seeds or repeats instead.
    std::uint64_t mark(const SeedIndex& seeds) {
        const std::size_t count = ids.size();
        std::uint64_t reused = 0;
        wanted.assign(count, false);
        slot.assign(count, kNoSlot);
        std::unordered_map<store::ChunkId, std::size_t, IdHash> first;  // id -> its first index
        for (std::size_t i = 0; i < count; ++i) {
            const auto [it, fresh] = first.emplace(ids[i], i);
            if (!fresh) {
                // A repeat: the bytes of the first occurrence, kept in `local`.
                const std::size_t f = it->second;
                if (slot[f] == kNoSlot) {
                    slot[f] = local.size();
                    local.resize(local.size() + sizes[f]);
                }
                slot[i] = slot[f];
                reused += sizes[i];
                continue;
            }
            if (!seeds.empty()) {
                const std::size_t at = local.size();
                local.resize(at + sizes[i]);
                if (seeds.fetch(ids[i], std::span<std::byte>(local).subspan(at, sizes[i]))) {
                    slot[i] = at;
                    reused += sizes[i];
                    continue;
                }
                local.resize(at);
            }
            wanted[i] = true;
            ++remaining;
        }
        return reused;
    }

    /// The chunk the next data message belongs to: the next one wanted.
    std::size_t next_wanted() {
        std::size_t j = next_data;
        while (!wanted[j]) ++j;
        next_data = j;
        return j;
    }
};

}  // namespace cdc::transfer
