// SPDX-License-Identifier: Apache-2.0
// The cdc tool's side of plot.hpp: each chart goes, as JSON in a temporary
// file, to the cdc-plot helper process, which draws it with PLplot. The tool
// thus never loads PLplot, cairo or fontconfig (and can be linked
// statically), and renders may run from any thread: each is its own process.
//
// The helper is looked up, in order: $CDC_PLOT; `cdc-plot` next to the
// running binary (the build tree); CDC_PLOT_HELPER_FROM_BINDIR relative to
// the binary's directory (the installed layout, ../libexec/cdc/cdc-plot).
#include "chart_json.hpp"
#include "helper_path.hpp"
#include "plot.hpp"

#include <cdc/error.hpp>
#include <cdc/source.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <span>
#include <string>
#include <system_error>
#include <vector>

extern char** environ;

#ifndef CDC_PLOT_HELPER_FROM_BINDIR
#define CDC_PLOT_HELPER_FROM_BINDIR "../libexec/cdc/cdc-plot"
#endif

namespace cdc::plot {
namespace {

const tools::HelperPath& helper() {
    static const tools::HelperPath found = tools::find_helper("cdc-plot", "CDC_PLOT", CDC_PLOT_HELPER_FROM_BINDIR);
    return found;
}

const std::string& helper_or_throw() {
    const tools::HelperPath& h = helper();
    if (h.path.empty())
        throw PlotError(fmt::format("cannot find the cdc-plot helper that draws PNG graphs (looked in: {}); "
                                    "set CDC_PLOT to its path",
                                    h.looked_in));
    return h.path;
}

struct Outcome {
    int status = -1;     // exit status, or -1 when killed by a signal
    std::string errors;  // what the helper wrote on stderr
};

// Runs the helper with `args`, stdin from /dev/null, stderr captured.
Outcome run_helper(const std::string& path, const std::vector<std::string>& args) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw PlotError(fmt::format("pipe: {}", std::strerror(errno)));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(path.c_str()));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (rc != 0) {
        ::close(fds[0]);
        throw PlotError(fmt::format("cannot run '{}': {}", path, std::strerror(rc)));
    }
    Outcome out;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n > 0) {
            if (out.errors.size() < 64 * 1024) out.errors.append(buf, static_cast<std::size_t>(n));
        } else if (n == 0 || errno != EINTR) {
            break;
        }
    }
    ::close(fds[0]);
    int wstatus = 0;
    while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    out.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    while (!out.errors.empty() && (out.errors.back() == '\n' || out.errors.back() == '\r')) out.errors.pop_back();
    return out;
}

// A temporary file holding `text`, removed when this goes out of scope.
class TempFile {
public:
    explicit TempFile(const std::string& text) {
        std::error_code ec;
        auto dir = std::filesystem::temp_directory_path(ec);
        if (ec) dir = "/tmp";
        std::string name = (dir / "cdc-chart-XXXXXX.json").string();
        const int fd = ::mkstemps(name.data(), 5);
        if (fd < 0) throw PlotError(fmt::format("cannot create a temporary file in '{}': {}", dir.string(), std::strerror(errno)));
        path_ = name;
        try {
            FdWriter(fd, path_).write(std::as_bytes(std::span(text)));
        } catch (const IoError& e) {
            ::close(fd);
            throw PlotError(e.what());
        }
        if (::close(fd) != 0) throw PlotError(fmt::format("cannot write '{}': {}", path_, std::strerror(errno)));
    }
    ~TempFile() { ::unlink(path_.c_str()); }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
};

}  // namespace

bool png_device_available() {
    const tools::HelperPath& h = helper();
    if (h.path.empty()) return false;
    return run_helper(h.path, {"--check"}).status == 0;
}

void render_png(const Chart& chart, const std::filesystem::path& out) {
    const std::string& path = helper_or_throw();
    std::string json;
    try {
        json = chart_to_json(chart).dump();
    } catch (const nlohmann::json::exception& e) {
        throw PlotError(fmt::format("chart '{}': {}", chart.title, e.what()));
    }
    const TempFile doc(json);
    const Outcome r = run_helper(path, {doc.path(), out.string()});
    if (r.status != 0) {
        if (!r.errors.empty()) throw PlotError(r.errors);
        throw PlotError(fmt::format("'{}' failed for '{}' ({})", path, out.string(),
                                    r.status < 0 ? std::string("killed by a signal") : fmt::format("exit {}", r.status)));
    }
    const auto size = read_png_size(out);
    if (!size || size->first != static_cast<std::uint32_t>(chart.width) ||
        size->second != static_cast<std::uint32_t>(chart.height))
        throw PlotError(fmt::format("'{}' did not produce a {}x{} PNG at '{}'", path, chart.width, chart.height,
                                    out.string()));
}

}  // namespace cdc::plot
