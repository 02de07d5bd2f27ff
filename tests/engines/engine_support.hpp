// SPDX-License-Identifier: Apache-2.0
// What the engine tests (tests/engines/*_test.cpp) share: the env file an
// engine script writes, a shell command, an engine started by the CTest
// fixture or by the test program, S3 credentials from Ceph's env file.
// (ScopedEnv, an environment variable for a scope: test_support.hpp.)
#pragma once

#include "test_support.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

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

/// An engine's folder (tests/engines/ENGINE.sh start|stop DIR): the one the
/// CTest fixture started, or one this test program starts and stops itself.
struct EngineInstance {
    std::filesystem::path dir;
    std::map<std::string, std::string> env;  ///< DIR/env
    bool owned = false;  ///< started here: stop() stops it and removes DIR

    /// The folder named by `fixture_var` if it holds an env file, else a new
    /// /tmp/cdc-NAME-XXXXXX (under /tmp: its parents are searchable by an
    /// engine run as another user) started with `script`; reads DIR/env.
    /// False (with a test failure naming `log` in DIR) if it did not start.
    bool start(const char* fixture_var, const std::string& script, const std::string& name, const std::string& log) {
        const char* given = std::getenv(fixture_var);
        if (given != nullptr && *given != '\0' && std::filesystem::exists(std::filesystem::path(given) / "env")) {
            dir = given;
        } else {
            std::string tmpl = fmt::format("/tmp/cdc-{}-XXXXXX", name);
            if (::mkdtemp(tmpl.data()) == nullptr) {
                ADD_FAILURE() << "mkdtemp " << tmpl;
                return false;
            }
            dir = tmpl;
            owned = true;
            if (shell(fmt::format("'{}' start '{}'", script, dir.string())) != 0) {
                ADD_FAILURE() << name << " did not start (see " << (dir / log) << ")";
                return false;
            }
        }
        env = read_engine_env(dir / "env");
        return true;
    }
    void stop(const std::string& script) {
        if (!owned) return;
        shell(fmt::format("'{}' stop '{}'", script, dir.string()));
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
};

/// The tool's S3 credentials: the keys of Ceph's env file, no session token.
inline void use_ceph_credentials(const std::map<std::string, std::string>& ceph) {
    ::setenv("AWS_ACCESS_KEY_ID", ceph.at("CEPH_S3_ACCESS_KEY").c_str(), 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", ceph.at("CEPH_S3_SECRET_KEY").c_str(), 1);
    ::unsetenv("AWS_SESSION_TOKEN");
}


}  // namespace cdc::test
