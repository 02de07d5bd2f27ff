// SPDX-License-Identifier: Apache-2.0
#include "manifest_cursor.hpp"

#include <utility>

namespace cdc::transfer {

ManifestCursor::ManifestCursor(const std::filesystem::path& store_dir, const store::OpenOptions& options,
                               std::string name, std::size_t batch_chunks) {
    handoff_.start([this, dir = store_dir, options, name = std::move(name), batch_chunks] {
        const store::Store s = store::Store::open(dir, options);
        Batch batch;
        s.for_each_chunk(name, [&](const store::ChunkId& id, std::uint32_t size) {
            batch.ids.push_back(id);
            batch.sizes.push_back(size);
            if (batch.ids.size() == batch_chunks) handoff_.push(std::exchange(batch, {}));
        });
        if (!batch.ids.empty()) handoff_.push(std::move(batch));
    });
}

bool ManifestCursor::next(Batch& out) { return handoff_.next(out); }

}  // namespace cdc::transfer
