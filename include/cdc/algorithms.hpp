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
#include <span>
#include <string>
#include <string_view>

namespace cdc {

/// Static facts about one algorithm name.
struct AlgorithmInfo {
    std::string_view name;
    std::string_view summary;        ///< one line
    std::size_t default_min = 0;
    std::size_t default_normal = 0;
    std::size_t default_max = 0;
    bool accepts_key = false;        ///< Gear-based names
    bool requires_key = false;       ///< kfastcdc
    bool normal_power_of_two = false;///< FastCDC names and fixed
    bool content_defined = true;     ///< false for fixed-v1.0.0
};

/// Every algorithm name, in a stable order.
std::span<const AlgorithmInfo> algorithms();

/// The entry for `name`, or nullptr.
const AlgorithmInfo* find_algorithm(std::string_view name) noexcept;

/// A comma-separated list of every name (for error messages and help).
std::string algorithm_names();

/// Kernel levels for the accelerated scanners. `automatic` picks the best the
/// CPU supports; the others force a level (falling back to the best available
/// level not above it). `scalar` is the plain reference of the spec.
enum class KernelLevel { automatic, scalar, wide, avx2, avx512 };
inline constexpr std::array kKernelLevelNames = {
    EnumName<KernelLevel>{KernelLevel::automatic, "auto"}, EnumName<KernelLevel>{KernelLevel::scalar, "scalar"},
    EnumName<KernelLevel>{KernelLevel::wide, "wide"}, EnumName<KernelLevel>{KernelLevel::avx2, "avx2"},
    EnumName<KernelLevel>{KernelLevel::avx512, "avx512"}};

/// Parses "auto", "scalar", "wide", "avx2", "avx512"; throws OptionError.
KernelLevel parse_kernel_level(std::string_view text);
std::string_view to_string(KernelLevel level) noexcept;

/// The highest level this CPU (and this build) supports.
KernelLevel best_kernel_level() noexcept;

/// The level used when a finder is created with KernelLevel::automatic:
/// the environment variable CDC_KERNEL ("scalar", "wide", "avx2", "avx512")
/// if set, else best_kernel_level(). Read once per process.
KernelLevel default_kernel_level();

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

protected:
    CutFinder(const AlgorithmInfo& info, const Profile& profile, KernelLevel level)
        : info_(&info), profile_(profile), level_(level) {}

private:
    const AlgorithmInfo* info_;
    Profile profile_;
    KernelLevel level_;
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
