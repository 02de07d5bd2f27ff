// SPDX-License-Identifier: Apache-2.0
// The compatibility names' kernels at every level this CPU has: every case
// of shared/testvectors/compat, and windows of every length around each
// family's own thresholds (min - 64, min + window, max, ...) on random and
// adversarial data, against the scalar reference.
#include "test_support.hpp"

#include <cdc/corpus/datagen.hpp>
#include "random_options.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace cdc::test {
namespace {

std::vector<KernelLevel> levels() { return accelerated_levels(); }

const std::vector<std::string> kCompatNames = {"fastcdc-rs-v2020", "fastcdc-rs-v2016", "fastcdc-rs-ronomon",
                                               "restic-rabin",     "borg-buzhash",     "casync-buzhash"};

TEST(CompatKernels, EveryVectorAtEveryLevel) {
    const auto cases = read_jsonl(vectors_dir() / "compat" / "vectors.jsonl");
    ASSERT_EQ(cases.size(), 509u);
    std::size_t checked = 0;
    for (const auto& c : cases) {
        const std::string spec = c["input"];
        const auto& input = cached_input(spec);
        const Options o = compat_case_options(c);
        const auto want = c["lengths"].get<std::vector<std::size_t>>();
        for (KernelLevel level : levels()) {
            const auto got = lengths_memory(make_cut_finder(c["algorithm"].get<std::string>(), o, level), input);
            ASSERT_EQ(want, got) << c["algorithm"] << " " << c["params"].dump() << " " << spec << " level "
                                 << to_string(level);
            ++checked;
        }
    }
    EXPECT_GE(checked, cases.size());
}

std::vector<std::pair<std::string, std::vector<std::uint8_t>>> datasets(std::size_t len) {
    std::vector<std::pair<std::string, std::vector<std::uint8_t>>> out;
    out.emplace_back("random", random_bytes(len, 42));
    out.emplace_back("zeros", std::vector<std::uint8_t>(len, 0));
    out.emplace_back("text", generate_input(fmt::format("text:9:{}", len)));
    auto sparse = std::vector<std::uint8_t>(len, 0);
    SplitMix64 sm(13);
    for (std::size_t i = 0; i < len; i += 1 + sm.next() % 97) sparse[i] = static_cast<std::uint8_t>(sm.next());
    out.emplace_back("sparse", std::move(sparse));
    auto period = random_bytes(48, 5);  // casync's window: the same hash every 48 bytes
    std::vector<std::uint8_t> rep(len);
    for (std::size_t i = 0; i < len; ++i) rep[i] = period[i % 48];
    out.emplace_back("repeat-48", std::move(rep));
    return out;
}

/// Windows of every length near the thresholds of `p`, at unaligned starts.
void compare_windows(const std::string& name, const Options& o, const std::vector<std::uint8_t>& data,
                     const std::string& what) {
    const auto ref = make_cut_finder(name, o, KernelLevel::scalar);
    const Profile& p = ref->profile();
    std::vector<std::size_t> lengths;
    for (std::size_t base : {p.min_size, p.min_size + p.window_size, p.normal_size, p.max_size,
                             p.min_size + 16 * 4 + p.window_size}) {
        for (std::size_t d = 0; d <= 9; ++d) {
            lengths.push_back(base + d);
            if (base > d) lengths.push_back(base - d);
        }
        for (std::size_t d : {31u, 47u, 48u, 49u, 63u, 64u, 65u, 127u, 255u, 1023u, 4097u}) {
            lengths.push_back(base + d);
            if (base > d) lengths.push_back(base - d);
        }
    }
    std::vector<KernelLevel> seen;
    for (KernelLevel level : levels()) {
        const auto fast = make_cut_finder(name, o, level);
        if (std::find(seen.begin(), seen.end(), fast->kernel_level()) != seen.end()) continue;  // tested already
        seen.push_back(fast->kernel_level());
        for (std::size_t s : {0u, 13u}) {
            for (std::size_t n : lengths) {
                if (n == 0 || s + n > data.size()) continue;
                const std::size_t want = ref->find(data.data() + s, n);
                const std::size_t got = fast->find(data.data() + s, n);
                if (want != got) {
                    ADD_FAILURE() << fmt::format("{} level {} {} start {} n {}: scalar {} kernel {}", name,
                                                 to_string(level), what, s, n, want, got);
                    return;
                }
            }
        }
    }
}

TEST(CompatKernels, WindowsAroundEachFamilysThresholds) {
    const auto data = datasets(200000);
    SplitMix64 sm(77);
    for (const auto& name : kCompatNames) {
        const AlgorithmInfo& a = *find_algorithm(name);
        std::vector<Options> profiles(1);  // the defaults
        for (int k = 0; k < 4; ++k) profiles.push_back(random_valid_options(a, [&] { return sm.next(); }, 20000));
        for (const auto& o : profiles) {
            if (resolve_profile(name, o).max_size > 500000) continue;  // restic/borg defaults: covered by the vectors
            for (const auto& [what, bytes] : data)
                compare_windows(name, o,
                                bytes, fmt::format("{} {}/{}/{} seed {} window {}", what, o.min_size, o.normal_size,
                                                   o.max_size, o.seed.value_or(0), o.window_size.value_or(0)));
        }
    }
}

// borg-buzhash's AVX-512 kernel tests 16 candidates per step; when the steps
// end one past the last candidate, that position must not be tested (a
// fuzzed 97-byte window at 64/128/256, window 17, cut at 96 instead of 97).
// Every window length, so every remainder of the steps, at a small mask
// (127) and many starts, so that the position past the last
// candidate matches in some of them.
TEST(CompatKernels, BorgEveryWindowLengthEndsAtTheLastCandidate) {
    const auto data = random_bytes(32768, 97);
    for (std::size_t window : {16u, 17u, 31u, 48u}) {
        for (std::size_t normal : {128u}) {
            Options o = sized_options(64, normal, 256);
            o.window_size = window;
            const auto ref = make_cut_finder("borg-buzhash", o, KernelLevel::scalar);
            for (KernelLevel level : levels()) {
                const auto fast = make_cut_finder("borg-buzhash", o, level);
                for (std::size_t s = 0; s < 300; ++s)
                    for (std::size_t n = 1; n <= 256; ++n)
                        ASSERT_EQ(ref->find(data.data() + s * 97, n), fast->find(data.data() + s * 97, n))
                            << "window " << window << " normal " << normal << " level " << to_string(level)
                            << " start " << s * 97 << " n " << n;
            }
        }
    }
}

TEST(CompatKernels, StreamsOfRandomProfilesMatchScalar) {
    const auto data = datasets(1 << 20);
    SplitMix64 sm(2026);
    for (std::size_t round = 0; round < 60; ++round) {
        const std::string& name = kCompatNames[round % kCompatNames.size()];
        const Options o = random_valid_options(*find_algorithm(name), [&] { return sm.next(); }, 16384);
        const auto& [what, bytes] = data[sm.next() % data.size()];
        const auto want = lengths_memory(make_cut_finder(name, o, KernelLevel::scalar), bytes);
        for (KernelLevel level : levels())
            EXPECT_EQ(want, lengths_memory(make_cut_finder(name, o, level), bytes))
                << name << " " << what << " level " << to_string(level) << " round " << round;
    }
}

TEST(CompatKernels, LevelsUsed) {
    // The kernels each family has (docs/BENCHMARKS.md has the measurements).
    const std::map<std::string, std::vector<KernelLevel>> expected = {
        {"fastcdc-rs-v2020", {KernelLevel::wide, KernelLevel::wide, KernelLevel::avx512, KernelLevel::avx512vbmi}},
        {"fastcdc-rs-v2016", {KernelLevel::wide, KernelLevel::wide, KernelLevel::avx512, KernelLevel::avx512vbmi}},
        {"fastcdc-rs-ronomon", {KernelLevel::scalar, KernelLevel::scalar, KernelLevel::scalar, KernelLevel::scalar}},
        {"restic-rabin", {KernelLevel::wide, KernelLevel::wide, KernelLevel::wide, KernelLevel::wide}},
        {"borg-buzhash", {KernelLevel::scalar, KernelLevel::scalar, KernelLevel::avx512, KernelLevel::avx512}},
        {"casync-buzhash", {KernelLevel::wide, KernelLevel::wide, KernelLevel::wide, KernelLevel::wide}},
    };
    for (const auto& [name, want] : expected) {
        const auto all = levels();
        for (std::size_t i = 0; i < all.size(); ++i)
            EXPECT_EQ(make_cut_finder(name, {}, all[i])->kernel_level(), want[i]) << name << " " << to_string(all[i]);
    }
}

}  // namespace
}  // namespace cdc::test
