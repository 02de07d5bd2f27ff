// Helpers shared by the dupes walk, resolver and actions (not installed).
#pragma once

#include <cdc/dupes.hpp>

#include <cstdint>
#include <string>
#include <sys/stat.h>

namespace cdc::dupes_detail {

inline constexpr std::string_view kTempPrefix = ".cdc-dupes-tmp.";

inline std::int64_t mtime_ns(const struct stat& st) noexcept {
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

/// True when `st` still describes the walked file (same inode, size, mtime).
inline bool same_identity(const struct stat& st, std::uint64_t dev, std::uint64_t ino, std::uint64_t size,
                          std::int64_t mtime) noexcept {
    return S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_dev) == dev &&
           static_cast<std::uint64_t>(st.st_ino) == ino && static_cast<std::uint64_t>(st.st_size) == size &&
           mtime_ns(st) == mtime;
}

/// Opens `path` read-only without following a final symlink; -1 on error
/// (errno set).
int open_read(const std::string& path, bool follow) noexcept;

/// Reads exactly `len` bytes at `offset` (pread, retried on EINTR and short
/// reads). Returns false on error or early end of file (errno set; 0 = EOF).
bool read_exact(int fd, void* buf, std::size_t len, std::uint64_t offset) noexcept;

std::string errno_text(int err);

}  // namespace cdc::dupes_detail
