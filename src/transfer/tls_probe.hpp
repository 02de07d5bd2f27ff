// SPDX-License-Identifier: Apache-2.0
// Whether a server answers a TLS handshake: asked when a plaintext connection
// to it was closed at once, so that the user hears "it uses TLS" rather than
// "socket closed".
#pragma once

#include <string>

namespace cdc::transfer {

/// True when the server at `address` (HOST:PORT, [V6]:PORT) completes a TLS
/// handshake. Nothing is verified and nothing is sent after it; the
/// connection ends with a close_notify, which gRPC servers do not log.
/// Gives up after `timeout_ms` (connection, then handshake).
bool speaks_tls(const std::string& address, int timeout_ms = 3000);

}  // namespace cdc::transfer
