// SPDX-License-Identifier: Apache-2.0
// The tree model of store format 2 (docs/STORE-V2.md, "Trees"): one Entry per
// name of a directory, for every file type and the metadata a backup keeps,
// and the capture of a directory tree from the file system into entries.
//
// This layer knows nothing of packs or the catalog: a file's content is
// filled in by the caller (Content: the ids its store gave the chunks), and a
// directory's entries are handed to the caller, who stores them as a tree
// object (tree_object.hpp) and returns its id. restore_tree.hpp writes a tree
// back.
//
// Decisions
// - Hard links: a regular file whose (device, inode) was already captured in
//   this tree becomes a `hardlink` entry naming the path of the first one
//   (components from the capture's root, in capture order: names sorted
//   bytewise, depth first, which is the order a restore follows) and
//   carrying the same content, so that restoring part of a tree, or a tree
//   whose first file failed, still gives the bytes. Only regular files are
//   grouped: a symlink, FIFO or device with several links is captured as
//   separate entries and restored as separate nodes.
// - Sockets are recorded (a listing shows them) and reported as not
//   restorable by the restore: a socket exists only while a program listens
//   on it, and a node made by mknod would be a stale one.
// - POSIX ACLs are the xattrs system.posix_acl_access and
//   system.posix_acl_default, kept as the kernel gives them (its binary
//   format): their raw bytes round-trip through getxattr/setxattr, so no
//   libacl is needed. Every namespace listxattr shows is kept (user., and
//   trusted. when root, security., system.). The xattrs of a symlink, FIFO,
//   device or socket are read through /proc/self/fd/DIR/NAME (never opening
//   the node: opening a device may act on it), so they need /proc; without
//   it each such entry is kept and reported without its xattrs.
// - Sparse files: when a file has fewer blocks than its size, its data
//   extents (SEEK_DATA / SEEK_HOLE) are recorded and its content is the bytes
//   of those extents only, concatenated: holes are neither read nor stored,
//   and the restore writes the extents into a file of the full size.
// - Files are read and directories listed with O_NOATIME where allowed (the
//   owner, root), so capturing leaves their atimes as they were. Reading a
//   symlink's target moves its atime (readlink has no such flag; under
//   relatime once, then at most once a day): the atime recorded is the one
//   before, and a directory holding symlinks may get a new tree object when
//   one of its links' atime moved since the last capture.
// - Nothing is dropped silently: what cannot be captured (a file that cannot
//   be opened or read, a directory that cannot be listed, a name that
//   vanished) is reported to the visitor with its errno and left out of the
//   tree; what is captured with some metadata missing (xattrs unreadable) is
//   kept and reported too.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cdc::store::tree {

/// A blob id (a chunk, a chunk list or a tree object): BLAKE3-256, the same
/// id space as store::ChunkId.
using BlobId = std::array<std::uint8_t, 32>;

enum class EntryType : std::uint8_t {
    file = 0,
    directory = 1,
    symlink = 2,
    hardlink = 3,  ///< a regular file linked to an earlier entry of the tree
    fifo = 4,
    char_device = 5,
    block_device = 6,
    socket = 7,
};
inline constexpr std::uint8_t kEntryTypeCount = 8;
/// "file", "dir", "symlink", "hardlink", "fifo", "chardev", "blockdev", "socket".
std::string_view type_name(EntryType t);

/// A data extent of a sparse file: bytes [offset, offset + length).
struct Extent {
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    friend bool operator==(const Extent&, const Extent&) = default;
};

/// An extended attribute: name and value as raw bytes.
struct Xattr {
    std::string name;
    std::string value;
    friend bool operator==(const Xattr&, const Xattr&) = default;
};

/// A file's content as the store knows it. Left to the caller: the capture
/// never fills it (the visitor does), the restore hands it back to the
/// caller's content source.
struct Content {
    std::string digest;           ///< whole-content digest (e.g. BLAKE3-256), opaque bytes; may be empty
    std::vector<BlobId> chunks;   ///< ids of the data chunks in order, or of the chunk-list blobs
    bool chunks_are_lists = false;  ///< `chunks` lists chunk-list blobs, not data chunks
    friend bool operator==(const Content&, const Content&) = default;
};

/// One name of a directory.
struct Entry {
    std::string name;  ///< raw bytes: any byte but NUL and '/', not "." or ".."
    EntryType type = EntryType::file;
    std::uint32_t mode = 0;  ///< permission bits with setuid, setgid and sticky (07777)
    std::uint32_t uid = 0;
    std::uint32_t gid = 0;
    std::string user;   ///< owner's name where it has one ("" otherwise)
    std::string group;  ///< group's name where it has one
    std::int64_t mtime_ns = 0;
    std::int64_t atime_ns = 0;
    std::int64_t ctime_ns = 0;  ///< recorded for the skip-unchanged rule; never restored
    std::uint64_t inode = 0;    ///< recorded for the skip-unchanged rule; never restored
    std::uint64_t device = 0;   ///< st_dev, likewise
    std::uint64_t size = 0;     ///< file, hardlink: bytes (holes included)
    std::uint64_t nlink = 0;    ///< file, hardlink: the link count when captured (the restore keeps
                                ///< the paths of files with more than one, the targets of hardlinks)
    std::uint64_t rdev = 0;     ///< char_device, block_device: st_rdev
    std::string target;         ///< symlink: its target, raw bytes
    std::vector<std::string> link;  ///< hardlink: the first entry's path, components from the tree's root
    std::vector<Xattr> xattrs;      ///< sorted by name, names unique
    bool sparse = false;            ///< file, hardlink: `extents` lists the data; the rest are holes
    std::vector<Extent> extents;    ///< sorted, disjoint, within size
    Content content;                ///< file, hardlink
    BlobId subtree{};               ///< directory: the id of its tree object
    friend bool operator==(const Entry&, const Entry&) = default;
};

/// Why `name` cannot be a name of a directory ("" when it can): empty, "."
/// or "..", a '/' or a NUL byte, longer than 255 bytes (NAME_MAX).
std::string name_problem(std::string_view name);
/// Why `e` is not a consistent entry ("" when it is), its name aside: its
/// fields against its type (a symlink has a target, a directory no content,
/// ...), mode within 07777, extents sorted, disjoint and within the size,
/// xattrs sorted with unique, non-empty names without NUL.
std::string entry_problem(const Entry& e);

/// The byte ranges that make the content of a file or hardlink entry: its
/// data extents when sparse, else [0, size).
std::vector<Extent> data_ranges(const Entry& e);
/// The content's length: the sum of data_ranges.
std::uint64_t data_length(const Entry& e);

/// The fields in which two entries differ ("mode", "mtime", "xattrs", ...),
/// empty when they are the same. ctime, inode and device are compared only
/// with `with_identity` (a restored file has new ones); the subtree id and
/// content only with `with_content`.
std::vector<std::string> entry_differences(const Entry& a, const Entry& b, bool with_identity = false,
                                           bool with_content = true);

// ---------------------------------------------------------------- capture

/// Thrown by a CaptureVisitor's file() when the file cannot be read: the
/// entry is left out of the tree and reported.
class Unreadable : public std::runtime_error {
public:
    Unreadable(int error, const std::string& what) : std::runtime_error(what), error_(error) {}
    int error() const noexcept { return error_; }

private:
    int error_;
};

/// What the capture could not take, or took in part.
struct CaptureProblem {
    std::string path;   ///< from the capture's root, components joined by '/', raw bytes
    int error = 0;      ///< errno, 0 when none applies
    std::string what;   ///< a sentence: what failed
    bool skipped = true;  ///< left out of the tree (false: kept without some of its metadata)
};

class CaptureVisitor {
public:
    virtual ~CaptureVisitor() = default;
    /// A regular file, open for reading (the very inode the entry
    /// describes, opened without following a link): fill entry.content from
    /// the bytes of data_ranges(entry) (read_data does). Throw Unreadable to
    /// leave the file out. Not called for a later link of a hard-link group:
    /// that one gets the first's content.
    virtual void file(Entry& entry, int fd, std::string_view path) = 0;
    /// A directory's entries, sorted by name, every subtree id set: store its
    /// tree object, return its id. Also called for the root.
    virtual BlobId directory(const std::vector<Entry>& entries, std::string_view path) = 0;
    virtual void problem(const CaptureProblem& p) = 0;
};

struct CaptureOptions {
    bool xattrs = true;       ///< read extended attributes (and so ACLs)
    bool owner_names = true;  ///< look up user and group names
    bool sparse = true;       ///< record the data extents of files with holes
    /// Where the captured root sits in the snapshot (components): prefixed to
    /// the paths of hardlink entries.
    std::vector<std::string> link_base;
    /// Leaves an entry out (not a problem: not reported): `path` from the
    /// captured root ('/'-joined), whether it is a directory and, for one,
    /// a descriptor of it (to look inside: a cache tag, a marker file).
    /// Called before a file is opened, after a directory is.
    std::function<bool(std::string_view path, bool is_dir, int dir_fd)> exclude;
    /// Directories on another file system than the root's are kept empty
    /// (the mount point is recorded, its content is not).
    bool one_file_system = false;
};

/// Captures `root` (never followed if it is a link; a directory is walked
/// depth first, names sorted bytewise, every name opened relative to its
/// directory's descriptor without following links). Returns the root's
/// entry: named as root's last component ("" for "/"), a directory with its
/// subtree id set by the visitor. Throws std::system_error if `root` itself
/// cannot be examined (or, a directory, opened); errors below it go to the
/// visitor. Exceptions of the visitor other than Unreadable propagate.
Entry capture(const std::filesystem::path& root, CaptureVisitor& visitor, const CaptureOptions& options = {});

/// The name of a user (group) in /etc/passwd (/etc/group), "" if none: read
/// from the file, not through NSS, which a statically linked program cannot
/// load safely (the capture records names so; accounts known only to a
/// directory service are kept by number).
std::string local_user_name(std::uint32_t uid);
std::string local_group_name(std::uint32_t gid);

/// Reads the content of a file entry from `fd` (data_ranges, pread) in
/// pieces of at most 1 MiB, handing each to `sink`. Throws Unreadable on a
/// read error or when the file ends before a range does (it shrank).
void read_data(const Entry& e, int fd, const std::function<void(std::string_view)>& sink);

}  // namespace cdc::store::tree
