#include "secret_files.hpp"

#include "cli_basics.hpp"

#include <cdc/error.hpp>

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

namespace cdc::cli {

namespace {

constexpr std::size_t kMaxSecretFile = 4096;  // a key or token file is tiny: more is not one

/// The first kMaxSecretFile + 1 bytes of `path`.
std::string read_small_file(const std::string& path, const char* what) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw UsageError(fmt::format("cannot read the {} file '{}': {}", what, path, std::strerror(errno)));
    std::string text(kMaxSecretFile + 1, '\0');
    std::size_t got = 0;
    for (;;) {
        const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
        if (got == text.size()) break;
    }
    ::close(fd);
    text.resize(got);
    return text;
}

std::string trimmed(const std::string& text) {
    std::size_t b = 0, e = text.size();
    while (b < e && std::isspace(static_cast<unsigned char>(text[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
    return text.substr(b, e - b);
}

}  // namespace

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

}  // namespace cdc::cli
