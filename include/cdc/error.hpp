// cdc/error.hpp — the exception types thrown by the library.
#pragma once

#include <stdexcept>
#include <string>

namespace cdc {

/// Base of every exception the library throws.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// An invalid option or algorithm name. The message names the option, the
/// offending value and the rule it breaks (ALGORITHMS.md section 5).
class OptionError : public Error {
public:
    using Error::Error;
};

/// A source failed to deliver bytes (read error, reader exception, a reader
/// that makes no progress). Bytes buffered before the failure are never
/// returned as a chunk.
class IoError : public Error {
public:
    using Error::Error;
};

}  // namespace cdc
