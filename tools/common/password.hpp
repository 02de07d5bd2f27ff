// SPDX-License-Identifier: Apache-2.0
// Passwords of encrypted stores (docs/STORE.md "Encryption"): from a file
// named by a flag, from the environment, or asked on the terminal without
// echo; never from a command-line value (other users see a process's
// arguments). Held in locked memory (crypto::SecretBytes).
#pragma once

#include "secret.hpp"  // (src/crypto)

#include <string>
#include <string_view>

namespace cdc::cli {

/// How many times the terminal asks: once for a password that opens a key,
/// twice (they must match) for a password being set.
enum class Ask { once, twice };

/// Longest password taken from a file, the environment or the terminal.
inline constexpr std::size_t kMaxPasswordBytes = 4096;

/// The password of `what` ("password", "new password"), from the first
/// source there is:
/// - `file`, the value of the flag `flag` ("--password-file"), unless empty;
/// - with `environment`: the file named by CDC_PASSWORD_FILE, else
///   CDC_PASSWORD itself;
/// - the terminal, when standard input is one: asked on stderr with echo
///   off (twice with Ask::twice; a mismatch is an error).
/// A file's content is the password, one trailing newline (LF or CR LF)
/// removed; a file others may read is warned about (chmod 600). UsageError
/// (exit 2) for an empty password, one longer than kMaxPasswordBytes, an
/// unreadable file, or no source at all (the message names the sources).
crypto::SecretBytes get_password(const std::string& file, std::string_view flag, bool environment, Ask ask,
                                 std::string_view what);

/// The password of a file (exposed for the tests): the rules above; `origin`
/// names it in errors ("--password-file", "CDC_PASSWORD_FILE").
crypto::SecretBytes read_password_file(const std::string& path, std::string_view origin);

}  // namespace cdc::cli
