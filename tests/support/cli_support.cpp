// SPDX-License-Identifier: Apache-2.0
#include "cli_support.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pty.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace cdc::test {

std::filesystem::path tool_path() {
    // CDC_TEST_TOOL runs the CLI tests against another build of cdc (e.g. the
    // binary of an older commit, to show that a new test fails there).
    if (const char* env = std::getenv("CDC_TEST_TOOL"); env != nullptr && *env != '\0') return env;
    return CDC_TOOL_PATH;
}

namespace {
std::string shell_quote(const std::string& s) {
    std::string out(1, '\'');
    for (char c : s) {
        if (c == '\'') {
            for (char q : {'\'', '\\', '\'', '\''}) out.push_back(q);
        } else {
            out.push_back(c);
        }
    }
    out.push_back('\'');
    return out;
}
}  // namespace

RunResult run_tool(const std::vector<std::string>& args, const std::string& stdin_path) {
    TempDir tmp;
    std::string cmd = shell_quote(tool_path().string());
    // (appends, not operator+: g++ 12 warns falsely on "literal" + string)
    for (const auto& a : args) cmd.append(" ").append(shell_quote(a));
    cmd.append(" >").append(shell_quote((tmp.path() / "out").string()));
    cmd.append(" 2>").append(shell_quote((tmp.path() / "err").string()));
    cmd.append(" <").append(shell_quote(stdin_path.empty() ? "/dev/null" : stdin_path));
    const int status = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = read_text(tmp.path() / "out");
    r.err = read_text(tmp.path() / "err");
    return r;
}

namespace {
// argv of the tool with `args`: `all` holds the strings.
std::vector<char*> tool_argv(const std::vector<std::string>& args, std::vector<std::string>& all) {
    all = {tool_path().string()};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    return argv;
}
}  // namespace

nlohmann::json json_of(const RunResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    try {
        return nlohmann::json::parse(r.out);
    } catch (const std::exception&) {
        ADD_FAILURE() << "not JSON: " << r.out << r.err;
        return {};
    }
}

pid_t spawn_tool(const std::vector<std::string>& args, const std::filesystem::path& log_dir,
                 const std::vector<std::pair<std::string, std::string>>& env, std::uint64_t fsize_limit) {
    std::vector<std::string> all;
    std::vector<char*> argv = tool_argv(args, all);
    const std::string out = log_dir.empty() ? "/dev/null" : (log_dir / "out").string();
    const std::string err = log_dir.empty() ? "/dev/null" : (log_dir / "err").string();
    if (fsize_limit == 0) {
        // posix_spawn (vfork-like): the child's peak RSS (wait_exit's rusage)
        // is the tool's own, not a copy of this test process's before exec.
        std::vector<std::string> env_strings;
        for (char** e = environ; *e != nullptr; ++e) {
            const std::string_view kv(*e);
            const auto key = kv.substr(0, kv.find('='));
            if (std::none_of(env.begin(), env.end(), [&](const auto& p) { return p.first == key; }))
                env_strings.emplace_back(kv);
        }
        for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
        std::vector<char*> envp;
        for (auto& e : env_strings) envp.push_back(e.data());
        envp.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        pid_t pid = -1;
        const int rc = ::posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
        posix_spawn_file_actions_destroy(&fa);
        if (rc != 0) throw std::runtime_error("posix_spawn failed");
        return pid;
    }
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int in = ::open("/dev/null", O_RDONLY);
        if (o < 0 || e < 0 || in < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0 || ::dup2(in, 0) < 0) ::_exit(101);
        for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
        if (fsize_limit != 0) {
            ::signal(SIGXFSZ, SIG_IGN);
            rlimit r{fsize_limit, fsize_limit};
            ::setrlimit(RLIMIT_FSIZE, &r);
        }
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    return pid;
}

int run_tool_on_pty(const std::vector<std::string>& tool_args, const std::vector<std::string>& lines,
                    std::string& screen) {
    int master = -1;
    const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
    if (pid == 0) {
        std::vector<std::string> args = {tool_path().string()};
        args.insert(args.end(), tool_args.begin(), tool_args.end());
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    EXPECT_GT(pid, 0);
    std::size_t sent = 0;
    char buf[512];
    for (;;) {
        pollfd pfd{master, POLLIN, 0};
        if (::poll(&pfd, 1, 20000) != 1) {
            ADD_FAILURE() << "no output for 20 s: " << screen;
            ::kill(pid, SIGKILL);
            break;
        }
        const ssize_t n = ::read(master, buf, sizeof buf);
        if (n <= 0) break;  // (EIO once the child closed the terminal)
        screen.append(buf, static_cast<std::size_t>(n));
        std::size_t prompts = 0;
        for (std::size_t at = 0; (at = screen.find(": ", at)) != std::string::npos; at += 2) ++prompts;
        while (sent < lines.size() && sent < prompts) {
            const std::string line = lines[sent++] + "\n";
            EXPECT_EQ(::write(master, line.data(), line.size()), static_cast<ssize_t>(line.size()));
        }
    }
    ::close(master);
    return wait_exit(pid);
}

int wait_exit(pid_t pid, struct rusage* usage) {
    int status = 0;
    struct rusage ru {};
    while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
    }
    if (usage != nullptr) *usage = ru;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

RunResult run_tool_as(unsigned uid, unsigned gid, const std::vector<std::string>& args) {
    TempDir tmp;
    const std::string out = (tmp.path() / "out").string(), err = (tmp.path() / "err").string();
    std::vector<std::string> all;
    std::vector<char*> argv = tool_argv(args, all);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        const int in = ::open("/dev/null", O_RDONLY);
        if (o < 0 || e < 0 || in < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0 || ::dup2(in, 0) < 0) ::_exit(101);
        if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) ::_exit(100);
        ::execv(argv[0], argv.data());
        ::_exit(102);
    }
    RunResult r;
    r.exit_code = wait_exit(pid);
    r.out = read_text(out);
    r.err = read_text(err);
    return r;
}

bool shrink_while_read(pid_t pid, const std::filesystem::path& path, std::uint64_t to) {
    const std::filesystem::path target = std::filesystem::canonical(path);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until) {
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator(fmt::format("/proc/{}/fd", pid), ec)) {
            std::error_code link_ec;
            if (std::filesystem::read_symlink(e.path(), link_ec) != target) continue;
            std::ifstream info(fmt::format("/proc/{}/fdinfo/{}", pid, e.path().filename().string()));
            std::string key;
            std::uint64_t pos = 0;
            info >> key >> pos;
            if (key == "pos:" && pos > 0) {
                std::filesystem::resize_file(path, to);
                return true;
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
}

}  // namespace cdc::test
