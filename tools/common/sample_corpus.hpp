// The built-in sample corpus of `cdc sample`: a deterministic tree (about
// 150 MB) with several versions of binary and text files (insertions,
// deletions, overwrites, appends) and exact copies, so that `cdc analyze`
// shows meaningful dedup for every algorithm without user data.
#pragma once

#include <cdc/error.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace cdc::tools {

/// The first line of DIR/.cdc-sample (the manifest, written last).
inline constexpr const char* kSampleVersion = "cdc-sample 1";

/// DIR exists, is not empty and does not hold this sample.
class SampleDirError : public cdc::Error {
public:
    using cdc::Error::Error;
};

struct SampleFile {
    std::string path;  ///< relative to DIR
    std::uint64_t size = 0;
};

struct SampleResult {
    std::vector<SampleFile> files;  ///< in manifest order
    std::uint64_t bytes = 0;
    bool already_present = false;   ///< nothing was written
};

/// Writes the sample into `dir` (created if missing). If `dir` already holds
/// a complete sample of this version, nothing is written. Throws
/// SampleDirError if `dir` is a non-empty directory without this sample (or
/// not a directory), IoError if writing fails. `log`, if set, gets one line
/// per file written.
SampleResult write_sample_corpus(const std::filesystem::path& dir,
                                 const std::function<void(const std::string&)>& log = {});

}  // namespace cdc::tools
