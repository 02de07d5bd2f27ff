// cdc sample — write the built-in sample corpus (deterministic, ~150 MB).
#include "cli_common.hpp"
#include "commands.hpp"
#include "sample_corpus.hpp"
#include "sizes.hpp"

#include <fmt/format.h>

namespace cdc::cli {

namespace {
struct SampleArgs {
    std::string dir;
    bool quiet = false;
};

int run(const SampleArgs& args) {
    std::function<void(const std::string&)> log;
    if (!args.quiet) log = [](const std::string& line) { fmt::print(stderr, "  {}\n", line); };
    tools::SampleResult r;
    try {
        r = tools::write_sample_corpus(args.dir, log);
    } catch (const tools::SampleDirError& e) {
        throw UsageError(e.what());
    }
    // The manifest is one more file in DIR, which `cdc analyze DIR` counts.
    fmt::print("{}: {} ({} files, {}, and the manifest .cdc-sample)\n", args.dir,
               r.already_present ? "the sample is already there" : "wrote the sample", r.files.size(),
               tools::format_size(static_cast<double>(r.bytes)));
    finish_stdout();
    return kExitOk;
}
}  // namespace

void add_sample_command(CLI::App& app, int& exit_code) {
    auto args = std::make_shared<SampleArgs>();
    auto* cmd = app.add_subcommand("sample", "write the built-in sample corpus (deterministic, ~150 MB) into DIR");
    cmd->add_flag("-q,--quiet", args->quiet, "do not list the files written");
    cmd->add_option("DIR", args->dir, "a new or empty directory (or one that already holds the sample)")->required();
    cmd->footer(std::string("Versions of disk images (inserts, deletes, overwrites), text, an append-only log and a "
                            "source tree, plus exact copies: try `cdc analyze -a all DIR`. A non-empty DIR that does "
                            "not hold the sample is refused (exit 2); one that does is left as is.\n")
                    .append(kExitCodesHelp));
    cmd->callback([args, &exit_code] { exit_code = run(*args); });
}

}  // namespace cdc::cli
