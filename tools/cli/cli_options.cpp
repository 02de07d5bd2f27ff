// SPDX-License-Identifier: Apache-2.0
#include "cli_options.hpp"

#include <cdc/algorithms.hpp>
#include <cdc/error.hpp>
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

void add_walk_options(CLI::App& cmd, WalkArgs& args) {
    cmd.add_option("--exclude", args.exclude,
                   "leave out what matches a gitignore-like PATTERN (repeatable): * ? [...] within a name, ** any "
                   "directories, a leading / anchors it to the PATH walked, a trailing / matches directories only, "
                   "a leading ! takes it back; without a / it matches a name at any depth")
        ->type_name("PATTERN")
        ->allow_extra_args(false);
    cmd.add_option("--exclude-file", args.exclude_files,
                   "read --exclude patterns from FILE, one a line (# comments, blank lines ignored; repeatable)")
        ->type_name("FILE")
        ->allow_extra_args(false);
    cmd.add_flag("--exclude-caches", args.exclude_caches,
                 "leave out directories holding a CACHEDIR.TAG file with its standard signature (the tag too)");
    cmd.add_option("--exclude-if-present", args.exclude_if_present,
                   "leave out directories holding an entry called NAME (repeatable)")
        ->type_name("NAME")
        ->allow_extra_args(false);
    cmd.add_flag("--one-file-system", args.one_file_system,
                 "do not enter directories on another file system than the PATH they are found under");
}

WalkExcludes walk_excludes(const WalkArgs& args) {
    WalkExcludes ex;
    for (const auto& f : args.exclude_files) {
        try {
            ex.patterns.add_file(f);
        } catch (const Error& e) {  // IoError or OptionError: both the user's to fix
            throw UsageError(fmt::format("{} (--exclude-file)", e.what()));
        }
    }
    for (const auto& p : args.exclude) {
        try {
            ex.patterns.add(p);
        } catch (const OptionError& e) {
            throw UsageError(fmt::format("{} (--exclude)", e.what()));
        }
    }
    ex.caches = args.exclude_caches;
    for (const auto& name : args.exclude_if_present)
        if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
            throw UsageError(
                fmt::format("--exclude-if-present = '{}' is invalid: it must be one file name (not empty, . or .., "
                            "no /)",
                            name));
    ex.if_present = args.exclude_if_present;
    return ex;
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
