// SPDX-License-Identifier: Apache-2.0
// What every cdc command line shares and that needs no argument parser:
// exit codes, usage errors, stdout and stderr helpers (the CLI11 side is
// tools/cli).
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string_view>

namespace cdc::cli {

/// Exit codes (each command's --help lists the ones it returns).
enum ExitCode : int {
    kExitOk = 0,          ///< success
    kExitRegression = 1,  ///< compare: B is worse than A beyond the tolerance
    kExitUsage = 2,       ///< bad option, bad algorithm, bad top-level path
    kExitPartial = 3,     ///< finished, but some inputs were skipped after errors
    kExitFailure = 4,     ///< an I/O error stopped the run
};

/// How names (paths) appear in output (src/report/escape.hpp).
inline constexpr const char* kNamesHelp =
    "Names: text output and messages show a control byte, a backslash or a byte of invalid UTF-8 in a name as "
    "\\xHH (\\\\ for a backslash); JSON gives a name \"K\" as UTF-8 (U+FFFD for invalid bytes) and, only when the "
    "name is not valid UTF-8, \"K_bytes\": its exact bytes in base64; CSV keeps the bytes and quotes a field "
    "holding , \" CR or LF (RFC 4180).";

/// A usage error detected by a command (exit code 2).
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// For a catch (...) block: prints the exception being handled as "cdc:
/// error: ..." and returns its exit code (cdc::OptionError and UsageError:
/// 2, any other std::exception: 4); anything else is rethrown. An
/// OptionError about a library field (field()) that `flag_of` maps to a
/// flag of the command ends with "(option FLAG)".
int report_current_exception(const std::function<std::string_view(std::string_view field)>& flag_of = {});

/// Raises the soft RLIMIT_NOFILE to `want` where it is lower, as far as the
/// hard limit allows; returns the soft limit now.
std::uint64_t raise_open_files_limit(std::uint64_t want);

/// Flushes stdout and turns a write error (EPIPE, ENOSPC) into IoError.
void finish_stdout();

/// True when stderr is a terminal (progress lines are drawn only then).
bool stderr_is_tty();

/// Prints `prefix` + `message` + newline on stderr, the message escaped
/// (escape.hpp: control bytes and invalid UTF-8 as \xHH): names inside a
/// message can neither break the line nor drive the terminal.
void print_message(std::string_view prefix, std::string_view message);
/// "cdc: error: " + message.
void print_error(std::string_view message);
/// "cdc: warning: " + message.
void print_warning(std::string_view message);

}  // namespace cdc::cli
