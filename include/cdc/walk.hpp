// SPDX-License-Identifier: Apache-2.0
// cdc/walk.hpp — the one directory walker behind everything that takes
// trees (corpus analysis, the duplicate finder, the chunk store, the bench):
// one set of rules for symbolic links, file systems, special files, loops
// and errors, which each caller reacts to through a visitor.
//
//   struct Files : cdc::WalkVisitor {
//       void file(const std::string& path, const struct stat& st) override { ... }
//   } v;
//   cdc::walk({"/data", "notes.txt"}, {}, v);
//
// Order: the roots as given; inside a directory, its entries by name (as
// bytes), then its subdirectories by name, each walked the same way (one
// directory is open at a time, whatever the depth). A directory is walked once per walk (by device and inode):
// a symbolic link back to an ancestor is a loop, a second way to an already
// walked directory (overlapping roots, a link sideways) is an overlap; both
// are reported as skipped, never walked twice. Files are reported each time
// a path reaches them (hard links are several paths): callers that count
// files once dedup by (st_dev, st_ino).
//
// Exclusions (WalkOptions::exclude, cdc/exclude.hpp): an entry a pattern
// excludes, or a directory tagged as a cache or holding a marker file, is
// not reported as a file or skip and a directory is not entered; the
// visitor hears of it through excluded().
#pragma once

#include <cdc/exclude.hpp>

#include <sys/stat.h>

#include <span>
#include <string>
#include <vector>
#include <string_view>

namespace cdc {

struct WalkOptions {
    /// Follow symbolic links inside trees (to files and directories). Roots
    /// given by the caller are always followed.
    bool follow_symlinks = false;
    /// Do not enter directories on another file system than their root (the
    /// path given): reported as WalkSkip::other_fs.
    bool one_file_system = false;
    /// Directories never entered, whatever path leads to them (matched by
    /// device and inode; one that does not exist is ignored): reported as
    /// WalkSkip::excluded. E.g. a store whose own files must not be put into it.
    std::vector<std::string> exclude_dirs;
    /// Patterns, cache directories and marker files (cdc/exclude.hpp):
    /// reported to WalkVisitor::excluded. Patterns are matched against
    /// paths relative to each root (a root itself by its name); the marker
    /// tests are made on each directory, roots included, once it is open.
    WalkExcludes exclude;
};

/// Why an entry was left out by WalkOptions::exclude.
enum class WalkExclusion {
    pattern,     ///< a pattern matched it (WalkExcludes::patterns)
    cache_dir,   ///< a directory tagged with CACHEDIR.TAG (WalkExcludes::caches)
    marker,      ///< a directory holding an entry of WalkExcludes::if_present
};

/// Why an entry was not reported as a file.
enum class WalkSkip {
    error,          ///< could not be examined or read (vanished, EACCES, ...): message says
    dangling,       ///< a symbolic link to nothing (follow_symlinks): an error for a caller that reads it
    symlink,        ///< a symbolic link, not followed
    special,        ///< FIFO, socket or device inside a tree (message: which)
    loop,           ///< a directory that is its own ancestor (through a link)
    overlap,        ///< a directory already walked by another path
    other_fs,       ///< a directory on another file system (one_file_system)
    excluded,       ///< a directory of WalkOptions::exclude_dirs
};

class WalkVisitor {
public:
    virtual ~WalkVisitor() = default;
    /// A regular file (for a followed link: the target's stat).
    virtual void file(const std::string& path, const struct stat& st) = 0;
    /// A root that is neither a regular file nor a directory ("-" for
    /// standard input, a FIFO, /dev/stdin): read it as a stream, or reject
    /// it. The default throws IoError naming the path.
    virtual void stream(const std::string& path);
    /// An entry inside a tree that is not reported as a file, and why.
    virtual void skipped(const std::string& path, WalkSkip why, std::string_view message) = 0;
    /// An entry left out by WalkOptions::exclude (a directory: with all
    /// it holds). Not an error nor a skip; the default ignores it.
    virtual void excluded(const std::string& path, bool is_dir, WalkExclusion why);
};

/// Walks `roots` (files, directories, "-"). Throws IoError naming the root
/// if a root does not exist or cannot be examined, before reporting any
/// entry of it; problems inside trees go to visitor.skipped and the walk
/// goes on. A root given with trailing slashes is reported without them.
/// Throws OptionError (field "exclude_if_present") for a marker name that
/// is not one component, before anything is reported.
void walk(std::span<const std::string> roots, const WalkOptions& options, WalkVisitor& visitor);

/// Opens for reading a file a walk reported. One found inside a tree
/// (`inside_tree`) may have been swapped since it was listed (by its owner,
/// while another user reads the tree): it is opened without blocking and
/// must still be a regular file, and without `follow_symlinks` never
/// through a link. IoError (the message without the path) otherwise.
/// `st`, if given, receives the opened file's fstat.
int open_walked_file(const std::string& path, bool inside_tree, bool follow_symlinks, struct stat* st = nullptr);

/// A description of a file type for messages: "FIFO", "socket",
/// "character device", "block device", "directory", "regular file".
std::string_view file_type_name(mode_t mode) noexcept;

}  // namespace cdc
