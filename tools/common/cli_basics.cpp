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

int report_current_exception(const std::function<std::string_view(std::string_view field)>& flag_of) {
    try {
        throw;
    } catch (const cdc::OptionError& e) {
        const std::string_view flag = flag_of && !e.field().empty() ? flag_of(e.field()) : "";
        if (flag.empty())
            fmt::print(stderr, "cdc: error: {}\n", e.what());
        else
            fmt::print(stderr, "cdc: error: {} (option {})\n", e.what(), flag);
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
