// The registry of algorithm names: defaults, validation (ALGORITHMS.md
// section 5) and construction of cut finders.
#include "params.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <array>
#include <memory>

namespace cdc {

namespace {

constexpr std::size_t KiB = 1024;

constexpr std::array kAlgorithms = {
    AlgorithmInfo{"fastcdc", "FastCDC with fixed masks (go-cdc-chunkers default); optional key", 2 * KiB, 8 * KiB,
                  64 * KiB, true, false, true, true},
    AlgorithmInfo{"kfastcdc", "keyed FastCDC: Gear table derived from a 32-byte key with BLAKE3", 2 * KiB, 8 * KiB,
                  64 * KiB, true, true, true, true},
    AlgorithmInfo{"fastcdc-v1.0.0", "FastCDC, spec-faithful masks scaled with the average size; optional key",
                  2 * KiB, 8 * KiB, 64 * KiB, true, false, true, true},
    AlgorithmInfo{"jc", "jump-based chunking, fixed masks, final window returned whole; optional key", 2 * KiB,
                  8 * KiB, 64 * KiB, true, false, false, true},
    AlgorithmInfo{"jc-v1.0.0", "jump-based chunking, masks scaled with the average size; optional key", 2 * KiB,
                  8 * KiB, 64 * KiB, true, false, false, true},
    AlgorithmInfo{"jc-v1.1.0", "jump-based chunking as in the paper (final window scanned too); optional key",
                  2 * KiB, 8 * KiB, 64 * KiB, true, false, false, true},
    AlgorithmInfo{"ultracdc", "UltraCDC: hash-free Hamming-distance chunking, cuts inside the 8-byte block",
                  2 * KiB, 10 * KiB, 64 * KiB, false, false, false, true},
    AlgorithmInfo{"ultracdc-v1.0.0", "UltraCDC, cuts at the end of the matching 8-byte block", 2 * KiB, 10 * KiB,
                  64 * KiB, false, false, false, true},
    AlgorithmInfo{"fastcdc4stadia", "FastCDC variant with all-ones seed and regression to the best candidate",
                  2 * KiB, 8 * KiB, 64 * KiB, false, false, false, true},
    AlgorithmInfo{"fixed-v1.0.0", "fixed-size chunks of the average size (min and max are forced to it)", 64 * KiB,
                  64 * KiB, 64 * KiB, false, false, true, false},
};

// Masks that the Go library hard-codes for its default profile.
constexpr std::uint64_t kFastCdcMaskS = 0x0003590703530000ULL;
constexpr std::uint64_t kFastCdcMaskL = 0x0000d90003530000ULL;
constexpr std::uint64_t kJcMaskC = 0x590003570000ULL;
constexpr std::uint64_t kJcMaskJ = 0x590003560000ULL;

bool is_default_profile(const Profile& p) {
    return p.min_size == 2 * KiB && p.normal_size == 8 * KiB && p.max_size == 64 * KiB;
}

[[noreturn]] void fail(std::string_view algorithm, std::string_view option, std::size_t value, std::string_view rule) {
    throw OptionError(fmt::format("{}: {} = {} is invalid: {}", algorithm, option, value, rule), std::string(option));
}

void check_range(std::string_view algorithm, std::string_view option, std::size_t value) {
    if (value < kMinChunkSizeLimit) fail(algorithm, option, value, "must be at least 64 bytes");
    if (value > kMaxChunkSizeLimit) fail(algorithm, option, value, "must be at most 1 GiB (1073741824 bytes)");
}

// ---- cut finders, one class per family ----

template <class Params>
class FamilyFinder final : public CutFinder {
public:
    FamilyFinder(const AlgorithmInfo& info, const Profile& profile, KernelLevel used, Params params,
                 detail::ScanFn<Params> scan, std::shared_ptr<const detail::KeyedGear> keyed)
        : CutFinder(info, profile, used), params_(params), scan_(scan), keyed_(std::move(keyed)) {}

    std::size_t find(const std::uint8_t* window, std::size_t n) const noexcept override {
        return scan_(params_, window, n);
    }

private:
    Params params_;
    detail::ScanFn<Params> scan_;
    std::shared_ptr<const detail::KeyedGear> keyed_;  // keeps a keyed table alive
};

class FixedFinder final : public CutFinder {
public:
    FixedFinder(const AlgorithmInfo& info, const Profile& profile) : CutFinder(info, profile, KernelLevel::scalar) {}
    std::size_t find(const std::uint8_t*, std::size_t n) const noexcept override {
        return n < profile().normal_size ? n : profile().normal_size;
    }
};

}  // namespace

std::span<const AlgorithmInfo> algorithms() { return kAlgorithms; }

const AlgorithmInfo* find_algorithm(std::string_view name) noexcept {
    for (const auto& a : kAlgorithms)
        if (a.name == name) return &a;
    return nullptr;
}

std::string algorithm_names() {
    std::string out;
    for (const auto& a : kAlgorithms) {
        if (!out.empty()) out += ", ";
        out += a.name;
    }
    return out;
}

static const AlgorithmInfo& lookup(std::string_view algorithm) {
    const AlgorithmInfo* info = find_algorithm(algorithm);
    if (info == nullptr)
        throw OptionError(fmt::format("unknown algorithm '{}': known algorithms are {}", algorithm, algorithm_names()),
                          "algorithm");
    return *info;
}

Profile resolve_profile(std::string_view algorithm, const Options& o) {
    const AlgorithmInfo& info = lookup(algorithm);
    Profile p;
    p.normal_size = o.normal_size ? o.normal_size : info.default_normal;
    if (!info.content_defined) {
        // fixed-v1.0.0: one size only; MinSize and MaxSize are forced to it.
        check_range(info.name, "normal_size", p.normal_size);
        if (!std::has_single_bit(p.normal_size)) fail(info.name, "normal_size", p.normal_size, "must be a power of two");
        p.min_size = p.max_size = p.normal_size;
    } else {
        p.min_size = o.min_size ? o.min_size : info.default_min;
        p.max_size = o.max_size ? o.max_size : info.default_max;
        check_range(info.name, "min_size", p.min_size);
        check_range(info.name, "normal_size", p.normal_size);
        check_range(info.name, "max_size", p.max_size);
        if (p.normal_size <= p.min_size)
            fail(info.name, "normal_size", p.normal_size, fmt::format("must be greater than min_size ({})", p.min_size));
        if (p.max_size <= p.normal_size)
            fail(info.name, "max_size", p.max_size, fmt::format("must be greater than normal_size ({})", p.normal_size));
        if (info.normal_power_of_two && !std::has_single_bit(p.normal_size))
            fail(info.name, "normal_size", p.normal_size, "must be a power of two for FastCDC names");
    }
    if (o.key) {
        if (!info.accepts_key)
            throw OptionError(fmt::format(
                "{}: key is invalid: this algorithm cannot use a key (a key applies to the Gear-based names "
                "fastcdc, kfastcdc, fastcdc-v1.0.0, jc, jc-v1.0.0, jc-v1.1.0); refusing to chunk unkeyed",
                info.name),
                "key");
        p.keyed = true;
    } else if (info.requires_key) {
        throw OptionError(fmt::format("{}: key is missing: this algorithm requires a 32-byte key", info.name), "key");
    }
    return p;
}

std::shared_ptr<const CutFinder> make_cut_finder(std::string_view algorithm, const Options& options,
                                                 KernelLevel level) {
    const AlgorithmInfo& info = lookup(algorithm);
    const Profile p = resolve_profile(algorithm, options);
    if (level == KernelLevel::automatic) level = default_kernel_level();
    KernelLevel used = KernelLevel::scalar;
    const std::string_view name = info.name;

    std::shared_ptr<const detail::KeyedGear> keyed;
    if (options.key) keyed = detail::keyed_gear(*options.key);
    const std::uint64_t* gear = keyed ? keyed->table.data() : gear_table().data();
    const std::uint64_t* shifted = keyed ? keyed->shifted.data() : detail::shifted_gear_table().data();

    if (name == "fastcdc" || name == "kfastcdc" || name == "fastcdc-v1.0.0") {
        detail::FastCdcParams params{gear, shifted, p.min_size, p.normal_size, p.max_size, kFastCdcMaskS, kFastCdcMaskL};
        if (name == "fastcdc-v1.0.0" && !is_default_profile(p)) {
            const int b = detail::floor_log2(p.normal_size);
            params.mask_s = detail::spaced_mask(b + 2);
            params.mask_l = detail::spaced_mask(b - 2);
        }
        auto scan = detail::select_fastcdc(level, &used);
        return std::make_shared<FamilyFinder<detail::FastCdcParams>>(info, p, used, params, scan, keyed);
    }
    if (name == "jc" || name == "jc-v1.0.0" || name == "jc-v1.1.0") {
        const int c_ones = detail::floor_log2(p.normal_size) - 1;
        const int j_ones = c_ones - 1;
        const std::uint64_t jump =
            (std::uint64_t{1} << (c_ones + j_ones)) / ((std::uint64_t{1} << c_ones) - (std::uint64_t{1} << j_ones));
        detail::JcParams params{gear, shifted, p.min_size, p.normal_size, p.max_size, kJcMaskC, kJcMaskJ,
                                static_cast<std::size_t>(jump), name != "jc-v1.1.0"};
        if (name == "jc-v1.0.0" && !is_default_profile(p)) {
            params.mask_c = detail::spaced_mask(c_ones);
            params.mask_j = params.mask_c & (params.mask_c - 1);  // lowest set bit cleared
        }
        auto scan = detail::select_jc(level, &used);
        return std::make_shared<FamilyFinder<detail::JcParams>>(info, p, used, params, scan, keyed);
    }
    if (name == "fastcdc4stadia") {
        detail::StadiaParams params{stadia_gear_table().data(), p.min_size, p.normal_size, p.max_size,
                                    ~std::uint64_t{0} / (p.normal_size - p.min_size + 1)};
        auto scan = detail::select_stadia(level, &used);
        return std::make_shared<FamilyFinder<detail::StadiaParams>>(info, p, used, params, scan, nullptr);
    }
    if (name == "ultracdc" || name == "ultracdc-v1.0.0") {
        detail::UltraParams params{p.min_size, p.normal_size, p.max_size, name == "ultracdc-v1.0.0"};
        auto scan = detail::select_ultra(level, &used);
        return std::make_shared<FamilyFinder<detail::UltraParams>>(info, p, used, params, scan, nullptr);
    }
    return std::make_shared<FixedFinder>(info, p);
}

}  // namespace cdc
