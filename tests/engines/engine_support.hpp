// SPDX-License-Identifier: Apache-2.0
// What the engine tests (tests/engines/*_test.cpp) share: the env file an
// engine script writes, a shell command, an environment variable for a scope.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include <sys/wait.h>

namespace cdc::test {

/// DIR/env of an engine script: NAME=VALUE lines (a value may be quoted).
inline std::map<std::string, std::string> read_engine_env(const std::filesystem::path& file) {
    std::map<std::string, std::string> out;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
        const auto eq = line.find('=');
        if (eq == std::string::npos) continue;
        std::string v = line.substr(eq + 1);
        if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
        out[line.substr(0, eq)] = v;
    }
    return out;
}

/// Runs `cmd` with /bin/sh: its exit code (128 if it did not exit).
inline int shell(const std::string& cmd) {
    const int rc = std::system(cmd.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

/// Sets an environment variable for the tool runs of a scope.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const std::string& value) : name_(name) {
        if (const char* v = std::getenv(name)) old_ = v;
        ::setenv(name, value.c_str(), 1);
    }
    ~ScopedEnv() {
        if (old_)
            ::setenv(name_, old_->c_str(), 1);
        else
            ::unsetenv(name_);
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
    std::optional<std::string> old_;
};

}  // namespace cdc::test
