// SPDX-License-Identifier: Apache-2.0
// What the dupes walk, resolver and actions share (not installed): the path
// arena, the walked entries and the data behind DupesScan and DupesResult.
#pragma once

#include <cdc/dupes.hpp>

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <utility>
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

/// An open descriptor, closed with the object.
class Fd {
public:
    Fd() = default;
    explicit Fd(int fd) noexcept : fd_(fd) {}
    ~Fd() { reset(); }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const noexcept { return fd_; }
    void reset(int fd = -1) noexcept;

private:
    int fd_ = -1;
};

/// Opens `path` read-only, without following a final symlink unless
/// `follow`, never blocking (O_NONBLOCK: a FIFO or a device put where a
/// file was); -1 on error (errno set). The caller checks with fstat that it
/// is the regular file it expects.
int open_read(const char* path, bool follow) noexcept;
/// The same relative to a directory (never following a symlink), read-only
/// or read-write.
int open_at(int dirfd, const char* name, bool writable = false) noexcept;

/// Reads exactly `len` bytes at `offset` (pread, retried on EINTR and short
/// reads). Returns false on error or early end of file (errno set; 0 = EOF).
bool read_exact(int fd, void* buf, std::size_t len, std::uint64_t offset) noexcept;

std::string errno_text(int err);

/// Throws OptionError (field "follow_symlinks") if `options` follow links:
/// actions never act through symbolic links (plan and apply both check).
void refuse_followed_links(const DupesOptions& options);

/// The longest of `roots` that `path` is (or is below); "" if none.
std::string_view root_of(std::span<const std::string> roots, std::string_view path) noexcept;

/// The directory of a walked path, opened so that a symlink swapped in
/// below the root it was found under cannot redirect it: the root as the
/// walk resolved it, then each directory with O_NOFOLLOW. Changes are made
/// relative to `fd` (fstatat, openat, linkat, renameat, unlinkat on `name`).
struct ParentDir {
    Fd fd;
    std::string name;  ///< the last component of the path
    /// "" or why the directory cannot be opened.
    std::string open(std::span<const std::string> roots, std::string_view path);
};

/// What a merge must preserve, besides the bytes: the keys that split a
/// group into merge sets (hardlink, reflink).
struct FileMeta {
    std::uint64_t dev = 0;
    std::uint32_t uid = 0, gid = 0, mode = 0;  ///< mode: permission, setuid, setgid and sticky bits
    std::vector<std::pair<std::string, std::string>> xattrs;  ///< every extended attribute (name, value), sorted

    /// Same merge keys (file system; owner, group, mode and attributes unless ignored).
    bool same_keys(const FileMeta& o, bool ignore_metadata) const noexcept {
        return dev == o.dev && (ignore_metadata || (uid == o.uid && gid == o.gid && mode == o.mode && xattrs == o.xattrs));
    }
};

/// A kept file and a duplicate path, opened and checked against the scan.
struct VerifiedPair {
    Fd kept, dup;
    ParentDir dir;  ///< the duplicate's directory; dir.name is the duplicate's name
    struct stat kept_st {}, dup_st {};  ///< when opened

    /// Opens both ("" or why not): the kept file by its first path (no final
    /// symlink), the duplicate relative to its directory (ParentDir); both
    /// must still be the scanned files (regular, device, inode, size,
    /// mtime). `writable`: the duplicate read-write where allowed.
    std::string open(std::span<const std::string> roots, const DupesFile& kept, const DupesFile& dup,
                     std::string_view dup_path, bool writable);
    /// "" while neither file changed since open() (size, ctime; after our
    /// own link of the kept file, its mtime) and the duplicate's name still
    /// names it.
    std::string unchanged(bool kept_linked = false) const;
    /// "" when the merge keys (FileMeta) of the two descriptors match now.
    std::string keys_differ(bool ignore_metadata) const;
    /// FIDEDUPERANGE of [offset, offset + length) from kept to dup (length
    /// 0: a probe that changes nothing); `unsupported` when the file system
    /// cannot.
    std::string dedupe(std::uint64_t offset, std::uint64_t length, bool& unsupported) const;
};

/// fstat + flistxattr/fgetxattr of an open file; "" or what failed.
std::string read_meta(int fd, FileMeta& out);

/// The merge keys in which `file` differs from `kept`, for a message: e.g.
/// "owner (uid 4242, kept file 0), mode (0644, kept file 4755)"; "" if none.
std::string meta_difference(const FileMeta& file, const FileMeta& kept, bool ignore_metadata);

}  // namespace cdc::dupes_detail

namespace cdc {

struct DupesScan::Data {
    std::vector<std::string> roots;  ///< as walked (trailing slashes trimmed)
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
    std::vector<std::string> roots;       // the scan's
    dupes_detail::StringArena paths;
    dupes_detail::Entries entries;        // by size, dev, inode, path
    std::vector<GroupRecord> groups;
    std::vector<std::uint32_t> files;     // per grouped file, the index of its first entry
    std::vector<std::uint32_t> linked;    // same, per linked file
    std::vector<std::string_view> stale_temporaries;
};

}  // namespace cdc
