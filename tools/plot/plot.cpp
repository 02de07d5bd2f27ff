// SPDX-License-Identifier: Apache-2.0
// PLplot rendering. Inputs are validated before PLplot sees them: PLplot
// reports fatal errors through plexit(), which ends the process unless the
// exit handler throws (see PlotExitHandler).
#include "plot.hpp"

#include <plplot.h>
#include <plstream.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <mutex>
#include <system_error>
#include <unistd.h>

namespace cdc::plot {

namespace {

std::mutex& plplot_mutex() {
    static std::mutex m;
    return m;
}

// Colour map 0: 0 background, 1 axes and text, 2 grid, 3.. series.
constexpr std::array<std::array<PLINT, 3>, 13> kPalette{{
    {255, 255, 255},  // background
    {20, 20, 20},     // axes, labels
    {215, 215, 215},  // grid
    {31, 119, 180},   // blue
    {214, 39, 40},    // red
    {44, 160, 44},    // green
    {255, 127, 14},   // orange
    {148, 103, 189},  // purple
    {140, 86, 75},    // brown
    {227, 119, 194},  // pink
    {127, 127, 127},  // grey
    {188, 189, 34},   // olive
    {23, 190, 207},   // cyan
}};
constexpr PLINT kFirstSeriesColor = 3;
constexpr PLINT kSeriesColors = static_cast<PLINT>(kPalette.size()) - kFirstSeriesColor;

PLINT series_color(std::size_t i) { return kFirstSeriesColor + static_cast<PLINT>(i % kSeriesColors); }

// plexit() would end the process; throwing from the handler unwinds back to
// render_png instead (the C frames have unwind tables on x86-64 Debian).
int throwing_exit_handler(const char* message) { throw PlotError(fmt::format("PLplot: {}", message)); }
void quiet_abort_handler(const char*) {}

bool finite_all(const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double d) { return std::isfinite(d); });
}

void validate(const Chart& chart) {
    if (chart.width < 200 || chart.height < 150 || chart.width > 10000 || chart.height > 10000)
        throw PlotError(fmt::format("chart size {}x{} is invalid: 200x150 .. 10000x10000", chart.width, chart.height));
    if (chart.series.empty()) throw PlotError(fmt::format("chart '{}' has no data series", chart.title));
    for (const Series& s : chart.series) {
        const bool edges = chart.kind != Kind::lines;
        if (s.y.empty()) throw PlotError(fmt::format("chart '{}': series '{}' is empty", chart.title, s.label));
        if (edges ? s.x.size() != s.y.size() + 1 : s.x.size() != s.y.size())
            throw PlotError(fmt::format("chart '{}': series '{}' has {} x values for {} y values", chart.title,
                                        s.label, s.x.size(), s.y.size()));
        if (!finite_all(s.x) || !finite_all(s.y))
            throw PlotError(fmt::format("chart '{}': series '{}' has a non-finite value", chart.title, s.label));
        if (chart.x_log && std::any_of(s.x.begin(), s.x.end(), [](double d) { return d <= 0; }))
            throw PlotError(fmt::format("chart '{}': series '{}' has x <= 0 on a log axis", chart.title, s.label));
    }
}

struct Range {
    double lo, hi;
};

Range padded(double lo, double hi, bool from_zero) {
    if (from_zero && lo >= 0) lo = 0;
    if (hi <= lo) {
        const double d = lo == 0 ? 1.0 : std::fabs(lo) * 0.1;
        return {lo - (from_zero && lo >= 0 ? 0 : d), hi + d};
    }
    const double pad = (hi - lo) * 0.05;
    return {from_zero && lo >= 0 ? lo : lo - pad, hi + pad};
}

// Log axes are base 2: chunk sizes and edit counts grow by doubling, and
// PLplot's own log axes label decades only.
double tx(const Chart& c, double x) { return c.x_log ? std::log2(x) : x; }

void pow2_label(PLINT, PLFLT value, char* label, PLINT length, PLPointer) {
    const double v = std::exp2(value);
    const auto text = v >= 1 ? fmt::format("{:.0f}", v) : fmt::format("{:g}", v);
    std::snprintf(label, static_cast<std::size_t>(length), "%s", text.c_str());
}

// Legend places: the four corners and the middle of each side (internal).
enum class Place { top_right, top_left, bottom_right, bottom_left, right, left };

Place place_of(LegendPosition p) {
    switch (p) {
        case LegendPosition::top_left: return Place::top_left;
        case LegendPosition::bottom_right: return Place::bottom_right;
        case LegendPosition::bottom_left: return Place::bottom_left;
        default: return Place::top_right;
    }
}

PLINT legend_position(Place p) {
    switch (p) {
        case Place::top_left: return PL_POSITION_TOP | PL_POSITION_LEFT | PL_POSITION_INSIDE;
        case Place::bottom_right: return PL_POSITION_BOTTOM | PL_POSITION_RIGHT | PL_POSITION_INSIDE;
        case Place::bottom_left: return PL_POSITION_BOTTOM | PL_POSITION_LEFT | PL_POSITION_INSIDE;
        case Place::right: return PL_POSITION_RIGHT | PL_POSITION_INSIDE;
        case Place::left: return PL_POSITION_LEFT | PL_POSITION_INSIDE;
        default: return PL_POSITION_TOP | PL_POSITION_RIGHT | PL_POSITION_INSIDE;
    }
}

double legend_box_height(const Chart& chart) { return 0.06 + 0.065 * static_cast<double>(chart.series.size()); }

// The place (corners first, then the middle of the right and left sides)
// whose box of about the legend's size covers the fewest points of the
// series, lines sampled between their points too; `hits` gets that count.
// Coordinates are normalised to the axes.
Place pick_place(const Chart& chart, double xlo, double xhi, double ylo, double yhi, std::size_t& hits_out) {
    const double box_w = 0.36;
    const double box_h = legend_box_height(chart);
    constexpr std::array<Place, 6> places{Place::top_right,   Place::top_left, Place::bottom_right,
                                          Place::bottom_left, Place::right,    Place::left};
    std::array<std::size_t, 6> hits{};
    auto count = [&](double x, double y) {
        const double u = (x - xlo) / (xhi - xlo), v = (y - ylo) / (yhi - ylo);
        const bool right = u > 1 - box_w, left = u < box_w, top = v > 1 - box_h, bottom = v < box_h;
        const bool middle = v > 0.5 - box_h / 2 && v < 0.5 + box_h / 2;
        if (top && right) ++hits[0];
        if (top && left) ++hits[1];
        if (bottom && right) ++hits[2];
        if (bottom && left) ++hits[3];
        if (middle && right) ++hits[4];
        if (middle && left) ++hits[5];
    };
    for (const Series& s : chart.series) {
        if (chart.kind == Kind::lines) {
            for (std::size_t k = 0; k < s.x.size(); ++k) {
                count(tx(chart, s.x[k]), s.y[k]);
                if (k + 1 < s.x.size())
                    for (int j = 1; j < 16; ++j) {
                        const double f = j / 16.0;
                        count(tx(chart, s.x[k]) * (1 - f) + tx(chart, s.x[k + 1]) * f, s.y[k] * (1 - f) + s.y[k + 1] * f);
                    }
            }
        } else {
            for (std::size_t k = 0; k < s.y.size(); ++k)
                for (double v = 0; v <= s.y[k]; v += (yhi - ylo) / 20) count(tx(chart, (s.x[k] + s.x[k + 1]) / 2), v);
        }
    }
    std::size_t best = 0;
    for (std::size_t i = 1; i < hits.size(); ++i)
        if (hits[i] < hits[best]) best = i;
    hits_out = hits[best];
    return places[best];
}

void draw(plstream& pls, const Chart& chart) {
    double xlo = std::numeric_limits<double>::infinity(), xhi = -xlo, ylo = xlo, yhi = -xlo;
    for (const Series& s : chart.series) {
        for (double x : s.x) xlo = std::min(xlo, tx(chart, x)), xhi = std::max(xhi, tx(chart, x));
        for (double y : s.y) ylo = std::min(ylo, y), yhi = std::max(yhi, y);
    }
    if (chart.kind != Kind::lines) ylo = std::min(ylo, 0.0);
    if (xhi <= xlo) xlo -= 0.5, xhi += 0.5;
    if (chart.x_log) xlo -= 0.2, xhi += 0.2;  // keep end markers off the frame
    Range yr = padded(ylo, yhi, chart.y_from_zero);
    if (chart.x_min) xlo = tx(chart, *chart.x_min);
    if (chart.x_max) xhi = tx(chart, *chart.x_max);
    if (chart.y_min) yr.lo = *chart.y_min;
    if (chart.y_max) yr.hi = *chart.y_max;
    if (!(xhi > xlo) || !(yr.hi > yr.lo)) throw PlotError(fmt::format("chart '{}': empty axis range", chart.title));

    // Wide tick labels (300000) push the y axis title and the frame's left
    // edge right, and its right edge left (the last x label is centred on it).
    const auto extra_chars = [](double lo, double hi) {
        const double widest = std::max(std::abs(lo), std::abs(hi));
        return widest >= 1000 ? std::floor(std::log10(widest)) - 2 : 0.0;
    };
    const double extra_y = extra_chars(yr.lo, yr.hi), extra_x = chart.x_log ? 0.0 : extra_chars(xlo, xhi);
    pls.adv(0);
    pls.schr(0, 1.15);
    pls.vpor(0.11 + 0.013 * extra_y, 0.97 - 0.007 * extra_x, 0.14, chart.subtitle.empty() ? 0.89 : 0.85);
    const bool legend = chart.legend != LegendPosition::none &&
                        std::any_of(chart.series.begin(), chart.series.end(), [](const Series& s) { return !s.label.empty(); });
    Place where = place_of(chart.legend);
    if (legend && chart.legend == LegendPosition::automatic) {
        std::size_t hits = 0;
        where = pick_place(chart, xlo, xhi, yr.lo, yr.hi, hits);
        if (hits > 0 && !chart.y_max) {
            // Every place covers data: make room above it instead.
            const double h = legend_box_height(chart) + 0.03;
            yr.hi = yr.lo + (yr.hi - yr.lo) / (1 - h);
            where = Place::top_right;
        }
    }
    pls.wind(xlo, xhi, yr.lo, yr.hi);
    // Base-2 log axis: one labelled tick per power of two (every 2nd, 3rd...
    // when the range is wide), labels written by pow2_label.
    const double xtick = chart.x_log ? std::max(1.0, std::ceil((xhi - xlo) / 12.0)) : 0.0;
    const PLINT nxsub = chart.x_log ? 1 : 0;
    if (chart.x_log) pls.slabelfunc(&pow2_label, nullptr);
    const std::string xopt = chart.x_log ? "bcnsto" : "bcnst";
    // Tick labels in full up to ten digits: PLplot would otherwise switch to
    // "(x10^5)" labels, written past the end of the axis, outside the image.
    pls.sxax(10, 0);
    pls.syax(10, 0);
    pls.col0(2);
    pls.width(1);
    pls.box("g", xtick, nxsub, "g", 0, 0);
    pls.col0(1);
    pls.box(xopt.c_str(), xtick, nxsub, "bcnstv", 0, 0);
    if (chart.x_log) pls.slabelfunc(nullptr, nullptr);
    pls.mtex("b", 2.8, 0.5, 0.5, chart.x_label.c_str());
    pls.mtex("l", 4.6 + 0.8 * extra_y, 0.5, 0.5, chart.y_label.c_str());
    // Long titles shrink rather than run off the page (about 70 title or 120
    // subtitle characters fit across a 1200-pixel chart).
    auto fit = [&](const std::string& text, double scale, double chars) {
        const double fits = chars * chart.width / 1200.0;
        const auto n = static_cast<double>(text.size());
        return n > fits ? std::max(0.6, scale * fits / n) : scale;
    };
    pls.schr(0, fit(chart.title, 1.45, 70));
    pls.mtex("t", chart.subtitle.empty() ? 1.5 : 2.9, 0.5, 0.5, chart.title.c_str());
    if (!chart.subtitle.empty()) {
        pls.schr(0, fit(chart.subtitle, 0.95, 120));
        pls.mtex("t", 1.1, 0.5, 0.5, chart.subtitle.c_str());
    }
    pls.schr(0, 1.15);

    for (std::size_t i = 0; i < chart.series.size(); ++i) {
        const Series& s = chart.series[i];
        const PLINT color = series_color(i);
        std::vector<PLFLT> xs, ys;
        if (chart.kind == Kind::lines) {
            for (std::size_t k = 0; k < s.x.size(); ++k) xs.push_back(tx(chart, s.x[k])), ys.push_back(s.y[k]);
        } else {
            xs.push_back(tx(chart, s.x[0]));
            ys.push_back(0);
            for (std::size_t k = 0; k < s.y.size(); ++k) {
                xs.push_back(tx(chart, s.x[k]));
                ys.push_back(s.y[k]);
                xs.push_back(tx(chart, s.x[k + 1]));
                ys.push_back(s.y[k]);
            }
            xs.push_back(tx(chart, s.x.back()));
            ys.push_back(0);
        }
        if (chart.kind == Kind::bars) {
            const auto& rgb = kPalette[static_cast<std::size_t>(color)];
            pls.scol0a(color, rgb[0], rgb[1], rgb[2], chart.series.size() == 1 ? 0.55 : 0.30);
            pls.col0(color);
            for (std::size_t k = 0; k < s.y.size(); ++k) {
                if (s.y[k] == 0) continue;
                const PLFLT bx[4] = {tx(chart, s.x[k]), tx(chart, s.x[k]), tx(chart, s.x[k + 1]), tx(chart, s.x[k + 1])};
                const PLFLT by[4] = {0, s.y[k], s.y[k], 0};
                pls.fill(4, bx, by);
            }
            pls.scol0a(color, rgb[0], rgb[1], rgb[2], 1.0);
        }
        pls.col0(color);
        pls.width(2.0);
        pls.line(static_cast<PLINT>(xs.size()), xs.data(), ys.data());
        if (chart.markers && chart.kind == Kind::lines) {
            pls.ssym(0, 1.1);
            pls.poin(static_cast<PLINT>(xs.size()), xs.data(), ys.data(), 17);
        }
    }
    pls.width(1.0);

    if (legend) {
        const auto n = static_cast<PLINT>(chart.series.size());
        std::vector<PLINT> opts(chart.series.size()), text_colors(chart.series.size(), 1), colors(chart.series.size()),
            styles(chart.series.size(), 1), patterns(chart.series.size(), 0), sym_numbers(chart.series.size(), 3);
        std::vector<PLFLT> widths(chart.series.size(), 2.0), scales(chart.series.size(), 1.0);
        std::vector<const char*> labels(chart.series.size()), symbols(chart.series.size(), "#(728)");
        for (std::size_t i = 0; i < chart.series.size(); ++i) {
            opts[i] = PL_LEGEND_LINE;
            colors[i] = series_color(i);
            labels[i] = chart.series[i].label.c_str();
        }
        PLFLT lw = 0, lh = 0;
        pls.legend(&lw, &lh, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX, legend_position(where), 0.02, 0.03,
                   0.06, 0, 1, 1, 0, 0, n, opts.data(), 1.0, 1.0, 1.8, 0.0, text_colors.data(), labels.data(),
                   colors.data(), patterns.data(), scales.data(), widths.data(), colors.data(), styles.data(),
                   widths.data(), colors.data(), scales.data(), sym_numbers.data(), symbols.data());
    }
}

std::atomic<unsigned> temp_counter{0};

}  // namespace

bool png_device_available() {
    std::lock_guard lock(plplot_mutex());
    // plgDevs fills caller-owned arrays of *n entries and sets *n to the count.
    std::array<const char*, 256> menu{};
    std::array<const char*, 256> names{};
    const char** menu_ptr = menu.data();
    const char** names_ptr = names.data();
    int n = static_cast<int>(names.size());
    plgDevs(&menu_ptr, &names_ptr, &n);
    bool found = false;
    for (int i = 0; i < n && i < static_cast<int>(names.size()); ++i)
        if (names[static_cast<std::size_t>(i)] != nullptr && std::string_view(names[static_cast<std::size_t>(i)]) == "pngcairo")
            found = true;
    return found;
}

void render_png(const Chart& chart, const std::filesystem::path& out) {
    validate(chart);
    if (!png_device_available())
        throw PlotError("PLplot's pngcairo device is missing (Debian: apt-get install plplot-driver-cairo)");
    std::error_code ec;
    if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path(), ec);
    if (ec) throw PlotError(fmt::format("cannot create '{}': {}", out.parent_path().string(), ec.message()));
    const std::filesystem::path tmp =
        out.string() + fmt::format(".tmp-{}-{}.png", ::getpid(), temp_counter.fetch_add(1));
    {
        // PLplot would call plexit() on a file it cannot open: check first.
        std::ofstream probe(tmp, std::ios::binary | std::ios::trunc);
        if (!probe) throw PlotError(fmt::format("cannot write '{}'", out.string()));
    }
    try {
        std::lock_guard lock(plplot_mutex());
        plsexit(&throwing_exit_handler);
        plsabort(&quiet_abort_handler);
        plstream pls;
        pls.sdev("pngcairo");
        pls.sfnam(tmp.c_str());
        pls.setopt("geometry", fmt::format("{}x{}", chart.width, chart.height).c_str());
        std::array<PLINT, kPalette.size()> r{}, g{}, b{};
        for (std::size_t i = 0; i < kPalette.size(); ++i) r[i] = kPalette[i][0], g[i] = kPalette[i][1], b[i] = kPalette[i][2];
        pls.scmap0(r.data(), g.data(), b.data(), static_cast<PLINT>(kPalette.size()));
        pls.init();
        draw(pls, chart);
        // ~plstream ends the stream and writes the file.
    } catch (...) {
        std::filesystem::remove(tmp, ec);
        throw;
    }
    const auto size = read_png_size(tmp);
    if (!size || size->first != static_cast<std::uint32_t>(chart.width) ||
        size->second != static_cast<std::uint32_t>(chart.height)) {
        std::filesystem::remove(tmp, ec);
        throw PlotError(fmt::format("PLplot did not produce a {}x{} PNG for '{}'", chart.width, chart.height,
                                    out.string()));
    }
    std::filesystem::rename(tmp, out, ec);
    if (ec) {
        std::filesystem::remove(tmp, ec);
        throw PlotError(fmt::format("cannot write '{}': {}", out.string(), ec.message()));
    }
}

}  // namespace cdc::plot

#if defined(__SANITIZE_ADDRESS__)
// Under ASan: fontconfig (below cairo) and libltdl (PLplot's driver loader)
// keep process-lifetime caches that LeakSanitizer reports at exit. Only
// those two libraries are exempt; our own allocations stay checked.
extern "C" const char* __lsan_default_suppressions();
extern "C" const char* __lsan_default_suppressions() { return "leak:libfontconfig.so\nleak:libltdl.so\n"; }
#endif
