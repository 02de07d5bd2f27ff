// SPDX-License-Identifier: Apache-2.0
// The store's on-disk format (docs/STORE.md): directory layout, the pack and
// record headers, the record checksum. Format version 1.
#pragma once

#include "../common/posix.hpp"
#include "catalog.hpp"

#include <cdc/store.hpp>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace cdc::store::detail {

inline constexpr std::string_view kMarkerName = "cdc-store";
inline constexpr std::string_view kDbName = "index.db";
inline constexpr std::string_view kLockName = "lock";
inline constexpr std::string_view kPacksDir = "packs";

inline constexpr std::size_t kPackHeaderSize = 16;
inline constexpr std::size_t kRecordHeaderSize = 56;
inline constexpr std::array<std::uint8_t, 8> kPackMagic = {'C', 'D', 'C', 'P', 'A', 'C', 'K', '1'};
inline constexpr std::array<std::uint8_t, 4> kRecordMagic = {'C', 'R', 'e', 'c'};
/// Chunk ids per manifest_chunks row.
inline constexpr std::size_t kIdsPerSegment = 4096;
/// The text of DIR/cdc-store for a format version.
std::string marker_text(std::uint32_t version);
/// Reads DIR/cdc-store: VersionError if absent, unreadable or newer than
/// kFormatVersion; returns the version.
std::uint32_t read_marker(const std::filesystem::path& dir);

std::filesystem::path pack_path(const std::filesystem::path& dir, std::uint64_t pack);
/// The permission bits of files made in the store `dir`: the read and write
/// bits of the store directory's mode (0700, as init makes it: 0600; a group
/// share chmodded to 0770: 0660). 0600 if it cannot be read.
unsigned store_file_mode(const std::filesystem::path& dir);
/// The pack id of a file name "NNNNNNNN.pack", if it is one.
std::optional<std::uint64_t> parse_pack_name(std::string_view file_name);

std::array<std::uint8_t, kPackHeaderSize> pack_header(std::uint64_t pack);
/// Empty if fine, else what is wrong with a pack's first bytes.
std::string check_pack_header(std::span<const std::uint8_t> bytes, std::uint64_t pack);

/// Bit 1 of a record's flags byte (the byte after the magic; bit 0 is the
/// codec): the payload is sealed (docs/STORE-V2.md "Records and packs").
inline constexpr std::uint8_t kRecordEncrypted = 2;
/// Bytes of the raw size that leads a sealed record's plain text (the
/// first sealed form).
inline constexpr std::size_t kSealedSizeBytes = 4;
/// Bit 2 (with kRecordEncrypted): a sealed record of the compact form
/// (docs/STORE-V2.md "Records and packs"): a 128-bit nonce, and no raw size
/// sealed ahead of the stored form (the raw bytes' length, or the size its
/// zstd frame declares). 12 bytes less per record than the first form.
inline constexpr std::uint8_t kRecordCompact = 4;

struct RecordHeader {
    Codec codec = Codec::raw;
    bool encrypted = false;
    bool compact = false;  ///< a sealed record of the compact form (kRecordCompact)
    std::uint32_t raw_size = 0;
    std::uint32_t stored_size = 0;
    ChunkId id{};
    std::uint64_t checksum = 0;
};

/// Writes the 56-byte header of a record with this payload (computes the checksum).
void encode_record(const ChunkId& id, Codec codec, std::uint32_t raw_size, std::span<const std::byte> payload,
                   std::uint8_t* out);
/// The first 48 bytes of a sealed record's header (magic, flags with
/// kRecordEncrypted and, for the compact form, kRecordCompact, raw size 0,
/// stored size, id): the associated data its payload is sealed with. The
/// checksum follows once the payload is sealed (set_record_checksum).
void encode_sealed_header(const ChunkId& id, Codec codec, bool compact, std::uint32_t stored_size,
                          std::uint8_t* out);
/// Bytes of a header that a sealed payload's tag covers (all but the checksum).
inline constexpr std::size_t kRecordAuthenticatedBytes = 48;
/// Computes and writes the checksum of a header whose payload follows it.
void set_record_checksum(std::uint8_t* header, std::span<const std::byte> payload);
/// Decodes a header (no checksum check); empty optional if the magic,
/// codec or reserved bytes are wrong.
std::optional<RecordHeader> decode_record(const std::uint8_t* header);
/// True if the stored checksum matches header + payload.
bool record_checksum_ok(const std::uint8_t* header, std::span<const std::byte> payload);

// ---- small POSIX helpers (throw StoreError naming `what`)
void write_all(int fd, const void* data, std::size_t n, const std::string& what);
/// Writes exactly n bytes at `offset`.
void pwrite_all(int fd, const void* data, std::size_t n, std::uint64_t offset, const std::string& what);
/// Reads exactly n bytes at `offset`; returns the bytes read (< n at EOF).
std::size_t pread_full(int fd, void* data, std::size_t n, std::uint64_t offset, const std::string& what);
void fsync_fd(int fd, const std::string& what, bool data_only);
void fsync_dir(const std::filesystem::path& dir);
using common::timespec_of_ns;
/// The size of `p` itself (a link is not followed), 0 if it cannot be examined.
std::uint64_t file_size_or_zero(const std::filesystem::path& p);

using common::Fd;

/// Opens a file of the store (the lock) with `flags` never through a link
/// and never blocking on a FIFO (cdc::detail::open_regular_file: ELOOP for
/// a link, kNotRegularFile for anything but a regular file), as a store
/// shared by a group may hold what another member put there. Closed (empty)
/// on failure, errno set; open_failure names it.
Fd open_store_file(const std::filesystem::path& p, int flags, unsigned mode = 0);
/// Why open_store_file or a pack's open failed (errno `e`), for a message.
std::string open_failure(int e);

/// flock(2) on DIR/lock: shared for writers and readers, exclusive for gc.
class StoreLock {
public:
    StoreLock() = default;
    /// Opens DIR/lock (not locked yet); `hosts`, if given, is locked after it
    /// and unlocked before it (a shared catalog's lock across hosts).
    explicit StoreLock(const std::filesystem::path& dir, std::unique_ptr<HostsLock> hosts = nullptr);
    /// (moved only before any thread uses it: the count moves, the mutex is new)
    StoreLock(StoreLock&& o) noexcept
        : fd_(std::move(o.fd_)), path_(std::move(o.path_)), hosts_(std::move(o.hosts_)),
          depth_(std::exchange(o.depth_, 0)), exclusive_(o.exclusive_) {}
    StoreLock& operator=(StoreLock&& o) noexcept {
        fd_ = std::move(o.fd_);
        path_ = std::move(o.path_);
        hosts_ = std::move(o.hosts_);
        depth_ = std::exchange(o.depth_, 0);
        exclusive_ = o.exclusive_;
        return *this;
    }
    /// Blocks until locked; `waiting` is called once if it has to wait.
    /// Nested: a lock taken while this process holds it (a read inside gc,
    /// two reading threads) only counts, so that the inner unlock neither
    /// releases the outer hold nor turns an exclusive lock into a shared
    /// one (flock on the same descriptor would); an exclusive lock inside a
    /// shared one is a StoreError.
    void lock(bool exclusive, const std::function<void()>& waiting = {});
    void unlock();
    bool held() const noexcept {
        std::lock_guard g(m_);
        return depth_ > 0;
    }

private:
    Fd fd_;
    std::string path_;
    std::unique_ptr<HostsLock> hosts_;
    mutable std::mutex m_;
    std::size_t depth_ = 0;
    bool exclusive_ = false;
};

/// Holds a StoreLock shared for a scope.
class SharedLockGuard {
public:
    explicit SharedLockGuard(StoreLock& l) : l_(l) { l_.lock(false); }
    ~SharedLockGuard() { l_.unlock(); }
    SharedLockGuard(const SharedLockGuard&) = delete;
    SharedLockGuard& operator=(const SharedLockGuard&) = delete;

private:
    StoreLock& l_;
};

}  // namespace cdc::store::detail
