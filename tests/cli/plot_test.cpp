// SPDX-License-Identifier: Apache-2.0
// The PLplot layer of the tools (tools/plot/plot.hpp): every chart kind gives
// a valid PNG of the requested size; bad data is refused before PLplot.
#include "test_support.hpp"

#include "chart_json.hpp"
#include "plot.hpp"

#include <fmt/format.h>

#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <fstream>
#include <thread>

namespace cdc::test {
namespace {

plot::Chart line_chart() {
    plot::Chart c;
    c.title = "Memory over time";
    c.subtitle = "a subtitle with parameters";
    c.x_label = "elapsed (s)";
    c.y_label = "resident set size (MB)";
    for (int k = 0; k < 3; ++k) {
        plot::Series s{fmt::format("series {}", k), {}, {}};
        for (int i = 0; i < 50; ++i) s.x.push_back(i * 0.1), s.y.push_back(10 + k * 5 + std::sin(i * 0.2 + k));
        c.series.push_back(s);
    }
    return c;
}

void expect_png(const std::filesystem::path& p, std::uint32_t w, std::uint32_t h) {
    const auto size = plot::read_png_size(p);
    ASSERT_TRUE(size.has_value()) << p;
    EXPECT_EQ(size->first, w);
    EXPECT_EQ(size->second, h);
    EXPECT_GT(std::filesystem::file_size(p), 2000u) << "a chart, not an empty image";
}

std::size_t files_in(const std::filesystem::path& dir) {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
    return n;
}

// Pixels darker than mid-grey (text, lines) in the box [x0, x1) x [y0, y1)
// of a PNG.
std::size_t dark_pixels(const std::filesystem::path& p, std::uint32_t x0, std::uint32_t y0, std::uint32_t x1,
                        std::uint32_t y1) {
    png_image image{};
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&image, p.c_str())) return SIZE_MAX;
    image.format = PNG_FORMAT_GRAY;
    std::vector<png_byte> gray(PNG_IMAGE_SIZE(image));
    if (!png_image_finish_read(&image, nullptr, gray.data(), 0, nullptr)) return SIZE_MAX;
    std::size_t n = 0;
    for (std::uint32_t y = y0; y < std::min(y1, image.height); ++y)
        for (std::uint32_t x = x0; x < std::min(x1, image.width); ++x) n += gray[std::size_t{y} * image.width + x] < 128;
    return n;
}

TEST(Plot, PngDeviceIsAvailable) { EXPECT_TRUE(plot::png_device_available()); }

// Large values are labelled in full: no "(x10^5)" past the end of an axis,
// cut at the image's edge (the right margin and the top-left corner stay
// blank).
TEST(Plot, LargeValuesKeepTheirLabelsInsideTheImage) {
    TempDir tmp;
    plot::Chart c = line_chart();
    c.series = {{"a", {0, 50000, 123456}, {0, 150000, 320000}}};
    const auto png = tmp.path() / "large.png";
    plot::render_png(c, png);
    EXPECT_EQ(dark_pixels(png, 1190, 0, 1200, 700), 0u) << "text reaches the right edge";
    EXPECT_EQ(dark_pixels(png, 0, 20, 120, 80), 0u) << "an exponent above the y axis";
    EXPECT_GT(dark_pixels(png, 0, 0, 1200, 700), 1000u) << "the chart itself";
}

TEST(Plot, LinesWithLegendAre1200x700) {
    TempDir tmp;
    plot::render_png(line_chart(), tmp.path() / "sub" / "lines.png");
    expect_png(tmp.path() / "sub" / "lines.png", 1200, 700);
    EXPECT_EQ(files_in(tmp.path() / "sub"), 1u) << "no temporary file left behind";
}

TEST(Plot, EveryKindAndRequestedSize) {
    TempDir tmp;
    plot::Chart bars;
    bars.title = "Chunk-size distribution";
    bars.x_label = "chunk size (KiB)";
    bars.y_label = "share of chunks (%)";
    bars.kind = plot::Kind::bars;
    bars.series = {{"fastcdc", {0, 1, 2, 3, 4}, {5, 40, 30, 25}}};
    plot::render_png(bars, tmp.path() / "bars.png");
    expect_png(tmp.path() / "bars.png", 1200, 700);

    plot::Chart steps = bars;
    steps.kind = plot::Kind::steps;
    steps.series.push_back({"jc", {0, 2, 4, 6}, {50, 30, 20}});
    steps.width = 640;
    steps.height = 480;
    plot::render_png(steps, tmp.path() / "steps.png");
    expect_png(tmp.path() / "steps.png", 640, 480);

    plot::Chart log = line_chart();
    log.x_log = true;
    log.markers = true;
    log.y_from_zero = false;
    log.legend = plot::LegendPosition::bottom_left;
    for (auto& s : log.series)
        for (auto& x : s.x) x = std::exp2(x);
    plot::render_png(log, tmp.path() / "log.png");
    expect_png(tmp.path() / "log.png", 1200, 700);

    plot::Chart flat = line_chart();  // a constant series: the range is widened, not empty
    flat.series = {{"flat", {0, 1, 2}, {3, 3, 3}}};
    flat.legend = plot::LegendPosition::none;
    flat.title = std::string(200, 'T');  // shrinks to fit
    plot::render_png(flat, tmp.path() / "flat.png");
    expect_png(tmp.path() / "flat.png", 1200, 700);
}

TEST(Plot, BadDataIsRefusedAndLeavesNoFile) {
    TempDir tmp;
    const auto out = tmp.path() / "bad.png";
    plot::Chart c = line_chart();
    c.series.clear();
    EXPECT_THROW(plot::render_png(c, out), plot::PlotError);
    c = line_chart();
    c.series[1].y.pop_back();
    EXPECT_THROW(plot::render_png(c, out), plot::PlotError);
    c = line_chart();
    c.series[0].y[3] = std::nan("");
    EXPECT_THROW(plot::render_png(c, out), plot::PlotError);
    c = line_chart();
    c.x_log = true;  // x starts at 0
    EXPECT_THROW(plot::render_png(c, out), plot::PlotError);
    c = line_chart();
    c.kind = plot::Kind::bars;  // needs n + 1 edges
    EXPECT_THROW(plot::render_png(c, out), plot::PlotError);
    c = line_chart();
    c.width = 10;
    EXPECT_THROW(plot::render_png(c, out), plot::PlotError);
    EXPECT_THROW(plot::render_png(line_chart(), "/proc/no/such/dir/x.png"), plot::PlotError);
    EXPECT_FALSE(std::filesystem::exists(out));
    EXPECT_EQ(files_in(tmp.path()), 0u);
}

TEST(Plot, ConcurrentRendersAreSerialized) {
    TempDir tmp;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 3; ++i) plot::render_png(line_chart(), tmp.path() / fmt::format("c{}-{}.png", t, i));
        });
    for (auto& th : threads) th.join();
    for (int t = 0; t < 4; ++t)
        for (int i = 0; i < 3; ++i) expect_png(tmp.path() / fmt::format("c{}-{}.png", t, i), 1200, 700);
}

TEST(Plot, ReadPngSizeRejectsNonPng) {
    TempDir tmp;
    const std::uint8_t text[] = {'n', 'o', 't', ' ', 'a', ' ', 'p', 'n', 'g', 0, 0, 0, 0, 0, 0, 0,
                                 0,   0,   0,   0,   0,   0,   0,   0,   0,   0};
    EXPECT_FALSE(plot::read_png_size(tmp.write("x.png", text)).has_value());
    EXPECT_FALSE(plot::read_png_size(tmp.path() / "missing.png").has_value());
}

// The chart as JSON (how the cdc tool hands charts to the cdc-plot helper)
// comes back field for field, doubles exactly.
TEST(Plot, ChartJsonRoundTrips) {
    plot::Chart c = line_chart();
    c.kind = plot::Kind::steps;
    c.markers = true;
    c.x_log = true;
    c.y_from_zero = false;
    c.x_min = 0.1;
    c.y_max = 1.0 / 3.0;
    c.legend = plot::LegendPosition::bottom_left;
    c.width = 640;
    c.height = 480;
    const auto back = plot::chart_from_json(nlohmann::json::parse(plot::chart_to_json(c).dump()));
    EXPECT_EQ(back.title, c.title);
    EXPECT_EQ(back.subtitle, c.subtitle);
    EXPECT_EQ(back.x_label, c.x_label);
    EXPECT_EQ(back.y_label, c.y_label);
    EXPECT_EQ(back.kind, c.kind);
    EXPECT_EQ(back.markers, c.markers);
    EXPECT_EQ(back.x_log, c.x_log);
    EXPECT_EQ(back.y_from_zero, c.y_from_zero);
    EXPECT_EQ(back.x_min, c.x_min);
    EXPECT_FALSE(back.x_max.has_value());
    EXPECT_FALSE(back.y_min.has_value());
    EXPECT_EQ(back.y_max, c.y_max);
    EXPECT_EQ(back.legend, c.legend);
    EXPECT_EQ(back.width, 640);
    EXPECT_EQ(back.height, 480);
    ASSERT_EQ(back.series.size(), c.series.size());
    for (std::size_t i = 0; i < c.series.size(); ++i) {
        EXPECT_EQ(back.series[i].label, c.series[i].label);
        EXPECT_EQ(back.series[i].x, c.series[i].x);  // exact doubles
        EXPECT_EQ(back.series[i].y, c.series[i].y);
    }
    auto doc = plot::chart_to_json(c);
    doc["kind"] = "pie";
    EXPECT_THROW(plot::chart_from_json(doc), plot::PlotError);
    doc = plot::chart_to_json(c);
    doc["series"][0]["y"][3] = nullptr;  // how a NaN is written
    EXPECT_THROW(plot::chart_from_json(doc), plot::PlotError);
    EXPECT_THROW(plot::chart_from_json(nlohmann::json::object()), plot::PlotError);
}

}  // namespace
}  // namespace cdc::test
