// SPDX-License-Identifier: Apache-2.0
// cdc/dupes.hpp — find whole-file duplicates and merge them safely (the
// cdc_dupes library, target cdc::dupes; not part of cdc/cdc.hpp).
//
//   cdc::DupesOptions opt;
//   const cdc::DupesResult r = cdc::find_dupes(std::vector<std::string>{"/data"}, opt);
//   for (std::size_t i = 0; i < r.group_count(); ++i)
//       for (const cdc::DupesFile& f : r.group(i).files) use(f.first_path(), f.paths);
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
//    reuses the same buffer). A class with more members than
//    `max_open_files` is still compared, re-opening each file for each block
//    (open, identity check, pread at the offset, close). Fallback: a class
//    with more members than budget / 4 KiB cannot hold one block each and is
//    hashed from its current offset (the current block is read again).
//  - hash: a partial hash over the head and tail blocks splits each size
//    group; then each remaining class is split by a hash of the rest of the
//    file (each file read once, sequentially, one open file at a time).
//    Equality is decided by the digest (BLAKE3-256 by default, XXH3-128 on
//    request).
//  - automatic (default): compare, except that a class with more members
//    than `max_open_files` is hashed from its current offset on. Comparison
//    never reads more bytes than hashing (it stops at the first difference
//    and reads nothing twice), so it is used wherever all members can stay
//    open at once; past the open-file bound, lockstep comparison would cost
//    an open, an identity check and a seek per file per block, while hashing
//    reads each file once, sequentially, with one descriptor.
// Memory is bounded by the budget (plus the file list and one digest per
// hashed file); open descriptors by `max_open_files`. The file list holds
// each path once and ~40 bytes per path, plus 4 bytes per grouped or linked
// file and 16 per group; the DupesGroup and DupesFile values handed out are
// built on request (their paths are views into the result).
//
// Consistency: a file is opened with O_NOFOLLOW | O_NONBLOCK (a FIFO or a
// device put in a file's place never blocks the run) and checked (regular
// file, device, inode, size, mtime) against the walk; after resolution
// every grouped file is checked again. A file that changed, vanished or
// could not be read is left out with a warning (DupesSummary::skipped).
//
// Actions: who may be merged with whom
// ------------------------------------
// A hard link makes two paths one inode: after it, both paths have the kept
// file's owner, group, mode, extended attributes (ACLs, capabilities, SELinux
// labels...) and timestamps, and a write through either path changes both.
// So `hardlink` and `reflink` merge only files that are on the same file
// system AND have the same owner (uid), group (gid), mode (permission bits
// and setuid / setgid / sticky) and the same extended attributes (every
// name and value; POSIX ACLs are the system.posix_acl_access attribute).
// Each group of byte-identical files is split into merge sets by these
// keys; in each set one file is kept (KeepRule: the group's kept file in its
// own set, the rule applied within the set in the others) and the others are
// merged into it. The kept file of every other set (and a file alone in its
// set) is left as it is: its step has Status::kept and a reason naming the
// keys that differ from the group's kept file, e.g. "not merged: different
// owner (uid 4242, kept file 0)". The keys are read when planning, and again
// when acting from the open descriptors of both files (fstat, flistxattr +
// fgetxattr), last right before the rename: a chmod, chown or setfattr
// between the scan and the change cannot slip through. `ignore_metadata`
// (CLI: --ignore-metadata, dangerous) splits by file system only: a path
// merged by a hard link then takes the kept file's owner, mode and
// attributes.
// What a surviving path keeps:
//  - hardlink: the duplicate path names the kept inode: the kept file's
//    owner, group, mode, attributes, mtime and atime (with --keep oldest, the
//    oldest mtime of its set); only its directory entry is new.
//  - reflink: every path keeps its own inode and all its metadata (mtime
//    included); only the data extents are shared.
//  - delete: the kept path keeps everything; duplicate paths are removed.
//    `delete` keeps one file per group whatever its owner (metadata do not
//    split its groups: the kept file may belong to another user; choose it
//    with --keep PATTERN where that matters), but never deletes a file that
//    the kept one is not byte-identical to at that moment.
//
// Actions: how each change is made
// --------------------------------
// Right before each change: the kept file is opened (no final symlink,
// O_NONBLOCK) and its identity (regular file, device, inode, size, mtime)
// checked against the scan; the duplicate's directory is opened (ParentDir:
// the root as given, then each directory below it with O_NOFOLLOW) and the
// duplicate opened relative to it (openat, O_NOFOLLOW) and checked; the
// merge keys compared on the two descriptors; every byte compared; neither
// file changed meanwhile (size, ctime). Then, always relative to that
// directory descriptor (a directory renamed or replaced by a symlink in the
// meantime cannot redirect the change out of the tree):
//  - hardlink: linkat() of the kept file's *descriptor* (the verified inode,
//    whatever its path names now) to .cdc-dupes-tmp.PID.N, the temporary and
//    the duplicate re-checked (fstatat), the keys compared once more, then
//    renameat() of the temporary over the duplicate (atomic: at every
//    instant the path names either the old or the new inode, both holding
//    the same bytes).
//  - reflink: ioctl FIDEDUPERANGE between the two descriptors, in place: the
//    kernel compares the bytes itself and shares the extents atomically.
//    Where the file system does not support it, IoError with a clear
//    message (planning probes each pair with a zero-length request, so a dry
//    run fails the same way and a run fails before any change).
//  - remove: unlinkat() of the duplicate.
// Limit: a writer that changes the duplicate in the instant between the last
// check and renameat()/unlinkat() writes into the replaced inode (no tool
// can close that window without the kernel's help; FIDEDUPERANGE is atomic
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
#include <cdc/enum_names.hpp>
#include <cdc/exclude.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cdc {

enum class DupesMode { compare, hash, automatic };

inline constexpr std::array kDupesModeNames = {EnumName<DupesMode>{DupesMode::compare, "compare"},
                                               EnumName<DupesMode>{DupesMode::hash, "hash"},
                                               EnumName<DupesMode>{DupesMode::automatic, "auto"}};

/// Parses "compare", "hash" or "auto"; throws OptionError (field "mode").
DupesMode parse_dupes_mode(std::string_view name);
std::string_view to_string(DupesMode mode) noexcept;

/// Counters shown while the run goes on.
struct DupesProgress {
    std::string_view phase;          ///< "walk", "resolve" or "act"
    std::uint64_t files = 0;         ///< files walked
    std::uint64_t candidates = 0;    ///< files in size groups (resolve)
    std::uint64_t resolved = 0;      ///< candidates decided so far (resolve), steps done (act)
    std::uint64_t bytes_read = 0;
};

struct DupesOptions {
    DupesMode mode = DupesMode::automatic;
    DigestKind hash = DigestKind::blake3;  ///< blake3 or xxh3 (sha256 works too)
    std::uint64_t min_size = 1;            ///< smaller files are ignored (0 groups empty files)
    bool one_file_system = false;          ///< do not descend into other file systems
    bool follow_symlinks = false;          ///< follow symlinks to files and directories (reports only)
    WalkExcludes exclude;                  ///< what the walk leaves out (cdc/exclude.hpp)
    /// Merge (hardlink, reflink) files whatever their owner, group, mode and
    /// extended attributes ("who may be merged" above): dangerous.
    bool ignore_metadata = false;
    std::size_t max_open_files = 0;        ///< 0: half the soft RLIMIT_NOFILE, at most 512
    std::size_t memory_budget = std::size_t{512} << 10;  ///< block buffers of one class (at least 512 KiB)
    /// Called often (the caller throttles); may be empty.
    std::function<void(const DupesProgress&)> progress;
    /// Each warning (unreadable, changed, stale temporary...); may be empty.
    std::function<void(const std::string&)> warning;
};

/// One file (inode) with every walked path that names it.
struct DupesFile {
    std::vector<std::string_view> paths;  ///< sorted; views into the DupesResult (NUL-terminated)
    /// The identity seen by the walk.
    std::uint64_t dev = 0, ino = 0, size = 0;
    std::int64_t mtime_ns = 0;

    std::string_view first_path() const noexcept { return paths.front(); }
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

/// The walk: every regular file at least min_size bytes long, each path
/// stored once. Opaque: hand it to resolve_dupes.
class DupesScan {
public:
    struct Data;  ///< the library's (src/dupes/internal.hpp)
    explicit DupesScan(std::unique_ptr<Data> data) noexcept;
    DupesScan(DupesScan&&) noexcept;
    DupesScan& operator=(DupesScan&&) noexcept;
    ~DupesScan();

    /// Regular files kept by the walk (min_size or more), one per path.
    std::size_t file_count() const noexcept;
    Data& data() noexcept { return *data_; }

private:
    std::unique_ptr<Data> data_;
};

/// The groups, the linked files and the summary of a run. It holds every
/// path once; the values it hands out (DupesGroup, DupesFile) are built on
/// request and their paths are views into it, valid while it lives.
class DupesResult {
public:
    struct Data;  ///< the library's (src/dupes/internal.hpp)
    explicit DupesResult(std::unique_ptr<Data> data) noexcept;
    DupesResult(DupesResult&&) noexcept;
    DupesResult& operator=(DupesResult&&) noexcept;
    ~DupesResult();

    DupesSummary summary;

    /// Groups by wasted bytes (descending), then size, then first path.
    std::size_t group_count() const noexcept;
    DupesGroup group(std::size_t i) const;
    /// Inodes with several paths among the walked files, by first path.
    std::size_t linked_count() const noexcept;
    DupesFile linked(std::size_t i) const;
    /// `.cdc-dupes-tmp.*` names seen by the walk (left by an interrupted
    /// run), sorted; NUL-terminated views into the result.
    std::span<const std::string_view> stale_temporaries() const noexcept;
    const Data& data() const noexcept { return *data_; }

private:
    std::unique_ptr<Data> data_;
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

inline constexpr std::array kDupesActionNames = {
    EnumName<DupesAction>{DupesAction::report, "report"}, EnumName<DupesAction>{DupesAction::hardlink, "hardlink"},
    EnumName<DupesAction>{DupesAction::reflink, "reflink"}, EnumName<DupesAction>{DupesAction::remove, "delete"}};

/// Parses "report", "hardlink", "reflink" or "delete"; throws OptionError
/// (field "action").
DupesAction parse_dupes_action(std::string_view name);
std::string_view to_string(DupesAction action) noexcept;

/// Which file of a group (of a merge set, for hardlink and reflink) is
/// kept: "oldest" (smallest mtime, then first path), "first" (first path in
/// sort order) or, anything else, a glob pattern (fnmatch, `*` also matches
/// `/`): the first path that matches; a group where no path matches is left
/// alone.
struct KeepRule {
    enum class Kind { oldest, first, pattern } kind = Kind::oldest;
    std::string pattern;
};
KeepRule parse_keep_rule(std::string_view text);

/// Index of the kept file among `files`, or files.size() when none fits.
std::size_t choose_kept(std::span<const DupesFile> files, const KeepRule& rule);

/// One change (planned, done, not made on purpose, or skipped after a
/// problem), for one duplicate path.
struct DupesStep {
    enum class Status {
        planned,  ///< a dry run's plan
        done,
        kept,     ///< left as it is on purpose: its metadata differ (reason says which); not an error
        skipped,  ///< not done after a problem (changed, unreadable, no --keep match...)
    };
    DupesAction action = DupesAction::report;
    std::string path;       ///< the duplicate path acted on
    std::string kept;       ///< the kept file's first path (merged into, or compared with)
    Status status = Status::planned;
    std::string reason;     ///< why kept or skipped
    /// Where in the result: the group, the kept file and this path's file.
    std::size_t group = 0, kept_file = 0, file = 0;
};

inline constexpr std::array kDupesStepStatusNames = {
    EnumName<DupesStep::Status>{DupesStep::Status::planned, "planned"},
    EnumName<DupesStep::Status>{DupesStep::Status::done, "done"},
    EnumName<DupesStep::Status>{DupesStep::Status::kept, "kept"},
    EnumName<DupesStep::Status>{DupesStep::Status::skipped, "skipped"}};
/// "planned", "done", "kept", "skipped" (the status field of the reports).
constexpr std::string_view to_string(DupesStep::Status status) noexcept {
    return name_of(kDupesStepStatusNames, status);
}

/// The steps `action` would take on every path of every group but the
/// kept file's (Status::planned, or kept / skipped with the reason). Reads
/// the files' metadata (hardlink, reflink); changes nothing. reflink: probes
/// each planned pair with a zero-length FIDEDUPERANGE and throws IoError
/// where the file system cannot reflink.
std::vector<DupesStep> plan_dupes_action(const DupesResult& result, DupesAction action, const KeepRule& keep,
                                         const DupesOptions& options);

/// Carries out the planned steps of a plan of `result` (each becomes done or
/// skipped, every check made again on the open files), after removing stale
/// temporaries of interrupted runs. Throws IoError when reflinks are not
/// supported.
void apply_dupes_plan(const DupesResult& result, std::span<DupesStep> steps, const DupesOptions& options);

/// plan_dupes_action, then (unless dry_run) apply_dupes_plan.
std::vector<DupesStep> apply_dupes_action(const DupesResult& result, DupesAction action, const KeepRule& keep,
                                          bool dry_run, const DupesOptions& options);

/// True if `name` (a file name, no directory) is a temporary of this tool.
bool is_dupes_temporary(std::string_view name) noexcept;

}  // namespace cdc
