// SPDX-License-Identifier: Apache-2.0
#include "chart_json.hpp"

#include <fmt/format.h>

#include <array>
#include <string_view>

namespace cdc::plot {
namespace {

constexpr std::array<std::pair<Kind, std::string_view>, 3> kKinds{{
    {Kind::lines, "lines"}, {Kind::steps, "steps"}, {Kind::bars, "bars"}}};
constexpr std::array<std::pair<LegendPosition, std::string_view>, 6> kLegends{{
    {LegendPosition::automatic, "automatic"},
    {LegendPosition::top_right, "top_right"},
    {LegendPosition::top_left, "top_left"},
    {LegendPosition::bottom_right, "bottom_right"},
    {LegendPosition::bottom_left, "bottom_left"},
    {LegendPosition::none, "none"}}};

template <class E, std::size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& names, E value) {
    for (const auto& [v, n] : names)
        if (v == value) return n;
    return names[0].second;
}

template <class E, std::size_t N>
E value_of(const std::array<std::pair<E, std::string_view>, N>& names, const std::string& name, const char* what) {
    for (const auto& [v, n] : names)
        if (n == name) return v;
    throw PlotError(fmt::format("chart: unknown {} '{}'", what, name));
}

nlohmann::json optional_number(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

std::optional<double> read_optional(const nlohmann::json& doc, const char* key) {
    if (!doc.contains(key) || doc.at(key).is_null()) return std::nullopt;
    return doc.at(key).get<double>();
}

}  // namespace

nlohmann::json chart_to_json(const Chart& c) {
    nlohmann::json series = nlohmann::json::array();
    for (const Series& s : c.series) series.push_back({{"label", s.label}, {"x", s.x}, {"y", s.y}});
    return {{"title", c.title},
            {"subtitle", c.subtitle},
            {"x_label", c.x_label},
            {"y_label", c.y_label},
            {"kind", name_of(kKinds, c.kind)},
            {"markers", c.markers},
            {"x_log", c.x_log},
            {"y_from_zero", c.y_from_zero},
            {"x_min", optional_number(c.x_min)},
            {"x_max", optional_number(c.x_max)},
            {"y_min", optional_number(c.y_min)},
            {"y_max", optional_number(c.y_max)},
            {"legend", name_of(kLegends, c.legend)},
            {"series", std::move(series)},
            {"width", c.width},
            {"height", c.height}};
}

Chart chart_from_json(const nlohmann::json& doc) {
    try {
        Chart c;
        c.title = doc.at("title").get<std::string>();
        c.subtitle = doc.at("subtitle").get<std::string>();
        c.x_label = doc.at("x_label").get<std::string>();
        c.y_label = doc.at("y_label").get<std::string>();
        c.kind = value_of(kKinds, doc.at("kind").get<std::string>(), "kind");
        c.markers = doc.at("markers").get<bool>();
        c.x_log = doc.at("x_log").get<bool>();
        c.y_from_zero = doc.at("y_from_zero").get<bool>();
        c.x_min = read_optional(doc, "x_min");
        c.x_max = read_optional(doc, "x_max");
        c.y_min = read_optional(doc, "y_min");
        c.y_max = read_optional(doc, "y_max");
        c.legend = value_of(kLegends, doc.at("legend").get<std::string>(), "legend position");
        for (const auto& s : doc.at("series"))
            c.series.push_back(
                Series{s.at("label").get<std::string>(), s.at("x").get<std::vector<double>>(), s.at("y").get<std::vector<double>>()});
        c.width = doc.at("width").get<int>();
        c.height = doc.at("height").get<int>();
        return c;
    } catch (const nlohmann::json::exception& e) {
        throw PlotError(fmt::format("chart: {} (a non-finite value is written as null)", e.what()));
    }
}

}  // namespace cdc::plot
