// SPDX-License-Identifier: Apache-2.0
// PNG charts for the cdc tool, drawn with PLplot's pngcairo device.
//
// Tools-only: the cdc library never depends on this (see tools/CMakeLists.txt
// and the link_interface tests). PLplot keeps global state and is not
// thread-safe, so every render is serialized behind one mutex; callers may
// render from any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cdc::plot {

/// A chart could not be drawn or written (bad data, no PNG driver, I/O).
class PlotError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// One labelled data set. For Kind::lines, x and y have the same length.
/// For Kind::bars and Kind::steps (histograms), x holds the n+1 bin edges of
/// the n values in y.
struct Series {
    std::string label;
    std::vector<double> x;
    std::vector<double> y;
};

enum class Kind {
    lines,  ///< polylines (with markers when Chart::markers)
    steps,  ///< histogram outlines: good for overlaying several series
    bars,   ///< filled, translucent histogram bars with an outline
};

/// Where the legend goes. automatic picks the corner (or the middle of the
/// right or left side) covering the fewest data points, and when every place
/// covers some and y_max is not fixed, raises the y range to make room.
enum class LegendPosition { automatic, top_right, top_left, bottom_right, bottom_left, none };

struct Chart {
    std::string title;
    std::string subtitle;  ///< small line under the title (parameters, input)
    std::string x_label;   ///< with the unit, e.g. "elapsed (s)"
    std::string y_label;
    Kind kind = Kind::lines;
    bool markers = false;  ///< a symbol at every point (lines only)
    bool x_log = false;    ///< base-2 logarithmic x axis, ticks at powers of two (every x must be > 0)
    bool y_from_zero = true;  ///< default y range starts at 0 when all y >= 0
    std::optional<double> x_min, x_max, y_min, y_max;  ///< default: the data range (y from 0 when all y >= 0)
    LegendPosition legend = LegendPosition::automatic;
    std::vector<Series> series;
    int width = 1200;
    int height = 700;
};

/// Draws `chart` into the PNG file `out` (parent directories are created;
/// the file is written under a temporary name and renamed, so a failed render
/// never leaves a partial PNG). Checks the result's IHDR. Throws PlotError.
void render_png(const Chart& chart, const std::filesystem::path& out);

/// True when PLplot's pngcairo device is available.
bool png_device_available();

/// Width and height from a PNG file's signature + IHDR chunk; nullopt when
/// the file is missing or not a PNG.
std::optional<std::pair<std::uint32_t, std::uint32_t>> read_png_size(const std::filesystem::path& path);

}  // namespace cdc::plot
