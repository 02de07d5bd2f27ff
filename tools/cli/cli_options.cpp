#include "cli_options.hpp"

#include <cdc/algorithms.hpp>
#include <cdc/version.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

namespace cdc::cli {

namespace {

std::string last_name(const std::string& names) { return names.substr(names.rfind(',') + 1); }

std::map<const CLI::Option*, std::vector<std::string>>& choices_registry() {
    static std::map<const CLI::Option*, std::vector<std::string>> registry;
    return registry;
}

}  // namespace

CLI::Option* add_size_option(CLI::App& cmd, const std::string& names, std::uint64_t& target, std::uint64_t min,
                             std::uint64_t max, const std::string& help) {
    const std::string flag = last_name(names);
    return cmd
        .add_option_function<std::string>(
            names, [&target, flag, min, max](const std::string& v) { target = tools::parse_size(v, flag, min, max); },
            help)
        ->type_name("SIZE")
        ->default_str(tools::format_size_exact(target));
}

CLI::Option* add_size_option(CLI::App& cmd, const std::string& names, std::optional<std::uint64_t>& target,
                             std::uint64_t min, std::uint64_t max, const std::string& help) {
    const std::string flag = last_name(names);
    return cmd
        .add_option_function<std::string>(
            names, [&target, flag, min, max](const std::string& v) { target = tools::parse_size(v, flag, min, max); },
            help)
        ->type_name("SIZE");
}

CLI::Option* add_algorithm_option(CLI::App& cmd, std::string& target, const std::string& help) {
    return with_choices(cmd.add_option("-a,--algorithm", target, help)->type_name("NAME")->capture_default_str(),
                        algorithm_choices(false));
}

CLI::Option* add_list_option(CLI::App& cmd, const std::string& names, std::string& target, const std::string& type,
                             const std::string& help) {
    return cmd
        .add_option_function<std::vector<std::string>>(
            names, [&target](const std::vector<std::string>& v) { target = fmt::format("{}", fmt::join(v, ",")); },
            help)
        ->delimiter(',')
        ->allow_extra_args(false)
        ->type_name(type)
        ->default_str(target);
}

CLI::Option* add_algorithm_list_option(CLI::App& cmd, std::string& target, const std::string& help) {
    return with_choices(add_list_option(cmd, "-a,--algorithm", target, "NAME", help), algorithm_choices(true));
}

CLI::Option* add_json_flag(CLI::App& cmd, bool& target, const std::string& what) {
    return cmd.add_flag("--json", target, "print JSON: " + what);
}

CLI::Option* add_csv_flag(CLI::App& cmd, bool& target, const std::string& what) {
    return cmd.add_flag("--csv", target, "print CSV (RFC 4180): " + what);
}

CLI::Option* add_quiet_flag(CLI::App& cmd, bool& target) {
    return cmd.add_flag("-q,--quiet", target,
                        "nothing on stderr but errors (no progress, warnings or notes), no status line on stdout");
}

void set_help_flags(CLI::App& app) { app.set_help_flag("-h,--help", "print this help and exit"); }

void add_version_flags(CLI::App& app) {
    app.set_version_flag("-V,--version", std::string("cdc ") + cdc::kVersionString, "print the version and exit");
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
        if (!sub->get_prefix_command()) add_version_flags(*sub);
}

CLI::Option* with_choices(CLI::Option* opt, std::vector<std::string> names) {
    choices_registry()[opt] = std::move(names);
    return opt;
}

const std::vector<std::string>* choices_of(const CLI::Option& opt) {
    const auto& registry = choices_registry();
    const auto it = registry.find(&opt);
    return it == registry.end() ? nullptr : &it->second;
}

std::vector<std::string> algorithm_choices(bool with_all) {
    std::vector<std::string> names;
    for (const auto& a : cdc::algorithms()) names.emplace_back(a.name);
    if (with_all) names.emplace_back("all");
    return names;
}

}  // namespace cdc::cli
