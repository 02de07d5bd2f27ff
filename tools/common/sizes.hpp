// Human sizes: "4096", "8K", "8KiB", "1M", "1MiB", "1G", "1GiB" (K = 1024).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cdc::tools {

/// Parses a size; throws cdc::OptionError naming `option` on bad input.
std::uint64_t parse_size(std::string_view text, std::string_view option = "size");

/// "8 KiB", "1.5 MiB", "512 B".
std::string format_size(double bytes);

}  // namespace cdc::tools
