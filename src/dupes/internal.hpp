// What the dupes walk, resolver and actions share (not installed): the path
// arena, the walked entries and the data behind DupesScan and DupesResult.
#pragma once

#include <cdc/dupes.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace cdc::dupes_detail {

inline constexpr std::string_view kTempPrefix = ".cdc-dupes-tmp.";

/// Strings stored once, end to end, in chunks of kChunkSize bytes that are
/// never moved nor freed before the arena: a view returned by store() stays
/// valid as long as the arena lives (also after the arena is moved). Each
/// string is followed by a NUL, so its data() can be handed to system calls.
/// A string longer than a chunk gets a block of its own.
class StringArena {
public:
    static constexpr std::size_t kChunkSize = std::size_t{64} << 10;

    /// Copies `s` (and a NUL) into the arena.
    std::string_view store(std::string_view s);
    /// Bytes allocated for the strings (chunks and own blocks).
    std::size_t capacity() const noexcept { return capacity_; }

private:
    std::vector<std::unique_ptr<char[]>> blocks_;
    char* next_ = nullptr;  // free space of the current chunk
    std::size_t left_ = 0;
    std::size_t capacity_ = 0;
};

/// One walked path of a regular file, and that file's identity at the time.
struct Entry {
    const char* path = nullptr;  ///< NUL-terminated, held by the StringArena of the scan (then of the result)
    std::uint64_t dev = 0, ino = 0, size = 0;
    std::int64_t mtime_ns = 0;
};

/// Walked entries: a deque, so that growing never copies them (nor holds
/// them twice) and never leaves more than one block unused.
using Entries = std::deque<Entry>;

/// The number of consecutive entries from `first` on that name one inode
/// (entries sorted by size, dev, inode, path).
std::size_t paths_of_inode(const Entries& entries, std::size_t first) noexcept;

/// A DupesFile (paths and identity) of the entries from `first` on that
/// name one inode.
DupesFile file_at(const Entries& entries, std::size_t first);

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
inline bool same_identity(const struct stat& st, const Entry& e) noexcept {
    return same_identity(st, e.dev, e.ino, e.size, e.mtime_ns);
}
inline bool same_identity(const struct stat& st, const DupesFile& f) noexcept {
    return same_identity(st, f.dev, f.ino, f.size, f.mtime_ns);
}

/// Opens `path` read-only without following a final symlink; -1 on error
/// (errno set).
int open_read(const char* path, bool follow) noexcept;

/// Reads exactly `len` bytes at `offset` (pread, retried on EINTR and short
/// reads). Returns false on error or early end of file (errno set; 0 = EOF).
bool read_exact(int fd, void* buf, std::size_t len, std::uint64_t offset) noexcept;

std::string errno_text(int err);

}  // namespace cdc::dupes_detail

namespace cdc {

struct DupesScan::Data {
    dupes_detail::StringArena paths;
    dupes_detail::Entries entries;                     ///< sorted by path, each path once
    std::vector<std::string_view> stale_temporaries;  ///< .cdc-dupes-tmp.* names seen (in `paths`), sorted
    std::uint64_t files_scanned = 0;
    std::uint64_t skipped = 0;
};

struct DupesResult::Data {
    struct GroupRecord {
        std::uint64_t size = 0;
        std::uint32_t first = 0, count = 0;  // a range of files
    };
    dupes_detail::StringArena paths;
    dupes_detail::Entries entries;        // by size, dev, inode, path
    std::vector<GroupRecord> groups;
    std::vector<std::uint32_t> files;     // per grouped file, the index of its first entry
    std::vector<std::uint32_t> linked;    // same, per linked file
    std::vector<std::string_view> stale_temporaries;
};

}  // namespace cdc
