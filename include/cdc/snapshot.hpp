// SPDX-License-Identifier: Apache-2.0
// cdc/snapshot.hpp — snapshots in a store (issue 35): every backup commits
// one immutable snapshot of one or more directory trees, with every file
// type and its metadata, and every put one of its files at their names
// (put_snapshot); nothing overwrites another snapshot's file.
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
#include <utility>
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
/// create_snapshot on a store that `open` opens (Store::open, and any check
/// of the caller's) on another thread while the paths are captured: opening
/// an encrypted store derives its key from the password (~0.3-0.5 s, tuned
/// at init), which then overlaps the capture instead of preceding it. What
/// `open` throws stops the capture and is rethrown here; nothing is
/// written before it returns. The store is closed when this returns.
SnapshotResult create_snapshot(const std::function<Store()>& open, const SnapshotOptions& options);

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
    /// A file's content manifest in the store: its content name (Store::get
    /// and find take it); "" otherwise.
    std::string content;
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


// ---------------------------------------------------------------- put, by name
// `cdc store put` commits one snapshot of its inputs at their names (paths
// "/NAME"); nothing is replaced: a name put again is a newer version, and
// `find_latest` resolves a name to the newest snapshot that holds it.

/// One file of a put: its content (Writer::Input; `input.meta.name` is
/// replaced by the library with the snapshot's content manifest) and where
/// it goes.
struct PutFile {
    std::string path;  ///< in the snapshot: relative, '/'-joined, no empty, "." or ".." component
    Writer::Input input;
    /// Its owner, the open callback may set them (default: the running user).
    std::optional<std::uint32_t> uid, gid;
};
/// A directory of a put whose metadata is known (a tree given as input);
/// directories not listed get 0755, the snapshot's time and the running user.
struct PutDir {
    std::string path;  ///< relative; "" is the root
    std::uint32_t mode = 0755;
    std::int64_t mtime_ns = 0;
    std::uint32_t uid = 0, gid = 0;
};
/// A directory tree of a put: captured as a backup captures it (every file
/// type: directories empty or not, symlinks, hard links, FIFOs, devices,
/// sockets; owner, mode, times, xattrs and ACLs, holes).
struct PutTree {
    std::string path;    ///< in the snapshot, as PutFile::path ("" : its entries at the snapshot's root)
    std::string source;  ///< the directory on disk (not followed if a link)
};
struct PutSnapshotOptions {
    std::vector<PutFile> files;
    std::vector<PutTree> trees;  ///< merged with the files and each other (a name in two of them is refused)
    std::vector<PutDir> dirs;
    /// The inputs' names ("" for a tree put without a name: the root): the
    /// snapshot's paths ("/" + each).
    std::vector<std::string> names;
    std::vector<std::string> tags = {"put"};
    std::string host;  ///< default: this machine's host name
    Writer::InputDone done;  ///< per file, as Writer::put_files calls it
    /// Per regular file of `trees` once stored (its path on disk).
    std::function<void(const std::string& source, const PutStats&)> tree_file_done;
    ProgressFn progress;
    /// What `trees` leave out (as SnapshotOptions).
    WalkExcludes exclude;
    bool one_file_system = false;
    bool xattrs = true;
    /// A directory never entered in `trees` (the store's own), by st_dev and
    /// st_ino: a warning where found.
    std::optional<std::pair<std::uint64_t, std::uint64_t>> never_enter;
    /// Compare with the newest snapshot of this host and names: a tree's
    /// file whose size, mtime, ctime, inode and device are unchanged is not
    /// read again (as a backup's).
    bool use_parent = true;
};
struct PutSnapshotResult {
    SnapshotResult result;      ///< the snapshot (left out: in `skipped`, files by "/PATH", trees' by their path on disk)
    std::vector<SnapshotIssue> tree_skipped;  ///< the part of `skipped` from `trees`
    PutStats stats;             ///< the Writer's totals (stored_bytes, raced_*)
};
/// Puts the files (Writer::put_files: the same engine and speed as a named
/// put) and commits one snapshot of them. OptionError for two files at one
/// path, or a file where another needs a directory. A snapshot is
/// committed even if every file failed to read (then empty).
PutSnapshotResult put_snapshot(const Store& store, PutSnapshotOptions& options);

/// The newest snapshot that holds `path` (absolute or relative to the
/// snapshots' root: "a/b" is "/a/b"), with its node there; nullopt if none.
struct LatestNode {
    Snapshot snapshot;
    SnapshotNode node;
};
std::optional<LatestNode> find_latest(const Store& store, std::string_view path);

/// The newest version of every path across snapshots (directories left out
/// unless `dirs`), sorted by path: each from the newest snapshot holding it.
std::vector<LatestNode> latest_nodes(const Store& store, bool dirs = false);

/// The content manifest of a file node of a snapshot (Store::get restores
/// it as a named file; Store::find has its chunks' count).
std::string file_manifest(const Store& store, const Snapshot& snap, std::string_view path);

/// Messages name a snapshot's file by its content manifest ("\0f/ID/HASH",
/// Store::verify, Store::get): this rewrites each such name in `text` as
/// "/PATH of snapshot ID" (names of snapshots no longer there are kept).
std::string name_snapshot_files(const Store& store, std::string text);

/// A snapshot rewritten without some paths (remove_paths).
struct RewrittenSnapshot {
    std::string old_id;
    std::string new_id;               ///< empty: nothing was left, the snapshot is forgotten
    std::vector<std::string> removed;  ///< paths of it removed (the ones asked, and hard links to them)
};
/// Deletes the history of `paths` ("/a/b" or "a/b": a file or a whole
/// tree): every snapshot holding one is rewritten without it (a new id;
/// same time, host, user, paths, tags and parent; new trees; its other
/// files' content manifests copied, nothing read), the old one forgotten;
/// a snapshot left empty is forgotten. The new snapshots are committed and
/// the old ones forgotten in one transaction (rewrites too large for one
/// flush of the Writer are committed before it: a crash in between leaves
/// both, and remove_paths again finishes; a rewrite already there is not
/// made twice). NotFoundError if no snapshot holds a path (nothing
/// changed). `dry_run`: what would change, nothing written.
std::vector<RewrittenSnapshot> remove_paths(Store& store, std::span<const std::string> paths, bool dry_run = false);

/// Format 2 (every new store): files are kept in snapshots only. A store
/// of format 1 (named files of an earlier cdc) is read as before; writing
/// to it needs `migrate`: OptionError naming the command otherwise.
void require_snapshot_format(const Store& store);
/// Makes a format-1 store format 2 (after migrate_names): its marker
/// rewritten atomically. Nothing to do for a format-2 store.
void upgrade_to_snapshot_format(Store& store);

}  // namespace cdc::store
