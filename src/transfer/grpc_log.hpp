// SPDX-License-Identifier: Apache-2.0
// gRPC's own log lines ("E1205 ... ssl_transport_security.cc:1501] Handshake
// failed ...") never reach the user as they are: a server gets the ones that
// concern it as sentences of its log, a client none (its errors come back
// as statuses). Set GRPC_VERBOSITY to see gRPC's own lines instead.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace cdc::transfer {

/// Routes gRPC's error lines to `sink` as the project's sentences (null:
/// dropped). Process-wide: the last call wins. No effect when GRPC_VERBOSITY
/// is set (gRPC then logs as it would).
void route_grpc_log(std::function<void(const std::string&)> sink);

/// gRPC's lines go nowhere unless a server routes them (a client's
/// process: its errors come back as statuses).
void quiet_grpc_log();

/// The sentence for one of gRPC's error lines: a failed TLS handshake says
/// what the peer did wrong; anything else is "gRPC: <message>".
std::string grpc_log_sentence(std::string_view message);

}  // namespace cdc::transfer
