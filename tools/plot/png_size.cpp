// SPDX-License-Identifier: Apache-2.0
// read_png_size: shared by the PLplot renderer (cdc-plot) and its client in
// the cdc tool; no PLplot here.
#include "plot.hpp"

#include <algorithm>
#include <array>
#include <fstream>

namespace cdc::plot {

std::optional<std::pair<std::uint32_t, std::uint32_t>> read_png_size(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::array<unsigned char, 24> h{};
    if (!in.read(reinterpret_cast<char*>(h.data()), h.size())) return std::nullopt;
    static constexpr std::array<unsigned char, 8> kSignature{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (!std::equal(kSignature.begin(), kSignature.end(), h.begin())) return std::nullopt;
    auto be32 = [&](std::size_t at) {
        return (std::uint32_t{h[at]} << 24) | (std::uint32_t{h[at + 1]} << 16) | (std::uint32_t{h[at + 2]} << 8) |
               std::uint32_t{h[at + 3]};
    };
    if (be32(8) != 13 || h[12] != 'I' || h[13] != 'H' || h[14] != 'D' || h[15] != 'R') return std::nullopt;
    return std::make_pair(be32(16), be32(20));
}

}  // namespace cdc::plot
