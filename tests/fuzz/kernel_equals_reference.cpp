// SPDX-License-Identifier: Apache-2.0
// Property: every accelerated kernel level this CPU has (and the one the
// calibration chooses) returns the scalar reference's cut point for every
// window: the successive windows of the stream, plus windows at unaligned
// starts and of every shorter length the input suggests (short final
// windows, lengths around Min/Normal/Max).
#include "fuzz_input.hpp"

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using cdc::KernelLevel;
    const auto ref = cdc::fuzz::decode(data, size, KernelLevel::scalar);
    const std::span<const std::uint8_t> in = ref.data;
    const std::uint8_t* base = in.data();
    const std::size_t max = ref.finder->profile().max_size;
    for (KernelLevel level : {KernelLevel::automatic, KernelLevel::wide, KernelLevel::avx2, KernelLevel::avx512,
                              KernelLevel::avx512vbmi}) {
        if (static_cast<int>(level) > static_cast<int>(cdc::best_kernel_level())) break;
        const auto fast = cdc::fuzz::decode(data, size, level).finder;
        // The stream's windows.
        for (std::size_t pos = 0; pos < in.size();) {
            const std::size_t n = std::min(max, in.size() - pos);
            const std::size_t want = ref.finder->find(base + pos, n);
            if (fast->find(base + pos, n) != want) std::abort();
            pos += want;
        }
        // Unaligned starts and shorter windows, chosen from the read script.
        for (std::size_t k = 0; k < ref.read_sizes.size(); ++k) {
            const std::size_t start = ref.read_sizes[k] % 64;
            if (start >= in.size()) continue;
            const std::size_t avail = in.size() - start;
            const std::size_t lens[] = {avail, std::min(avail, max), 1 + ref.read_sizes[k] % avail,
                                        std::min(avail, ref.finder->profile().min_size + ref.read_sizes[k] % 130),
                                        std::min(avail, ref.finder->profile().normal_size + ref.read_sizes[k] % 130 - 65)};
            for (std::size_t n : lens) {
                if (n == 0) continue;
                n = std::min(n, max);
                if (fast->find(base + start, n) != ref.finder->find(base + start, n)) std::abort();
            }
        }
    }
    return 0;
}
