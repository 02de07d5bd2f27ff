// SPDX-License-Identifier: Apache-2.0
// Internal: what an algorithm family hands to the registry. Each family file
// (fastcdc.cpp, jc.cpp, ..., restic_rabin.cpp) owns the rows of its names:
// the public facts (defaults, ranges, which parameters it takes), the rules
// a range cannot say, and the factory of its cut finders. registry.cpp only
// lists the families and applies the generic rules the rows describe.
#pragma once

#include "params.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <array>
#include <memory>
#include <span>
#include <string_view>

namespace cdc::detail {

struct AlgorithmRow {
    AlgorithmInfo info;
    /// Rules beyond the ranges of `info`, on a profile whose values passed
    /// them (throws OptionError); nullptr if there are none.
    void (*check)(const AlgorithmInfo&, const Profile&) = nullptr;
    /// The finder for a validated profile; `options` carries the key.
    /// `level` is never automatic.
    std::shared_ptr<const CutFinder> (*make)(const AlgorithmInfo&, const Profile&, const Options&,
                                             KernelLevel) = nullptr;
};

// The rows of each family, in the order `cdc::algorithms()` lists them.
extern const std::array<AlgorithmRow, 3> kFastCdcRows;   // fastcdc.cpp
extern const std::array<AlgorithmRow, 3> kJcRows;        // jc.cpp
extern const std::array<AlgorithmRow, 2> kUltraCdcRows;  // ultracdc.cpp
extern const std::array<AlgorithmRow, 1> kStadiaRows;    // stadia.cpp
extern const std::array<AlgorithmRow, 1> kFixedRows;     // fixed.cpp
extern const std::array<AlgorithmRow, 3> kFastCdcRsRows; // fastcdc_rs.cpp
extern const std::array<AlgorithmRow, 1> kResticRows;    // restic_rabin.cpp
extern const std::array<AlgorithmRow, 1> kBorgRows;      // borg_buzhash.cpp
extern const std::array<AlgorithmRow, 1> kCasyncRows;    // casync_buzhash.cpp

/// The OptionError of a violated rule: "NAME: OPTION = VALUE is invalid: RULE".
[[noreturn]] inline void option_error(std::string_view algorithm, std::string_view option, std::uint64_t value,
                                      std::string_view rule) {
    throw OptionError(fmt::format("{}: {} = {} is invalid: {}", algorithm, option, value, rule), std::string(option));
}

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;

// The names of go-cdc-chunkers (ALGORITHMS.md): its default profile, whose
// masks it hard-codes, and its Gear table or the keyed one.
constexpr std::string_view kGoOrigin = "go-cdc-chunkers";
constexpr std::size_t kGoMin = 2 * KiB, kGoNormal = 8 * KiB, kGoMax = 64 * KiB;

constexpr bool is_go_default_profile(const Profile& p) noexcept {
    return p.min_size == kGoMin && p.normal_size == kGoNormal && p.max_size == kGoMax;
}

/// The Gear table a go-cdc-chunkers name scans with: the keyed one of
/// `o.key` (kept alive by `keyed`), else the static one.
struct GoGear {
    const std::uint64_t* table;
    const std::uint64_t* shifted;
    std::shared_ptr<const KeyedGear> keyed;
};
inline GoGear go_gear(const Options& o) {
    if (!o.key) return {gear_table().data(), shifted_gear_table().data(), nullptr};
    auto keyed = keyed_gear(*o.key);
    return {keyed->table.data(), keyed->shifted.data(), keyed};
}

/// The finder of every content-defined family: a scan function of the
/// family's parameters (the scalar reference or a kernel of the same
/// contract), plus whatever storage the parameters point into (a keyed or
/// seeded table, per-polynomial Rabin tables), kept alive with the finder.
template <class Params>
class FamilyFinder final : public CutFinder {
public:
    FamilyFinder(const AlgorithmInfo& info, const Profile& profile, KernelLevel used,
                 const KernelCalibration* calibration, Params params, ScanFn<Params> scan,
                 std::shared_ptr<const void> storage = nullptr)
        : CutFinder(info, profile, used, calibration), params_(params), scan_(scan), storage_(std::move(storage)) {}

    std::size_t find(const std::uint8_t* window, std::size_t n) const noexcept override {
        return scan_(params_, window, n);
    }
    const Params& params() const noexcept { return params_; }

private:
    Params params_;
    ScanFn<Params> scan_;
    std::shared_ptr<const void> storage_;
};

/// The finder a family's kernels are calibrated on: the name of `info` at
/// its probe profile (the defaults, or 2/8/64 KiB where the defaults are
/// larger than the calibration buffer), with the scalar kernel.
std::shared_ptr<const CutFinder> make_probe_finder(const AlgorithmInfo& info);

/// A FamilyFinder with the kernel `select` picks at `level` (automatic: the
/// family's calibrated choice, measured on its probe finder's parameters on
/// the family's first automatic use).
template <class Params>
std::shared_ptr<const CutFinder> make_family_finder(
    const AlgorithmInfo& info, const Profile& profile, KernelLevel level, const Params& params,
    ScanFn<Params> (*select)(KernelLevel, KernelLevel*, const ProbeFn<Params>&, const KernelCalibration**),
    std::shared_ptr<const void> storage = nullptr) {
    KernelLevel used = KernelLevel::scalar;
    const KernelCalibration* measured = nullptr;
    std::shared_ptr<const CutFinder> probe;  // keeps the probe's tables alive while it is measured
    const ScanFn<Params> scan = select(
        level, &used,
        [&] {
            probe = make_probe_finder(info);
            return static_cast<const FamilyFinder<Params>&>(*probe).params();
        },
        &measured);
    return std::make_shared<FamilyFinder<Params>>(info, profile, used, measured, params, scan, std::move(storage));
}

}  // namespace cdc::detail
