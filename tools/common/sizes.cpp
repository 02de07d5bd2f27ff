#include "sizes.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <limits>

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

}  // namespace cdc::tools
