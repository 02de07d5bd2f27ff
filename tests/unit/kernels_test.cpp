// SPDX-License-Identifier: Apache-2.0
// Differential tests of the accelerated kernels: every kernel level this
// machine supports must return the scalar reference's cut point for every
// window (random and adversarial data, every test-vector profile, keyed
// tables, tiny and huge profiles, window lengths around Min/Normal/Max and
// unaligned window starts), and the Go test vectors at every level.
#include "test_support.hpp"

#include <cdc/corpus/datagen.hpp>
#include "random_options.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

namespace cdc::test {
namespace {

std::vector<KernelLevel> levels() { return accelerated_levels(); }

std::vector<std::string> content_defined_names() {
    std::vector<std::string> out;
    for (const auto& a : algorithms())
        if (a.content_defined) out.emplace_back(a.name);
    return out;
}

Key test_key(std::uint8_t seed) {
    Key k{};
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::uint8_t>(seed * 31 + i * 7);
    return k;
}

struct Dataset {
    std::string name;
    std::vector<std::uint8_t> bytes;
};

/// Random and adversarial inputs of `len` bytes.
std::vector<Dataset> datasets(std::size_t len) {
    std::vector<Dataset> out;
    out.push_back({"random", random_bytes(len, 42)});
    out.push_back({"zeros", std::vector<std::uint8_t>(len, 0)});
    out.push_back({"all-0xAA", std::vector<std::uint8_t>(len, 0xAA)});
    out.push_back({"all-0x55", std::vector<std::uint8_t>(len, 0x55)});
    out.push_back({"all-0xA9", std::vector<std::uint8_t>(len, 0xA9)});  // UltraCDC distance 16 everywhere
    std::vector<std::uint8_t> text(len);
    fill_text(text, 7);
    out.push_back({"text", std::move(text)});
    for (std::size_t period : {3u, 8u, 16u, 64u, 1000u, 4096u}) {
        auto r = random_bytes(period, period);
        std::vector<std::uint8_t> v(len);
        for (std::size_t i = 0; i < len; ++i) v[i] = r[i % period];
        out.push_back({fmt::format("repeat-{}", period), std::move(v)});
    }
    // Random data with runs of repeated 8-byte blocks of various lengths
    // (UltraCDC's low-entropy rule: just below, at and above 64 blocks).
    {
        auto v = random_bytes(len, 5);
        SplitMix64 sm(9);
        std::size_t pos = 0;
        while (pos + 8 < len) {
            pos += 64 + sm.next() % 3000;
            const std::size_t blocks = 60 + sm.next() % 10;
            for (std::size_t b = 1; b <= blocks && pos + 8 * b + 8 <= len; ++b)
                std::copy_n(v.begin() + static_cast<std::ptrdiff_t>(pos), 8,
                            v.begin() + static_cast<std::ptrdiff_t>(pos + 8 * b));
            pos += 8 * blocks;
        }
        out.push_back({"block-runs", std::move(v)});
    }
    // Random bytes drawn from few values with low 0xAA-distance, so that
    // UltraCDC's distances land near 0, 16 and 19 often.
    {
        const std::uint8_t alphabet[] = {0xAA, 0xAB, 0xA8, 0xA9, 0x2A, 0xEA, 0xAE, 0x55, 0x00, 0xFF};
        SplitMix64 sm(11);
        std::vector<std::uint8_t> v(len);
        for (auto& b : v) b = alphabet[sm.next() % sizeof alphabet];
        out.push_back({"low-distance", std::move(v)});
    }
    // Mostly zero with sparse random bytes (Gear hashes with long zero runs).
    {
        std::vector<std::uint8_t> v(len, 0);
        SplitMix64 sm(13);
        for (std::size_t i = 0; i < len; i += 1 + sm.next() % 97) v[i] = static_cast<std::uint8_t>(sm.next());
        out.push_back({"sparse", std::move(v)});
    }
    return out;
}

struct Profiles {
    std::size_t min, normal, max;
};

Options make_options(const Profiles& p, std::optional<Key> key) {
    Options o;
    o.min_size = p.min;
    o.normal_size = p.normal;
    o.max_size = p.max;
    o.key = key;
    return o;
}

/// Valid options for `a` (no key): defaults, tiny, odd, the boundaries of
/// the rules and a large one, each where the name's rules allow it.
std::vector<Options> profiles_for(const AlgorithmInfo& a) {
    std::vector<Profiles> sizes{{0, 0, 0}, {64, 128, 256}, {64, 256, 65536}, {1000, 2048, 3000}, {256, 512, 4096},
                                {4096, 16384, 131072}, {100, 777, 5000}, {64, 65, 66}, {1500, 4000, 8191}};
    std::vector<Options> out;
    for (const auto& s : sizes) {
        const Options o = make_options(s, std::nullopt);
        try {
            (void)resolve_profile(a.name, o);
            out.push_back(o);
        } catch (const OptionError&) {
        }
    }
    return out;
}

/// The go-cdc-chunkers names: the window and stream tests below run them on
/// every profile and dataset; the compatibility names have their own
/// (unit/compat_kernels_test.cpp), and every name is in the random-profile test.
bool from_go(const AlgorithmInfo& a) { return a.origin == "go-cdc-chunkers"; }

std::string describe(const Options& o) {
    return fmt::format("profile {}/{}/{} level {} seed {} poly {} window {}", o.min_size, o.normal_size, o.max_size,
                       o.normalization_level.value_or(-1), o.seed.value_or(0), o.polynomial.value_or(0),
                       o.window_size.value_or(0));
}

/// Compares find() of every level to scalar for windows of many lengths and
/// unaligned starts of `data`.
void compare_windows(const std::string& algorithm, const Options& options, const Dataset& data,
                     const std::string& what) {
    const auto ref = make_cut_finder(algorithm, options, KernelLevel::scalar);
    const Profile& p = ref->profile();
    std::vector<std::size_t> lengths;
    for (std::size_t base : {p.min_size, p.normal_size, p.max_size}) {
        for (std::size_t d = 0; d <= 9; ++d) {
            lengths.push_back(base + d);
            if (base > d) lengths.push_back(base - d);
        }
        for (std::size_t d : {15u, 16u, 17u, 31u, 32u, 33u, 47u, 48u, 49u, 50u, 62u, 63u, 64u, 65u, 66u, 72u, 127u, 128u,
                              129u, 513u}) {
            lengths.push_back(base + d);
            if (base > d) lengths.push_back(base - d);
        }
    }
    for (std::size_t d = 1; d <= 70; d += 3) lengths.push_back(d);
    for (std::size_t f : {3u, 5u, 7u}) lengths.push_back(p.min_size + (p.max_size - p.min_size) * f / 8);
    const std::size_t starts[] = {0, 7, 13};
    for (KernelLevel level : levels()) {
        const auto fast = make_cut_finder(algorithm, options, level);
        ASSERT_LE(static_cast<int>(fast->kernel_level()), static_cast<int>(level)) << algorithm;
        for (std::size_t s : starts) {
            for (std::size_t n : lengths) {
                if (n == 0 || s + n > data.bytes.size()) continue;
                const std::uint8_t* w = data.bytes.data() + s;
                const std::size_t want = ref->find(w, n);
                const std::size_t got = fast->find(w, n);
                if (want != got) {
                    ADD_FAILURE() << fmt::format("{} level {} {} data {} start {} n {}: scalar {} kernel {}", algorithm,
                                                 to_string(level), what, data.name, s, n, want, got);
                    return;
                }
            }
        }
    }
}

/// Compares whole-stream chunk lengths of every level to scalar.
void compare_stream(const std::string& algorithm, const Options& options, const Dataset& data,
                    const std::string& what) {
    const auto want = lengths_memory(make_cut_finder(algorithm, options, KernelLevel::scalar), data.bytes);
    for (KernelLevel level : levels()) {
        const auto got = lengths_memory(make_cut_finder(algorithm, options, level), data.bytes);
        EXPECT_EQ(want, got) << algorithm << " level " << to_string(level) << " " << what << " data " << data.name;
    }
}

TEST(Kernels, LevelsAreReportedAndClamped) {
    EXPECT_FALSE(levels().empty());
    for (const auto& a : algorithms()) {
        Options o;
        if (a.key == KeyUse::required) o.key = test_key(1);
        EXPECT_EQ(make_cut_finder(a.name, o, KernelLevel::scalar)->kernel_level(), KernelLevel::scalar);
        for (KernelLevel l : levels()) {
            const auto used = make_cut_finder(a.name, o, l)->kernel_level();
            EXPECT_LE(static_cast<int>(used), static_cast<int>(l)) << a.name;
            // UltraCDC has a kernel at every level up to AVX-512 (VBMI adds
            // nothing it uses); the FastCDC names and fastcdc4stadia at every
            // level but AVX2 (where the wide one serves); JC has its portable
            // one only (its AVX-512 kernel lost to it, docs/BENCHMARKS.md).
            if (a.name.starts_with("ultracdc")) {
                EXPECT_EQ(used, l == KernelLevel::avx512vbmi ? KernelLevel::avx512 : l) << a.name;
            } else if (a.name.starts_with("jc")) {
                EXPECT_EQ(used, KernelLevel::wide) << a.name;
            } else if (a.origin == "go-cdc-chunkers" && a.content_defined) {
                EXPECT_EQ(used, l == KernelLevel::avx2 ? KernelLevel::wide : l) << a.name;
            }
        }
    }
}

/// Windows placed so that a cut point of the data (found by the scalar
/// reference) falls at every offset around Min, Normal and Max (and so
/// across every lane, group and pair boundary of the kernels), for windows
/// that end right after it, just before it, and at Max.
void compare_cuts_placed_around_boundaries(const std::string& algorithm, const Options& options,
                                           const std::vector<std::uint8_t>& data, const std::string& what) {
    const auto ref = make_cut_finder(algorithm, options, KernelLevel::scalar);
    const Profile& p = ref->profile();
    // Cut points of the data: the scalar's cut of windows at spread starts.
    std::vector<std::size_t> cuts;
    for (std::size_t s = 0; s + p.max_size < data.size() && cuts.size() < 3; s += data.size() / 4) {
        const std::size_t c = ref->find(data.data() + s, p.max_size);
        if (c < p.max_size) cuts.push_back(s + c);
    }
    for (KernelLevel level : levels()) {
        const auto fast = make_cut_finder(algorithm, options, level);
        for (std::size_t cut : cuts) {
            for (std::size_t boundary : {p.min_size, p.normal_size, p.max_size - 1}) {
                // the cut at offset boundary - 72 .. boundary + 8 of the window
                for (std::size_t d = 0; d <= 80; ++d) {
                    const std::size_t at = boundary + d;
                    if (at < 72 || cut < at - 72) continue;
                    const std::size_t start = cut - (at - 72);
                    for (std::size_t n : {at - 72 + 1, at - 72, std::size_t{p.max_size}}) {
                        if (n == 0 || start + n > data.size()) continue;
                        const std::size_t want = ref->find(data.data() + start, n);
                        const std::size_t got = fast->find(data.data() + start, n);
                        if (want != got) {
                            ADD_FAILURE() << fmt::format("{} level {} {} start {} n {}: scalar {} kernel {}",
                                                         algorithm, to_string(level), what, start, n, want, got);
                            return;
                        }
                    }
                }
            }
        }
    }
}

TEST(Kernels, CutsPlacedAtEveryOffsetAroundMinNormalMax) {
    const auto random = random_bytes(600000, 17);
    std::vector<std::uint8_t> text(600000);
    fill_text(text, 21);
    for (const auto& a : algorithms()) {
        if (!a.content_defined || !from_go(a)) continue;
        for (Options o : profiles_for(a)) {
            const Profile p = resolve_profile(a.name, o);
            if (p.max_size > 70000) continue;
            if (a.key == KeyUse::required) o.key = test_key(8);
            const std::string what = describe(o);
            compare_cuts_placed_around_boundaries(std::string(a.name), o, random, what + " random");
            if (p.max_size <= 8192) compare_cuts_placed_around_boundaries(std::string(a.name), o, text, what + " text");
        }
    }
}

TEST(Kernels, EveryWindowLengthOfSmallProfiles) {
    const auto data = random_bytes(70000, 23);
    const std::vector<std::uint8_t> zeros(70000, 0);
    for (const auto& a : algorithms()) {
        if (!a.content_defined || !from_go(a)) continue;
        for (const Profiles pr : {Profiles{64, 128, 256}, Profiles{256, 512, 4096}}) {
            const Options o = make_options(pr, (a.key == KeyUse::required) ? std::optional<Key>(test_key(9)) : std::nullopt);
            const auto ref = make_cut_finder(a.name, o, KernelLevel::scalar);
            for (KernelLevel level : levels()) {
                const auto fast = make_cut_finder(a.name, o, level);
                for (const auto* d : {&data, &zeros})
                    for (std::size_t s : {0u, 4099u})
                        for (std::size_t n = 1; n <= pr.max; n = n == 1100 && pr.max > 1200 ? pr.max - 70 : n + 1) {
                            const std::uint8_t* w = d->data() + s;
                            ASSERT_EQ(ref->find(w, n), fast->find(w, n))
                                << a.name << " level " << to_string(level) << " start " << s << " n " << n;
                        }
            }
        }
    }
}

/// Calibration chooses among exact kernels only: each candidate it times,
/// forced, cuts every dataset as the scalar reference does.
TEST(Kernels, EveryCalibrationCandidateIsExact) {
    const auto data = datasets(1 << 19);
    for (const auto& a : algorithms()) {
        const auto c = kernel_calibration(a.name);
        if (!c) continue;
        const Options o = make_options({0, 0, 0}, (a.key == KeyUse::required) ? std::optional<Key>(test_key(6)) : std::nullopt);
        for (const auto& d : data) {
            const auto want = lengths_memory(make_cut_finder(a.name, o, KernelLevel::scalar), d.bytes);
            for (const auto& m : c->candidates) {
                const auto finder = make_cut_finder(a.name, o, m.level);
                ASSERT_EQ(finder->kernel_level(), m.level) << a.name;
                EXPECT_EQ(lengths_memory(finder, d.bytes), want)
                    << a.name << " candidate " << to_string(m.level) << " data " << d.name;
            }
            EXPECT_EQ(lengths_memory(make_cut_finder(a.name, o), d.bytes), want) << a.name << " auto " << d.name;
        }
    }
}

TEST(Kernels, WindowsMatchScalarOnRandomAndAdversarialData) {
    std::vector<Dataset> data;
    for (auto& d : datasets(140000))
        if (d.name == "random" || d.name == "zeros" || d.name == "all-0xA9" || d.name == "block-runs" ||
            d.name == "low-distance" || d.name == "text" || d.name == "repeat-64")
            data.push_back(std::move(d));
    for (const auto& a : algorithms()) {
        if (!a.content_defined || !from_go(a)) continue;
        for (const auto& pr : profiles_for(a)) {
            if (pr.max_size > 70000) continue;
            for (int keyed = 0; keyed <= ((a.key != KeyUse::none) ? 1 : 0); ++keyed) {
                if ((a.key == KeyUse::required) && !keyed) continue;
                Options o = pr;
                if (keyed) o.key = test_key(3);
                const std::string what = fmt::format("{} keyed {}", describe(o), keyed);
                for (const auto& d : data) compare_windows(std::string(a.name), o, d, what);
            }
        }
    }
}

TEST(Kernels, StreamsMatchScalarOnRandomAndAdversarialData) {
    const auto data = datasets(1 << 20);
    for (const auto& a : algorithms()) {
        if (!a.content_defined || !from_go(a)) continue;
        for (const auto& pr : profiles_for(a)) {
            for (int keyed = 0; keyed <= ((a.key != KeyUse::none) ? 1 : 0); ++keyed) {
                if ((a.key == KeyUse::required) && !keyed) continue;
                Options o = pr;
                if (keyed) o.key = test_key(4);
                const std::string what = fmt::format("{} keyed {}", describe(o), keyed);
                for (const auto& d : data) compare_stream(std::string(a.name), o, d, what);
            }
        }
    }
}

TEST(Kernels, HugeProfilesMatchScalar) {
    const Dataset random{"random", random_bytes(24 << 20, 77)};
    const Dataset text = [] {
        std::vector<std::uint8_t> v(12 << 20);
        fill_text(v, 3);
        return Dataset{"text", std::move(v)};
    }();
    const Profiles huge{std::size_t{1} << 20, std::size_t{4} << 20, std::size_t{16} << 20};
    std::size_t compared = 0;
    for (const auto& name : content_defined_names()) {
        const AlgorithmInfo& a = *find_algorithm(name);
        Options o = make_options(huge, (a.key == KeyUse::required) ? std::optional<Key>(test_key(5)) : std::nullopt);
        if (a.max_rule.high < huge.max) o = make_options({huge.min / 2, huge.normal / 2, huge.max / 2}, o.key);  // borg-buzhash: max <= 8 MiB
        ++compared;
        compare_stream(name, o, random, "huge");
        compare_stream(name, o, text, "huge");
    }
    EXPECT_EQ(compared, content_defined_names().size());
}

TEST(Kernels, ManyRandomProfilesAndKeysMatchScalar) {
    SplitMix64 sm(2024);
    const Dataset data{"random", random_bytes(300000, 99)};
    const auto names = content_defined_names();
    for (int round = 0; round < 400; ++round) {
        const AlgorithmInfo& a = *find_algorithm(names[sm.next() % names.size()]);
        const Options o = random_valid_options(a, [&] { return sm.next(); }, 9000);
        const std::string what = fmt::format("round {} {}", round, describe(o));
        compare_stream(std::string(a.name), o, data, what);
        // plus a few unaligned windows
        const auto ref = make_cut_finder(a.name, o, KernelLevel::scalar);
        for (KernelLevel level : levels()) {
            const auto fast = make_cut_finder(a.name, o, level);
            for (int k = 0; k < 20; ++k) {
                const std::size_t s = sm.next() % 1000;
                const std::size_t n = 1 + sm.next() % std::min(data.bytes.size() - s, o.max_size + 100);
                ASSERT_EQ(ref->find(data.bytes.data() + s, n), fast->find(data.bytes.data() + s, n))
                    << a.name << " " << what << " level " << to_string(level) << " start " << s << " n " << n;
            }
        }
    }
}

TEST(Kernels, EveryTestVectorAtEveryLevel) {
    const auto cases = read_jsonl(vectors_dir() / "vectors.jsonl");
    ASSERT_GT(cases.size(), 1000u);
    std::size_t checked = 0;
    for (const auto& c : cases) {
        const std::string spec = c["input"];
        const auto& input = cached_input(spec);
        const Options o = vector_case_options(c);
        const auto want = c["lengths"].get<std::vector<std::size_t>>();
        for (KernelLevel level : levels()) {
            const auto got = lengths_memory(make_cut_finder(c["algorithm"].get<std::string>(), o, level), input);
            ASSERT_EQ(want, got) << c["algorithm"] << " " << spec << " " << o.min_size << "/" << o.normal_size << "/"
                                 << o.max_size << " level " << to_string(level);
            ++checked;
        }
    }
    EXPECT_GE(checked, cases.size());
}

/// Every distinct test-vector profile on the adversarial datasets too.
TEST(Kernels, TestVectorProfilesOnAdversarialData) {
    const auto cases = read_jsonl(vectors_dir() / "vectors.jsonl");
    std::set<std::tuple<std::string, std::size_t, std::size_t, std::size_t, std::string>> seen;
    const auto data = datasets(300000);
    for (const auto& c : cases) {
        auto key = std::make_tuple(c["algorithm"].get<std::string>(), c["min"].get<std::size_t>(),
                                   c["normal"].get<std::size_t>(), c["max"].get<std::size_t>(),
                                   c["key_hex"].get<std::string>());
        if (!seen.insert(key).second) continue;
        const AlgorithmInfo* a = find_algorithm(std::get<0>(key));
        ASSERT_NE(a, nullptr);
        if (!a->content_defined) continue;
        Options o;
        o.min_size = std::get<1>(key);
        o.normal_size = std::get<2>(key);
        o.max_size = std::get<3>(key);
        if (!std::get<4>(key).empty()) o.key = parse_key_hex(std::get<4>(key));
        const std::string what = fmt::format("vector profile {}/{}/{}", o.min_size, o.normal_size, o.max_size);
        for (const auto& d : data) compare_stream(std::get<0>(key), o, d, what);
    }
    EXPECT_GT(seen.size(), 10u);
}

}  // namespace
}  // namespace cdc::test
