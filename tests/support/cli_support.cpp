#include "cli_support.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cdc::test {

std::filesystem::path tool_path() { return CDC_TOOL_PATH; }

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
    std::vector<std::string> argv{tool_path().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    const std::string out = (log_dir / "out").string(), err = (log_dir / "err").string();
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int in = ::open("/dev/null", O_RDONLY);
        ::dup2(o, 1);
        ::dup2(e, 2);
        ::dup2(in, 0);
        for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
        if (fsize_limit != 0) {
            ::signal(SIGXFSZ, SIG_IGN);
            rlimit r{fsize_limit, fsize_limit};
            ::setrlimit(RLIMIT_FSIZE, &r);
        }
        ::execv(cargv[0], cargv.data());
        ::_exit(127);
    }
    return pid;
}

int wait_exit(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace cdc::test
