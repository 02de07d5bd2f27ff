// SPDX-License-Identifier: Apache-2.0
// cdc sample — write the built-in sample corpus (deterministic, ~150 MB).
#include "cli_common.hpp"
#include "commands.hpp"
#include "escape.hpp"
#include "sample_corpus.hpp"
#include "sizes.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace cdc::cli {

namespace {
struct SampleArgs {
    std::string dir;
    bool quiet = false;
    bool json = false;
};

int run(const SampleArgs& args) {
    std::function<void(const std::string&)> log;
    if (!args.quiet && !args.json) log = [](const std::string& line) { fmt::print(stderr, "  {}\n", line); };
    tools::SampleResult r;
    try {
        r = tools::write_sample_corpus(args.dir, log);
    } catch (const tools::SampleDirError& e) {
        throw UsageError(e.what());
    }
    using State = tools::SampleResult::State;
    const std::string what = r.state == State::verified    ? "the sample is already there (every file verified)"
                             : r.state == State::written   ? "wrote the sample"
                             : r.state == State::completed ? fmt::format("completed an interrupted sample ({} files written)", r.written)
                             : r.written == 0 ? std::string("the sample is already there (every file verified, manifest rewritten)")
                                                           : fmt::format("repaired the sample ({} files rewritten)", r.written);
    constexpr std::string_view kStates[] = {"written", "verified", "completed", "repaired"};  // State order
    if (args.json) {
        nlohmann::json j{{"state", kStates[static_cast<int>(r.state)]},
                         {"files", r.files.size()},
                         {"bytes", r.bytes},
                         {"written", r.written}};
        tools::put_name(j, "dir", args.dir);
        fmt::print("{}\n", tools::json_text(j));
    } else if (!args.quiet) {
        // The manifest is one more file in DIR, which `cdc analyze DIR` counts.
        fmt::print("{}: {} ({} files, {}, and the manifest .cdc-sample)\n", tools::escape_text(args.dir), what,
                   r.files.size(), tools::format_size(static_cast<double>(r.bytes)));
    }
    finish_stdout();
    return kExitOk;
}
}  // namespace

void add_sample_command(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<SampleArgs>();
    auto* cmd = app.add_subcommand("sample", "write the built-in sample corpus (deterministic, ~150 MB) into DIR");
    add_json_flag(*cmd, args->json, "{dir, state: verified|written|completed|repaired, files, bytes, written}");
    add_quiet_flag(*cmd, args->quiet);
    cmd->add_option("DIR", args->dir, "a new or empty directory (or one that holds the sample, or an interrupted one)")
        ->required()
        ->type_name("");
    document(*cmd, {.notes = "Versions of disk images (inserts, deletes, overwrites), text, an append-only log and a "
                             "source tree, plus exact copies. A DIR that holds the sample is verified (every file's "
                             "BLAKE3 digest, listed in DIR/.cdc-sample); an interrupted or damaged sample is "
                             "completed or repaired (only the files that differ are rewritten, each whole or not at "
                             "all). Any other non-empty DIR is refused (exit 2).",
                    .examples = {{"cdc sample /tmp/sample && cdc analyze -a all /tmp/sample",
                                  "write the sample, then measure every algorithm on it"}},
                    .exit_codes = exit_codes()});
    cmd->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace cdc::cli
