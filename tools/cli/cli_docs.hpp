// SPDX-License-Identifier: Apache-2.0
// What each command's --help says after its options, kept as data: notes,
// examples and the exit codes of that command only. The same record feeds
// --help (the footer), the definitions dump, and from it the man pages and
// the shell completions (docs/CLI.md).
#pragma once

#include <CLI/CLI.hpp>

#include <initializer_list>
#include <string>
#include <vector>

namespace cdc::cli {

struct Example {
    std::string command;  ///< "cdc chunk --avg 16K disk.img"
    std::string what;     ///< what it does
};

struct ExitStatus {
    int code;
    std::string meaning;
};

struct CommandDoc {
    std::string notes;                   ///< paragraphs after the options (may be empty)
    std::vector<Example> examples;       ///< at least one
    std::vector<ExitStatus> exit_codes;  ///< every code the command can return
};

/// The exit codes every command has (0 success, 2 usage error, 4 failure),
/// with `more` added, or replacing the meaning of the same code; by code.
std::vector<ExitStatus> exit_codes(std::initializer_list<ExitStatus> more = {});
/// 3: the run finished but skipped inputs that failed (each named on stderr).
ExitStatus partial_exit();

/// Sets `cmd`'s footer from `doc` (as --help shows it) and keeps `doc` for
/// the definitions dump.
void document(CLI::App& cmd, CommandDoc doc);
/// The record of `cmd`, or null when it has none.
const CommandDoc* doc_of(const CLI::App& cmd);

}  // namespace cdc::cli
