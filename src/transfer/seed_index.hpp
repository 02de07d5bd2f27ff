// SPDX-License-Identifier: Apache-2.0
// The chunks of local files a pull may reuse instead of fetching them (the
// seeds: an older copy of the output, a partial earlier pull, --seed files),
// chunked with the store's parameters. The index keeps 24 bytes per chunk
// (an id prefix, the file, offset and size), not the bytes: a candidate is
// read back and its BLAKE3 checked against the full id when it is used, so a
// seed that changed since it was indexed is never trusted.
#pragma once

#include <cdc/algorithms.hpp>
#include <cdc/digest.hpp>
#include <cdc/store.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

namespace cdc::transfer {

class SeedIndex {
public:
    /// Without a finder (a keyed store whose key is unknown) nothing can be added.
    explicit SeedIndex(std::shared_ptr<const CutFinder> finder);
    ~SeedIndex();
    SeedIndex(const SeedIndex&) = delete;
    SeedIndex& operator=(const SeedIndex&) = delete;

    /// Chunks `path` and indexes its chunks; returns its size. IoError if it
    /// cannot be opened or read. With `whole`, also its BLAKE3.
    std::uint64_t add(const std::filesystem::path& path, Digest* whole = nullptr);
    /// Sorts the index (after the last add).
    void seal();
    bool empty() const noexcept { return entries_.empty(); }
    bool usable() const noexcept { return finder_ != nullptr; }
    /// Copies the chunk `id` of `out.size()` bytes into `out` if a seed holds
    /// it (and still does: the bytes read back have that BLAKE3).
    bool fetch(const store::ChunkId& id, std::span<std::byte> out) const;

private:
    struct Entry {
        std::uint64_t key;
        std::uint64_t offset;
        std::uint32_t file;
        std::uint32_t size;
    };
    std::shared_ptr<const CutFinder> finder_;
    std::vector<Entry> entries_;
    std::vector<int> fds_;
};

}  // namespace cdc::transfer
