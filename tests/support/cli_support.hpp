// Helpers of the tests that run the built tools (tests/cli): everything of
// test_support.hpp plus run_tool, json_of, spawn_tool and wait_exit.
#pragma once

#include "test_support.hpp"

#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace cdc::test {

/// The built cdc tool.
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

/// Starts the cdc tool in the background (stdout and stderr to the files
/// `out` and `err` in `log_dir`, stdin from /dev/null), with extra
/// environment variables and an optional write limit (RLIMIT_FSIZE, SIGXFSZ
/// ignored so that writes fail with EFBIG).
pid_t spawn_tool(const std::vector<std::string>& args, const std::filesystem::path& log_dir,
                 const std::vector<std::pair<std::string, std::string>>& env = {},
                 std::uint64_t fsize_limit = 0);
/// Waits for a child: its exit code, or 128 + the signal that killed it.
int wait_exit(pid_t pid);

}  // namespace cdc::test
