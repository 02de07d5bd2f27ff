// Run-time kernel selection: the one place that knows which accelerated
// scanner exists for which family and ISA level. The scalar reference is
// always available and is what every other kernel is tested against.
#include "../algorithms/params.hpp"

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
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) return KernelLevel::avx512;
    if (__builtin_cpu_supports("avx2")) return KernelLevel::avx2;
#endif
    return KernelLevel::wide;
}

KernelLevel default_kernel_level() {
    static const KernelLevel level = [] {
        const char* env = std::getenv("CDC_KERNEL");
        if (env == nullptr || *env == '\0') return best_kernel_level();
        KernelLevel forced = parse_kernel_level(env);
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

ScanFn<FastCdcParams> select_fastcdc(KernelLevel level, KernelLevel* used) noexcept {
    (void)clamp(level);
    *used = KernelLevel::scalar;
    return &fastcdc_scalar;
}

ScanFn<JcParams> select_jc(KernelLevel level, KernelLevel* used) noexcept {
    (void)clamp(level);
    *used = KernelLevel::scalar;
    return &jc_scalar;
}

ScanFn<StadiaParams> select_stadia(KernelLevel level, KernelLevel* used) noexcept {
    (void)clamp(level);
    *used = KernelLevel::scalar;
    return &stadia_scalar;
}

ScanFn<UltraParams> select_ultra(KernelLevel level, KernelLevel* used) noexcept {
    (void)clamp(level);
    *used = KernelLevel::scalar;
    return &ultra_scalar;
}

}  // namespace detail
}  // namespace cdc
