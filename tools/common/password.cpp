// SPDX-License-Identifier: Apache-2.0
#include "password.hpp"

#include "cli_basics.hpp"
#include "secret_files.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

namespace cdc::cli {

namespace {

// Removes one trailing LF or CR LF (an editor's or echo's line end).
void drop_line_end(crypto::SecretBytes& s) {
    std::size_t n = s.size();
    if (n > 0 && s.data()[n - 1] == '\n') {
        --n;
        if (n > 0 && s.data()[n - 1] == '\r') --n;
    }
    s.shrink(n);
}

void check_length(const crypto::SecretBytes& s, std::string_view origin) {
    if (s.empty()) throw UsageError(fmt::format("the password from {} is empty", origin));
    if (s.size() > kMaxPasswordBytes)
        throw UsageError(fmt::format("the password from {} is longer than {} bytes", origin, kMaxPasswordBytes));
}

// The terminal's settings while echo is off, to restore them on a signal
// (else an interrupted prompt leaves the shell without echo).
termios g_saved{};
std::atomic<bool> g_echo_off{false};
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP};

extern "C" void restore_and_reraise(int sig) {
    if (g_echo_off.exchange(false)) ::tcsetattr(STDIN_FILENO, TCSANOW, &g_saved);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

class EchoOff {
public:
    EchoOff() {
        if (::tcgetattr(STDIN_FILENO, &g_saved) != 0)
            throw UsageError(fmt::format("cannot read the terminal's settings: {}", std::strerror(errno)));
        for (const int s : kSignals) old_[index(s)] = std::signal(s, restore_and_reraise);
        termios t = g_saved;
        t.c_lflag &= ~static_cast<tcflag_t>(ECHO);
        t.c_lflag |= ICANON;
        g_echo_off = true;
        // TCSANOW, not TCSAFLUSH: what was typed right after the prompt
        // showed, before echo went off, is the password's start, not to drop.
        if (::tcsetattr(STDIN_FILENO, TCSANOW, &t) != 0) {
            const int e = errno;
            restore();
            throw UsageError(fmt::format("cannot turn the terminal's echo off: {}", std::strerror(e)));
        }
    }
    ~EchoOff() { restore(); }
    EchoOff(const EchoOff&) = delete;
    EchoOff& operator=(const EchoOff&) = delete;

private:
    static std::size_t index(int sig) {
        for (std::size_t i = 0; i < std::size(kSignals); ++i)
            if (kSignals[i] == sig) return i;
        return 0;
    }
    void restore() {
        if (g_echo_off.exchange(false)) ::tcsetattr(STDIN_FILENO, TCSANOW, &g_saved);
        for (const int s : kSignals) std::signal(s, old_[index(s)]);
    }
    using Handler = void (*)(int);
    Handler old_[std::size(kSignals)]{};
};

// One line from the terminal, without echo.
crypto::SecretBytes prompt(std::string_view text) {
    crypto::SecretBytes line(kMaxPasswordBytes + 1);
    std::size_t n = 0;
    bool ended = false;
    {
        // Echo goes off before the prompt shows: nothing typed after it is echoed.
        EchoOff quiet;
        std::fprintf(stderr, "%.*s: ", static_cast<int>(text.size()), text.data());
        std::fflush(stderr);
        while (n < line.size()) {
            char c = 0;
            const ssize_t got = ::read(STDIN_FILENO, &c, 1);
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) throw UsageError(fmt::format("cannot read the terminal: {}", std::strerror(errno)));
            if (got == 0 || c == '\n') {
                ended = got == 1 || n > 0;
                break;
            }
            line.data()[n++] = static_cast<std::uint8_t>(c);
        }
    }
    std::fputc('\n', stderr);  // (the user's Enter was not echoed)
    if (!ended && n == 0) throw UsageError("no password entered (end of input)");
    line.shrink(n);
    check_length(line, "the terminal");
    return line;
}

}  // namespace

crypto::SecretBytes read_password_file(const std::string& path, std::string_view origin) {
    const std::string what = fmt::format("password file '{}' ({})", path, origin);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw UsageError(fmt::format("cannot read the {}: {}", what, std::strerror(errno)));
    warn_if_not_private(fd, path, "password file");
    crypto::SecretBytes s(kMaxPasswordBytes + 3);  // (room for CR LF, and one byte to see a longer file)
    std::size_t n = 0;
    while (n < s.size()) {
        const ssize_t got = ::read(fd, s.data() + n, s.size() - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            const int e = errno;
            ::close(fd);
            throw UsageError(fmt::format("cannot read the {}: {}", what, std::strerror(e)));
        }
        if (got == 0) break;
        n += static_cast<std::size_t>(got);
    }
    ::close(fd);
    s.shrink(n);
    drop_line_end(s);
    check_length(s, what);
    return s;
}

crypto::SecretBytes get_password(const std::string& file, std::string_view flag, bool environment, Ask ask,
                                 std::string_view what) {
    if (!file.empty()) return read_password_file(file, flag);
    if (environment) {
        if (const char* f = std::getenv("CDC_PASSWORD_FILE"); f != nullptr && *f != '\0')
            return read_password_file(f, "CDC_PASSWORD_FILE");
        if (const char* p = std::getenv("CDC_PASSWORD"); p != nullptr) {
            auto s = crypto::SecretBytes::copy_of(
                {reinterpret_cast<const std::uint8_t*>(p), std::strlen(p)});
            check_length(s, "CDC_PASSWORD");
            return s;
        }
    }
    if (::isatty(STDIN_FILENO) != 1)
        throw UsageError(fmt::format("no {} given: use {}{} (standard input is not a terminal to ask on)", what,
                                     flag, environment ? ", CDC_PASSWORD_FILE or CDC_PASSWORD" : ""));
    crypto::SecretBytes first = prompt(fmt::format("Enter the {}", what));
    if (ask == Ask::twice) {
        const crypto::SecretBytes again = prompt(fmt::format("Enter the {} again", what));
        if (!first.equals(again.span())) throw UsageError(fmt::format("the two {}s differ", what));
    }
    return first;
}

}  // namespace cdc::cli
