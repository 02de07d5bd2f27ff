// SPDX-License-Identifier: Apache-2.0
// A committed file's chunk list, read in batches with bounded memory: a
// thread walks Store::for_each_chunk (on a Store of its own, from one
// snapshot) and hands over batches through a queue of two. A 4 GiB file
// has ~500k chunks; the list is never held whole.
#pragma once

#include "../common/handoff.hpp"

#include <cdc/store.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace cdc::transfer {

class ManifestCursor {
public:
    struct Batch {
        std::vector<store::ChunkId> ids;
        std::vector<std::uint32_t> sizes;
    };

    /// Starts reading the chunk list of `name` in batches of at most
    /// `batch_chunks`. Errors (NotFoundError, DamageError) surface in next().
    ManifestCursor(const std::filesystem::path& store_dir, const store::OpenOptions& options, std::string name,
                   std::size_t batch_chunks);
    ManifestCursor(const ManifestCursor&) = delete;
    ManifestCursor& operator=(const ManifestCursor&) = delete;

    /// The next batch; false at the end of the list. Rethrows the reader's error.
    bool next(Batch& out);

private:
    common::Handoff<Batch> handoff_{2};
};

}  // namespace cdc::transfer
