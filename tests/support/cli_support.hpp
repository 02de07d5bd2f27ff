// Helpers of the tests that run the built tools (tests/cli): everything of
// test_support.hpp plus run_tool.
#pragma once

#include "test_support.hpp"

#include <filesystem>
#include <string>
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

}  // namespace cdc::test
