// SPDX-License-Identifier: Apache-2.0
// Internal: the kernel calibrations kept on disk between processes
// (calibration_cache.cpp). A family's first automatic use in a process
// measures its kernels (calibrate.hpp: a few ms of CPU time each, far more
// on a busy machine); the choice depends only on the CPU and on the kernels
// of this build, so it is kept in the user's cache directory under both, and
// the next process reads it instead of measuring again.
//
// The cache is a hint, never a source of truth: a file that is missing,
// unreadable, damaged, written for another CPU or another build, not the
// user's own, or that names a level this CPU cannot run or a kernel this
// build does not have only means "calibrate again" (and the file is
// rewritten). Writes go to a temporary file in the same directory, made
// durable, then renamed over the old one (0600 in a 0700 directory).
// CDC_KERNEL_CACHE=off (or 0, no, false) disables reading and writing.
#pragma once

#include <cdc/algorithms.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace cdc::detail {

/// What a calibration is valid for: the CPU (vendor, family, model,
/// stepping and the feature words the kernels depend on) and the build (the
/// library's version, the build ID of the binary holding this code, and the
/// families' kernels).
struct CalibrationIdentity {
    std::string cpu;
    std::string build;
};

/// This CPU's identity as the cache keys it (x86: CPUID vendor, family,
/// model, stepping, leaf 1 and leaf 7 feature words and the OS-enabled
/// register state XCR0; other CPUs: the architecture only).
std::string cpu_identity();
/// This build's identity: version, the binary's GNU build ID (the compile
/// time of this file when the binary has none) and `kernels`, a description
/// of every family's kernels.
std::string build_identity(std::string_view kernels);

/// The directory of the cache for an environment (`getenv`): an absolute
/// $XDG_CACHE_HOME, else $HOME/.cache, plus "cdc-chunkers"; nullopt when
/// CDC_KERNEL_CACHE disables the cache or neither variable is usable.
std::optional<std::filesystem::path> calibration_cache_dir(const std::function<const char*(const char*)>& getenv);

/// The checksum line's value for a file's text before that line (BLAKE3,
/// hex): it tells a damaged file from an intact one.
std::string calibration_checksum(std::string_view text);

/// One cache file: the calibrations of every family measured for one
/// identity. Not thread-safe (the caller serialises).
class CalibrationFile {
public:
    CalibrationFile(std::filesystem::path dir, CalibrationIdentity identity);

    /// The stored calibration of `family` (its name must be the family's
    /// static name: the result's `family` views it), if the file is the
    /// user's own, intact, for this identity, and every level it names is
    /// one for which `runs` is true (a kernel of the family this CPU runs).
    std::optional<KernelCalibration> load(std::string_view family,
                                          const std::function<bool(KernelLevel)>& runs) const;

    /// Stores `c` beside the other families' entries the file holds (a
    /// damaged or foreign file is replaced). False if the directory or the
    /// file could not be written or is not safe to use (not the user's own,
    /// or writable by others). A new file (a new build or CPU) removes the
    /// directory's oldest calibration files past the newest kKeepFiles: one
    /// is written per build, and a developer's rebuilds would otherwise
    /// pile them up.
    bool store(const KernelCalibration& c);
    static constexpr std::size_t kKeepFiles = 16;
    /// Whether store() can write here: the directory is (or is made) the
    /// user's own, private, and writable. A calibration that will not be
    /// kept need not run as long as one that will (CalibrationLimits::kept).
    bool writable() const;

    /// The file's path (named after a hash of the identity).
    const std::filesystem::path& path() const noexcept { return path_; }

private:
    struct Entry {
        KernelLevel chosen;
        std::size_t bytes;
        int rounds;
        double seconds;
        std::vector<KernelMeasurement> candidates;
    };
    /// The entries of an intact file of this identity (empty otherwise).
    std::map<std::string, Entry, std::less<>> read() const;

    std::filesystem::path dir_;
    CalibrationIdentity identity_;
    std::filesystem::path path_;
};

}  // namespace cdc::detail
