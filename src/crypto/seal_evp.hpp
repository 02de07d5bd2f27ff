// SPDX-License-Identifier: Apache-2.0
// Sealer's AEAD computed by OpenSSL (seal.cpp uses it when OpenSSL has the
// cipher): ChaCha20-Poly1305 of OpenSSL's EVP under the XChaCha20
// construction's subkey (HChaCha20 of the key and the nonce's first 16
// bytes) and 96-bit nonce (4 zero bytes, the nonce's last 8). That is
// libsodium's crypto_aead_xchacha20poly1305_ietf, byte for byte, at
// OpenSSL's speed: its AVX-512/AVX2 code runs 1.9-2.4x as fast as
// libsodium 1.0.18's here (docs/BENCHMARKS.md "Encryption primitives"),
// and `store get` opens every byte it reads.
#pragma once

#include <cstdint>
#include <span>

namespace cdc::crypto::detail {

/// Whether OpenSSL provides ChaCha20-Poly1305 (not under a FIPS-only
/// provider); looked up once.
bool evp_aead_available() noexcept;

/// XChaCha20-Poly1305-IETF with a detached tag: key 32 bytes, nonce 24,
/// tag 16. True on success (open: the tag matched; else `plain` holds
/// nothing the caller may use). Either may be called from several threads
/// at once (one EVP context per thread).
bool evp_seal(const std::uint8_t* key, const std::uint8_t* nonce, std::span<const std::uint8_t> ad,
              std::span<const std::uint8_t> plain, std::uint8_t* cipher, std::uint8_t* tag);
bool evp_open(const std::uint8_t* key, const std::uint8_t* nonce, std::span<const std::uint8_t> ad,
              std::span<const std::uint8_t> cipher, const std::uint8_t* tag, std::uint8_t* plain);

}  // namespace cdc::crypto::detail
