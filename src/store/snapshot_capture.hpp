// SPDX-License-Identifier: Apache-2.0
// The capture of a snapshot's sources (phase 1 of build_snapshot,
// snapshot.cpp): every tree given, with the directories above it, and put's
// single files, placed as directories' entries in memory under provisional
// ids; files are not read. Shared by `store backup`/`store put` and by
// `cdc push` of a tree (src/transfer), which fills in the contents its own
// way and encodes the trees bottom-up.
#pragma once

#include "snapshot_names.hpp"
#include "tree.hpp"

#include <cdc/snapshot.hpp>
#include <cdc/source.hpp>

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>

namespace cdc::store::detail {

/// Provisional ids of captured directories: an index into Draft::dirs.
tree::BlobId provisional(std::size_t i);
std::size_t provisional_index(const tree::BlobId& b);

struct Draft {
    std::vector<std::vector<tree::Entry>> dirs;  ///< each directory's entries; subtree ids provisional
    std::set<std::size_t> made;                  ///< directories above the paths, made from lstat
    std::size_t root = 0;                        ///< the snapshot's root directory (always dirs[0])
};

/// A capture and where its files are read from.
struct Captured {
    Draft d;
    std::map<std::size_t, std::string> disk_of;                             ///< captured directory -> its path on disk
    std::map<std::pair<std::size_t, std::string>, std::string> disk_file;  ///< (dir, name) -> a root that is not a directory
    std::map<std::pair<std::size_t, std::string>, std::size_t> file_at;    ///< (dir, name) -> index into the sources' files
};

/// Captures `src`'s roots and places its files; problems go to
/// result.skipped / result.warnings (and the roots' skipped ones to
/// `tree_skipped`), exclusions to result.excluded. OptionError for a path
/// that cannot be examined or sources that overlap (unless they merge).
Captured capture_sources(SnapshotSources& src, SnapshotResult& result, std::vector<SnapshotIssue>* tree_skipped);

/// A new snapshot's id: 32 random hex digits.
std::string new_snapshot_id();
/// The parent of `snap`: the snapshot `named` (an id or prefix: NotFoundError
/// if none), else unless `none` the newest of snap's host and paths.
std::optional<Snapshot> find_parent(const Store& store, const Snapshot& snap, const std::string& named, bool none);
/// A new snapshot's id (random), time, UTC offset, host (`host`, else this
/// machine's name) and user (this process's).
void stamp_snapshot(Snapshot& snap, const std::string& host);
/// `paths` made absolute and normalised, sorted, each once, into
/// snap.paths. OptionError for none, or for '/' with others.
void normalise_paths(const std::vector<std::filesystem::path>& paths, Snapshot& snap);

/// Fills `snap.paths` (absolute, normalised, sorted, unique) from
/// options.paths and captures each at its own path, as `store backup` does,
/// with options' xattrs, excludes and one_file_system.
Draft capture_paths(const SnapshotOptions& options, Snapshot& snap, SnapshotResult& result);

/// The directory at `place` (components from /), as a plain entry made from
/// lstat (mode, owner, times). OptionError if it cannot be examined.
tree::Entry directory_above(const std::vector<std::string>& place);
/// `name` in the directory `dir` on disk.
std::string join_disk(const std::string& dir, const std::string& name);

/// A file unchanged since `before` (restic's rule: size, mtime, ctime,
/// inode, device, and the same data extents), whose content `before` names.
bool unchanged_since(const tree::Entry& now, const tree::Entry& before);

/// Reads the data extents `ranges` of a sparse file from `fd`, then checks
/// that it did not change while it was read (IoError, as SteadyFileReader
/// does for a whole file).
std::unique_ptr<Reader> extent_reader(int fd, std::vector<tree::Extent> ranges, const struct stat& at_open,
                                      std::string name);

}  // namespace cdc::store::detail
