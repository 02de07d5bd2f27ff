// SPDX-License-Identifier: Apache-2.0
// cdc/algorithms.hpp — the registry of algorithm names and the cut finders.
//
// A cut finder is the pure heart of an algorithm: given a window (the next
// min(MaxSize, remaining) bytes of a stream, ALGORITHMS.md section 1) it
// returns the length of the next chunk. It is immutable after construction
// and safe to share between threads.
#pragma once

#include <cdc/enum_names.hpp>
#include <cdc/options.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cdc {

/// Whether a name takes a 32-byte key (Options::key).
enum class KeyUse : std::uint8_t { none, optional, required };

/// What one size option (min, normal or max) may be, in bytes.
struct SizeRule {
    std::size_t low = kMinChunkSizeLimit;
    std::size_t high = kMaxChunkSizeLimit;
    bool power_of_two = false;
};

/// One optional numeric parameter (level, seed, polynomial, window): whether
/// the name takes it, its default and its inclusive range. A family may add
/// rules that a range cannot say (restic-rabin's polynomial must be
/// irreducible, borg-buzhash's window + min + 1 <= max).
struct ParameterRule {
    bool accepted = false;
    std::uint64_t default_value = 0;
    std::uint64_t low = 0;
    std::uint64_t high = 0;
};

/// Static facts about one algorithm name: its defaults and the rules its
/// options must follow (resolve_profile applies them).
struct AlgorithmInfo {
    std::string_view name;
    std::string_view summary;        ///< one line
    std::string_view origin;         ///< whose cut points it reproduces, with the version
    std::size_t default_min = 0;
    std::size_t default_normal = 0;
    std::size_t default_max = 0;
    SizeRule min_rule{};
    SizeRule normal_rule{};
    SizeRule max_rule{};
    KeyUse key = KeyUse::none;       ///< Gear-based names of go-cdc-chunkers
    bool content_defined = true;     ///< false for fixed-v1.0.0 (min and max forced to normal)
    ParameterRule normalization_level{};
    ParameterRule seed{};
    ParameterRule polynomial{};
    ParameterRule window_size{};
};

/// Every algorithm name, in a stable order.
std::span<const AlgorithmInfo> algorithms();

/// The entry for `name`, or nullptr.
const AlgorithmInfo* find_algorithm(std::string_view name) noexcept;

/// A comma-separated list of every name (for error messages and help).
std::string algorithm_names();

/// Kernel levels for the accelerated scanners. An ISA level says what a CPU
/// can run, not what runs fastest on it (gathers are cheap on one CPU and
/// slow on the next), so `automatic` measures: on the first use of a kernel
/// family in a process it times every exact kernel the CPU supports and
/// keeps the fastest (see kernel_calibration). The others force a level
/// (falling back to the best available kernel not above it). `scalar` is
/// the plain reference of the spec; every level returns its cut points.
/// `avx512vbmi` is `avx512` plus the byte permutes of VBMI (table lookups
/// without gathers).
enum class KernelLevel { automatic, scalar, wide, avx2, avx512, avx512vbmi };
inline constexpr std::array kKernelLevelNames = {
    EnumName<KernelLevel>{KernelLevel::automatic, "auto"}, EnumName<KernelLevel>{KernelLevel::scalar, "scalar"},
    EnumName<KernelLevel>{KernelLevel::wide, "wide"}, EnumName<KernelLevel>{KernelLevel::avx2, "avx2"},
    EnumName<KernelLevel>{KernelLevel::avx512, "avx512"}, EnumName<KernelLevel>{KernelLevel::avx512vbmi, "avx512vbmi"}};

/// Parses "auto", "scalar", "wide", "avx2", "avx512", "avx512vbmi"; throws OptionError.
KernelLevel parse_kernel_level(std::string_view text);
std::string_view to_string(KernelLevel level) noexcept;

/// The highest level this CPU (and this build) supports.
KernelLevel best_kernel_level() noexcept;

/// The level used when a finder is created with KernelLevel::automatic:
/// the level forced by the environment variable CDC_KERNEL ("scalar",
/// "wide", "avx2", "avx512", "avx512vbmi"; "auto" or unset: KernelLevel::automatic, i.e.
/// the calibrated choice). Read once per process; throws OptionError for an
/// invalid value.
KernelLevel default_kernel_level();

/// One candidate kernel of a family, as the calibration measured it.
struct KernelMeasurement {
    KernelLevel level = KernelLevel::scalar;
    double mb_s = 0;  ///< its median pass over the in-cache calibration buffer (MB = 10^6 bytes)
};

/// How the kernel of one family (the algorithm names that share a scanner)
/// was chosen in this process.
struct KernelCalibration {
    std::string_view family;                  ///< "fastcdc", "jc", "fastcdc4stadia", "ultracdc"
    std::vector<KernelMeasurement> candidates;///< every kernel this CPU runs, scalar first
    KernelLevel chosen = KernelLevel::scalar; ///< the fastest candidate
    std::size_t bytes = 0;                    ///< size of the calibration buffer (pseudo-random, in cache)
    int rounds = 0;                           ///< timed passes per candidate (candidates alternating)
    double seconds = 0;                       ///< CPU time the calibration took
    bool cached = false;                      ///< read from the calibration cache, measured by an earlier process
};

/// The calibration of `algorithm`'s kernel family: run on the first use of
/// the family in this process (by this call, or by a finder created with
/// KernelLevel::automatic), bounded to ~2 ms, then cached; thread-safe.
/// Calibrations are also kept between processes, per CPU and build, in
/// kernel_calibration_cache_file(): a later process reads the choice
/// instead of measuring (`cached` is then true).
/// std::nullopt for a name without kernels (fixed-v1.0.0). Throws
/// OptionError for an unknown name.
std::optional<KernelCalibration> kernel_calibration(std::string_view algorithm);

/// The file kernel calibrations are kept in between processes:
/// $XDG_CACHE_HOME/cdc-chunkers/ (an absolute XDG_CACHE_HOME) or
/// ~/.cache/cdc-chunkers/, one file per CPU (vendor, family, model,
/// stepping, feature flags) and build (version, build ID, kernels); written
/// 0600 in a 0700 directory through a temporary file and a rename. A file
/// that is missing, damaged, foreign or names a kernel this CPU or build
/// cannot run only means "calibrate again". std::nullopt when the
/// environment variable CDC_KERNEL_CACHE is 0, off, no or false (or there
/// is no home directory).
std::optional<std::string> kernel_calibration_cache_file();

/// Finds cut points in windows; see the file comment.
class CutFinder {
public:
    virtual ~CutFinder() = default;

    /// Returns the cut point c, 1 <= c <= window.size(), for a non-empty
    /// window whose size is min(max_size, bytes remaining in the stream).
    virtual std::size_t find(const std::uint8_t* window, std::size_t n) const noexcept = 0;

    std::size_t find(std::span<const std::byte> window) const noexcept {
        return find(reinterpret_cast<const std::uint8_t*>(window.data()), window.size());
    }

    const Profile& profile() const noexcept { return profile_; }
    std::string_view name() const noexcept { return info_->name; }
    const AlgorithmInfo& info() const noexcept { return *info_; }
    KernelLevel kernel_level() const noexcept { return level_; }
    /// The measurement that chose this finder's kernel (created with
    /// KernelLevel::automatic and no CDC_KERNEL), else nullptr.
    const KernelCalibration* calibration() const noexcept { return calibration_; }

protected:
    CutFinder(const AlgorithmInfo& info, const Profile& profile, KernelLevel level,
              const KernelCalibration* calibration = nullptr)
        : info_(&info), profile_(profile), level_(level), calibration_(calibration) {}

private:
    const AlgorithmInfo* info_;
    Profile profile_;
    KernelLevel level_;
    const KernelCalibration* calibration_;  // the family's cached calibration (lives as long as the process)
};

/// An algorithm name with its options (the sizes and key a user asked for).
struct AlgorithmSpec {
    std::string name;
    Options options;
};

/// Creates the cut finder for `algorithm` with validated `options`.
/// Throws OptionError. Keyed tables are derived once per key and shared.
std::shared_ptr<const CutFinder> make_cut_finder(std::string_view algorithm, const Options& options = {},
                                                 KernelLevel level = KernelLevel::automatic);
inline std::shared_ptr<const CutFinder> make_cut_finder(const AlgorithmSpec& spec,
                                                        KernelLevel level = KernelLevel::automatic) {
    return make_cut_finder(spec.name, spec.options, level);
}

/// A 256-entry Gear table.
using GearTable = std::array<std::uint64_t, 256>;

/// The static Gear table of fastcdc / jc (spec/gear-plakar.txt).
const GearTable& gear_table() noexcept;
/// The table of fastcdc4stadia (spec/gear-stadia.txt).
const GearTable& stadia_gear_table() noexcept;
/// The keyed table for `key` (BLAKE3 keyed hash + XOF, ALGORITHMS.md
/// "Keyed tables"). Computed once per key while any user holds it; thread-safe.
std::shared_ptr<const GearTable> keyed_gear_table(const Key& key);

}  // namespace cdc
