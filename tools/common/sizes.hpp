// SPDX-License-Identifier: Apache-2.0
// Human sizes: "4096", "8K", "8KiB", "1M", "1MiB", "1G", "1GiB" (K = 1024).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cdc::tools {

/// Parses a size; throws cdc::OptionError naming `option` on bad input.
std::uint64_t parse_size(std::string_view text, std::string_view option = "size");

/// A size in [min, max]; OptionError "--x = 'text' is invalid: ..." otherwise.
std::uint64_t parse_size(std::string_view text, std::string_view option, std::uint64_t min, std::uint64_t max);

/// A whole number (decimal digits only: no sign, no suffix) in [min, max];
/// throws cdc::OptionError naming `option` and `text` otherwise.
std::uint64_t parse_count(std::string_view text, std::string_view option, std::uint64_t min, std::uint64_t max);

/// A finite decimal number in [min, max]; OptionError otherwise.
double parse_real(std::string_view text, std::string_view option, double min, double max);

/// Physical memory of the machine, in bytes.
std::uint64_t physical_memory() noexcept;

/// Throws OptionError if allocating `bytes` (what `option` = `text` asks
/// for) would take more than half the physical memory: a usage error
/// instead of std::bad_alloc or the OOM killer.
void check_fits_in_memory(std::uint64_t bytes, std::string_view option, std::string_view text);

/// "8 KiB", "1.5 MiB", "512 B".
std::string format_size(double bytes);

/// A size as parse_size reads it, in the largest unit that divides it
/// exactly: "512K", "1M", "8G", "4095" (chunking profiles: "8K/16K/64K").
std::string format_size_exact(std::uint64_t bytes);

}  // namespace cdc::tools
