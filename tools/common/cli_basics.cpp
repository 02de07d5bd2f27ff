// SPDX-License-Identifier: Apache-2.0
#include "cli_basics.hpp"

#include "escape.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/resource.h>
#include <unistd.h>

namespace cdc::cli {

std::uint64_t raise_open_files_limit(std::uint64_t want) {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
    const auto target = static_cast<rlim_t>(want);
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < target) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? target : std::min(target, rl.rlim_max);
        ::setrlimit(RLIMIT_NOFILE, &rl);
        ::getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur;
}

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
            print_error(e.what());
        else
            print_error(fmt::format("{} (option {})", e.what(), flag));
        return kExitUsage;
    } catch (const UsageError& e) {
        print_error(e.what());
        return kExitUsage;
    } catch (const std::exception& e) {
        print_error(e.what());
        return kExitFailure;
    }
}

bool stderr_is_tty() { return ::isatty(STDERR_FILENO) == 1; }

void print_message(std::string_view prefix, std::string_view message) {
    fmt::print(stderr, "{}{}\n", prefix, tools::escape_text(message));
}

void print_error(std::string_view message) { print_message("cdc: error: ", message); }

void print_warning(std::string_view message) { print_message("cdc: warning: ", message); }

}  // namespace cdc::cli
