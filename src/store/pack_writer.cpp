#include "pack_writer.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::store::detail {

void RecordBatch::add(const ChunkId& id, Codec codec, std::uint32_t raw_size, std::span<const std::byte> payload) {
    const std::size_t at = bytes.size();
    bytes.resize(at + kRecordHeaderSize + payload.size());
    encode_record(id, codec, raw_size, payload, bytes.data() + at);
    if (!payload.empty()) std::memcpy(bytes.data() + at + kRecordHeaderSize, payload.data(), payload.size());
    entries.push_back({id, at, raw_size, static_cast<std::uint32_t>(payload.size())});
}

PackAppender::PackAppender(std::filesystem::path dir, std::uint64_t pack_limit)
    : dir_(std::move(dir)), limit_(pack_limit), file_mode_(store_file_mode(dir_)) {}

PackAppender::~PackAppender() = default;

void PackAppender::start(Db& db) {
    {
        Stmt max(db, "SELECT coalesce(max(id), 0) FROM packs");
        if (max.step()) next_id_ = static_cast<std::uint64_t>(max.i64(0)) + 1;
    }
    // Continue a partly filled pack that no other writer holds: a store
    // written by many small puts does not become many small packs.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> candidates;
    {
        Stmt q(db, "SELECT id, size FROM packs WHERE size < ?1 ORDER BY size DESC LIMIT 8");
        q.bind(1, static_cast<std::int64_t>(limit_ - limit_ / 8));
        while (q.step()) candidates.emplace_back(q.i64(0), q.i64(1));
    }
    for (const auto& [id, listed_size] : candidates) {
        (void)listed_size;
        Fd fd = open_pack(dir_, id, O_RDWR);  // (never a link another user put there)
        if (!fd) continue;
        if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // another writer appends to it
        // Its committed length, read now that the pack is ours.
        Stmt q(db, "SELECT size FROM packs WHERE id = ?1");
        q.bind(1, static_cast<std::int64_t>(id));
        if (!q.step()) continue;
        const auto committed = static_cast<std::uint64_t>(q.i64(0));
        struct stat st {};
        if (::fstat(fd.get(), &st) != 0 || static_cast<std::uint64_t>(st.st_size) < committed) continue;  // damaged: leave it to verify
        // Bytes beyond the committed length are an interrupted writer's: cut them off.
        if (static_cast<std::uint64_t>(st.st_size) > committed && ::ftruncate(fd.get(), static_cast<off_t>(committed)) != 0)
            continue;
        if (::lseek(fd.get(), 0, SEEK_END) < 0) continue;
        current_.id = id;
        current_.fd = std::move(fd);
        current_.size = committed;
        current_.dirty = false;
        return;
    }
}

void PackAppender::roll() {
    if (current_.fd) retired_.push_back(std::move(current_));
    current_ = Open{};
    std::filesystem::create_directories(dir_ / kPacksDir);
    for (;;) {
        const std::uint64_t id = next_id_++;
        const auto path = pack_path(dir_, id);
        Fd fd = open_pack(dir_, id, O_RDWR | O_CREAT | O_EXCL, file_mode_);
        if (!fd) {
            if (errno == EEXIST) continue;  // another writer's, or an orphan gc will reclaim
            throw StoreError(fmt::format("cannot create pack '{}': {}", path.string(), open_failure(errno)));
        }
        // The store's mode, whatever the umask: in a store shared by a group
        // the members append to each other's packs.
        if (::fchmod(fd.get(), file_mode_) != 0)
            throw StoreError(fmt::format("cannot chmod new pack '{}': {}", path.string(), std::strerror(errno)));
        if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
            throw StoreError(fmt::format("cannot lock new pack '{}': {}", path.string(), std::strerror(errno)));
        const auto header = pack_header(id);
        write_all(fd.get(), header.data(), header.size(), fmt::format("pack '{}'", path.string()));
        current_.id = id;
        current_.fd = std::move(fd);
        current_.size = header.size();
        current_.dirty = true;
        created_ = true;
        return;
    }
}

void PackAppender::append(const RecordBatch& batch) {
    if (batch.entries.empty()) return;
    std::lock_guard lock(mutex_);
    const std::uint64_t n = batch.bytes.size();
    if (!current_.fd || (current_.size + n > limit_ && current_.size > kPackHeaderSize)) roll();
    const std::uint64_t base = current_.size;
    try {
        write_all(current_.fd.get(), batch.bytes.data(), batch.bytes.size(),
                  fmt::format("pack '{}'", pack_path(dir_, current_.id).string()));
    } catch (...) {
        // A partial write leaves bytes beyond the committed length (cut off
        // later); the file offset no longer matches size: retire the pack.
        current_.dirty = true;
        retired_.push_back(std::move(current_));
        current_ = Open{};
        throw;
    }
    current_.size += n;
    current_.dirty = true;
    unsynced_ += n;
    for (const auto& e : batch.entries)
        rows_.push_back({e.id, current_.id, base + e.offset, e.raw_size, e.stored_size});
}

std::pair<std::vector<std::pair<std::uint64_t, std::uint64_t>>, std::vector<PendingRow>> PackAppender::sync() {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> sizes;
    auto sync_one = [&](Open& p) {
        if (!p.fd || !p.dirty) return;
        fsync_fd(p.fd.get(), fmt::format("pack '{}'", pack_path(dir_, p.id).string()), true);
        p.dirty = false;
        sizes.emplace_back(p.id, p.size);
    };
    for (auto& p : retired_) sync_one(p);
    sync_one(current_);
    if (created_) {
        fsync_dir(dir_ / kPacksDir);
        created_ = false;
    }
    // A retired pack that failed mid-write is not listed at its in-memory
    // size: only rows appended before the failure name it, and they are below.
    synced_retired_ = retired_.size();
    unsynced_ = 0;
    return {std::move(sizes), std::exchange(rows_, {})};
}

void PackAppender::release_retired() {
    std::lock_guard lock(mutex_);
    retired_.erase(retired_.begin(), retired_.begin() + static_cast<std::ptrdiff_t>(synced_retired_));
    synced_retired_ = 0;
}

std::uint64_t PackAppender::unsynced_bytes() const {
    std::lock_guard lock(mutex_);
    return unsynced_;
}

std::size_t PackAppender::retired_count() const {
    std::lock_guard lock(mutex_);
    return retired_.size();
}

}  // namespace cdc::store::detail
