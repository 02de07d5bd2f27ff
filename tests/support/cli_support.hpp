// SPDX-License-Identifier: Apache-2.0
// Helpers of the tests that run the built tools (tests/cli): everything of
// test_support.hpp plus running the tool (run_tool, run_tool_as, json_of,
// spawn_tool, wait_exit).
#pragma once

#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace cdc::test {

/// The built cdc tool ($CDC_TEST_TOOL overrides it: to run the CLI tests
/// against another build, e.g. an older commit's, with CDC_DUPES and
/// CDC_PLOT pointing at that build's helpers).
std::filesystem::path tool_path();

struct RunResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

/// Runs the cdc tool with `args` (shell-quoted here), optional stdin file.
RunResult run_tool(const std::vector<std::string>& args, const std::string& stdin_path = "");
/// The JSON a successful run printed (a test failure if it failed or printed
/// something else; then null).
nlohmann::json json_of(const RunResult& r);

/// Starts the cdc tool in the background (to be killed or waited for):
/// stdout and stderr to the files `out` and `err` in `log_dir` (to /dev/null
/// without one), stdin from /dev/null, with extra environment variables and
/// an optional write limit (RLIMIT_FSIZE, SIGXFSZ ignored so that writes
/// fail with EFBIG). Throws if it cannot fork.
pid_t spawn_tool(const std::vector<std::string>& args, const std::filesystem::path& log_dir = {},
                 const std::vector<std::pair<std::string, std::string>>& env = {},
                 std::uint64_t fsize_limit = 0);
/// Waits for `pid`: its exit code, or 128 + the signal that killed it;
/// `usage` (if given) receives its resource usage (peak RSS: ru_maxrss, KiB).
int wait_exit(pid_t pid, struct rusage* usage = nullptr);

/// Runs the cdc tool as another user (root only: the child drops to
/// uid/gid with setgroups/setgid/setuid before exec), so that permissions
/// bite: chmod 000 does not stop root. Exit code 100 if the drop failed.
RunResult run_tool_as(unsigned uid, unsigned gid, const std::vector<std::string>& args);

/// Runs the cdc tool with `args` on a new pseudo-terminal, typing `lines`,
/// one for each prompt (a prompt ends with ": ") once it is shown; what the
/// terminal showed goes to `screen`. Its exit code (a prompt not answered
/// within 20 s is a test failure and the tool is killed, never a hang).
int run_tool_on_pty(const std::vector<std::string>& args, const std::vector<std::string>& lines, std::string& screen);

/// Waits until process `pid` has `path` open and has read some of it (the
/// descriptor's position past 0), then cuts the file to `to` bytes. False
/// if that did not happen within 60 s.
bool shrink_while_read(pid_t pid, const std::filesystem::path& path, std::uint64_t to);

}  // namespace cdc::test
