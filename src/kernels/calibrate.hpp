// SPDX-License-Identifier: Apache-2.0
// Internal: choosing a family's kernel by measurement (dispatch.cpp). An ISA
// level only says what a CPU can run: the same gather kernel is twice the
// scalar reference on one CPU and half of it on another, so the kernels a
// CPU supports are timed on a small in-cache buffer and the fastest is kept.
// The engine is independent of the kernels (a candidate is "one pass over
// `bytes` bytes") and of the clock, so that tests can inject both.
#pragma once

#include <cdc/algorithms.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>

namespace cdc::detail {

/// A clock in seconds. The real one is the CPU time of the calling thread:
/// other processes on a busy machine then do not count against a candidate.
using CalibrationClock = double (*)() noexcept;
double thread_cpu_seconds() noexcept;

struct CalibrationCandidate {
    KernelLevel level;
    std::function<void()> pass;  ///< one pass over the calibration buffer
};

struct CalibrationLimits {
    double budget_seconds = 0.002;  ///< a round starts only if it can end within this (judged by the last one)
    int min_rounds = 7;             ///< ... but each candidate is timed at least this often (a median of 7)
    int max_rounds = 11;

    /// For a calibration kept on disk: measured once per CPU and build, its
    /// choice then holds for every later process, so it may take longer.
    /// On an Intel Xeon (AVX-512, a KVM guest) the AVX-512 kernels' passes
    /// slowed by ~12% after the first ~1 ms of a calibration (the core's
    /// AVX-512 frequency, which the later passes of every kernel then share),
    /// and with 7 rounds the median fell among the fast early passes or the
    /// slow late ones: FastCDC chose its wide kernel, 8% slower on 128 MiB,
    /// in 6 of 40 processes; with 21 rounds in 0 of 30 (docs/BENCHMARKS.md).
    static constexpr CalibrationLimits kept() noexcept { return {0.008, 21, 31}; }
};

/// Times the candidates in rounds (each round runs every candidate once,
/// starting with a different one each round, so that a slow spell of the
/// machine does not fall on one candidate only) and keeps each candidate's
/// median pass; `chosen` is the fastest (the earlier candidate on a tie).
/// `candidates` must not be empty.
KernelCalibration run_calibration(std::string_view family, std::span<const CalibrationCandidate> candidates,
                                  std::size_t bytes, CalibrationClock clock, const CalibrationLimits& limits = {});

/// The pseudo-random bytes every family is calibrated on (a family may use a
/// prefix): large enough to hold many chunks of the default profiles, small
/// enough to stay in the L2 cache (kernels are compared on compute, not on
/// memory bandwidth).
std::span<const std::uint8_t> calibration_buffer();

/// A family's calibration, computed once (the first caller runs it, the
/// others wait) and kept for the life of the process.
class CalibrationCache {
public:
    template <class Compute>
    const KernelCalibration& get(Compute&& compute) {
        std::call_once(once_, [&] { result_ = compute(); });
        return result_;
    }

private:
    std::once_flag once_;
    KernelCalibration result_;
};

}  // namespace cdc::detail
