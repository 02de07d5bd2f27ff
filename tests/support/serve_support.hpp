// SPDX-License-Identifier: Apache-2.0
// Helpers of the tests that run `cdc serve` and its clients (tests/cli):
// a server on an ephemeral loopback port (Serve), a store for it, and the
// user's own token kept in a directory of the test process's.
#pragma once

#include "cli_support.hpp"

#include <protocol.hpp>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <sys/wait.h>

namespace cdc::test {

namespace fs = std::filesystem;

/// A `cdc serve` on 127.0.0.1 with a port of its choosing.
class Serve {
public:
    Serve(const fs::path& store, const fs::path& log_dir, std::vector<std::string> extra = {},
          std::vector<std::pair<std::string, std::string>> env = {})
        : log_dir_(log_dir) {
        fs::create_directories(log_dir);
        const auto port_file = log_dir / "port";
        fs::remove(port_file);
        std::vector<std::string> args{"serve", "--store", store.string(), "--port-file", port_file.string()};
        if (std::find(extra.begin(), extra.end(), "--listen") == extra.end())
            args.insert(args.end(), {"--listen", "127.0.0.1:0"});
        args.insert(args.end(), extra.begin(), extra.end());
        pid_ = spawn_tool(args, log_dir, env);
        for (int i = 0; i < 2000; ++i) {
            const std::string text = fs::exists(port_file) ? read_text(port_file) : "";
            if (!text.empty() && text.back() == '\n') {
                port_ = text.substr(0, text.size() - 1);
                return;
            }
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = 0;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        ADD_FAILURE() << "the server did not start: " << log();
    }
    ~Serve() { stop(SIGTERM); }
    Serve(const Serve&) = delete;
    Serve& operator=(const Serve&) = delete;

    std::string address() const { return "127.0.0.1:" + port_; }
    std::string port() const { return port_; }
    pid_t pid() const { return pid_; }
    std::string log() const { return fs::exists(log_dir_ / "err") ? read_text(log_dir_ / "err") : ""; }
    int stop(int sig) {
        if (pid_ <= 0) return -1;
        ::kill(pid_, sig);
        const int code = wait_exit(pid_);
        pid_ = 0;
        return code;
    }
    /// Waits until the server's log has `n` lines containing `text`.
    bool wait_log(const std::string& text, std::size_t n = 1) const {
        for (int i = 0; i < 1000; ++i) {
            const std::string l = log();
            std::size_t count = 0;
            for (auto p = l.find(text); p != std::string::npos; p = l.find(text, p + 1)) ++count;
            if (count >= n) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return false;
    }

private:
    fs::path log_dir_;
    pid_t pid_ = 0;
    std::string port_;
};

// The user's own token, which a `cdc serve` without --token-file makes at
// first start and requires on the loopback interface too, goes to a
// directory of this test process's (XDG_CONFIG_HOME, which every server and
// client run here inherits), not to the home of whoever runs the tests.
inline const TempDir& config_home() {
    static const TempDir dir;
    return dir;
}
[[maybe_unused]] inline const bool kConfigHomeSet =
    ::setenv("XDG_CONFIG_HOME", config_home().path().c_str(), 1) == 0;

/// The authorization a client of ours sends (the user's own token), for
/// requests made through the raw stub.
inline void authorize(grpc::ClientContext& ctx) {
    std::string token = read_text(config_home().path() / "cdc" / "token");
    while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
    ctx.AddMetadata("authorization", transfer::bearer_header(token));
}

inline fs::path init_store(const TempDir& tmp, const std::string& avg = "4K") {
    const auto dir = tmp.path() / "store";
    const auto r = run_tool({"store", "init", "--no-encryption", dir.string(), "--avg", avg});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return dir;
}

}  // namespace cdc::test
