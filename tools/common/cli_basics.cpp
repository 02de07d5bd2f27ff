#include "cli_basics.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace cdc::cli {

void finish_stdout() {
    if (std::fflush(stdout) != 0 || std::ferror(stdout))
        throw cdc::IoError(fmt::format("writing standard output: {}", std::strerror(errno)));
}

int report_current_exception() {
    try {
        throw;
    } catch (const cdc::OptionError& e) {
        fmt::print(stderr, "cdc: error: {}\n", e.what());
        return kExitUsage;
    } catch (const UsageError& e) {
        fmt::print(stderr, "cdc: error: {}\n", e.what());
        return kExitUsage;
    } catch (const std::exception& e) {
        fmt::print(stderr, "cdc: error: {}\n", e.what());
        return kExitFailure;
    }
}

bool stderr_is_tty() { return ::isatty(STDERR_FILENO) == 1; }

}  // namespace cdc::cli
