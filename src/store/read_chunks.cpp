// Store::read_chunks: many chunks by id from one snapshot, under one lock,
// with one index statement and the pack files kept open (read_chunk does all
// of that per call). The transfer service reads the chunks a client wants
// (pull) and the chunks it must hash for a whole-file digest (push) this way.
#include "codec.hpp"
#include "store_impl.hpp"

#include <fmt/format.h>

#include <cstring>

namespace cdc::store {

using namespace detail;

void Store::read_chunks(std::span<const ChunkId> ids, ChunkForm form,
                        const std::function<void(std::size_t, const StoredChunk&)>& f) const {
    if (ids.empty()) return;
    SharedLockGuard guard(impl_->lock);
    Transaction read(impl_->db, false);
    ChunkLookup lookup(impl_->db);
    PackFiles files(impl_->dir);
    std::vector<std::byte> record;
    StoredChunk out;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const ChunkId& id = ids[i];
        const auto loc = lookup.find(id);
        if (!loc)
            throw NotFoundError(fmt::format("chunk {} is not in the store '{}'", to_hex(id), impl_->dir.string()));
        const int fd = files.fd(loc->pack);
        out.raw_size = loc->raw_size;
        if (form == ChunkForm::stored) {
            out.codec = read_record(fd, *loc, id, record, "");
            out.bytes.assign(record.begin() + static_cast<std::ptrdiff_t>(kRecordHeaderSize), record.end());
        } else {
            out.codec = Codec::raw;
            out.bytes.resize(loc->raw_size);
            read_chunk_into(fd, *loc, id, record, out.bytes, "");
        }
        f(i, out);
    }
    read.commit();
}

}  // namespace cdc::store
