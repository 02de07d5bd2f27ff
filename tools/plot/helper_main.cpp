// SPDX-License-Identifier: Apache-2.0
// cdc-plot: the PNG renderer behind `cdc plot` and `cdc bench --plot`.
// PLplot and its cairo/pango/fontconfig stack are loaded by this helper only,
// so the cdc tool itself stays a small static program (see client.cpp).
//   cdc-plot CHART.json OUT.png   draws the chart (JSON from chart_json.hpp)
//   cdc-plot --check              exit 0 when the pngcairo device is available
// Errors: one line on stderr, exit 1 (2 for usage).
#include "chart_json.hpp"
#include "plot.hpp"

#include <cstdio>
#include <exception>
#include <fstream>
#include <string_view>

int main(int argc, char** argv) {
    using namespace cdc::plot;
    if (argc == 2 && std::string_view(argv[1]) == "--check") return png_device_available() ? 0 : 1;
    if (argc != 3) {
        std::fputs("usage: cdc-plot CHART.json OUT.png | cdc-plot --check\n", stderr);
        return 2;
    }
    try {
        std::ifstream in(argv[1], std::ios::binary);
        if (!in) throw PlotError(std::string("cannot read '") + argv[1] + "'");
        const nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
        if (doc.is_discarded()) throw PlotError(std::string("'") + argv[1] + "' is not JSON");
        render_png(chart_from_json(doc), argv[2]);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
}
