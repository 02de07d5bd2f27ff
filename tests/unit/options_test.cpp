// SPDX-License-Identifier: Apache-2.0
// Every validation rule of ALGORITHMS.md section 5: each violation is an
// OptionError whose message names the option, the value and the rule.
#include "test_support.hpp"


#include <gtest/gtest.h>

namespace cdc::test {
namespace {

Options sizes(std::size_t min, std::size_t normal, std::size_t max) { return sized_options(min, normal, max); }

void expect_error(std::string_view algorithm, const Options& o, const std::vector<std::string>& fragments) {
    expect_option_error(algorithm, o, fragments);
}

TEST(Options, DefaultsAreTheAlgorithms) {
    for (const auto& a : algorithms()) {
        Options o;
        if (a.key == KeyUse::required) o.key = Key{};
        const Profile p = resolve_profile(a.name, o);
        EXPECT_EQ(p.min_size, a.default_min) << a.name;
        EXPECT_EQ(p.normal_size, a.default_normal) << a.name;
        EXPECT_EQ(p.max_size, a.default_max) << a.name;
    }
    EXPECT_EQ(resolve_profile("ultracdc", {}).normal_size, 10240u);
}

TEST(Options, ZeroMeansDefaultPerField) {
    const Profile p = resolve_profile("jc", sizes(0, 16384, 0));
    EXPECT_EQ(p.min_size, 2048u);
    EXPECT_EQ(p.normal_size, 16384u);
    EXPECT_EQ(p.max_size, 65536u);
}

TEST(Options, MinimumIs64Bytes) {
    expect_error("fastcdc", sizes(63, 8192, 65536), {"min_size", "63", "at least 64"});
    expect_error("jc", sizes(32, 8192, 65536), {"min_size", "32", "at least 64"});
    EXPECT_NO_THROW((void)make_cut_finder("jc", sizes(64, 128, 256)));
}

TEST(Options, MaximumIs1GiB) {
    expect_error("jc", sizes(2048, 8192, (1u << 30) + 1), {"max_size", "1073741825", "at most 1 GiB"});
    EXPECT_NO_THROW((void)resolve_profile("jc", sizes(2048, 8192, 1u << 30)));
}

TEST(Options, MinBelowNormalBelowMax) {
    expect_error("fastcdc", sizes(8192, 8192, 65536), {"normal_size", "8192", "greater than min_size"});
    expect_error("ultracdc", sizes(4096, 2048, 65536), {"normal_size", "2048", "greater than min_size (4096)"});
    expect_error("jc-v1.1.0", sizes(2048, 65536, 65536), {"max_size", "65536", "greater than normal_size (65536)"});
    expect_error("fastcdc4stadia", sizes(2048, 8192, 4096), {"max_size", "4096", "greater than normal_size"});
}

TEST(Options, FastCdcNamesNeedPowerOfTwoNormal) {
    for (auto name : {"fastcdc", "fastcdc-v1.0.0"})
        expect_error(name, sizes(2048, 10000, 65536), {"normal_size", "10000", "power of two"});
    Options k = sizes(2048, 12288, 65536);
    k.key = Key{};
    expect_error("kfastcdc", k, {"normal_size", "12288", "power of two"});
    // JC and UltraCDC take any normal size.
    EXPECT_NO_THROW((void)make_cut_finder("jc", sizes(2048, 10000, 65536)));
    EXPECT_NO_THROW((void)make_cut_finder("ultracdc", sizes(2048, 10000, 65536)));
}

TEST(Options, FixedForcesMinAndMax) {
    const Profile p = resolve_profile("fixed-v1.0.0", sizes(1, 4096, 3));
    EXPECT_EQ(p.min_size, 4096u);
    EXPECT_EQ(p.max_size, 4096u);
    expect_error("fixed-v1.0.0", sizes(0, 5000, 0), {"normal_size", "5000", "power of two"});
    expect_error("fixed-v1.0.0", sizes(0, 32, 0), {"normal_size", "32", "at least 64"});
    expect_error("fixed-v1.0.0", sizes(0, std::size_t{1} << 31, 0), {"normal_size", "at most 1 GiB"});
}

TEST(Options, KeyRules) {
    expect_error("kfastcdc", {}, {"kfastcdc", "key", "requires"});
    for (auto name : {"ultracdc", "ultracdc-v1.0.0", "fastcdc4stadia", "fixed-v1.0.0"}) {
        Options o;
        o.key = Key{};
        expect_error(name, o, {name, "key", "cannot use a key"});
    }
    for (auto name : {"fastcdc", "kfastcdc", "fastcdc-v1.0.0", "jc", "jc-v1.0.0", "jc-v1.1.0"}) {
        Options o;
        o.key = Key{};
        EXPECT_TRUE(make_cut_finder(name, o)->profile().keyed) << name;
    }
}

TEST(Options, KeyHexMustBe32Bytes) {
    EXPECT_THROW((void)parse_key_hex("00"), OptionError);
    EXPECT_THROW((void)parse_key_hex(std::string(66, '0')), OptionError);
    EXPECT_THROW((void)parse_key_hex(std::string(63, '0') + "g"), OptionError);
    const Key k = parse_key_hex("030a11181f262d343b424950575e656c737a81888f969da4abb2b9c0c7ced5dc");
    EXPECT_EQ(k[0], 0x03);
    EXPECT_EQ(k[31], 0xdc);
    try {
        (void)parse_key_hex("abc");
    } catch (const OptionError& e) {
        EXPECT_NE(std::string(e.what()).find("32 bytes"), std::string::npos);
    }
}

TEST(Options, UnknownNameListsKnownNames) {
    expect_error("fastcdc-v9", {}, {"unknown algorithm 'fastcdc-v9'", "fastcdc", "jc-v1.1.0", "fixed-v1.0.0"});
}

TEST(Options, CallerBufferMustHoldMaxSize) {
    std::vector<std::byte> small(65535);
    try {
        Chunker c("fastcdc", Source{}, {}, small);
        ADD_FAILURE() << "no error";
    } catch (const OptionError& e) {
        EXPECT_NE(std::string(e.what()).find("65535"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("max_size (65536)"), std::string::npos);
    }
    std::vector<std::byte> exact(65536);
    EXPECT_NO_THROW(Chunker("fastcdc", Source{}, {}, exact));
}

}  // namespace
}  // namespace cdc::test
