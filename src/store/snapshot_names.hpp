// SPDX-License-Identifier: Apache-2.0
// How snapshots sit in a store's manifests (cdc/snapshot.hpp): the names,
// the header's JSON, reading a manifest whole, a snapshot's trees in
// memory. Shared by the snapshot writer (snapshot.cpp), its readers
// (snapshot_read.cpp) and gc (orphaned file manifests).
#pragma once

#include "catalog.hpp"
#include "restore_tree.hpp"
#include "tree.hpp"

#include <cdc/snapshot.hpp>
#include <cdc/store.hpp>

#include <atomic>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cdc::store::detail {

/// Every snapshot manifest's name starts with a NUL byte: no user name
/// (name_problem, and every name an earlier version stored) holds one.
inline const std::string kHeaderPrefix{"\0h/", 3};
inline const std::string kTreePrefix{"\0t/", 3};
inline const std::string kFilePrefix{"\0f/", 3};
inline const std::string kContentPrefix{"\0c/", 3};
inline constexpr char kInternalNameByte = '\0';

/// Whether `name` is a snapshot's file (file_name(): under its snapshot's
/// id and its path's hash), which no stored file has before that snapshot:
/// a writer does not look a stored version up (a round trip a file on a
/// PostgreSQL catalog). Were one there, it would be replaced, as any file
/// put again.
inline bool snapshot_file_name(std::string_view name) noexcept { return name.starts_with(kFilePrefix); }

/// A path's names between slashes (empty ones dropped), and back.
std::vector<std::string> path_parts(std::string_view path);
std::string join_parts(const std::vector<std::string>& parts);

inline std::string header_name(std::string_view id) { return kHeaderPrefix + std::string(id); }
inline std::string tree_name(std::string_view id) { return kTreePrefix + std::string(id); }
/// Where a backup first stores the file at `path` (from the snapshot's
/// root, '/'-joined) of snapshot `id`, before its digest is known: a hash
/// of the path keeps every name short. The store's chunk id of the path:
/// keyed in an encrypted store, so that whoever reads the catalog cannot
/// test it for a path they guess. The backup renames it to its content
/// name before it commits; gc drops what a dead backup left.
std::string file_name(const Store& store, std::string_view id, std::string_view path);
/// The manifest of a file content (whole-file BLAKE3 `digest`, 32 bytes,
/// and length), shared by every file and snapshot that holds it: a snapshot
/// of unchanged files writes no file manifest. The store's chunk id of
/// digest and length: keyed in an encrypted store, so that the name does
/// not tell whether a known file is stored.
std::string content_name(const Store& store, std::string_view digest, std::uint64_t size);
/// What content_name hashes: the digest, then the length (8 bytes, little
/// endian); two files with one key have one content name.
std::string content_key(std::string_view digest, std::uint64_t size);
/// content_name from its key.
std::string content_name_of_key(const Store& store, std::string_view key);

/// The whole content of manifest `name`, checked against its digest
/// (DamageError otherwise; NotFoundError if absent).
std::string read_manifest(const Store& store, const std::string& name);

std::string header_json(const Snapshot& s);
/// DamageError (naming `what`) for anything but a header.
Snapshot parse_header(std::string_view json, std::string_view what);

/// Bytes of a tree record's head: the tree's id and the u32 LE length of
/// its object.
inline constexpr std::size_t kTreeRecordHead = 36;
/// One record of a tree stream (a "\0t/ID" manifest, a push's trees).
struct TreeRecord {
    tree::BlobId id{};
    std::size_t at = 0;       ///< where the record starts in the stream
    std::string_view object;  ///< the tree object (not checked against the id)
};
/// Calls `each` on every record of `stream`, in order, never reading beyond
/// it (lengths are the stream's own, untrusted). Returns what is wrong with
/// the stream's end, or an empty string if it ends with a whole record.
std::string for_each_tree_record(std::string_view stream, const std::function<void(const TreeRecord&)>& each);

/// A snapshot's tree objects, by id: "\0t/ID" is records of
/// [32-byte id][u32 LE length][tree object].
class SnapshotTrees {
public:
    SnapshotTrees() = default;
    SnapshotTrees(std::string bytes, std::string_view what);
    /// The entries of tree `id` (DamageError if the snapshot lacks it or it
    /// is not a tree object).
    std::vector<tree::Entry> entries(const tree::BlobId& id) const;
    bool has(const tree::BlobId& id) const { return index_.count(id) != 0; }
    /// The encoded bytes of tree `id` as stored (empty if absent; checked
    /// against the id only by entries()).
    std::string_view raw(const tree::BlobId& id) const {
        const auto it = index_.find(id);
        return it == index_.end() ? std::string_view() : std::string_view(bytes_).substr(it->second.first, it->second.second);
    }
    /// The whole record of tree `id` as stored (head and object; empty if absent).
    std::string_view record(const tree::BlobId& id) const {
        const auto it = index_.find(id);
        return it == index_.end() ? std::string_view()
                                  : std::string_view(bytes_).substr(it->second.first - kTreeRecordHead,
                                                                    it->second.second + kTreeRecordHead);
    }

private:
    std::string bytes_;
    std::string what_;
    std::unordered_map<tree::BlobId, std::pair<std::size_t, std::size_t>, IdHash> index_;
};
SnapshotTrees load_trees(const Store& store, const Snapshot& s);

/// Encodes a directory's entries (tree_object.hpp), appends the object to a
/// "\0t/" stream unless `written` has its id already; returns its id.
tree::BlobId append_tree(std::vector<tree::Entry> entries, std::string& stream, std::set<tree::BlobId>& written);
/// Appends tree `id` of bytes `bytes` (encoded already) to `stream`, once.
void append_encoded_tree(const tree::BlobId& id, std::string_view bytes, std::string& stream,
                         std::set<tree::BlobId>& written);
/// Puts the trees and the header of `s` (its tree set) and commits: the
/// snapshot becomes visible in this transaction, and the contents it names
/// are made live again if a gc beside writers condemned them
/// (Writer::commit_naming).
void commit_snapshot(const Store& store, Writer& w, const Snapshot& s, const std::string& stream);

/// The root entry of a snapshot: a directory whose subtree is its tree.
tree::Entry root_entry(const Snapshot& s);

/// Drops what no snapshot needs: the file manifests a dead backup left
/// under its first names, and the contents no snapshot's tree names (the
/// snapshots that held them were forgotten). The caller holds the store
/// exclusively (no backup is under way).
std::uint64_t drop_unreferenced_snapshot_files(const Store& store, Catalog& catalog);
/// What drop_unreferenced_snapshot_files drops, without dropping it: the
/// files of backups that never committed (`files`), the contents no
/// snapshot names (`contents`); `named` (if given) gets the contents the
/// snapshots name. False if a snapshot could not be read (then `contents`
/// is empty and `named` incomplete).
bool unreferenced_snapshot_files(const Store& store, Catalog& catalog, std::vector<std::string>& files,
                                 std::vector<std::string>& contents, std::vector<std::string>* named = nullptr);

/// Gives the files of committed snapshots that are still under their first
/// names (`\0f/ID/...`: a catalog rebuilt from the packs' catalog records,
/// which keep the name a file was committed under) their content names.
/// Returns how many were renamed or dropped as stored already.
std::uint64_t adopt_snapshot_files(const Store& store);

/// Restores `root` (at `parts` in its snapshot) into `out`: trees from
/// `source.tree`, each file's bytes from `source.content`, checked against
/// the entry's length and digest before the file is kept; problems as
/// restore_snapshot reports them. store get and the tree pull share it.
SnapshotRestoreReport restore_checked(const std::filesystem::path& out, const tree::Entry& root,
                                      const std::vector<std::string>& parts, tree::RestoreSource source,
                                      const SnapshotRestoreOptions& options);

/// f(content name) for every file of snapshot `s` (each distinct directory
/// once: a file is met at least once, maybe more). `seen`, if given, holds
/// the directories (tree ids) already visited, across calls: a directory
/// that snapshots share is read once (a tree's id is its bytes' hash).
void for_each_content(const Store& store, const Snapshot& s, const std::function<void(const std::string&)>& f,
                      std::set<tree::BlobId>* seen = nullptr);
/// The same with the snapshot's trees at hand (e.g. not committed yet).
void for_each_content(const Store& store, const Snapshot& s, const SnapshotTrees& trees,
                      const std::function<void(const std::string&)>& f, std::set<tree::BlobId>* seen = nullptr);

/// The manifest holding the content of file entry `e` of snapshot `id` at
/// `path`: its content name, or where snapshots made before content names
/// kept it (nullopt if neither is stored).
std::optional<ManifestInfo> content_manifest(const Store& store, std::string_view id, std::string_view path,
                                             const tree::Entry& e);
/// A file of a snapshot, for content_manifests: its path, its content's
/// digest and length (tree::data_length).
struct ContentRef {
    std::string path;
    std::string digest;
    std::uint64_t size = 0;
};
/// content_manifest of many files of snapshot `id` at once: the names
/// looked up in batches (one round trip each for a catalog over a network).
std::vector<std::optional<ManifestInfo>> content_manifests(const Store& store, std::string_view id,
                                                           std::span<const ContentRef> files);

}  // namespace cdc::store::detail

namespace cdc::store::detail {

/// The manifests of these snapshots (header, trees, files under their id):
/// what forgetting them removes. NotFoundError for an id with no header.
std::vector<std::string> snapshot_manifests(const Store& store, std::span<const std::string> ids);

/// What one snapshot is made of, for the one engine behind `backup`
/// (create_snapshot) and `put` (put_snapshot): trees and files of the disk
/// captured with every file type and its metadata (tree::capture), placed
/// at given paths of the snapshot, and files given as Writer inputs (a
/// stream, a file named on the command line).
struct SnapshotSources {
    struct Root {
        std::string disk;                ///< what is captured (never followed if a link)
        std::vector<std::string> place;  ///< where it goes: components from the snapshot's root (empty: the root)
    };
    std::vector<Root> roots;
    std::span<PutFile> files;  ///< placed at their `path`
    /// A directory made above a root or a file (components of its path): its entry.
    std::function<tree::Entry(const std::vector<std::string>& place)> dir_above;
    /// Two sources may share directories (a put's trees and files merge);
    /// otherwise a root inside or beside another's place is refused.
    bool merge = false;
    std::optional<Snapshot> parent;  ///< its unchanged files are not read
    bool xattrs = true;
    bool one_file_system = false;
    WalkExcludes exclude;
    /// A directory never entered wherever a tree holds it (the store's own),
    /// reported as a warning.
    std::optional<std::pair<std::uint64_t, std::uint64_t>> never_enter;  ///< st_dev, st_ino
    ProgressFn progress;
    /// Set while build_snapshot captures: the capture stops (CaptureStopped)
    /// at its next directory once it is true (the store could not be opened).
    const std::atomic<bool>* stop = nullptr;
    Writer::InputDone files_done;  ///< per file of `files`
    /// Per regular file of a root, once stored (disk path).
    std::function<void(const std::string& disk, const PutStats&)> tree_file_done;
};

/// Captures, stores and commits the snapshot `snap` (header fields but the
/// tree and totals set): `result.skipped` names what was left out (disk
/// paths for roots' entries, "/PATH" for `files`), `tree_skipped` the
/// roots' part of it. Returns the Writer's totals.
PutStats build_snapshot(const Store& store, Snapshot& snap, SnapshotResult& result, SnapshotSources& sources,
                        std::vector<SnapshotIssue>* tree_skipped = nullptr);
/// The store build_snapshot writes to, as a call: the store itself, or one
/// that opens it (and sets the sources' parent) on first call.
using StoreOpener = std::function<const Store&()>;
/// What stops a capture (SnapshotSources::stop).
struct CaptureStopped {};
/// build_snapshot with the store from `open`; `opens`: the call opens the
/// store, and runs on another thread while the sources are captured.
PutStats build_snapshot(const StoreOpener& open, bool opens, Snapshot& snap, SnapshotResult& result,
                        SnapshotSources& sources, std::vector<SnapshotIssue>* tree_skipped = nullptr);

}  // namespace cdc::store::detail
