// SPDX-License-Identifier: Apache-2.0
#include "grpc_log.hpp"

#include <fmt/format.h>
#include <grpc/support/log.h>

#include <cstdlib>
#include <memory>
#include <mutex>

namespace cdc::transfer {

namespace {

std::mutex& sink_mutex() {
    static std::mutex m;
    return m;
}

std::shared_ptr<const std::function<void(const std::string&)>>& sink_slot() {
    static std::shared_ptr<const std::function<void(const std::string&)>> sink;
    return sink;
}

void forward(gpr_log_func_args* args) {
    if (args == nullptr || args->severity != GPR_LOG_SEVERITY_ERROR || args->message == nullptr) return;
    std::shared_ptr<const std::function<void(const std::string&)>> sink;
    {
        std::lock_guard lock(sink_mutex());
        sink = sink_slot();
    }
    if (sink && *sink) (*sink)(grpc_log_sentence(args->message));
}

bool grpc_verbosity_set() {
    const char* v = std::getenv("GRPC_VERBOSITY");
    return v != nullptr && *v != '\0';
}

bool contains(std::string_view text, std::string_view what) { return text.find(what) != std::string_view::npos; }

}  // namespace

std::string grpc_log_sentence(std::string_view message) {
    while (!message.empty() && (message.back() == '.' || message.back() == '\n')) message.remove_suffix(1);
    if (contains(message, "Handshake failed") || contains(message, "handshake failed")) {
        // OpenSSL's reason for the failure, from what the peer sent.
        if (contains(message, "wrong version number") || contains(message, "http request") ||
            contains(message, "packet length too long"))
            return "a client connected without TLS and was refused (a client of this server needs --tls or --tls-ca)";
        if (contains(message, "unknown ca") || contains(message, "certificate unknown") ||
            contains(message, "bad certificate"))
            return "a client refused this server's certificate (it must trust it: --tls-ca with this certificate, "
                   "or --tls-server-name with a name the certificate carries)";
        const auto reason = message.rfind("error:");
        return fmt::format("a TLS handshake with a client failed ({})",
                           reason == std::string_view::npos ? message : message.substr(reason));
    }
    return fmt::format("gRPC: {}", message);
}

void quiet_grpc_log() {
    if (grpc_verbosity_set()) return;
    static std::once_flag installed;
    std::call_once(installed, [] {
        gpr_set_log_verbosity(GPR_LOG_SEVERITY_ERROR);
        gpr_set_log_function(&forward);
    });
}

void route_grpc_log(std::function<void(const std::string&)> sink) {
    if (grpc_verbosity_set()) return;
    {
        std::lock_guard lock(sink_mutex());
        sink_slot() = sink ? std::make_shared<const std::function<void(const std::string&)>>(std::move(sink)) : nullptr;
    }
    quiet_grpc_log();
}

}  // namespace cdc::transfer
