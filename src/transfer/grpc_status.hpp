// SPDX-License-Identifier: Apache-2.0
// Between gRPC status codes and the protocol's Code (protocol.hpp), both ways.
#pragma once

#include "protocol.hpp"

#include <grpcpp/support/status.h>

namespace cdc::transfer {

inline grpc::StatusCode grpc_code(Code c) {
    switch (c) {
    case Code::cancelled: return grpc::StatusCode::CANCELLED;
    case Code::unknown: return grpc::StatusCode::UNKNOWN;
    case Code::invalid_argument: return grpc::StatusCode::INVALID_ARGUMENT;
    case Code::not_found: return grpc::StatusCode::NOT_FOUND;
    case Code::permission_denied: return grpc::StatusCode::PERMISSION_DENIED;
    case Code::resource_exhausted: return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case Code::failed_precondition: return grpc::StatusCode::FAILED_PRECONDITION;
    case Code::aborted: return grpc::StatusCode::ABORTED;
    case Code::internal: return grpc::StatusCode::INTERNAL;
    case Code::unavailable: return grpc::StatusCode::UNAVAILABLE;
    case Code::data_loss: return grpc::StatusCode::DATA_LOSS;
    case Code::unauthenticated: return grpc::StatusCode::UNAUTHENTICATED;
    }
    return grpc::StatusCode::UNKNOWN;
}

inline Code code_of(grpc::StatusCode c) {
    switch (c) {
    case grpc::StatusCode::CANCELLED: return Code::cancelled;
    case grpc::StatusCode::INVALID_ARGUMENT: return Code::invalid_argument;
    case grpc::StatusCode::NOT_FOUND: return Code::not_found;
    case grpc::StatusCode::PERMISSION_DENIED: return Code::permission_denied;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return Code::resource_exhausted;
    case grpc::StatusCode::FAILED_PRECONDITION: return Code::failed_precondition;
    case grpc::StatusCode::ABORTED: return Code::aborted;
    case grpc::StatusCode::INTERNAL: return Code::internal;
    case grpc::StatusCode::UNAVAILABLE: return Code::unavailable;
    case grpc::StatusCode::DATA_LOSS: return Code::data_loss;
    case grpc::StatusCode::UNAUTHENTICATED: return Code::unauthenticated;
    default: return Code::unknown;
    }
}

}  // namespace cdc::transfer
