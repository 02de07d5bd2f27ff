// SPDX-License-Identifier: Apache-2.0
#include "secret_files.hpp"

#include "cli_basics.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include <cstdlib>

#include <fcntl.h>
#include <pwd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::cli {

namespace {

constexpr std::size_t kMaxSecretFile = 4096;  // a key or token file is tiny: more is not one

/// Up to `limit` bytes of `path` (`what` names it in errors: "key file"),
/// with a warning if others may read or change it and `secret`.
std::string read_limited(const std::string& path, const std::string& what, std::size_t limit, bool secret) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw UsageError(fmt::format("cannot read the {} '{}': {}", what, path, std::strerror(errno)));
    if (secret) warn_if_not_private(fd, path, what);
    std::string text;
    char buf[16384];
    while (text.size() < limit) {
        const ssize_t n = ::read(fd, buf, std::min(sizeof buf, limit - text.size()));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int e = errno;
            ::close(fd);
            throw UsageError(fmt::format("cannot read the {} '{}': {}", what, path, std::strerror(e)));
        }
        if (n == 0) break;
        text.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return text;
}

/// The first kMaxSecretFile + 1 bytes of `path`.
std::string read_small_file(const std::string& path, const char* what) {
    return read_limited(path, fmt::format("{} file", what), kMaxSecretFile + 1, true);
}

std::string trimmed(const std::string& text) {
    std::size_t b = 0, e = text.size();
    while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
    return text.substr(b, e - b);
}

}  // namespace

std::string read_pem_file(const std::string& path, const char* what, bool secret) {
    constexpr std::size_t kMaxPem = std::size_t{1} << 20;  // a certificate chain is a few KiB
    std::string text = read_limited(path, what, kMaxPem + 1, secret);
    if (text.size() > kMaxPem) throw UsageError(fmt::format("the {} '{}' is over 1 MiB: not PEM", what, path));
    return text;
}

void warn_if_not_private(int fd, const std::string& path, const std::string& what) {
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;  // a pipe (<(...)) has no one else to fear
    const unsigned others = st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH);
    if (others == 0) return;
    print_warning(fmt::format("the {} '{}' can be {} by other users (mode {:04o}): chmod 600 it", what, path,
                              (others & (S_IRGRP | S_IROTH)) != 0 ? "read" : "changed", st.st_mode & 07777));
}

Key read_key_file(const std::string& path) {
    const std::string text = read_small_file(path, "key");
    if (const std::string t = trimmed(text); t.size() == 64) {
        try {
            return parse_key_hex(t);
        } catch (const OptionError&) {
        }
    }
    if (text.size() == 32) {
        Key k;
        std::memcpy(k.data(), text.data(), 32);
        return k;
    }
    throw UsageError(fmt::format("the key file '{}' must hold 64 hex digits or 32 raw bytes ({} bytes found)", path,
                                 text.size()));
}

std::string check_token(const std::string& token, const std::string& origin) {
    const std::string t = trimmed(token);
    if (t.size() < 16 || t.size() > kMaxSecretFile)
        throw UsageError(fmt::format("the token in {} must have 16 to {} characters ({} found)", origin,
                                     kMaxSecretFile, t.size()));
    for (const char c : t)
        if (c < 0x21 || c > 0x7e)
            throw UsageError(fmt::format("the token in {} must be one line of printable ASCII without spaces", origin));
    return t;
}

std::string read_token_file(const std::string& path) {
    return check_token(read_small_file(path, "token"), fmt::format("the file '{}'", path));
}

std::string default_token_path() {
    if (const char* x = std::getenv("XDG_CONFIG_HOME"); x != nullptr && x[0] == '/')
        return std::string(x).append("/cdc/token");
    std::string home;
    if (const char* h = std::getenv("HOME"); h != nullptr && h[0] == '/') {
        home = h;
    } else if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) {
        home = pw->pw_dir;
    }
    return home.empty() ? std::string() : home.append("/.config/cdc/token");
}

std::string default_token(bool create) {
    const std::string path = default_token_path();
    if (path.empty()) {
        if (!create) return {};
        throw UsageError("no home directory to keep the server's token in: give --token-file (or --no-token)");
    }
    if (!create) return ::access(path.c_str(), R_OK) == 0 ? read_token_file(path) : std::string();
    if (::access(path.c_str(), F_OK) == 0) return read_token_file(path);
    // The directories private to the user (as ~/.ssh), then the token
    // written aside and linked into place: two servers starting at once
    // end with one token.
    const std::string dir = path.substr(0, path.rfind('/'));
    const std::string parent = dir.substr(0, dir.rfind('/'));
    for (const std::string& d : {parent, dir})
        if (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST)
            throw UsageError(fmt::format("cannot create '{}' for the server's token: {}", d, std::strerror(errno)));
    unsigned char random[32];
    std::size_t got = 0;
    while (got < sizeof random) {
        const ssize_t n = ::getrandom(random + got, sizeof random - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw UsageError(fmt::format("getrandom: {}", std::strerror(errno)));
        got += static_cast<std::size_t>(n);
    }
    std::string token;
    for (const unsigned char b : random) token.append(fmt::format("{:02x}", b));
    token.push_back('\n');
    const std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) throw UsageError(fmt::format("cannot create '{}': {}", tmp, std::strerror(errno)));
    const bool written = ::write(fd, token.data(), token.size()) == static_cast<ssize_t>(token.size()) &&
                         ::fsync(fd) == 0;
    const int e = errno;
    ::close(fd);
    if (!written) {
        ::unlink(tmp.c_str());
        throw UsageError(fmt::format("cannot write '{}': {}", tmp, std::strerror(e)));
    }
    const bool linked = ::link(tmp.c_str(), path.c_str()) == 0 || errno == EEXIST;
    const int link_error = errno;
    ::unlink(tmp.c_str());
    if (!linked) throw UsageError(fmt::format("cannot create '{}': {}", path, std::strerror(link_error)));
    return read_token_file(path);
}

}  // namespace cdc::cli
