// SPDX-License-Identifier: Apache-2.0
#include <cdc/enum_names.hpp>
#include <cdc/error.hpp>
#include <cdc/options.hpp>

#include <fmt/format.h>

#include <string>

namespace cdc {

void throw_unknown_name(std::string_view field, std::string_view text, std::span<const std::string_view> names) {
    throw OptionError(fmt::format("{} = '{}' is invalid: must be one of {}", field, text, fmt::join(names, ", ")),
                      std::string(field));
}

namespace {
int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
}  // namespace

Key parse_key_hex(std::string_view hex) {
    if (hex.size() != 64)
        throw OptionError(fmt::format("key is invalid: must be exactly 32 bytes (64 hex digits), got {} digits",
                                      hex.size()),
                          "key");
    Key key{};
    for (std::size_t i = 0; i < 32; ++i) {
        const int hi = hex_value(hex[2 * i]);
        const int lo = hex_value(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            throw OptionError(
                fmt::format("key is invalid: not a hexadecimal digit at position {}", hi < 0 ? 2 * i : 2 * i + 1),
                "key");
        key[i] = static_cast<std::uint8_t>(hi * 16 + lo);
    }
    return key;
}

}  // namespace cdc
