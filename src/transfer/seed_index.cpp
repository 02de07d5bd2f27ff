// SPDX-License-Identifier: Apache-2.0
#include "seed_index.hpp"

#include "chunk_feed.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include <fcntl.h>
#include <unistd.h>

namespace cdc::transfer {

namespace {
std::uint64_t key_of(const store::ChunkId& id) {
    std::uint64_t k;
    std::memcpy(&k, id.data(), sizeof k);
    return k;
}
}  // namespace

SeedIndex::SeedIndex(std::shared_ptr<const CutFinder> finder) : finder_(std::move(finder)) {}

SeedIndex::~SeedIndex() {
    for (const int fd : fds_) ::close(fd);
}

std::uint64_t SeedIndex::add(const std::filesystem::path& path, Digest* whole) {
    if (!finder_) throw OptionError("seeds cannot be chunked without the store's key");
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw IoError(fmt::format("cannot open the seed '{}': {}", path.string(), std::strerror(errno)));
    fds_.push_back(fd);
    const auto file = static_cast<std::uint32_t>(fds_.size() - 1);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    FdReader reader(fd, path.string());
    ChunkFeed feed(finder_, reader);
    std::uint64_t bytes = 0;
    std::optional<Hasher> hasher;
    if (whole) hasher.emplace(DigestKind::blake3);
    while (ChunkFeed::Segment* g = feed.next()) {
        if (hasher) hasher->update(g->bytes);
        for (std::size_t i = 0; i < g->ids.size(); ++i)
            entries_.push_back({key_of(g->ids[i]), g->offset + g->starts[i], file, g->lengths[i]});
        bytes += g->bytes.size();
        feed.release(g);
    }
    if (hasher) *whole = hasher->finish();
    return bytes;
}

void SeedIndex::seal() {
    std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });
}

bool SeedIndex::fetch(const store::ChunkId& id, std::span<std::byte> out) const {
    const std::uint64_t key = key_of(id);
    auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                               [](const Entry& e, std::uint64_t k) { return e.key < k; });
    for (; it != entries_.end() && it->key == key; ++it) {
        if (it->size != out.size()) continue;
        std::size_t got = 0;
        while (got < out.size()) {
            const ssize_t n = ::pread(fds_[it->file], out.data() + got, out.size() - got,
                                      static_cast<off_t>(it->offset + got));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            got += static_cast<std::size_t>(n);
        }
        if (got == out.size() && store::chunk_id_of(out) == id) return true;
    }
    return false;
}

}  // namespace cdc::transfer
