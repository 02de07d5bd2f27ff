#include "cli_support.hpp"

#include <cstdlib>

#include <sys/wait.h>

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

}  // namespace cdc::test
