// Small secret files the commands read: a store's chunking key (cdc store,
// cdc serve / push / pull) and a transfer token (cdc serve and its clients).
#pragma once

#include <cdc/options.hpp>

#include <string>

namespace cdc::cli {

/// Reads a key file: 64 hex digits (surrounding whitespace ignored) or
/// exactly 32 raw bytes. UsageError naming the file otherwise.
Key read_key_file(const std::string& path);

/// Reads a token file: one line of printable ASCII (surrounding whitespace
/// ignored), 16 to 4096 characters. UsageError naming the file otherwise.
std::string read_token_file(const std::string& path);

/// A token as given in the environment (CDC_TOKEN): the same rules;
/// UsageError naming the variable.
std::string check_token(const std::string& token, const std::string& origin);

}  // namespace cdc::cli
