// SPDX-License-Identifier: Apache-2.0
// The calibration engine (see calibrate.hpp).
#include "calibrate.hpp"

#include <cdc/corpus/splitmix64.hpp>

#include <algorithm>
#include <ctime>
#include <vector>

namespace cdc::detail {

double thread_cpu_seconds() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

KernelCalibration run_calibration(std::string_view family, std::span<const CalibrationCandidate> candidates,
                                  std::size_t bytes, CalibrationClock clock, const CalibrationLimits& limits) {
    const std::size_t count = candidates.size();
    std::vector<std::vector<double>> passes(count);  // seconds
    const double start = clock();
    int rounds = 0;
    double last_round = 0;
    // A round starts only if it can end within the budget (judged by the
    // round before), or to reach the minimum.
    while (rounds < limits.max_rounds &&
           (rounds < std::max(limits.min_rounds, 1) || clock() - start + last_round <= limits.budget_seconds)) {
        const double round_start = clock();
        for (std::size_t k = 0; k < count; ++k) {
            const std::size_t c = (k + static_cast<std::size_t>(rounds)) % count;
            const double t0 = clock();
            candidates[c].pass();
            const double t = clock() - t0;
            passes[c].push_back(t);
        }
        last_round = clock() - round_start;
        ++rounds;
    }
    KernelCalibration out;
    out.family = family;
    out.bytes = bytes;
    out.rounds = rounds;
    out.seconds = clock() - start;
    std::size_t fastest = 0;
    for (std::size_t c = 0; c < count; ++c) {
        // The median pass (of an even count, the faster middle one). Not the
        // best: on a shared machine a kernel's passes vary (a vCPU whose
        // sibling is busy, frequency), and one fast outlier of a slower
        // kernel won often enough that 1 in 6 processes of an AMD EPYC VM
        // cut with the scalar reference, 1.7x slower than the wide kernel.
        std::vector<double>& p = passes[c];
        const auto mid = p.begin() + static_cast<std::ptrdiff_t>((p.size() - 1) / 2);
        std::nth_element(p.begin(), mid, p.end());
        // A pass below the clock's resolution counts as one nanosecond.
        const double t = std::max(*mid, 1e-9);
        out.candidates.push_back({candidates[c].level, static_cast<double>(bytes) / 1e6 / t});
        if (out.candidates[c].mb_s > out.candidates[fastest].mb_s) fastest = c;
    }
    out.chosen = out.candidates[fastest].level;
    return out;
}

std::span<const std::uint8_t> calibration_buffer() {
    // 256 KiB: ~25 chunks of the default profiles. How fast a Gear kernel
    // is depends on where the chunks cut (FastCDC's lanes serve the MaskS
    // part, the sequential scan the MaskL part), and with 64 KiB (6-7
    // chunks) the sample's mix decided between kernels that were 7-12%
    // apart on 128 MiB; with 256 KiB the choice matched 128 MiB in every
    // trial (docs/BENCHMARKS.md).
    static const std::vector<std::uint8_t> buffer = [] {
        std::vector<std::uint8_t> b(std::size_t{256} << 10);
        SplitMix64(0x6361'6c69'6272'6174ULL).fill(b);
        return b;
    }();
    return buffer;
}

}  // namespace cdc::detail
