// SPDX-License-Identifier: Apache-2.0
// A Chart as JSON: how the cdc tool hands a chart to the cdc-plot helper
// (see client.cpp). Doubles round-trip exactly; a non-finite value cannot be
// written (JSON has none) and is reported as a PlotError by the reader.
#pragma once

#include "plot.hpp"

#include <nlohmann/json.hpp>

namespace cdc::plot {

nlohmann::json chart_to_json(const Chart& chart);
/// Throws PlotError on a malformed document.
Chart chart_from_json(const nlohmann::json& doc);

}  // namespace cdc::plot
