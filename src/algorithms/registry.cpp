// SPDX-License-Identifier: Apache-2.0
// The registry of algorithm names: the families' rows in one list, the
// generic rules those rows describe (ALGORITHMS.md section 5, COMPAT.md
// section 8: sizes, key, optional parameters) and the construction of cut
// finders. Each family's own rules and factory live in its file.
#include "family.hpp"

#include <algorithm>
#include <bit>
#include <type_traits>
#include <vector>

namespace cdc {

namespace {

using detail::AlgorithmRow;
using detail::option_error;

constexpr std::array<std::span<const AlgorithmRow>, 9> kFamilies = {
    std::span<const AlgorithmRow>(detail::kFastCdcRows), std::span<const AlgorithmRow>(detail::kJcRows),
    std::span<const AlgorithmRow>(detail::kUltraCdcRows), std::span<const AlgorithmRow>(detail::kStadiaRows),
    std::span<const AlgorithmRow>(detail::kFixedRows),    std::span<const AlgorithmRow>(detail::kFastCdcRsRows),
    std::span<const AlgorithmRow>(detail::kResticRows),   std::span<const AlgorithmRow>(detail::kBorgRows),
    std::span<const AlgorithmRow>(detail::kCasyncRows),
};

struct Registry {
    std::vector<AlgorithmInfo> infos;        // contiguous, for algorithms()
    std::vector<const AlgorithmRow*> rows;   // rows[i] describes infos[i]
};

const Registry& registry() {
    static const Registry r = [] {
        Registry out;
        for (auto family : kFamilies)
            for (const auto& row : family) {
                out.infos.push_back(row.info);
                out.rows.push_back(&row);
            }
        return out;
    }();
    return r;
}

const AlgorithmRow& lookup(std::string_view algorithm) {
    const AlgorithmInfo* info = find_algorithm(algorithm);
    if (info == nullptr)
        throw OptionError(fmt::format("unknown algorithm '{}': known algorithms are {}", algorithm, algorithm_names()),
                          "algorithm");
    const Registry& r = registry();
    return *r.rows[static_cast<std::size_t>(info - r.infos.data())];
}

/// "1 GiB (1073741824 bytes)", "8 MiB (8388608 bytes)", "64 bytes".
std::string describe_bytes(std::uint64_t n) {
    constexpr std::pair<std::uint64_t, std::string_view> units[] = {{1ULL << 30, "GiB"}, {1ULL << 20, "MiB"},
                                                                   {1ULL << 10, "KiB"}};
    for (const auto& [unit, name] : units)
        if (n >= unit && n % unit == 0) return fmt::format("{} {} ({} bytes)", n / unit, name, n);
    return fmt::format("{} bytes", n);
}

void check_size(const AlgorithmInfo& info, std::string_view option, std::size_t value, const SizeRule& rule) {
    if (value < rule.low) option_error(info.name, option, value, fmt::format("must be at least {}", describe_bytes(rule.low)));
    if (value > rule.high) option_error(info.name, option, value, fmt::format("must be at most {}", describe_bytes(rule.high)));
    if (rule.power_of_two && !std::has_single_bit(value)) option_error(info.name, option, value, "must be a power of two");
}

/// The names that take the parameter `which` points to, for error messages.
std::string names_taking(ParameterRule AlgorithmInfo::*which) {
    std::string out;
    for (const auto& a : algorithms())
        if ((a.*which).accepted) out += (out.empty() ? "" : ", ") + std::string(a.name);
    return out;
}

/// Applies one optional parameter: refused where the name does not take
/// it, checked against its range, else the default.
template <class T>
std::uint64_t resolve_parameter(const AlgorithmInfo& info, std::string_view option, ParameterRule AlgorithmInfo::*which,
                                const std::optional<T>& given) {
    const ParameterRule& rule = info.*which;
    if (!given) return rule.accepted ? rule.default_value : 0;
    if (!rule.accepted)
        throw OptionError(fmt::format("{}: {} is invalid: this algorithm has no {} (the names that take one: {})",
                                      info.name, option, option, names_taking(which)),
                          std::string(option));
    const bool negative = std::is_signed_v<T> && *given < T{0};
    const auto value = static_cast<std::uint64_t>(*given);
    if (negative || value < rule.low || value > rule.high)
        throw OptionError(fmt::format("{}: {} = {} is invalid: must be {}..{}", info.name, option, *given, rule.low,
                                      rule.high),
                          std::string(option));
    return value;
}

}  // namespace

std::span<const AlgorithmInfo> algorithms() { return registry().infos; }

const AlgorithmInfo* find_algorithm(std::string_view name) noexcept {
    for (const auto& a : registry().infos)
        if (a.name == name) return &a;
    return nullptr;
}

std::string algorithm_names() {
    std::string out;
    for (const auto& a : registry().infos) {
        if (!out.empty()) out += ", ";
        out += a.name;
    }
    return out;
}

Profile resolve_profile(std::string_view algorithm, const Options& o) {
    const AlgorithmRow& row = lookup(algorithm);
    const AlgorithmInfo& info = row.info;
    Profile p;
    p.normal_size = o.normal_size ? o.normal_size : info.default_normal;
    if (!info.content_defined) {
        // fixed-v1.0.0: one size only; MinSize and MaxSize are forced to it.
        check_size(info, "normal_size", p.normal_size, info.normal_rule);
        p.min_size = p.max_size = p.normal_size;
    } else {
        p.min_size = o.min_size ? o.min_size : info.default_min;
        p.max_size = o.max_size ? o.max_size : info.default_max;
        check_size(info, "min_size", p.min_size, info.min_rule);
        check_size(info, "normal_size", p.normal_size, info.normal_rule);
        check_size(info, "max_size", p.max_size, info.max_rule);
        if (p.normal_size <= p.min_size)
            option_error(info.name, "normal_size", p.normal_size,
                         fmt::format("must be greater than min_size ({})", p.min_size));
        if (p.max_size <= p.normal_size)
            option_error(info.name, "max_size", p.max_size,
                         fmt::format("must be greater than normal_size ({})", p.normal_size));
    }
    if (o.key) {
        if (info.key == KeyUse::none) {
            std::string gear;
            for (const auto& a : algorithms())
                if (a.key != KeyUse::none) gear += (gear.empty() ? "" : ", ") + std::string(a.name);
            throw OptionError(fmt::format("{}: key is invalid: this algorithm cannot use a key (a key applies to the "
                                          "Gear-based names {}); refusing to chunk unkeyed",
                                          info.name, gear),
                              "key");
        }
        p.keyed = true;
    } else if (info.key == KeyUse::required) {
        throw OptionError(fmt::format("{}: key is missing: this algorithm requires a 32-byte key", info.name), "key");
    }
    p.normalization_level = static_cast<int>(
        resolve_parameter(info, "normalization_level", &AlgorithmInfo::normalization_level, o.normalization_level));
    p.seed = resolve_parameter(info, "seed", &AlgorithmInfo::seed, o.seed);
    p.polynomial = resolve_parameter(info, "polynomial", &AlgorithmInfo::polynomial, o.polynomial);
    p.window_size = static_cast<std::size_t>(resolve_parameter(info, "window_size", &AlgorithmInfo::window_size, o.window_size));
    if (row.check) row.check(info, p);
    return p;
}

std::shared_ptr<const CutFinder> make_cut_finder(std::string_view algorithm, const Options& options,
                                                 KernelLevel level) {
    const AlgorithmRow& row = lookup(algorithm);
    const Profile p = resolve_profile(algorithm, options);
    if (level == KernelLevel::automatic) level = default_kernel_level();
    return row.make(row.info, p, options, level);
}

namespace {
// The profile a family's kernels are measured on: its defaults, or
// 2/8/64 KiB where the defaults reach beyond the calibration buffer (restic
// and borg cut MiB chunks: a 256 KiB buffer would never be scanned).
Options probe_options(const AlgorithmInfo& info) {
    Options o;
    if (info.key == KeyUse::required) o.key = Key{};
    if (info.default_min >= 64 * detail::KiB) {
        o.min_size = 2 * detail::KiB;
        o.normal_size = 8 * detail::KiB;
        o.max_size = 64 * detail::KiB;
    }
    return o;
}

}  // namespace

namespace detail {
// The name's own row: every name of a kernel family scans the same
// parameter type with the same kernels.
std::shared_ptr<const CutFinder> make_probe_finder(const AlgorithmInfo& info) {
    const AlgorithmRow& row = lookup(info.name);
    const Options o = probe_options(row.info);
    return row.make(row.info, resolve_profile(row.info.name, o), o, KernelLevel::scalar);
}
}  // namespace detail

std::optional<KernelCalibration> kernel_calibration(std::string_view algorithm) {
    const AlgorithmRow& row = lookup(algorithm);
    if (!row.info.content_defined) return std::nullopt;
    const Options o = probe_options(row.info);
    const auto finder = row.make(row.info, resolve_profile(row.info.name, o), o, KernelLevel::automatic);
    if (finder->calibration() == nullptr) return std::nullopt;
    return *finder->calibration();
}

}  // namespace cdc
