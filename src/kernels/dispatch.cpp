// SPDX-License-Identifier: Apache-2.0
// Run-time kernel selection: the one place that knows which accelerated
// scanner exists for which family and ISA level, and which of them runs
// fastest on this CPU (calibrate.hpp: measured on a family's first automatic
// use, then cached). The scalar reference is always available and is what
// every other kernel is tested against.
#include "calibrate.hpp"
#include "calibration_cache.hpp"
#include "kernels.hpp"

#include <cdc/enum_names.hpp>
#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace cdc {

KernelLevel parse_kernel_level(std::string_view text) { return parse_name(kKernelLevelNames, text, "kernel"); }

std::string_view to_string(KernelLevel level) noexcept { return name_of(kKernelLevelNames, level); }

KernelLevel best_kernel_level() noexcept {
#if defined(CDC_X86_KERNELS) && defined(__GNUC__)
    static const KernelLevel level = [] {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
            return __builtin_cpu_supports("avx512vbmi") ? KernelLevel::avx512vbmi : KernelLevel::avx512;
        if (__builtin_cpu_supports("avx2")) return KernelLevel::avx2;
        return KernelLevel::wide;
    }();
    return level;
#else
    return KernelLevel::wide;
#endif
}

KernelLevel default_kernel_level() {
    static const KernelLevel level = [] {
        const char* env = std::getenv("CDC_KERNEL");
        if (env == nullptr || *env == '\0') return KernelLevel::automatic;
        // The user set a variable, not an option: the message names it.
        return parse_name(kKernelLevelNames, env, "environment variable CDC_KERNEL");
    }();
    return level;
}

namespace detail {

// A level above what the CPU has is lowered to the best it has.
static KernelLevel clamp(KernelLevel level) noexcept {
    const KernelLevel best = best_kernel_level();
    return static_cast<int>(level) > static_cast<int>(best) ? best : level;
}

// One row per family: the kernel of each level (nullptr: none at that
// level), and the family's calibration, run on its first automatic use.
template <class Params>
struct KernelSet {
    ScanFn<Params> scalar, wide, avx2, avx512, avx512vbmi = nullptr;
};
template <class Params>
struct Family {
    std::string_view name;
    KernelSet<Params> set;
    std::size_t calibration_bytes;  ///< a prefix of calibration_buffer()
    CalibrationCache cache{};
};

// The kernel of a forced level: the family's best at or below it.
template <class Params>
static ScanFn<Params> pick(const KernelSet<Params>& set, KernelLevel level, KernelLevel* used) noexcept {
    switch (clamp(level)) {
        case KernelLevel::avx512vbmi:
            if (set.avx512vbmi) return *used = KernelLevel::avx512vbmi, set.avx512vbmi;
            [[fallthrough]];
        case KernelLevel::avx512:
            if (set.avx512) return *used = KernelLevel::avx512, set.avx512;
            [[fallthrough]];
        case KernelLevel::avx2:
            if (set.avx2) return *used = KernelLevel::avx2, set.avx2;
            [[fallthrough]];
        case KernelLevel::automatic:
        case KernelLevel::wide:
            if (set.wide) return *used = KernelLevel::wide, set.wide;
            [[fallthrough]];
        case KernelLevel::scalar:
            break;
    }
    *used = KernelLevel::scalar;
    return set.scalar;
}

// Times every distinct kernel the CPU runs, cutting the calibration buffer
// as a stream with `probe` (the family's probe profile).
template <class Params>
static KernelCalibration calibrate(const Family<Params>& family, const Params& probe,
                                   const CalibrationLimits& limits) {
    const KernelSet<Params>& set = family.set;
    const std::span<const std::uint8_t> buf = calibration_buffer().first(family.calibration_bytes);
    std::vector<CalibrationCandidate> candidates;
    std::vector<ScanFn<Params>> seen;
    for (KernelLevel level : {KernelLevel::scalar, KernelLevel::wide, KernelLevel::avx2, KernelLevel::avx512,
                              KernelLevel::avx512vbmi}) {
        if (static_cast<int>(level) > static_cast<int>(best_kernel_level())) break;
        KernelLevel used = level;
        const ScanFn<Params> scan = pick(set, level, &used);
        if (used != level || std::find(seen.begin(), seen.end(), scan) != seen.end()) continue;
        seen.push_back(scan);
        candidates.push_back({level, [scan, &probe, buf] {
                                  std::size_t pos = 0;
                                  std::size_t cuts = 0;
                                  while (pos < buf.size()) {
                                      pos += scan(probe, buf.data() + pos, std::min(probe.max, buf.size() - pos));
                                      ++cuts;
                                  }
                                  // keeps the scans from being optimised away
                                  asm volatile("" : : "r"(cuts));
                              }});
    }
    return run_calibration(family.name, candidates, buf.size(), &thread_cpu_seconds, limits);
}

// Whether `family` has a kernel exactly at `level` that this CPU runs: the
// only levels a calibration read from disk may name.
template <class Params>
static bool runs_kernel_at(const Family<Params>& family, KernelLevel level) noexcept {
    if (level == KernelLevel::automatic || static_cast<int>(level) > static_cast<int>(best_kernel_level()))
        return false;
    KernelLevel used = KernelLevel::scalar;
    pick(family.set, level, &used);
    return used == level;
}

static std::string kernel_list();

// The calibrations kept on disk between processes (calibration_cache.hpp),
// opened on first use; none when CDC_KERNEL_CACHE disables them.
struct DiskCalibrations {
    std::mutex mutex;
    std::optional<CalibrationFile> file;
    DiskCalibrations() {
        if (auto dir = calibration_cache_dir([](const char* name) { return std::getenv(name); }))
            file.emplace(std::move(*dir), CalibrationIdentity{cpu_identity(), build_identity(kernel_list())});
    }
};
static DiskCalibrations& disk_calibrations() {
    static DiskCalibrations d;
    return d;
}

// A family's calibration: read from disk if an earlier process of this
// build on this CPU measured it, else measured now (and written for the
// next process).
template <class Params>
static KernelCalibration calibrate_or_load(const Family<Params>& family, const ProbeFn<Params>& probe) {
    DiskCalibrations& disk = disk_calibrations();
    bool kept = false;  // (a calibration that will be kept may run longer)
    if (disk.file) {
        std::lock_guard lock(disk.mutex);
        if (auto c = disk.file->load(family.name, [&](KernelLevel l) { return runs_kernel_at(family, l); }))
            return *c;
        kept = disk.file->writable();
    }
    KernelCalibration c = calibrate(family, probe(), kept ? CalibrationLimits::kept() : CalibrationLimits{});
    if (kept) {
        std::lock_guard lock(disk.mutex);
        // Best effort: a cache that cannot be written is measured again next time.
        disk.file->store(c);
    }
    return c;
}

// The kernel for `level`; automatic: the family's calibrated choice (the
// probe is made, and the family measured, on its first automatic use only).
template <class Params>
static ScanFn<Params> select(Family<Params>& family, KernelLevel level, KernelLevel* used,
                             const ProbeFn<Params>& probe, const KernelCalibration** measured) {
    if (level == KernelLevel::automatic) {
        const KernelCalibration& c = family.cache.get([&] { return calibrate_or_load(family, probe); });
        if (measured != nullptr) *measured = &c;
        level = c.chosen;
    }
    return pick(family.set, level, used);
}

#if defined(CDC_X86_KERNELS)
#define CDC_X86(name) &name
#else
#define CDC_X86(name) nullptr
#endif

// The rows. A new family adds its row and its one-line select function
// below (declared in params.hpp). Most families calibrate on 256 KiB;
// UltraCDC on 64 KiB: its scalar reference runs at ~1/8 of the Gear
// families' (a 256 KiB pass alone would take ~1 ms), and its kernels are 3x
// and more apart.
constexpr std::size_t KiB = 1024;
static Family<FastCdcParams> fastcdc{
    "fastcdc",
    {&fastcdc_scalar, &fastcdc_wide, nullptr, CDC_X86(fastcdc_avx512), CDC_X86(fastcdc_avx512vbmi)},
    256 * KiB};
static Family<JcParams> jc{"jc", {&jc_scalar, &jc_wide, nullptr, nullptr}, 256 * KiB};
static Family<StadiaParams> stadia{
    "fastcdc4stadia",
    {&stadia_scalar, &stadia_wide, nullptr, CDC_X86(stadia_avx512), CDC_X86(stadia_avx512vbmi)},
    256 * KiB};
static Family<UltraParams> ultra{
    "ultracdc", {&ultra_scalar, &ultra_wide, CDC_X86(ultra_avx2), CDC_X86(ultra_avx512)}, 64 * KiB};
static Family<FastCdcRsParams> fastcdc_rs_v2016{
    "fastcdc-rs-v2016",
    {&fastcdc_rs_v2016_scalar, &fastcdc_rs_v2016_wide, nullptr, CDC_X86(fastcdc_rs_v2016_avx512),
     CDC_X86(fastcdc_rs_v2016_avx512vbmi)},
    256 * KiB};
static Family<FastCdcRsParams> fastcdc_rs_v2020{
    "fastcdc-rs-v2020",
    {&fastcdc_rs_v2020_scalar, &fastcdc_rs_v2020_wide, nullptr, CDC_X86(fastcdc_rs_v2020_avx512),
     CDC_X86(fastcdc_rs_v2020_avx512vbmi)},
    256 * KiB};
static Family<RonomonParams> ronomon{"fastcdc-rs-ronomon", {&ronomon_scalar, nullptr, nullptr, nullptr}, 64 * KiB};
static Family<RabinParams> rabin{"restic-rabin", {&rabin_scalar, &rabin_wide, nullptr, nullptr}, 256 * KiB};
static Family<BorgParams> borg{"borg-buzhash", {&borg_scalar, nullptr, nullptr, CDC_X86(borg_avx512)}, 256 * KiB};
static Family<CasyncParams> casync{"casync-buzhash", {&casync_scalar, &casync_wide, nullptr, nullptr}, 256 * KiB};

#undef CDC_X86

// Every family's name and the levels it has kernels at: part of the build
// identity the disk cache is keyed by.
template <class Params>
static std::string describe(const Family<Params>& f) {
    std::string s(f.name);
    const KernelSet<Params>& k = f.set;
    for (const auto& [level, fn] : {std::pair{KernelLevel::scalar, k.scalar}, std::pair{KernelLevel::wide, k.wide},
                                    std::pair{KernelLevel::avx2, k.avx2}, std::pair{KernelLevel::avx512, k.avx512},
                                    std::pair{KernelLevel::avx512vbmi, k.avx512vbmi}})
        if (fn != nullptr) s += fmt::format(" {}", to_string(level));
    return s + ";";
}
static std::string kernel_list() {
    return describe(fastcdc) + describe(jc) + describe(stadia) + describe(ultra) + describe(fastcdc_rs_v2016) +
           describe(fastcdc_rs_v2020) + describe(ronomon) + describe(rabin) + describe(borg) + describe(casync);
}

#define CDC_SELECT(fn, Params, family)                                                                            \
    ScanFn<Params> fn(KernelLevel level, KernelLevel* used, const ProbeFn<Params>& probe,                        \
                      const KernelCalibration** measured) {                                                       \
        return select(family, level, used, probe, measured);                                                      \
    }
CDC_SELECT(select_fastcdc, FastCdcParams, fastcdc)
CDC_SELECT(select_jc, JcParams, jc)
CDC_SELECT(select_stadia, StadiaParams, stadia)
CDC_SELECT(select_ultra, UltraParams, ultra)
CDC_SELECT(select_fastcdc_rs_v2016, FastCdcRsParams, fastcdc_rs_v2016)
CDC_SELECT(select_fastcdc_rs_v2020, FastCdcRsParams, fastcdc_rs_v2020)
CDC_SELECT(select_ronomon, RonomonParams, ronomon)
CDC_SELECT(select_rabin, RabinParams, rabin)
CDC_SELECT(select_borg, BorgParams, borg)
CDC_SELECT(select_casync, CasyncParams, casync)
#undef CDC_SELECT

}  // namespace detail

std::optional<std::string> kernel_calibration_cache_file() {
    const auto& file = detail::disk_calibrations().file;
    if (!file) return std::nullopt;
    return file->path().string();
}
}  // namespace cdc
