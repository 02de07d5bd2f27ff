// SPDX-License-Identifier: Apache-2.0
#include "format.hpp"

#include "../io/open_files.hpp"

#include <fmt/format.h>
#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::store::detail {

namespace {
void put_u32(std::uint8_t* p, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
void put_u64(std::uint8_t* p, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint32_t get_u32(const std::uint8_t* p) {
    std::uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}
std::uint64_t get_u64(const std::uint8_t* p) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}
std::uint64_t checksum(const std::uint8_t* header, std::span<const std::byte> payload) {
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, header, 48);
    XXH3_64bits_update(&st, payload.data(), payload.size());
    return XXH3_64bits_digest(&st);
}
}  // namespace

std::string marker_text(std::uint32_t version) { return fmt::format("cdc-store\nformat {}\n", version); }

std::uint32_t read_marker(const std::filesystem::path& dir) {
    const auto path = dir / kMarkerName;
    // Only a marker that is not there says "not a store": one that cannot
    // be read (a store of another user: EACCES) is that error.
    if (::access(path.c_str(), R_OK) != 0) {
        const int e = errno;
        struct stat st {};
        if (::stat(dir.c_str(), &st) != 0) {
            if (errno == ENOENT) throw VersionError(fmt::format("'{}' is not a store: no such directory", dir.string()));
            throw StoreError(fmt::format("cannot open the store '{}': {}", dir.string(), std::strerror(errno)));
        }
        if (!S_ISDIR(st.st_mode))
            throw VersionError(fmt::format("'{}' is not a store: not a directory", dir.string()));
        if (e == ENOENT)
            throw VersionError(fmt::format("'{}' is not a store (no {} file; create one with cdc store init)",
                                           dir.string(), kMarkerName));
        throw StoreError(fmt::format("cannot open the store '{}': {} ('{}')", dir.string(), std::strerror(e),
                                     path.string()));
    }
    std::ifstream in(path);
    if (!in)
        throw StoreError(fmt::format("cannot open the store '{}': cannot read '{}'", dir.string(), path.string()));
    std::string magic, word;
    std::uint64_t version = 0;
    in >> magic >> word >> version;
    if (!in || magic != "cdc-store" || word != "format" || version == 0)
        throw VersionError(fmt::format("'{}' is not a valid store marker", path.string()));
    if (version > kFormatVersion)
        throw VersionError(fmt::format("the store '{}' has format version {}, newer than this cdc supports ({}): "
                                       "use a newer cdc; the store was not modified",
                                       dir.string(), version, kFormatVersion));
    return static_cast<std::uint32_t>(version);
}

std::filesystem::path pack_path(const std::filesystem::path& dir, std::uint64_t pack) {
    return dir / kPacksDir / fmt::format("{:08}.pack", pack);
}

unsigned store_file_mode(const std::filesystem::path& dir) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return 0600;
    return static_cast<unsigned>(st.st_mode) & 0666u;
}

std::optional<std::uint64_t> parse_pack_name(std::string_view name) {
    constexpr std::string_view ext = ".pack";
    if (name.size() <= ext.size() || name.substr(name.size() - ext.size()) != ext) return std::nullopt;
    const std::string_view digits = name.substr(0, name.size() - ext.size());
    std::uint64_t v = 0;
    const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc() || p != digits.data() + digits.size() || v == 0) return std::nullopt;
    return v;
}

std::array<std::uint8_t, kPackHeaderSize> pack_header(std::uint64_t pack) {
    std::array<std::uint8_t, kPackHeaderSize> h{};
    std::memcpy(h.data(), kPackMagic.data(), kPackMagic.size());
    put_u32(h.data() + 8, kPlainFormatVersion);  // packs did not change: their records say whether they are sealed
    put_u32(h.data() + 12, static_cast<std::uint32_t>(pack));
    return h;
}

std::string check_pack_header(std::span<const std::uint8_t> bytes, std::uint64_t pack) {
    if (bytes.size() < kPackHeaderSize) return "shorter than its header";
    if (std::memcmp(bytes.data(), kPackMagic.data(), kPackMagic.size()) != 0) return "bad magic (not a pack)";
    const std::uint32_t version = get_u32(bytes.data() + 8);
    if (version > kFormatVersion) return fmt::format("format version {} is newer than {}", version, kFormatVersion);
    if (get_u32(bytes.data() + 12) != static_cast<std::uint32_t>(pack)) return "its header names another pack";
    return {};
}

void encode_record(const ChunkId& id, Codec codec, std::uint32_t raw_size, std::span<const std::byte> payload,
                   std::uint8_t* out) {
    std::memcpy(out, kRecordMagic.data(), 4);
    out[4] = static_cast<std::uint8_t>(codec);
    out[5] = out[6] = out[7] = 0;
    put_u32(out + 8, raw_size);
    put_u32(out + 12, static_cast<std::uint32_t>(payload.size()));
    std::memcpy(out + 16, id.data(), id.size());
    put_u64(out + 48, checksum(out, payload));
}

void encode_sealed_header(const ChunkId& id, Codec codec, bool compact, std::uint32_t stored_size,
                          std::uint8_t* out) {
    std::memcpy(out, kRecordMagic.data(), 4);
    out[4] = static_cast<std::uint8_t>(static_cast<std::uint8_t>(codec) | kRecordEncrypted |
                                       (compact ? kRecordCompact : 0));
    out[5] = out[6] = out[7] = 0;
    put_u32(out + 8, 0);  // the raw size is inside the sealed payload
    put_u32(out + 12, stored_size);
    std::memcpy(out + 16, id.data(), id.size());
    put_u64(out + 48, 0);
}

void set_record_checksum(std::uint8_t* header, std::span<const std::byte> payload) {
    put_u64(header + 48, checksum(header, payload));
}

std::optional<RecordHeader> decode_record(const std::uint8_t* h) {
    if (std::memcmp(h, kRecordMagic.data(), 4) != 0) return std::nullopt;
    if ((h[4] & ~(1u | kRecordEncrypted | kRecordCompact)) != 0 || h[5] != 0 || h[6] != 0 || h[7] != 0)
        return std::nullopt;
    // (the compact form is a form of sealed record only)
    if ((h[4] & kRecordCompact) != 0 && (h[4] & kRecordEncrypted) == 0) return std::nullopt;
    RecordHeader r;
    r.codec = static_cast<Codec>(h[4] & 1u);
    r.encrypted = (h[4] & kRecordEncrypted) != 0;
    r.compact = (h[4] & kRecordCompact) != 0;
    r.raw_size = get_u32(h + 8);
    r.stored_size = get_u32(h + 12);
    std::memcpy(r.id.data(), h + 16, r.id.size());
    r.checksum = get_u64(h + 48);
    return r;
}

bool record_checksum_ok(const std::uint8_t* header, std::span<const std::byte> payload) {
    return checksum(header, payload) == get_u64(header + 48);
}

void write_all(int fd, const void* data, std::size_t n, const std::string& what) {
    // At most 256 KiB a call: a write of 4 MiB into the page cache cost ten
    // times its usual system time about once in six (1.2-1.4 s for 512 MiB
    // against 0.1: Linux 6.18 guest, ext4), writes of 256 KiB never in 24
    // (docs/BENCHMARKS.md, "`get` against the RGW's own GET").
    constexpr std::size_t kPiece = std::size_t{256} << 10;
    const auto* p = static_cast<const std::uint8_t*>(data);
    while (n > 0) {
        const ssize_t w = ::write(fd, p, std::min(n, kPiece));
        if (w < 0) {
            if (errno == EINTR) continue;
            throw StoreError(fmt::format("writing {}: {}", what, std::strerror(errno)));
        }
        p += w;
        n -= static_cast<std::size_t>(w);
    }
}

void pwrite_all(int fd, const void* data, std::size_t n, std::uint64_t offset, const std::string& what) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    while (n > 0) {
        const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(offset));
        if (w < 0) {
            if (errno == EINTR) continue;
            throw StoreError(fmt::format("writing {}: {}", what, std::strerror(errno)));
        }
        p += w;
        n -= static_cast<std::size_t>(w);
        offset += static_cast<std::uint64_t>(w);
    }
}

std::size_t pread_full(int fd, void* data, std::size_t n, std::uint64_t offset, const std::string& what) {
    auto* p = static_cast<std::uint8_t*>(data);
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = ::pread(fd, p + got, n - got, static_cast<off_t>(offset + got));
        if (r < 0) {
            if (errno == EINTR) continue;
            throw StoreError(fmt::format("reading {}: {}", what, std::strerror(errno)));
        }
        if (r == 0) break;
        got += static_cast<std::size_t>(r);
    }
    return got;
}

void fsync_fd(int fd, const std::string& what, bool data_only) {
    const int rc = data_only ? ::fdatasync(fd) : ::fsync(fd);
    if (rc != 0) throw StoreError(fmt::format("syncing {}: {}", what, std::strerror(errno)));
}

void fsync_dir(const std::filesystem::path& dir) {
    Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) throw StoreError(fmt::format("opening directory '{}': {}", dir.string(), std::strerror(errno)));
    fsync_fd(fd.get(), fmt::format("directory '{}'", dir.string()), false);
}

std::uint64_t file_size_or_zero(const std::filesystem::path& p) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return 0;
    return static_cast<std::uint64_t>(st.st_size);
}

namespace {

Fd open_regular_at(int dirfd, const char* name, int flags, unsigned mode) {
    return Fd(cdc::detail::open_regular_file(dirfd, name, flags, static_cast<mode_t>(mode), false));
}

}  // namespace

Fd open_store_file(const std::filesystem::path& p, int flags, unsigned mode) {
    return open_regular_at(AT_FDCWD, p.c_str(), flags, mode);
}

std::string open_failure(int e) {
    if (e == ELOOP)
        return "it or the packs directory is a symbolic link (a store's files are never followed through links)";
    if (e == cdc::detail::kNotRegularFile) return "it is not a regular file";
    return std::strerror(e);
}

StoreLock::StoreLock(const std::filesystem::path& dir, std::unique_ptr<HostsLock> hosts)
    : path_((dir / kLockName).string()), hosts_(std::move(hosts)) {
    fd_ = open_store_file(path_, O_RDWR | O_CREAT, store_file_mode(dir));
    if (!fd_) throw StoreError(fmt::format("cannot open the store's lock file '{}': {}", path_, open_failure(errno)));
}

void StoreLock::lock(bool exclusive, const std::function<void()>& waiting) {
    std::lock_guard g(m_);
    if (depth_ > 0) {
        if (exclusive && !exclusive_)
            throw StoreError(fmt::format("cannot lock '{}' exclusively: this process holds it shared", path_));
        ++depth_;
        return;
    }
    // (gc beside writers: the hosts lock keeps other gcs out, DIR/lock none)
    const int op = exclusive && !(hosts_ && hosts_->gc_beside_writers()) ? LOCK_EX : LOCK_SH;
    if (::flock(fd_.get(), op | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK)
            throw StoreError(fmt::format("cannot lock '{}': {}", path_, std::strerror(errno)));
        if (waiting) waiting();
        while (::flock(fd_.get(), op) != 0) {
            if (errno != EINTR) throw StoreError(fmt::format("cannot lock '{}': {}", path_, std::strerror(errno)));
        }
    }
    if (hosts_) {
        try {
            hosts_->lock(exclusive, waiting);
        } catch (...) {
            ::flock(fd_.get(), LOCK_UN);
            throw;
        }
    }
    exclusive_ = exclusive;
    depth_ = 1;
}

void StoreLock::unlock() {
    std::lock_guard g(m_);
    if (depth_ == 0 || --depth_ > 0) return;
    if (hosts_) hosts_->unlock();
    if (fd_) ::flock(fd_.get(), LOCK_UN);
}

}  // namespace cdc::store::detail
