// Run-time kernel selection: the one place that knows which accelerated
// scanner exists for which family and ISA level. The scalar reference is
// always available and is what every other kernel is tested against.
#include "kernels.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <cstdlib>

namespace cdc {

KernelLevel parse_kernel_level(std::string_view text) {
    if (text == "auto") return KernelLevel::automatic;
    if (text == "scalar") return KernelLevel::scalar;
    if (text == "wide") return KernelLevel::wide;
    if (text == "avx2") return KernelLevel::avx2;
    if (text == "avx512") return KernelLevel::avx512;
    throw OptionError(fmt::format("kernel = '{}' is invalid: must be one of auto, scalar, wide, avx2, avx512", text));
}

std::string_view to_string(KernelLevel level) noexcept {
    switch (level) {
        case KernelLevel::automatic: return "auto";
        case KernelLevel::scalar: return "scalar";
        case KernelLevel::wide: return "wide";
        case KernelLevel::avx2: return "avx2";
        case KernelLevel::avx512: return "avx512";
    }
    return "?";
}

KernelLevel best_kernel_level() noexcept {
#if defined(CDC_X86_KERNELS) && defined(__GNUC__)
    static const KernelLevel level = [] {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
            return KernelLevel::avx512;
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
        if (env == nullptr || *env == '\0') return best_kernel_level();
        KernelLevel forced = KernelLevel::automatic;
        try {
            forced = parse_kernel_level(env);
        } catch (const OptionError&) {
            throw OptionError(fmt::format("environment variable CDC_KERNEL = '{}' is invalid: must be one of auto, "
                                          "scalar, wide, avx2, avx512 (or unset)",
                                          env));
        }
        if (forced == KernelLevel::automatic) return best_kernel_level();
        return forced;
    }();
    return level;
}

namespace detail {

// A level above what the CPU has is lowered to the best it has.
static KernelLevel clamp(KernelLevel level) noexcept {
    const KernelLevel best = best_kernel_level();
    if (level == KernelLevel::automatic) return best;
    return static_cast<int>(level) > static_cast<int>(best) ? best : level;
}

// One row per family: the kernel of each level (nullptr: none at that level).
template <class Params>
struct KernelSet {
    ScanFn<Params> scalar, wide, avx2, avx512;
};

template <class Params>
static ScanFn<Params> pick(const KernelSet<Params>& set, KernelLevel level, KernelLevel* used) noexcept {
    switch (clamp(level)) {
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

#if defined(CDC_X86_KERNELS)
#define CDC_X86(name) &name
#else
#define CDC_X86(name) nullptr
#endif

ScanFn<FastCdcParams> select_fastcdc(KernelLevel level, KernelLevel* used) noexcept {
    static constexpr KernelSet<FastCdcParams> set{&fastcdc_scalar, &fastcdc_wide, nullptr,
                                                  CDC_X86(fastcdc_avx512)};
    return pick(set, level, used);
}

ScanFn<JcParams> select_jc(KernelLevel level, KernelLevel* used) noexcept {
    static constexpr KernelSet<JcParams> set{&jc_scalar, &jc_wide, nullptr, CDC_X86(jc_avx512)};
    return pick(set, level, used);
}

ScanFn<StadiaParams> select_stadia(KernelLevel level, KernelLevel* used) noexcept {
    static constexpr KernelSet<StadiaParams> set{&stadia_scalar, &stadia_wide, nullptr, CDC_X86(stadia_avx512)};
    return pick(set, level, used);
}

ScanFn<UltraParams> select_ultra(KernelLevel level, KernelLevel* used) noexcept {
    static constexpr KernelSet<UltraParams> set{&ultra_scalar, &ultra_wide, CDC_X86(ultra_avx2),
                                                CDC_X86(ultra_avx512)};
    return pick(set, level, used);
}

#undef CDC_X86

}  // namespace detail
}  // namespace cdc
