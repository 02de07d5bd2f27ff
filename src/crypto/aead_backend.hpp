// SPDX-License-Identifier: Apache-2.0
// The AEAD under Sealer (seal.hpp): XChaCha20-Poly1305-IETF, detached tag.
// libsodium computes it always; OpenSSL's EVP computes the same bytes
// several times faster, but linking it into a static program brings the
// whole provider (its X509, ASN.1 and every algorithm's tables: the static
// `cdc` went from 5.6 to 9.0 MB of text and `cdc --help` from 3.7 to 4.7
// MB resident), so it is a library of its own (cdc_crypto_evp) that a
// program installs with enable_openssl_aead() (seal_evp.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace cdc::crypto::detail {

/// One implementation: true on success (open: the tag matched).
struct AeadFunctions {
    bool (*seal)(const std::uint8_t* key, const std::uint8_t* nonce, std::span<const std::uint8_t> ad,
                 std::span<const std::uint8_t> plain, std::uint8_t* cipher, std::uint8_t* tag);
    bool (*open)(const std::uint8_t* key, const std::uint8_t* nonce, std::span<const std::uint8_t> ad,
                 std::span<const std::uint8_t> cipher, const std::uint8_t* tag, std::uint8_t* plain);
};

/// Installs the OpenSSL implementation (seal_evp.cpp); null: none.
void install_openssl_aead(const AeadFunctions* functions) noexcept;

}  // namespace cdc::crypto::detail
