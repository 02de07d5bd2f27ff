// SPDX-License-Identifier: Apache-2.0
// cdc/snapshot.hpp — snapshots in a store (issue 35): every backup commits
// one immutable snapshot of one or more directory trees, with every file
// type and its metadata; nothing overwrites another snapshot's file.
//
//   auto s = cdc::store::Store::open("/backups/store");
//   cdc::store::SnapshotOptions o;
//   o.paths = {"/home/me"};
//   auto r = cdc::store::create_snapshot(s, o);      // r.snapshot.id
//   auto latest = cdc::store::find_snapshot(s, "latest");
//   cdc::store::restore_snapshot(s, latest, "/home/me/doc", "/tmp/out");
//   cdc::store::forget_snapshots(s, {latest.id});      // then s.gc()
//
// How a snapshot is kept (docs/STORE.md, "Snapshots"): on the store's engine
// (chunks, manifests, flushes, gc), in manifests whose names start with a
// NUL byte, which no user name can hold:
//   "\0h/ID"       the snapshot's header (JSON: id, time, host, user, paths,
//                  tags, parent, root tree id, totals)
//   "\0t/ID"       its trees: every tree object (store/tree_object.hpp, one
//                  per directory) reachable from its root, each once
//   "\0f/ID/HASH"  the content of its regular file at path P (HASH: hex
//                  BLAKE3 of P), one per file (hard links share the first's)
// A file's tree entry names its content by its digest (BLAKE3 of the bytes),
// so a directory whose files and metadata did not change is the same tree
// object in every snapshot, and its bytes dedup across snapshots' "\0t/"
// manifests. The header and the trees are committed in the writer's last
// transaction: a snapshot is visible whole or not at all; file manifests of
// a backup that died before are dropped by gc (it holds the store
// exclusively: no backup is running).
#pragma once

#include <cdc/exclude.hpp>
#include <cdc/retention.hpp>
#include <cdc/store.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cdc::store {

struct SnapshotTotals {
    std::uint64_t files = 0;        ///< regular files (hard links counted once)
    std::uint64_t dirs = 0;
    std::uint64_t others = 0;       ///< symlinks, hard links, FIFOs, devices, sockets
    std::uint64_t bytes = 0;        ///< of the regular files
    std::uint64_t bytes_read = 0;   ///< read this time (skip-unchanged reads less)
    std::uint64_t new_bytes = 0;    ///< raw bytes of new chunks
    std::uint64_t stored_bytes = 0; ///< what the new records take in the packs
    std::uint64_t skipped_unchanged = 0;   ///< files not read: unchanged since the parent
    std::uint64_t skipped_unreadable = 0;  ///< names left out: could not be read (files, directories)
};

/// A committed snapshot (its header).
struct Snapshot {
    std::string id;  ///< 32 hex digits, random
    std::int64_t time_ns = 0;
    std::int32_t utc_offset_s = 0;
    std::string host;
    std::string user;
    std::vector<std::string> paths;  ///< absolute, as given (normalised)
    std::vector<std::string> tags;
    std::string parent;  ///< the snapshot it compared with ("" if none)
    std::string tree;    ///< the root tree object's id, hex
    SnapshotTotals totals;
    /// What the keep rules need (retention.hpp).
    SnapshotInfo retention_info() const;
};

struct SnapshotOptions {
    std::vector<std::filesystem::path> paths;  ///< made absolute and normalised
    std::vector<std::string> tags;
    std::string host;    ///< default: this machine's host name
    /// The parent: an id (or prefix, or "latest"); empty: the newest
    /// snapshot of the same host and paths.
    std::string parent;
    bool no_parent = false;
    /// Read every file, even those unchanged since the parent.
    bool force_read = false;
    bool xattrs = true;
    /// What to leave out (cdc/exclude.hpp; patterns relative to each path).
    WalkExcludes exclude;
    /// Directories on another file system than their path's are kept empty.
    bool one_file_system = false;
    ProgressFn progress;
};

/// A path left out of a snapshot, or kept without some metadata.
struct SnapshotIssue {
    std::string path;
    std::string what;
};

struct SnapshotResult {
    Snapshot snapshot;
    std::vector<SnapshotIssue> skipped;   ///< left out (counted in skipped_unreadable when files)
    std::vector<SnapshotIssue> warnings;  ///< kept, with a problem
    std::uint64_t excluded = 0;           ///< names left out by the excludes
};

/// Captures the paths and commits one snapshot. A regular file whose size,
/// mtime, ctime, inode and device equal its entry in the parent reuses the
/// parent's content without being read (unless force_read, or the content
/// is no longer in the store). A file that cannot be read, or that changes
/// between its capture and its read, is left out and reported. Throws
/// OptionError for no path or a path that cannot be examined.
SnapshotResult create_snapshot(const Store& store, const SnapshotOptions& options);

/// Every snapshot, oldest first.
std::vector<Snapshot> list_snapshots(const Store& store);

/// "latest" (the newest), a full id or a unique prefix of one (4 hex digits
/// at least). NotFoundError if none, OptionError if ambiguous.
Snapshot find_snapshot(const Store& store, std::string_view ref);

/// One name of a snapshot's tree, as listings show it.
struct SnapshotNode {
    std::string path;  ///< from the snapshot's root, '/'-joined, starting with '/'
    std::string type;  ///< "file", "dir", "symlink", "hardlink", "fifo", "chardev", "blockdev", "socket"
    std::uint32_t mode = 0;
    std::uint32_t uid = 0, gid = 0;
    std::string user, group;
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::string target;  ///< symlink target; hardlink: the path it links to
    std::string digest;  ///< file content digest, hex ("" otherwise)
};

/// The nodes at and below `path` ("/" or "" for all; a file: itself), in
/// tree order (names sorted bytewise, depth first); `recursive` false: the
/// node and, for a directory, its children only. NotFoundError if absent.
void list_snapshot(const Store& store, const Snapshot& snap, std::string_view path, bool recursive,
                   const std::function<void(const SnapshotNode&)>& f);

struct SnapshotRestoreOptions {
    std::optional<bool> owner;  ///< default: when root
    std::optional<bool> setid;  ///< default: when root
};
struct SnapshotRestoreReport {
    std::uint64_t directories = 0, files = 0, hardlinks = 0, symlinks = 0, specials = 0, bytes = 0;
    std::vector<SnapshotIssue> problems;  ///< "damaged: ...", "failed: ...", "metadata: ..."
    std::vector<SnapshotIssue> not_restored;  ///< sockets, devices without root
};

/// Restores `path` of the snapshot (a file or a whole tree) to `out`: safe
/// against a hostile tree (nothing written outside `out`, no link followed),
/// every file's content checked against its digest.
SnapshotRestoreReport restore_snapshot(const Store& store, const Snapshot& snap, std::string_view path,
                                       const std::filesystem::path& out, const SnapshotRestoreOptions& options = {});

/// Forgets snapshots (their header, trees and file manifests, in one
/// transaction); their chunks no other manifest lists go at the next gc.
void forget_snapshots(Store& store, std::span<const std::string> ids);

/// A difference between two snapshots.
struct SnapshotChange {
    char kind = '?';  ///< '+' added, '-' removed, 'M' content (or type) changed, 'm' metadata only
    std::string path;
    std::vector<std::string> fields;  ///< for 'm' and 'M': what differs
};
std::vector<SnapshotChange> diff_snapshots(const Store& store, const Snapshot& a, const Snapshot& b);

/// Calls f(snapshot, path) for each path of each snapshot whose name or
/// whole path matches the glob `pattern` (fnmatch).
void find_in_snapshots(const Store& store, std::string_view pattern,
                       const std::function<void(const Snapshot&, const SnapshotNode&)>& f);

/// What verify_snapshots found.
struct SnapshotCheck {
    std::uint64_t snapshots = 0;
    std::uint64_t files = 0;
    std::vector<std::string> damage;  ///< a snapshot that cannot be restored whole
    std::vector<std::string> notes;   ///< harmless: content of interrupted backups (gc drops it)
};
/// The snapshots' structure (Store::verify checks the manifests and chunks
/// they are made of): every header and tree readable, every file's content
/// manifest there with its digest and size, every hard link's content in
/// its snapshot.
SnapshotCheck verify_snapshots(const Store& store);

struct MigrateOptions {
    std::string host;  ///< default: this machine's host name
    /// Remove the named files once the snapshot is committed (a second
    /// transaction: a crash in between leaves both, and a second migrate
    /// makes a second snapshot).
    bool remove_names = false;
};

/// Turns the store's named files (`put`, `push`) into one snapshot: each at
/// "/" + its name, with its mode and mtime (owner: the running user), its
/// chunk list copied (nothing read). A name a tree cannot hold (an empty,
/// "." or ".." component, a name that is also a directory of another) is
/// left out and reported in `skipped`. Tag "migrated", path "/".
/// NotFoundError if the store has no named file.
SnapshotResult migrate_names(Store& store, const MigrateOptions& options = {});

}  // namespace cdc::store
