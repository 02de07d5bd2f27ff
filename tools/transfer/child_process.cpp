// SPDX-License-Identifier: Apache-2.0
#include "child_process.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cdc::cli {

pid_t spawn_process(const std::vector<std::string>& argv, const std::string& out_file, const std::string& err_file) {
    std::vector<std::string> args = argv;
    std::vector<char*> cargv;
    for (auto& a : args) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) throw IoError(fmt::format("cannot start '{}': {}", argv.front(), std::strerror(errno)));
    if (pid == 0) {
        const int o = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int e = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int in = ::open("/dev/null", O_RDONLY);
        if (o < 0 || e < 0 || in < 0) ::_exit(127);
        ::dup2(o, STDOUT_FILENO);
        ::dup2(e, STDERR_FILENO);
        ::dup2(in, STDIN_FILENO);
        ::execv(cargv[0], cargv.data());
        ::_exit(127);
    }
    return pid;
}

Memory process_memory(pid_t pid) {
    Memory m;
    const std::string path = fmt::format("/proc/{}/status", pid);
    std::FILE* f = std::fopen(path.c_str(), "r");
    if (!f) return m;
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
        unsigned long kb = 0;
        if (std::sscanf(line, "VmRSS: %lu kB", &kb) == 1) m.rss_mb = static_cast<double>(kb) * 1024 / 1e6;
        if (std::sscanf(line, "VmHWM: %lu kB", &kb) == 1) m.peak_mb = static_cast<double>(kb) * 1024 / 1e6;
    }
    std::fclose(f);
    return m;
}

Exit wait_process(pid_t pid, bool nohang) {
    int status = 0;
    rusage ru{};
    pid_t r;
    do {
        r = ::wait4(pid, &status, nohang ? WNOHANG : 0, &ru);
    } while (r < 0 && errno == EINTR);
    Exit e;
    if (r == 0) return e;
    if (r < 0) {
        e.code = 127;
        return e;
    }
    e.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    e.peak_mb = static_cast<double>(ru.ru_maxrss) * 1024 / 1e6;
    return e;
}

}  // namespace cdc::cli
