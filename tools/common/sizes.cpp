// SPDX-License-Identifier: Apache-2.0
#include "sizes.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <unistd.h>

namespace cdc::tools {

std::uint64_t parse_size(std::string_view text, std::string_view option) {
    auto bad = [&](std::string_view why) -> OptionError {
        return OptionError(fmt::format("{} = '{}' is invalid: {} (expected a size such as 4096, 8K, 8KiB, 1M or 1MiB)",
                                       option, text, why));
    };
    std::uint64_t value = 0;
    const char* first = text.data();
    const char* last = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(first, last, value);
    if (ec == std::errc::result_out_of_range) throw bad("too large");
    if (ec != std::errc() || ptr == first) throw bad("not a number");
    std::string suffix(ptr, last);
    for (auto& ch : suffix) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    unsigned shift = 0;
    if (suffix.empty() || suffix == "b") shift = 0;
    else if (suffix == "k" || suffix == "kib") shift = 10;
    else if (suffix == "m" || suffix == "mib") shift = 20;
    else if (suffix == "g" || suffix == "gib") shift = 30;
    else if (suffix == "t" || suffix == "tib") shift = 40;
    else throw bad("unknown suffix '" + std::string(ptr, last) + "'");
    if (shift != 0 && value > (std::numeric_limits<std::uint64_t>::max() >> shift)) throw bad("too large");
    return value << shift;
}

std::uint64_t parse_size(std::string_view text, std::string_view option, std::uint64_t min, std::uint64_t max) {
    const std::uint64_t v = parse_size(text, option);
    if (v < min || v > max)
        throw OptionError(fmt::format("{} = '{}' is invalid: must be between {} and {}", option, text,
                                      format_size(static_cast<double>(min)), format_size(static_cast<double>(max))));
    return v;
}

std::uint64_t parse_count(std::string_view text, std::string_view option, std::uint64_t min, std::uint64_t max) {
    std::uint64_t v = 0;
    const char* last = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), last, v);
    const bool digits = !text.empty() && std::isdigit(static_cast<unsigned char>(text.front()));
    if (!digits || ec == std::errc::invalid_argument || (ec == std::errc() && ptr != last))
        throw OptionError(fmt::format("{} = '{}' is invalid: not a whole number", option, text));
    if (ec == std::errc::result_out_of_range || v < min || v > max)
        throw OptionError(fmt::format("{} = '{}' is invalid: must be between {} and {}", option, text, min, max));
    return v;
}

double parse_real(std::string_view text, std::string_view option, double min, double max) {
    double v = 0;
    const char* last = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), last, v);
    if (text.empty() || ec == std::errc::invalid_argument || ptr != last || !std::isfinite(v))
        throw OptionError(fmt::format("{} = '{}' is invalid: not a number", option, text));
    if (ec == std::errc::result_out_of_range || v < min || v > max)
        throw OptionError(fmt::format("{} = '{}' is invalid: must be between {} and {}", option, text, min, max));
    return v;
}

std::uint64_t physical_memory() noexcept {
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return std::uint64_t{1} << 32;  // unknown: assume 4 GiB
    return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

void check_fits_in_memory(std::uint64_t bytes, std::string_view option, std::string_view text) {
    const std::uint64_t half = physical_memory() / 2;
    if (bytes > half)
        throw OptionError(fmt::format("{} = '{}' is invalid: it needs {} of memory, more than half of this machine's {}",
                                      option, text, format_size(static_cast<double>(bytes)),
                                      format_size(static_cast<double>(physical_memory()))));
}

std::string format_size(double bytes) {
    static constexpr std::array<const char*, 5> kUnits = {"B", "KiB", "MiB", "GiB", "TiB"};
    std::size_t unit = 0;
    while (bytes >= 1024.0 && unit + 1 < kUnits.size()) {
        bytes /= 1024.0;
        ++unit;
    }
    if (unit == 0) return fmt::format("{:.0f} B", bytes);
    return fmt::format("{:.{}f} {}", bytes, bytes < 10 ? 2 : (bytes < 100 ? 1 : 0), kUnits[unit]);
}

std::string format_size_exact(std::uint64_t bytes) {
    static constexpr std::array<char, 4> kUnits = {'K', 'M', 'G', 'T'};
    if (bytes == 0 || bytes % 1024 != 0) return fmt::format("{}", bytes);
    std::size_t unit = 0;
    bytes /= 1024;
    while (bytes % 1024 == 0 && unit + 1 < kUnits.size()) {
        bytes /= 1024;
        ++unit;
    }
    return fmt::format("{}{}", bytes, kUnits[unit]);
}

}  // namespace cdc::tools
