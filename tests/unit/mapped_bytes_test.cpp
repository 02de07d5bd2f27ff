// SPDX-License-Identifier: Apache-2.0
// common::map_bytes: the buffers cdc speed, cdc chunk and the store's
// read-ahead share (src/common/mapped_bytes.hpp).
#include "common/mapped_bytes.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace cdc::test {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

TEST(MappedBytes, ZeroFilledWritableAndAlignedToHugePagesFromOnePageOn) {
    for (const bool huge : {true, false}) {
        for (const std::size_t n : {std::size_t{1}, std::size_t{4095}, std::size_t{4097}, kHugePage - 1, kHugePage,
                                    kHugePage + 1, 5 * kHugePage + 12345}) {
            SCOPED_TRACE(testing::Message() << "n = " << n << (huge ? " huge" : " small"));
            const common::MappedBytes b = common::map_bytes(n, huge);
            ASSERT_NE(b.get(), nullptr);
            EXPECT_EQ(b.get_deleter().length % 4096, 0u);
            EXPECT_GE(b.get_deleter().length, n);
            const auto at = reinterpret_cast<std::uintptr_t>(b.get());
            EXPECT_EQ(at % 4096, 0u);
            // (aligned where huge pages can serve it, so that the first 2 MiB is one)
            if (huge && n >= kHugePage) {
                EXPECT_EQ(at % kHugePage, 0u);
            }
            for (std::size_t i = 0; i < n; i += 4093) ASSERT_EQ(b[i], std::byte{0});
            EXPECT_EQ(b[n - 1], std::byte{0});
            std::memset(b.get(), 0xA5, n);  // every byte of it is ours
            EXPECT_EQ(b[n - 1], std::byte{0xA5});
        }
    }
    EXPECT_EQ(common::map_bytes(0).get(), nullptr);
}

}  // namespace
}  // namespace cdc::test
