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
inline bool same_identity(const struct stat& st, const DupesEntry& walked) noexcept {
    return S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_dev) == walked.dev &&
           static_cast<std::uint64_t>(st.st_ino) == walked.ino && static_cast<std::uint64_t>(st.st_size) == walked.size &&
           mtime_ns(st) == walked.mtime_ns;
}

/// Opens `path` read-only without following a final symlink; -1 on error
/// (errno set).
int open_read(const char* path, bool follow) noexcept;

/// Reads exactly `len` bytes at `offset` (pread, retried on EINTR and short
/// reads). Returns false on error or early end of file (errno set; 0 = EOF).
bool read_exact(int fd, void* buf, std::size_t len, std::uint64_t offset) noexcept;

std::string errno_text(int err);

/// Fills the private parts of a DupesResult (resolve_dupes builds it).
struct ResultBuilder {
    using GroupRecord = DupesResult::GroupRecord;
    DupesResult& result;
    StringArena& paths() noexcept { return result.paths_; }
    DupesEntries& entries() noexcept { return result.entries_; }
    std::vector<GroupRecord>& groups() noexcept { return result.groups_; }
    std::vector<std::uint32_t>& files() noexcept { return result.files_; }
    std::vector<std::uint32_t>& linked() noexcept { return result.linked_; }
    std::vector<std::string_view>& stale_temporaries() noexcept { return result.stale_temporaries_; }
};

}  // namespace cdc::dupes_detail
