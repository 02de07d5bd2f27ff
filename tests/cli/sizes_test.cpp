// SPDX-License-Identifier: Apache-2.0
// The tools' size parser (--min 8K, --size 1MiB, ...).
#include "sizes.hpp"

#include <cdc/error.hpp>

#include <gtest/gtest.h>

#include <string>

namespace cdc::test {
namespace {

TEST(Sizes, ParseSuffixes) {
    using tools::parse_size;
    EXPECT_EQ(parse_size("4096"), 4096u);
    EXPECT_EQ(parse_size("8K"), 8192u);
    EXPECT_EQ(parse_size("8k"), 8192u);
    EXPECT_EQ(parse_size("8KiB"), 8192u);
    EXPECT_EQ(parse_size("1M"), 1u << 20);
    EXPECT_EQ(parse_size("1MiB"), 1u << 20);
    EXPECT_EQ(parse_size("1G"), 1u << 30);
    EXPECT_EQ(parse_size("64B"), 64u);
    EXPECT_THROW((void)parse_size("8Q", "--min"), OptionError);
    EXPECT_THROW((void)parse_size("", "--min"), OptionError);
    EXPECT_THROW((void)parse_size("K", "--min"), OptionError);
    EXPECT_THROW((void)parse_size("99999999999999999999"), OptionError);
    EXPECT_THROW((void)parse_size("17179869184G"), OptionError);
    try {
        (void)parse_size("8Q", "--avg");
    } catch (const OptionError& e) {
        EXPECT_NE(std::string(e.what()).find("--avg = '8Q'"), std::string::npos);
    }
}

}  // namespace
}  // namespace cdc::test
