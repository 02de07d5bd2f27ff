// SPDX-License-Identifier: Apache-2.0
#include "cli_definitions.hpp"

#include "cli_docs.hpp"
#include "cli_options.hpp"

namespace cdc::cli {

namespace {

nlohmann::ordered_json option_json(const CLI::Option& o) {
    nlohmann::ordered_json names = nlohmann::ordered_json::array();
    for (const auto& s : o.get_snames()) names.push_back("-" + s);
    for (const auto& l : o.get_lnames()) names.push_back("--" + l);
    const bool takes_value = o.get_type_size() != 0;
    nlohmann::ordered_json j{{"names", names},
                             {"type", takes_value ? o.get_type_name() : ""},
                             {"description", o.get_description()},
                             {"default", o.get_default_str()},
                             {"required", o.get_required()},
                             {"takes_value", takes_value},
                             {"repeatable", takes_value && o.get_expected_max() > 1}};
    if (const auto* c = choices_of(o)) j["choices"] = *c;
    return j;
}

nlohmann::ordered_json positional_json(const CLI::Option& o) {
    nlohmann::ordered_json j{{"name", o.get_name()},
                             {"type", o.get_type_name()},
                             {"description", o.get_description()},
                             {"required", o.get_required()},
                             {"repeatable", o.get_expected_max() > 1}};
    if (const auto* c = choices_of(o)) j["choices"] = *c;
    return j;
}

}  // namespace

nlohmann::ordered_json definitions(const CLI::App& app) {
    nlohmann::ordered_json j{{"name", app.get_name()}, {"description", app.get_description()}};
    if (app.get_prefix_command()) {
        j["helper"] = true;
        return j;
    }
    nlohmann::ordered_json options = nlohmann::ordered_json::array(), positionals = nlohmann::ordered_json::array();
    for (const CLI::Option* o : app.get_options()) {
        if (o->get_group().empty()) continue;  // hidden
        if (o->nonpositional())
            options.push_back(option_json(*o));
        else
            positionals.push_back(positional_json(*o));
    }
    j["options"] = options;
    j["positionals"] = positionals;
    if (const CommandDoc* doc = doc_of(app)) {
        j["notes"] = doc->notes;
        nlohmann::ordered_json examples = nlohmann::ordered_json::array(), codes = nlohmann::ordered_json::array();
        for (const Example& e : doc->examples) examples.push_back({{"command", e.command}, {"what", e.what}});
        for (const ExitStatus& e : doc->exit_codes) codes.push_back({{"code", e.code}, {"meaning", e.meaning}});
        j["examples"] = examples;
        j["exit_codes"] = codes;
    }
    nlohmann::ordered_json subs = nlohmann::ordered_json::array();
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); }))
        subs.push_back(definitions(*sub));
    j["subcommands"] = subs;
    j["requires_subcommand"] = app.get_require_subcommand_min() > 0;
    return j;
}

}  // namespace cdc::cli
