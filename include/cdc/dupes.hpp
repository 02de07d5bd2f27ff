// cdc/dupes.hpp — find whole-file duplicates and merge them safely.
//
// Pipeline: walk the trees → group regular files by size → collapse paths
// that share a (device, inode) (they already share storage: reported as
// "linked", never as waste) → resolve every size group into groups of
// byte-identical files → optionally act on the duplicates (hard link,
// reflink, delete), re-verifying every byte right before each change.
//
// Resolution modes
// ----------------
// Every candidate class (files of one size not yet told apart) is resolved
// over byte ranges in this order: the head block [0, 4 KiB), the tail block
// (the last 4 KiB), then the middle in blocks. No byte of a file is read
// twice by the resolution (except in the one fallback named below).
//  - compare: the files of a class are read in lockstep, one block of each,
//    and the class is split by block content (memcmp); a file leaves as soon
//    as it differs from all others (it is read no further). No hashing.
//    Blocks are sized so that one block of every member fits the memory
//    budget (block = budget / members, 4 KiB ≤ block ≤ 256 KiB; hashing
//    reuses the same buffer). A class with
//    more members than `max_open_files` is still compared, re-opening each
//    file for each block (open, identity check, pread at the offset, close).
//    Fallback: a class with more members than budget / 4 KiB cannot hold one
//    block each and is hashed from its current offset (the current block is
//    read again).
//  - hash: a partial hash over the head and tail blocks splits each size
//    group; then each remaining class is split by a hash of the rest of the
//    file (each file read once, sequentially, one open file at a time).
//    Equality is decided by the digest (BLAKE3-256 by default, XXH3-128 on
//    request).
//  - automatic (default): compare, except that a class with more members
//    than `max_open_files` is hashed from its current offset on. The rule:
//    comparison never reads more bytes than hashing (it stops at the first
//    difference and reads nothing twice), so it is used wherever all members
//    can stay open at once; past the open-file bound, lockstep comparison
//    would cost an open, an identity check and a seek per file per block
//    (or batches that re-read representatives), while hashing reads each
//    file once, sequentially, with one descriptor — there hashing reads
//    (and opens) less.
// Memory is bounded by the budget (plus the file list and one digest per
// hashed file); open descriptors by `max_open_files`.
//
// Consistency: a file is opened with O_NOFOLLOW and checked (device, inode,
// size, mtime) against the walk; after resolution every grouped file is
// checked again. A file that changed, vanished or could not be read is left
// out with a warning (DupesSummary::skipped).
//
// Actions (apply_dupes_action)
// ----------------------------
// For each group one file is kept (KeepRule); for every other file of the
// group, right before acting: both files are re-opened, their identity
// (device, inode, size, mtime) checked against the scan, all bytes compared,
// identity checked again; then
//  - hardlink: link(kept, DIR/.cdc-dupes-tmp.PID.N) in the duplicate's
//    directory, re-check the duplicate's path, rename() the temporary over it
//    (atomic: at every instant the path names either the old or the new
//    inode, both holding the same bytes). Same file system only.
//  - reflink: ioctl FIDEDUPERANGE, in place: the kernel compares the bytes
//    itself and shares the extents atomically (no temporary, no rename).
//    Where the file system does not support it, IoError with a clear message.
//  - remove: unlink() of the duplicate path (the kept file is verified equal
//    first).
// Limit: a writer that changes the duplicate in the instant between the last
// check and rename()/unlink() writes into the replaced inode (no tool can
// close that window without the kernel's help; FIDEDUPERANGE is atomic
// against concurrent writers). Do not merge trees that are being written.
// A kill -9 at any moment leaves every path with its original content (or,
// for remove, removed while an identical kept copy exists). An interrupted
// hardlink run may leave `.cdc-dupes-tmp.PID.N` names: extra hard links to a
// kept file. The walk never lists them; the next acting run removes those
// whose process is gone and that still have another link.
// Nothing outside the given paths is changed: actions never act through a
// symbolic link (follow_symlinks is for reports only) and temporaries live in
// the duplicate's own directory.
#pragma once

#include <cdc/digest.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cdc {

enum class DupesMode { compare, hash, automatic };

/// Parses "compare", "hash" or "auto"; throws OptionError.
DupesMode parse_dupes_mode(std::string_view name);
std::string_view to_string(DupesMode mode) noexcept;

/// Counters shown while the run goes on.
struct DupesProgress {
    std::string_view phase;          ///< "walk", "resolve" or "act"
    std::uint64_t files = 0;         ///< files walked
    std::uint64_t candidates = 0;    ///< files in size groups (resolve)
    std::uint64_t resolved = 0;      ///< candidates decided so far
    std::uint64_t bytes_read = 0;
};

struct DupesOptions {
    DupesMode mode = DupesMode::automatic;
    DigestKind hash = DigestKind::blake3;  ///< blake3 or xxh3 (sha256 works too)
    std::uint64_t min_size = 1;            ///< smaller files are ignored (0 groups empty files)
    bool one_file_system = false;          ///< do not descend into other file systems
    bool follow_symlinks = false;          ///< follow symlinks to files and directories (reports only)
    std::size_t max_open_files = 0;        ///< 0: half the soft RLIMIT_NOFILE, at most 512
    std::size_t memory_budget = std::size_t{512} << 10;  ///< block buffers of one class (at least 512 KiB)
    /// Called often (the caller throttles); may be empty.
    std::function<void(const DupesProgress&)> progress;
    /// Each warning (unreadable, changed, stale temporary...); may be empty.
    std::function<void(const std::string&)> warning;
};

/// One file (inode) with every path that names it, sorted.
struct DupesFile {
    std::vector<std::string> paths;
    std::uint64_t dev = 0;
    std::uint64_t ino = 0;
    std::int64_t mtime_ns = 0;
    std::uint64_t size = 0;
};

/// Byte-identical files (distinct inodes), sorted by first path.
struct DupesGroup {
    std::uint64_t size = 0;
    std::vector<DupesFile> files;
    std::uint64_t wasted() const noexcept { return files.size() < 2 ? 0 : size * (files.size() - 1); }
};

struct DupesSummary {
    std::uint64_t files_scanned = 0;    ///< regular-file paths walked (all sizes)
    std::uint64_t bytes_scanned = 0;    ///< their sizes (each inode once)
    std::uint64_t candidates = 0;       ///< inodes in size groups of two or more
    std::uint64_t bytes_read = 0;       ///< bytes read to resolve
    std::uint64_t groups = 0;
    std::uint64_t duplicate_files = 0;  ///< files beyond the first of each group
    std::uint64_t wasted_bytes = 0;
    std::uint64_t linked_paths = 0;     ///< paths beyond the first of each inode
    std::uint64_t skipped = 0;          ///< unreadable, vanished or changed files and directories
};

/// The walk: every regular file at least min_size bytes long.
struct DupesScan {
    struct Entry {
        std::string path;
        std::uint64_t dev = 0, ino = 0, size = 0;
        std::int64_t mtime_ns = 0;
    };
    std::vector<Entry> entries;
    std::vector<std::string> stale_temporaries;  ///< .cdc-dupes-tmp.* names seen
    std::uint64_t files_scanned = 0;
    std::uint64_t skipped = 0;
};

struct DupesResult {
    std::vector<DupesGroup> groups;  ///< by wasted bytes (descending), then size, then first path
    std::vector<DupesFile> linked;   ///< inodes with several paths among the candidates
    std::vector<std::string> stale_temporaries;
    DupesSummary summary;
};

/// Walks `roots` (files or directories; a root that is a symlink is
/// followed). Throws OptionError for a root that does not exist; unreadable
/// directories below a root are skipped with a warning.
DupesScan scan_dupes(std::span<const std::string> roots, const DupesOptions& options);

/// Resolves a scan into duplicate groups (see the mode rules above).
DupesResult resolve_dupes(DupesScan scan, const DupesOptions& options);

/// scan_dupes + resolve_dupes.
DupesResult find_dupes(std::span<const std::string> roots, const DupesOptions& options);

// ---- actions ---------------------------------------------------------------

enum class DupesAction { report, hardlink, reflink, remove };

/// Parses "report", "hardlink", "reflink" or "delete"; throws OptionError.
DupesAction parse_dupes_action(std::string_view name);
std::string_view to_string(DupesAction action) noexcept;

/// Which file of a group is kept: "oldest" (smallest mtime, then first path),
/// "first" (first path in sort order) or, anything else, a glob pattern
/// (fnmatch, `*` also matches `/`): the first path that matches; a group
/// where no path matches is left alone.
struct KeepRule {
    enum class Kind { oldest, first, pattern } kind = Kind::oldest;
    std::string pattern;
};
KeepRule parse_keep_rule(std::string_view text);

/// Index of the kept file in `group`, or group.files.size() when none fits.
std::size_t choose_kept(const DupesGroup& group, const KeepRule& rule);

struct DupesStep {
    enum class Status { planned, done, skipped };
    DupesAction action = DupesAction::report;
    std::string path;  ///< the duplicate path acted on
    std::string kept;  ///< the kept file's first path
    Status status = Status::planned;
    std::string reason;  ///< why skipped
};

/// Acts on every duplicate of every group (dry_run: plans only). Also
/// removes stale temporaries of interrupted runs (not in a dry run). Throws
/// IoError when reflinks are not supported where asked.
std::vector<DupesStep> apply_dupes_action(const DupesResult& result, DupesAction action, const KeepRule& keep,
                                          bool dry_run, const DupesOptions& options);

/// True if `name` (a file name, no directory) is a temporary of this tool.
bool is_dupes_temporary(std::string_view name) noexcept;

}  // namespace cdc
