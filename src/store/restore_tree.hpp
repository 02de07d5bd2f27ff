// SPDX-License-Identifier: Apache-2.0
// Restores a tree (tree.hpp) into a directory OUT, safe against a hostile
// tree (issue 35 item 6): whatever the entries say, nothing is written
// outside OUT and nothing in OUT is followed through a link.
//
// The tree comes from whoever made the snapshot (a pushed tree, a damaged
// catalog), so
// - every name is one component: empty, ".", "..", a '/' or a NUL byte is
//   refused, that entry reported as damaged and the rest of its directory
//   restored (as is an entry inconsistent with its type, or a second entry
//   of the same name);
// - directories are created with mkdirat and entered with
//   openat(parent, name, O_DIRECTORY | O_NOFOLLOW) from OUT's descriptor
//   down, never by a path string: a symlink (one the tree made, one already
//   in OUT, or one put in place of a directory while the restore runs) is
//   never entered, and every later name is created relative to a descriptor
//   of a real directory, so a tree's "dir" -> /elsewhere followed by
//   "dir/file" cannot reach /elsewhere;
// - every node (file, symlink, FIFO, device, hard link) is made under a
//   short temporary name (O_CREAT | O_EXCL | O_NOFOLLOW for files) and
//   renamed over its name: an existing file, or a link in OUT where a file
//   is restored, is replaced, never written through; a non-directory where a
//   directory is restored is replaced by the directory; a directory where a
//   non-directory is restored is left alone and the entry reported;
// - metadata goes through the descriptor or with AT_SYMLINK_NOFOLLOW /
//   the l* xattr calls on the name inside a directory descriptor
//   (/proc/self/fd/DIR/NAME; the mode of a FIFO or device through
//   /proc/self/fd of an O_PATH descriptor of the node made: chmod cannot
//   refuse to follow a link). Without /proc those are reported as metadata
//   problems.
//
// File contents come from the caller (RestoreSource: the store supplies the
// chunks), so this layer has no store dependency. Directories are made 0700
// while their children are restored; a directory's own metadata is applied
// after its children, depth first.
//
// What is restored, and for whom
// - Owner and group (fchown, numeric ids, or the names where they exist
//   locally with owner_by_name): when root, or when asked (a user may give
//   a file to a group of theirs).
// - Mode: the permission bits always; setuid, setgid and sticky when root or
//   when asked (RestoreOptions::setid; unzip's rule, as `cdc store get
//   --keep-setid`: a tree someone else made must not give a user set-id
//   programs).
// - mtime and atime (ns); ctime, inode and device cannot be set.
// - xattrs and POSIX ACLs (the system.posix_acl_* xattrs): each one that
//   fails (trusted.* without root, a file system without xattrs) is
//   reported as a metadata problem, the entry stays restored.
// - Sparse files: the file is made its full size with ftruncate and only
//   the data extents are written: holes stay holes where the file system
//   has them.
// - Hard links: linked (linkat) to the first restored path of their group
//   when it was restored by this restore (else restored as a file with
//   their own content, and later links of the group linked to it).
// - FIFOs: mknodat. Devices: mknodat when root; otherwise reported as not
//   restored. Sockets: reported as not restored (tree.hpp).
#pragma once

#include "tree.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cdc::store::tree {

struct RestoreSource {
    /// The entries of the tree object `id` (e.g. parse_tree of its bytes).
    /// An exception marks the directory damaged: it is made, its metadata
    /// applied, none of its children restored.
    std::function<std::vector<Entry>(const BlobId& id)> tree;
    /// The content of a file or hardlink entry: `sink` called with the bytes
    /// of data_ranges(e), in order, data_length(e) of them in all. An
    /// exception marks the file damaged: it is not restored (nothing is left
    /// of it in OUT).
    std::function<void(const Entry& e, const std::function<void(std::string_view)>& sink)> content;
};

struct RestoreOptions {
    /// Restore owner and group. Default: when running as root.
    std::optional<bool> owner;
    /// With owner: a user or group name that exists here gives its id here
    /// (tar's default); otherwise the numeric ids are restored (restic's).
    bool owner_by_name = false;
    /// Restore the setuid, setgid and sticky bits. Default: when root.
    std::optional<bool> setid;
    bool times = true;
    bool xattrs = true;
    /// Where the restored root sits in its snapshot (components): the paths
    /// of hardlink entries start there.
    std::vector<std::string> tree_path;
    /// Directories nested deeper than this below OUT are reported as damaged
    /// (a descriptor is held per level).
    std::size_t max_depth = 1024;
    /// For tests: runs after a directory is made (or found) and before it is
    /// opened, with its parent's descriptor and its name.
    std::function<void(int parent, std::string_view name)> before_open_dir;
};

struct RestoreProblem {
    enum class Kind {
        damaged,       ///< the entry (its name, fields, tree or content) is invalid: not restored
        failed,        ///< the output refused it (I/O, permissions, a directory in the way): not restored
        metadata,      ///< restored, but some of its metadata could not be applied
        not_restored,  ///< by design (a socket; a device without root)
    };
    Kind kind = Kind::damaged;
    std::string path;  ///< below OUT, components joined by '/', raw bytes
    std::string why;
};

struct RestoreReport {
    std::uint64_t directories = 0;
    std::uint64_t files = 0;
    std::uint64_t hardlinks = 0;  ///< linked to their group's first file
    std::uint64_t symlinks = 0;
    std::uint64_t specials = 0;   ///< FIFOs and devices
    std::uint64_t bytes = 0;      ///< content written
    std::vector<RestoreProblem> problems;
    /// Nothing damaged, failed or missing metadata (not_restored aside).
    bool complete() const;
};

/// "damaged", "failed", "metadata", "not restored".
std::string_view kind_name(RestoreProblem::Kind k);

/// Restores `root` into `out`. A directory root: `out` is made if absent
/// (its parent must exist) and the root's entries restored inside it; the
/// root's metadata is applied to `out` only when this call made it. Any
/// other root: restored as `out`, or inside `out` under its own name when
/// `out` is a directory. Throws std::system_error when `out` cannot be made
/// or opened; every problem below it is in the report.
RestoreReport restore(const std::filesystem::path& out, const Entry& root, const RestoreSource& source,
                      const RestoreOptions& options = {});

/// Restores `entries` (a directory's) inside the directory open at `dir`.
RestoreReport restore_entries(int dir, const std::vector<Entry>& entries, const RestoreSource& source,
                              const RestoreOptions& options = {});

}  // namespace cdc::store::tree
