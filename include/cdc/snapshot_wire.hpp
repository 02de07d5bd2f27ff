// SPDX-License-Identifier: Apache-2.0
// cdc/snapshot_wire.hpp — a snapshot's tree between two stores' sides
// (docs/TRANSFER.md, "Snapshots"): what a server exports of a snapshot path
// so that a client restores it, and the client's side of that restore.
//
//   // server
//   auto x = cdc::store::export_snapshot(store, cdc::store::find_snapshot(store, "latest"), "/home/me");
//   // ... x.root and x.trees travel; each content by its digest (x.contents)
//   // client
//   cdc::store::ImportedTree t(path, root, trees);   // checks every tree id
//   for (auto& need : t.contents()) ...               // ask for these, in order
//   t.restore(out, content_fn);                       // through the hostile-safe restore
//
// The client trusts nothing it received: every tree object is checked
// against its id (the BLAKE3 of its bytes) when it is used, the restore is
// the one of `store get SNAP` (nothing written outside OUT, no link
// followed), and each file's bytes are checked against its digest before
// the file is put in place.
#pragma once

#include <cdc/snapshot.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cdc::store {

/// What a server sends of a path of a snapshot.
struct SnapshotExport {
    Snapshot snapshot;
    /// A tree object holding the path's entry alone (named "root" for the
    /// snapshot's root, which has no name).
    std::string root;
    /// Every tree object below the path, each once: [32-byte id][u32 LE
    /// length][object] (the layout of a snapshot's "\0t/" manifest).
    std::string trees;
    /// Content digest (32 raw bytes) -> the manifest holding its chunks, for
    /// every file of the snapshot (a hard link's first file may lie outside
    /// the path).
    std::unordered_map<std::string, std::string> contents;
    /// Regular files and hard links below the path, each occurrence: no
    /// restore of it asks for more contents.
    std::uint64_t files = 0;
};

/// The export of `path` ("/" or "": the whole snapshot). NotFoundError for a
/// path the snapshot lacks, DamageError for a damaged snapshot.
SnapshotExport export_snapshot(const Store& store, const Snapshot& snap, std::string_view path);

/// A content a restore needs.
struct ContentNeed {
    std::string digest;        ///< 32 raw bytes
    std::uint64_t length = 0;  ///< bytes of content (a sparse file's data extents)
};

/// A tree received from a server, restored like `store get SNAP`.
class ImportedTree {
public:
    /// `path`: the path asked for (its components place hard links).
    /// DamageError when `root` is not a tree object of one entry, or its
    /// entry cannot be restored (a bad name, inconsistent fields).
    ImportedTree(std::string_view path, std::string root, std::string trees);
    ~ImportedTree();
    ImportedTree(ImportedTree&&) noexcept;
    ImportedTree& operator=(ImportedTree&&) noexcept;

    /// The contents the restore will ask for, in the order it asks for them
    /// (the restore's order: names sorted, depth first), each of length > 0;
    /// a hard link whose first file is restored before it is not listed.
    /// Directories whose trees are missing or damaged are left out, as the
    /// restore leaves them.
    std::vector<ContentNeed> contents() const;

    /// `sink` gets the content's bytes, `need.length` of them in all.
    using ContentFn = std::function<void(const ContentNeed& need, const std::function<void(std::string_view)>& sink)>;
    /// Restores into `out` (restore_snapshot's rules); each file's bytes are
    /// checked against its digest (a mismatch: the file reported damaged,
    /// nothing of it left in OUT).
    SnapshotRestoreReport restore(const std::filesystem::path& out, const ContentFn& content,
                                  const SnapshotRestoreOptions& options = {}) const;

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace cdc::store
