// SPDX-License-Identifier: Apache-2.0
// Small secret files the commands read: a store's chunking key (cdc store,
// cdc serve / push / pull) and a transfer token (cdc serve and its clients).
#pragma once

#include <cdc/options.hpp>

#include <string>

namespace cdc::cli {

/// Reads a key file: 64 hex digits (surrounding whitespace ignored) or
/// exactly 32 raw bytes. UsageError naming the file otherwise; a warning if
/// others may read or change it (warn_if_not_private), as for a token file.
Key read_key_file(const std::string& path);

/// Reads a token file: one line of printable ASCII (surrounding whitespace
/// ignored), 16 to 4096 characters. UsageError naming the file otherwise.
std::string read_token_file(const std::string& path);

/// Warns (cdc: warning: ...) if the regular file open at `fd` can be read
/// or written by its group or by others, as ssh does for a private key:
/// read by the key, token and TLS private key files.
void warn_if_not_private(int fd, const std::string& path, const std::string& what);

/// Reads a PEM file (a certificate, or with `secret` a private key: then
/// warn_if_not_private), at most 1 MiB. UsageError naming the file otherwise.
std::string read_pem_file(const std::string& path, const char* what, bool secret);

/// A token as given in the environment (CDC_TOKEN): the same rules;
/// UsageError naming the variable.
std::string check_token(const std::string& token, const std::string& origin);

/// The user's own transfer token file: $XDG_CONFIG_HOME/cdc/token, else
/// ~/.config/cdc/token (HOME, else the password database's home). Empty if
/// neither is known.
std::string default_token_path();

/// The token of default_token_path(), made at first use when `create`
/// (64 random hex digits, a 0600 file in a 0700 directory: what a `cdc
/// serve` on the loopback interface requires by default, and what the
/// user's own clients send there). Empty without `create` if there is
/// none; UsageError if it cannot be made or read.
std::string default_token(bool create);

}  // namespace cdc::cli
