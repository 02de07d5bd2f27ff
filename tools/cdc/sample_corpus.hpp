// SPDX-License-Identifier: Apache-2.0
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

/// DIR/.cdc-sample, the manifest (written last): kSampleVersion, then one
/// line per file: "SIZE BLAKE3-HEX PATH".
inline constexpr const char* kManifest = ".cdc-sample";
inline constexpr const char* kSampleVersion = "cdc-sample 2";
/// DIR/.cdc-sample.partial: written first, removed after the manifest: a
/// directory that holds it is a sample being written (or interrupted).
inline constexpr const char* kMarker = ".cdc-sample.partial";

/// DIR exists, is not empty and does not hold this sample.
class SampleDirError : public cdc::Error {
public:
    using cdc::Error::Error;
};

struct SampleFile {
    std::string path;  ///< relative to DIR
    std::uint64_t size = 0;
    std::string digest;  ///< BLAKE3-256, hex
};

struct SampleResult {
    enum class State {
        written,    ///< a new sample in a new or empty directory
        verified,   ///< every file was there with its digest: nothing written
        completed,  ///< an interrupted run's sample, completed
        repaired,   ///< a sample with missing or damaged files (or an older manifest), repaired
    };
    std::vector<SampleFile> files;  ///< in manifest order
    std::uint64_t bytes = 0;
    State state = State::written;
    std::size_t written = 0;        ///< files (re)written by this run
};

/// Writes the sample into `dir` (created if missing). A directory that
/// holds a sample (its manifest, of any version) or an interrupted one (the
/// marker) is verified file by file (size and BLAKE3 digest) and completed
/// or repaired: only the files whose bytes differ are rewritten, each one
/// whole or not at all. Throws SampleDirError if `dir` is anything else that
/// is not empty (or not a directory), IoError if writing fails. `log`, if
/// set, gets one line per file written.
SampleResult write_sample_corpus(const std::filesystem::path& dir,
                                 const std::function<void(const std::string&)>& log = {});

}  // namespace cdc::tools
