// SPDX-License-Identifier: Apache-2.0
// cdc/error.hpp — the exception types thrown by the library.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace cdc {

/// Base of every exception the library throws.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// An invalid option or algorithm name. The message names the option, the
/// offending value and the rule it breaks (ALGORITHMS.md section 5); field()
/// is the library's name of the option ("normal_size", "edit_kind", "key"),
/// which a command line maps to its own flag.
class OptionError : public Error {
public:
    explicit OptionError(const std::string& message, std::string field = {})
        : Error(message), field_(std::move(field)) {}

    /// The option the error is about, empty when none in particular.
    const std::string& field() const noexcept { return field_; }

private:
    std::string field_;
};

/// A source failed to deliver bytes (read error, reader exception, a reader
/// that makes no progress). Bytes buffered before the failure are never
/// returned as a chunk.
class IoError : public Error {
public:
    using Error::Error;
};

}  // namespace cdc
