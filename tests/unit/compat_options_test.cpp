// SPDX-License-Identifier: Apache-2.0
// COMPAT.md section 8: every rule of the six names (where the origin
// asserts, crashes, misbehaves silently or has undefined behaviour) is an
// OptionError naming the option, the value and the rule; values at the
// edges of the rules are accepted; parameters go only where a name takes
// them. Plus the spec's worked values of the helpers (bits, discriminator,
// irreducibility).
#include "test_support.hpp"

#include "../src/algorithms/params.hpp"

#include <gtest/gtest.h>

namespace cdc::test {
namespace {

Options sizes(std::size_t min, std::size_t avg, std::size_t max) { return sized_options(min, avg, max); }

/// expect_option_error, and the message names the algorithm.
void expect_error(std::string_view algorithm, const Options& o, std::vector<std::string> fragments) {
    fragments.emplace_back(algorithm);
    expect_option_error(algorithm, o, fragments);
}

void expect_ok(std::string_view algorithm, const Options& o) {
    EXPECT_NO_THROW((void)make_cut_finder(algorithm, o)) << algorithm;
}

TEST(CompatOptions, FastCdcRsGearRangesOfTheCratesDebugAsserts) {
    for (const char* name : {"fastcdc-rs-v2016", "fastcdc-rs-v2020"}) {
        expect_error(name, sizes(63, 256, 1024), {"min_size", "63", "at least 64"});
        expect_error(name, sizes(1048577, 2097152, 4194304), {"min_size", "1048577", "at most 1 MiB"});
        expect_error(name, sizes(64, 255, 1024), {"normal_size", "255", "at least 256"});
        expect_error(name, sizes(64, 4194305, 8388608), {"normal_size", "4194305", "at most 4 MiB"});
        expect_error(name, sizes(64, 256, 1023), {"max_size", "1023", "at least 1 KiB"});
        expect_error(name, sizes(64, 256, 16777217), {"max_size", "16777217", "at most 16 MiB"});
        expect_ok(name, sizes(64, 256, 1024));
        expect_ok(name, sizes(1048576, 4194304, 16777216));
        expect_ok(name, sizes(100, 777, 5001));  // odd, not powers of two
        for (int level : {0, 1, 2, 3}) {
            Options o;
            o.normalization_level = level;
            EXPECT_EQ(make_cut_finder(name, o)->profile().normalization_level, level);
        }
        for (int level : {-1, 4, 100}) {
            Options o;
            o.normalization_level = level;
            expect_error(name, o, {"normalization_level", std::to_string(level), "0..3"});
        }
    }
    Options seeded;
    seeded.seed = ~std::uint64_t{0};
    EXPECT_EQ(make_cut_finder("fastcdc-rs-v2020", seeded)->profile().seed, ~std::uint64_t{0});
    expect_error("fastcdc-rs-v2016", seeded, {"seed", "has no seed", "fastcdc-rs-v2020", "borg-buzhash"});
}

TEST(CompatOptions, RonomonRangesAndNoLevelNorSeed) {
    const std::string name = "fastcdc-rs-ronomon";
    expect_error(name, sizes(63, 256, 1024), {"min_size", "at least 64"});
    expect_error(name, sizes(67108865, 134217728, 268435456), {"min_size", "at most 64 MiB"});
    expect_error(name, sizes(64, 268435457, 536870912), {"normal_size", "at most 256 MiB"});
    expect_error(name, sizes(64, 256, 1023), {"max_size", "at least 1 KiB"});
    expect_error(name, sizes(64, 256, 1073741825), {"max_size", "at most 1 GiB"});
    expect_ok(name, sizes(67108864, 268435456, 1073741824));
    Options o;
    o.normalization_level = 1;
    expect_error(name, o, {"normalization_level", "has no normalization_level"});
    o = {};
    o.seed = 1;
    expect_error(name, o, {"seed", "has no seed"});
}

TEST(CompatOptions, ResticPolynomialDegreeAndIrreducibility) {
    const std::string name = "restic-rabin";
    for (std::uint64_t poly : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{0xff}, std::uint64_t{1} << 54,
                               ~std::uint64_t{0}}) {
        Options o;
        o.polynomial = poly;
        expect_error(name, o, {"polynomial", "degree from 8 to 53"});
    }
    Options reducible;
    reducible.polynomial = 0x101;  // x^8 + 1 = (x + 1)^8
    expect_error(name, reducible, {"polynomial", "0x101", "irreducible"});
    for (std::uint64_t poly : {0x11bULL, 0x1002dULL, 0x83225a8bULL, 0x1a123aac67ef3ULL, 0x20e7f3380b43fdULL,
                               0x3da3358b4dc173ULL}) {
        Options o;
        o.polynomial = poly;
        EXPECT_EQ(make_cut_finder(name, o)->profile().polynomial, poly);
    }
    EXPECT_EQ(resolve_profile(name, {}).polynomial, 0x3DA3358B4DC173u);
}

TEST(CompatOptions, ResticSizes) {
    const std::string name = "restic-rabin";
    // min < 64 turns the whole stream into one chunk in the module.
    expect_error(name, sizes(63, 1024, 4096), {"min_size", "63", "at least 64"});
    // restic takes a bit count: avg is 2^k.
    expect_error(name, sizes(64, 1000, 4096), {"normal_size", "1000", "power of two"});
    expect_ok(name, sizes(64, 128, 129));
    Options o;
    o.window_size = 64;
    expect_error(name, o, {"window_size", "has no window_size", "borg-buzhash"});
}

TEST(CompatOptions, BorgExponentsWindowAndSeed) {
    const std::string name = "borg-buzhash";
    expect_error(name, sizes(1000, 2048, 65536), {"min_size", "1000", "power of two"});
    expect_error(name, sizes(1024, 3000, 65536), {"normal_size", "3000", "power of two"});
    expect_error(name, sizes(1024, 2048, 65535), {"max_size", "65535", "power of two"});
    expect_error(name, sizes(1 << 20, 1 << 22, 1 << 24), {"max_size", "16777216", "at most 8 MiB"});
    expect_error(name, sizes(32, 2048, 65536), {"min_size", "32", "at least 64"});
    Options w = sizes(1024, 2048, 8192);
    w.window_size = 0;  // borg crashes
    expect_error(name, w, {"window_size", "0", "1..8388608"});
    w.window_size = 8192 - 1024;  // window + min + 1 = max + 1
    expect_error(name, w, {"window_size", "7168", "window_size + min_size + 1", "too small max_size"});
    w.window_size = 8192 - 1024 - 1;
    expect_ok(name, w);
    expect_error(name, sizes(1024, 2048, 4096), {"window_size", "4095"});  // the default window does not fit
    Options s;
    s.seed = std::uint64_t{1} << 32;
    expect_error(name, s, {"seed", "4294967296", "0..4294967295"});
    s.seed = 0xFFFFFFFF;
    expect_ok(name, s);
    Options p;
    p.polynomial = 0x11b;
    expect_error(name, p, {"polynomial", "has no polynomial", "restic-rabin"});
}

TEST(CompatOptions, CasyncLimitsAndTheDiscriminatorsDomain) {
    const std::string name = "casync-buzhash";
    expect_error(name, sizes(64, 65536, (128u << 20) + 1), {"max_size", "at most 128 MiB"});
    expect_ok(name, sizes(64, 65536, 128u << 20));
    // Above 9324556 casync divides by zero or a negative number (UB in C).
    expect_error(name, sizes(64, 9324557, 9400000), {"normal_size", "9324557", "at most 9324556"});
    expect_ok(name, sizes(64, 9324556, 9400000));
    expect_error(name, sizes(63, 65536, 262144), {"min_size", "at least 64"});
    expect_error(name, sizes(16384, 16384, 262144), {"normal_size", "greater than min_size"});
    for (auto set : {+[](Options& o) { o.seed = 1; }, +[](Options& o) { o.window_size = 48; },
                     +[](Options& o) { o.normalization_level = 1; }, +[](Options& o) { o.key = Key{}; }}) {
        Options o;
        set(o);
        EXPECT_THROW((void)make_cut_finder(name, o), OptionError);
    }
}

TEST(CompatOptions, OrderingRuleForAllSix) {
    // The originals do not all check min < avg < max; the contract does.
    expect_error("fastcdc-rs-v2020", sizes(8192, 4096, 65536), {"normal_size", "greater than min_size"});
    expect_error("fastcdc-rs-ronomon", sizes(4096, 65536, 32768), {"max_size", "greater than normal_size"});
    expect_error("restic-rabin", sizes(1 << 20, 1 << 20, 1 << 23), {"normal_size", "greater than min_size"});
    expect_error("borg-buzhash", sizes(1 << 19, 1 << 21, 1 << 21), {"max_size", "greater than normal_size"});
}

TEST(CompatHelpers, BitsRoundsLog2ToTheNearest) {
    const std::pair<std::size_t, int> cases[] = {{1024, 10}, {16384, 14}, {65536, 16}, {1500, 11}, {12288, 14},
                                                 {24576, 15}, {1100, 10}, {362, 8},    {363, 9},    {2896, 11},
                                                 {2897, 12}, {256, 8},    {4194304, 22}, {268435456, 28}};
    for (const auto& [avg, bits] : cases) EXPECT_EQ(detail::fastcdc_rs_bits(avg), bits) << avg;
}

TEST(CompatHelpers, CasyncDiscriminatorExamples) {
    const std::pair<std::size_t, std::uint64_t> cases[] = {{256, 192},         {4096, 3075},       {65536, 49535},
                                                           {1048576, 886711}, {4194304, 5721670}, {8388608, 62724856}};
    for (const auto& [avg, d] : cases) EXPECT_EQ(detail::casync_discriminator(avg), d) << avg;
}

TEST(CompatHelpers, Irreducibility) {
    EXPECT_TRUE(detail::rabin_polynomial_irreducible(0x7));     // x^2 + x + 1
    EXPECT_TRUE(detail::rabin_polynomial_irreducible(0x11b));   // AES
    EXPECT_FALSE(detail::rabin_polynomial_irreducible(0x5));    // x^2 + 1 = (x + 1)^2
    EXPECT_FALSE(detail::rabin_polynomial_irreducible(0x101));  // (x + 1)^8
    EXPECT_FALSE(detail::rabin_polynomial_irreducible(0x3DA3358B4DC173ULL ^ 0x1));  // x divides it (no constant term)
    EXPECT_TRUE(detail::rabin_polynomial_irreducible(0x3DA3358B4DC173ULL));
}

}  // namespace
}  // namespace cdc::test
