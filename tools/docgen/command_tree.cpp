// SPDX-License-Identifier: Apache-2.0
#include "command_tree.hpp"

namespace cdc::docgen {

namespace {

std::vector<std::string> strings(const nlohmann::json& j, const char* key) {
    return j.contains(key) ? j.at(key).get<std::vector<std::string>>() : std::vector<std::string>{};
}

Command parse(const nlohmann::json& j, std::vector<std::string> path) {
    Command c;
    c.path = std::move(path);
    c.description = j.at("description").get<std::string>();
    c.notes = j.contains("notes") ? j.at("notes").get<std::string>() : "";
    const nlohmann::json none = nlohmann::json::array();  // a helper's command whose helper was not built
    for (const auto& o : j.value("options", none))
        c.options.push_back({strings(o, "names"), o.at("type").get<std::string>(), o.at("description").get<std::string>(),
                             o.at("default").get<std::string>(), o.at("required").get<bool>(),
                             o.at("repeatable").get<bool>(), strings(o, "choices")});
    for (const auto& p : j.value("positionals", none))
        c.positionals.push_back({p.at("name").get<std::string>(), p.at("description").get<std::string>(),
                                 p.at("required").get<bool>(), p.at("repeatable").get<bool>(), strings(p, "choices")});
    if (j.contains("examples"))
        for (const auto& e : j.at("examples"))
            c.examples.push_back({e.at("command").get<std::string>(), e.at("what").get<std::string>()});
    if (j.contains("exit_codes"))
        for (const auto& e : j.at("exit_codes"))
            c.exit_codes.push_back({e.at("code").get<int>(), e.at("meaning").get<std::string>()});
    for (const auto& s : j.value("subcommands", none)) {
        auto sub_path = c.path;
        sub_path.push_back(s.at("name").get<std::string>());
        c.subcommands.push_back(parse(s, std::move(sub_path)));
    }
    return c;
}

void collect(const Command& c, std::vector<const Command*>& out) {
    out.push_back(&c);
    for (const Command& s : c.subcommands) collect(s, out);
}

}  // namespace

std::string Command::words() const {
    std::string w = "cdc";
    for (const auto& p : path) w.append(" ").append(p);
    return w;
}

std::string Command::page() const {
    std::string w = "cdc";
    for (const auto& p : path) w.append("-").append(p);
    return w;
}

Command command_tree(const nlohmann::json& definitions) { return parse(definitions, {}); }

std::vector<const Command*> all_commands(const Command& root) {
    std::vector<const Command*> out;
    collect(root, out);
    return out;
}

Completion completion_of(const std::string& type_or_name) {
    if (type_or_name == "DIR") return Completion::directories;
    if (type_or_name == "FILE" || type_or_name == "PATH") return Completion::files;
    return Completion::none;
}

}  // namespace cdc::docgen
