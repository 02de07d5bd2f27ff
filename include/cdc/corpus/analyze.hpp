// SPDX-License-Identifier: Apache-2.0
// cdc/corpus/analyze.hpp — deduplication figures for a whole corpus: files,
// directory trees and stdin, streamed through a bounded pool of workers,
// several algorithms in one pass over the data.
//
//   cdc::AnalyzeOptions opt;
//   opt.algorithms = {cdc::make_cut_finder("fastcdc"), cdc::make_cut_finder("ultracdc")};
//   opt.jobs = 4;
//   cdc::AnalyzeReport r = cdc::analyze({"/backups", "-"}, opt);
//   r.algorithms[0].dedup_ratio();   // distinct bytes / total bytes
//
// Memory is bounded: the dedup indexes (DedupIndex, ~20-40 bytes per
// distinct chunk and algorithm) plus jobs x two pooled buffers of
// analyze_buffer_size() bytes (2 MiB + the largest MaxSize by default).
// Files are never read whole into memory.
//
// Each worker takes whole files: it reads a file once into one of its two
// buffers and advances one cursor per algorithm over it (the driver contract
// of ALGORITHMS.md section 1: windows of min(MaxSize, remaining) bytes), so
// the boundaries are exactly those of cdc::Chunker (the multi-cursor driver
// is here rather than one cdc::Chunker per algorithm so that each file is
// read once for all the algorithms of a run). The chunks cut in a buffer
// become a task — fingerprint each chunk, insert it into the algorithm's
// index — that any worker may run while the owner reads and cuts into its
// other buffer: reading + cutting overlap hashing, within one file (a single
// large file or stdin uses two cores) and across files. Every figure
// (counts, distinct chunks and bytes, the size distribution) is identical
// for every number of jobs and every file order; only the timings vary.
#pragma once

#include <cdc/algorithms.hpp>
#include <cdc/digest.hpp>
#include <cdc/error.hpp>
#include <cdc/options.hpp>
#include <cdc/corpus/dedup_index.hpp>
#include <cdc/corpus/size_stats.hpp>
#include <cdc/walk.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace cdc {

// ---------------------------------------------------------------- the walk

/// A regular file found by the walk (or stdin, path "-", size 0 = unknown).
struct FileEntry {
    std::string path;
    std::uint64_t size = 0;
    /// Found inside a directory given (not named itself): it may have been
    /// swapped since the walk, so it is opened with open_walked_file (never
    /// blocking on a FIFO put in its place, never through a link unless
    /// links are followed).
    bool in_tree = false;
};

/// A problem with one input. Errors make a file skipped (and counted);
/// warnings are for inputs skipped on purpose (special files, symlinks).
struct InputIssue {
    std::string path;
    std::string message;
};

struct WalkResult {
    std::vector<FileEntry> files;       ///< in walk order (directories sorted by name)
    std::vector<InputIssue> errors;     ///< unreadable directories, dangling links, stat failures
    std::vector<InputIssue> warnings;   ///< special files (FIFO, socket, device) skipped; files reached twice
    std::uint64_t symlinks_skipped = 0; ///< links not followed
    std::uint64_t duplicates_skipped = 0; ///< paths to a file already listed (same device and inode)
    /// Entries left out by WalkOptions::exclude (an excluded directory
    /// counts once): neither errors nor warnings.
    std::uint64_t excluded = 0;
    std::uint64_t total_bytes = 0;      ///< sum of the files' sizes at walk time
};

/// Walks `paths` with cdc::walk: a regular file is taken as is, a directory
/// recursively, "-" (or another non-regular path given by the caller) is a
/// stream. Each file is listed once (by device and inode), whatever the
/// number of paths to it. Throws IoError naming the path if a top-level path does not
/// exist or cannot be examined (a usage error for a tool); problems inside
/// trees are recorded and the walk goes on.
WalkResult walk_inputs(const std::vector<std::string>& paths, const WalkOptions& options = {});
/// As above, calling `on_file(result so far)` each time a file is listed
/// (appended to result.files, in walk order; total_bytes counts it): to
/// hand on what was walked while the walk goes on. It may take the files
/// out of result.files (the walk appends the next ones to what is left),
/// so that a long walk holds only what was not handed on. An exception
/// from it ends the walk and is rethrown.
WalkResult walk_inputs(const std::vector<std::string>& paths, const WalkOptions& options,
                       const std::function<void(WalkResult&)>& on_file);

// ---------------------------------------------------------------- analysis

/// Progress of a run, reported from a monitor thread.
struct AnalyzeProgress {
    std::uint64_t bytes_done = 0;
    std::uint64_t bytes_total = 0;  ///< from the walk (stdin adds as it goes)
    std::uint64_t files_done = 0;
    std::uint64_t files_total = 0;
    std::uint64_t errors = 0;
    double seconds = 0;             ///< since the start of the run
    bool finished = false;          ///< the last call
};

struct AnalyzeOptions {
    /// The algorithms of the run, resolved once (make_cut_finder: options
    /// validated, kernel chosen); at least one.
    std::vector<std::shared_ptr<const CutFinder>> algorithms;
    DigestKind digest = DigestKind::blake3; ///< not none
    unsigned jobs = 0;                      ///< workers; 0 = every core
    bool follow_symlinks = false;
    bool one_file_system = false;  ///< WalkOptions::one_file_system
    WalkExcludes exclude;          ///< WalkOptions::exclude
    /// Bytes read per buffer fill; each of a worker's two buffers is this
    /// plus the largest MaxSize of the algorithms. 0 = 2 MiB.
    std::size_t read_size = 0;
    /// Called about every progress_interval seconds, from another thread,
    /// and once at the end with finished = true.
    std::function<void(const AnalyzeProgress&)> progress;
    double progress_interval = 0.25;
    /// Hand each algorithm's dedup index to its result (AlgorithmResult::
    /// index), e.g. to merge the distinct chunks of runs on several machines.
    bool keep_indexes = false;
};

/// Figures for one algorithm over the whole corpus.
struct AlgorithmResult {
    std::string algorithm;
    Profile profile;
    std::uint64_t files = 0;            ///< files chunked to their end
    std::uint64_t bytes = 0;
    std::uint64_t chunks = 0;
    std::uint64_t distinct_chunks = 0;
    std::uint64_t distinct_bytes = 0;
    SizeStats sizes;                    ///< every chunk (duplicates included)
    /// CPU time (thread CPU clock, so preemption on a busy machine does not
    /// count) in the cut finder, summed over workers.
    double cut_seconds = 0;
    double hash_seconds = 0;            ///< CPU time fingerprinting + indexing, summed over workers
    double wall_seconds = 0;            ///< the whole run (shared by every algorithm of the run)
    std::size_t index_memory_bytes = 0; ///< DedupIndex::memory_bytes()
    /// The distinct chunks themselves, when AnalyzeOptions::keep_indexes.
    std::shared_ptr<const DedupIndex> index;

    /// distinct_bytes / bytes (lower is better; 1 = no dedup; 1 when empty).
    double dedup_ratio() const noexcept;
    /// bytes - distinct_bytes.
    std::uint64_t saved_bytes() const noexcept { return bytes - distinct_bytes; }
    /// Chunking speed per core: bytes / cut_seconds, in MB/s (10^6 B).
    double chunk_mb_s() const noexcept;
    /// End to end: bytes / wall_seconds, in MB/s.
    double wall_mb_s() const noexcept;
};

struct AnalyzeReport {
    std::vector<AlgorithmResult> algorithms;  ///< in the order requested
    std::vector<InputIssue> errors;           ///< sorted by path: files skipped after errors
    std::vector<InputIssue> warnings;         ///< sorted by path: special files skipped, files reached twice
    std::uint64_t symlinks_skipped = 0;
    std::uint64_t duplicates_skipped = 0;     ///< paths to files already counted (WalkResult)
    std::uint64_t excluded = 0;               ///< entries left out by the exclusions (WalkResult)
    std::uint64_t files = 0;                  ///< files chunked to their end
    std::uint64_t bytes = 0;                  ///< bytes chunked (errored files included up to the error)
    unsigned jobs = 0;
    std::size_t buffer_bytes = 0;             ///< per worker (both buffers)
    double wall_seconds = 0;
};

/// The size of each of the two buffers a worker allocates for these options
/// (read_size + the largest MaxSize).
std::size_t analyze_buffer_size(const AnalyzeOptions& options);

/// Walks `paths` (walk_inputs) and analyzes every file. Throws OptionError
/// for bad options (digest none, no algorithm) and
/// IoError for a bad top-level path, before reading anything. A file that
/// vanishes or fails to read is recorded in `errors` and skipped (its chunks
/// up to the failure stay counted in the indexes and byte totals).
AnalyzeReport analyze(const std::vector<std::string>& paths, const AnalyzeOptions& options);

/// The same over an existing walk (e.g. to analyze a list of files).
AnalyzeReport analyze(const WalkResult& walk, const AnalyzeOptions& options);

}  // namespace cdc
