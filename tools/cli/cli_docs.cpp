// SPDX-License-Identifier: Apache-2.0
#include "cli_docs.hpp"

#include "cli_basics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace cdc::cli {

namespace {

std::map<const CLI::App*, CommandDoc>& registry() {
    static std::map<const CLI::App*, CommandDoc> docs;
    return docs;
}

}  // namespace

std::vector<ExitStatus> exit_codes(std::initializer_list<ExitStatus> more) {
    std::vector<ExitStatus> codes{{kExitOk, "success"},
                                  {kExitUsage, "usage error: a bad option or value, an unknown algorithm, a missing path"},
                                  {kExitFailure, "an error stopped the run (I/O, a full disk, a closed output)"}};
    for (const ExitStatus& e : more) {
        const auto it = std::find_if(codes.begin(), codes.end(), [&](const ExitStatus& c) { return c.code == e.code; });
        if (it != codes.end())
            it->meaning = e.meaning;
        else
            codes.push_back(e);
    }
    std::sort(codes.begin(), codes.end(), [](const ExitStatus& a, const ExitStatus& b) { return a.code < b.code; });
    return codes;
}

ExitStatus partial_exit() {
    return {kExitPartial, "finished, but some inputs were skipped after errors (each named on stderr)"};
}

void document(CLI::App& cmd, CommandDoc doc) {
    std::string footer = doc.notes;
    if (!doc.examples.empty()) {
        footer.append(footer.empty() ? "" : "\n\n").append("Examples:");
        for (const Example& e : doc.examples) footer.append(fmt::format("\n  {}\n      {}", e.command, e.what));
    }
    if (!doc.exit_codes.empty()) {
        footer.append(footer.empty() ? "" : "\n\n").append("Exit status:");
        for (const ExitStatus& e : doc.exit_codes) footer.append(fmt::format("\n  {}  {}", e.code, e.meaning));
    }
    cmd.footer(footer);
    registry()[&cmd] = std::move(doc);
}

const CommandDoc* doc_of(const CLI::App& cmd) {
    const auto& docs = registry();
    const auto it = docs.find(&cmd);
    return it == docs.end() ? nullptr : &it->second;
}

}  // namespace cdc::cli
