// SPDX-License-Identifier: Apache-2.0
// The capture of a snapshot's paths (phase 1 of create_snapshot, snapshot.cpp):
// every path given, with the directories above it, as directories' entries
// in memory under provisional ids; files are not read. Shared by
// `store backup` and `cdc push` of a tree (src/transfer), which fill in the
// contents their own way and encode the trees bottom-up.
#pragma once

#include "tree.hpp"

#include <cdc/snapshot.hpp>
#include <cdc/source.hpp>

#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <sys/stat.h>

namespace cdc::store::detail {

/// Provisional ids of captured directories: an index into Draft::dirs.
tree::BlobId provisional(std::size_t i);
std::size_t provisional_index(const tree::BlobId& b);

struct Draft {
    std::vector<std::vector<tree::Entry>> dirs;  ///< each directory's entries; subtree ids provisional
    std::set<std::size_t> made;                  ///< directories above the paths, made from lstat
    std::size_t root = 0;                        ///< the snapshot's root directory
};

/// Fills `snap.paths` (absolute, normalised, sorted, unique) from
/// options.paths and captures them with options' xattrs, excludes and
/// one_file_system; problems go to result.skipped / result.warnings,
/// exclusions to result.excluded. OptionError for a path that cannot be
/// examined or paths that overlap.
Draft capture_paths(const SnapshotOptions& options, Snapshot& snap, SnapshotResult& result);

/// A file unchanged since `before` (restic's rule: size, mtime, ctime,
/// inode, device, and the same data extents), whose content `before` names.
bool unchanged_since(const tree::Entry& now, const tree::Entry& before);

/// Reads the data extents `ranges` of a sparse file from `fd`, then checks
/// that it did not change while it was read (IoError, as SteadyFileReader
/// does for a whole file).
std::unique_ptr<Reader> extent_reader(int fd, std::vector<tree::Extent> ranges, const struct stat& at_open,
                                      std::string name);

}  // namespace cdc::store::detail
