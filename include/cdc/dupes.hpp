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
// hashed file); open descriptors by `max_open_files`. The file list holds
// each path once (a StringArena: its bytes and a NUL) and 40 bytes per path
// (DupesEntry, in a deque: never copied to grow), plus 4 bytes per grouped
// or linked file and 16 per group; every other type is a view into it.
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
#include <deque>
#include <functional>
#include <memory>
#include <iterator>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
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

/// Strings stored once, end to end, in chunks of kChunkSize bytes that are
/// never moved nor freed before the arena: a view returned by store() stays
/// valid as long as the arena lives (also after the arena is moved). Each
/// string is followed by a NUL, so its data() can be handed to system calls.
/// A string longer than a chunk gets a block of its own.
class StringArena {
public:
    static constexpr std::size_t kChunkSize = std::size_t{64} << 10;

    /// Copies `s` (and a NUL) into the arena.
    std::string_view store(std::string_view s);
    /// Bytes allocated for the strings (chunks and own blocks).
    std::size_t capacity() const noexcept { return capacity_; }

private:
    std::vector<std::unique_ptr<char[]>> blocks_;
    char* next_ = nullptr;  // free space of the current chunk
    std::size_t left_ = 0;
    std::size_t capacity_ = 0;
};

/// One walked path of a regular file, and that file's identity at the time.
struct DupesEntry {
    const char* path = nullptr;  ///< NUL-terminated, held by the StringArena of the scan (then of the result)
    std::uint64_t dev = 0, ino = 0, size = 0;
    std::int64_t mtime_ns = 0;
};

/// Walked entries: a deque, so that growing never copies them (nor holds
/// them twice) and never leaves more than one block unused.
using DupesEntries = std::deque<DupesEntry>;

/// A read-only view of the `count` values f(0) .. f(count - 1), computed on
/// access: what the accessors of a result return (range-for, size(),
/// operator[]). Hand-written rather than std::views::transform: clang 14
/// cannot compile libstdc++ 12's views over these iterators.
template <class F>
class IndexedView {
public:
    using value_type = std::invoke_result_t<const F&, std::size_t>;
    class iterator {
    public:
        using iterator_category = std::input_iterator_tag;  // values are computed, not stored
        using value_type = IndexedView::value_type;
        using difference_type = std::ptrdiff_t;
        using pointer = void;
        using reference = value_type;
        iterator() = default;
        iterator(const IndexedView* view, std::size_t i) noexcept : view_(view), i_(i) {}
        value_type operator*() const { return view_->f_(i_); }
        iterator& operator++() noexcept {
            ++i_;
            return *this;
        }
        iterator operator++(int) noexcept {
            iterator t = *this;
            ++i_;
            return t;
        }
        bool operator==(const iterator& o) const noexcept { return i_ == o.i_; }

    private:
        const IndexedView* view_ = nullptr;
        std::size_t i_ = 0;
    };

    IndexedView(std::size_t count, F f) : count_(count), f_(std::move(f)) {}
    iterator begin() const noexcept { return {this, 0}; }
    iterator end() const noexcept { return {this, count_}; }
    std::size_t size() const noexcept { return count_; }
    bool empty() const noexcept { return count_ == 0; }
    value_type operator[](std::size_t i) const { return f_(i); }

private:
    std::size_t count_;
    F f_;
};

/// One file (inode) with every path that names it, sorted: a view of
/// consecutive entries of a DupesResult, valid while the result lives.
class DupesFile {
public:
    /// Consecutive entries of a result.
    struct Entries {
        DupesEntries::const_iterator first, last;
        DupesEntries::const_iterator begin() const noexcept { return first; }
        DupesEntries::const_iterator end() const noexcept { return last; }
        std::size_t size() const noexcept { return static_cast<std::size_t>(last - first); }
        const DupesEntry& front() const noexcept { return *first; }
    };
    explicit DupesFile(Entries entries) noexcept : entries_(entries) {}

    /// The entries of the paths (each has the path as a C string).
    Entries entries() const noexcept { return entries_; }
    /// Every path, sorted: a view of std::string_view.
    auto paths() const {
        return IndexedView(entries_.size(), [first = entries_.first](std::size_t i) {
            return std::string_view(first[static_cast<std::ptrdiff_t>(i)].path);
        });
    }
    std::string_view first_path() const noexcept { return entries_.front().path; }
    std::size_t path_count() const noexcept { return entries_.size(); }
    /// The identity seen by the walk (of the first path).
    std::uint64_t dev() const noexcept { return entries_.front().dev; }
    std::uint64_t ino() const noexcept { return entries_.front().ino; }
    std::uint64_t size() const noexcept { return entries_.front().size; }
    std::int64_t mtime_ns() const noexcept { return entries_.front().mtime_ns; }

private:
    Entries entries_;
};

/// The file whose paths are the entries from `first` on that have its (dev,
/// inode): entries are sorted by size, dev, inode, path.
DupesFile inode_at(const DupesEntries& entries, std::size_t first) noexcept;

/// Byte-identical files (distinct inodes), sorted by first path: a view into
/// a DupesResult, valid while the result lives.
class DupesGroup {
public:
    /// `firsts`: the index in `entries` of each file's first path.
    DupesGroup(const DupesEntries& entries, std::uint64_t size, std::span<const std::uint32_t> firsts) noexcept
        : entries_(&entries), size_(size), firsts_(firsts) {}

    std::uint64_t size() const noexcept { return size_; }
    /// The files: a view of DupesFile.
    auto files() const {
        return IndexedView(firsts_.size(), [e = entries_, f = firsts_](std::size_t i) { return inode_at(*e, f[i]); });
    }
    std::size_t file_count() const noexcept { return firsts_.size(); }
    DupesFile file(std::size_t i) const noexcept { return inode_at(*entries_, firsts_[i]); }
    std::uint64_t wasted() const noexcept { return firsts_.size() < 2 ? 0 : size_ * (firsts_.size() - 1); }

private:
    const DupesEntries* entries_;
    std::uint64_t size_;
    std::span<const std::uint32_t> firsts_;
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

/// The walk: every regular file at least min_size bytes long. Each path is
/// stored once, in `paths`.
struct DupesScan {
    StringArena paths;
    DupesEntries entries;                               ///< sorted by path, each path once
    std::vector<std::string_view> stale_temporaries;  ///< .cdc-dupes-tmp.* names seen (in `paths`), sorted
    std::uint64_t files_scanned = 0;
    std::uint64_t skipped = 0;
};

namespace dupes_detail {
struct ResultBuilder;
}

/// The groups, the linked files and the summary of a run. It holds every
/// path once (the scan's arena and entries, moved in); groups, files and
/// linked files are views into it, valid while it lives (and is not moved).
/// Memory: the paths, ~40 bytes per entry, 4 bytes per grouped or linked
/// file and 16 per group.
class DupesResult {
public:
    DupesSummary summary;

    /// By wasted bytes (descending), then size, then first path: a view of
    /// DupesGroup.
    auto groups() const {
        return IndexedView(groups_.size(), [this](std::size_t i) {
            const GroupRecord& g = groups_[i];
            return DupesGroup(entries_, g.size, std::span(files_).subspan(g.first, g.count));
        });
    }
    /// Inodes with several paths among the walked files, by first path: a
    /// view of DupesFile.
    auto linked() const {
        return IndexedView(linked_.size(), [this](std::size_t i) { return inode_at(entries_, linked_[i]); });
    }
    std::span<const std::string_view> stale_temporaries() const noexcept { return stale_temporaries_; }

private:
    friend struct dupes_detail::ResultBuilder;
    struct GroupRecord {
        std::uint64_t size = 0;
        std::uint32_t first = 0, count = 0;  // a range of files_
    };
    StringArena paths_;
    DupesEntries entries_;  // by size, dev, inode, path
    std::vector<GroupRecord> groups_;
    std::vector<std::uint32_t> files_;   // per grouped file, the index of its first entry
    std::vector<std::uint32_t> linked_;  // same, per linked file
    std::vector<std::string_view> stale_temporaries_;
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

/// Index of the kept file in `group`, or group.file_count() when none fits.
std::size_t choose_kept(const DupesGroup& group, const KeepRule& rule);

/// One change (planned, done or skipped). The paths are views into the
/// DupesResult acted on.
struct DupesStep {
    enum class Status { planned, done, skipped };
    DupesAction action = DupesAction::report;
    std::string_view path;  ///< the duplicate path acted on
    std::string_view kept;  ///< the kept file's first path
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
