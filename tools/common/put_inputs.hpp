// SPDX-License-Identifier: Apache-2.0
// What `cdc store put` and `cdc push` take in: files, trees (walked by the
// library's one walker) and - (stdin), with the names they get. Without a
// name, a file is named by its path as given and a tree's files by their
// paths inside it (under NAME/ when a name is given).
#pragma once

#include <cdc/corpus/analyze.hpp>  // InputIssue
#include <cdc/walk.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace cdc::cli {

struct PutInput {
    std::string path;  ///< "-" for stdin
    std::string name;
    std::uint64_t size = 0;
    bool inside_tree = false;  ///< found by walking a tree (open it with open_walked_file)
    bool stream = false;       ///< stdin, or a FIFO named: read as a stream, size unknown
};

/// A directory given to put, captured whole by the store (every file type
/// and its metadata), not walked here.
struct PutTreeInput {
    std::string path;  ///< the directory (a link given resolved), without trailing slashes
    std::string name;  ///< its place ("" : the snapshot's root)
};

struct PutInputs {
    std::vector<PutInput> files;
    std::vector<PutTreeInput> trees;  ///< with `capture_trees`
    std::vector<InputIssue> errors;    ///< inside trees: skipped
    std::vector<InputIssue> warnings;  ///< special files skipped on purpose
    std::uint64_t bytes = 0;           ///< sizes at walk time
    std::uint64_t excluded = 0;        ///< entries left out by the walk's exclusions (not warnings)
    std::string name;                  ///< --name as used (a tree's prefix: without trailing slashes)
};

/// UsageError for a top-level path that cannot be read, - given twice or
/// without a name, a name with several paths, a name the store's rule
/// refuses (store::name_problem; a tree's prefix may end with "/"), or two
/// inputs that would get the same name. A file named by its path gets it
/// made relative (the leading "/" and "../" dropped, as tar does); a tree's
/// file whose name the rule refuses is an error (skipped). `store_dir`
/// (put's store; empty for push) is never entered, by any path (a PATH in
/// it is a UsageError): its live database and growing packs are not data to
/// put into it. `walk`: links followed, file systems, exclusions.
/// `capture_trees`: a directory given (without walk.follow_symlinks) is
/// listed in `trees` instead of walked.
PutInputs collect_put_inputs(const std::vector<std::string>& paths, const std::string& name, const WalkOptions& walk,
                             const std::string& store_dir = {}, bool capture_trees = false);

}  // namespace cdc::cli
