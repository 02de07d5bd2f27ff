// SPDX-License-Identifier: Apache-2.0
#include "tls_probe.hpp"

#include <openssl/ssl.h>

#include <cerrno>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <utility>

namespace cdc::transfer {

namespace {

// A TCP connection to one of `host`'s addresses within `timeout_ms`, or -1.
int connect_to(const std::string& host, const std::string& port, int timeout_ms) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
    int fd = -1;
    for (const addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
        fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
        if (fd < 0) continue;
        bool up = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
        if (!up && errno == EINPROGRESS) {
            pollfd p{fd, POLLOUT, 0};
            int err = 0;
            socklen_t len = sizeof err;
            up = ::poll(&p, 1, timeout_ms) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
        }
        if (!up) ::close(std::exchange(fd, -1));
    }
    ::freeaddrinfo(found);
    if (fd >= 0) {
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        const timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    return fd;
}

}  // namespace

bool speaks_tls(const std::string& address, int timeout_ms) {
    const auto colon = address.rfind(':');
    if (colon == std::string::npos || address.starts_with("unix:")) return false;
    std::string host = address.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    const int fd = connect_to(host, address.substr(colon + 1), timeout_ms);
    if (fd < 0) return false;
    bool tls = false;
    if (SSL_CTX* ctx = ::SSL_CTX_new(::TLS_client_method())) {
        ::SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
        if (SSL* ssl = ::SSL_new(ctx)) {
            ::SSL_set_fd(ssl, fd);
            tls = ::SSL_connect(ssl) == 1;
            if (tls) ::SSL_shutdown(ssl);
            ::SSL_free(ssl);
        }
        ::SSL_CTX_free(ctx);
    }
    ::close(fd);
    return tls;
}

}  // namespace cdc::transfer
