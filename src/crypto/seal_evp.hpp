// SPDX-License-Identifier: Apache-2.0
// The OpenSSL implementation of Sealer's AEAD (library cdc_crypto_evp):
// ChaCha20-Poly1305 of OpenSSL's EVP under the XChaCha20 construction's
// subkey (HChaCha20 of the key and the nonce's first 16 bytes) and 96-bit
// nonce (4 zero bytes, the nonce's last 8): libsodium's
// crypto_aead_xchacha20poly1305_ietf, byte for byte, at OpenSSL's speed
// (docs/BENCHMARKS.md "Encryption primitives").
#pragma once

namespace cdc::crypto {

/// Makes AeadBackend::fastest use OpenSSL from now on, in the whole
/// process (Sealers made before keep their backend). False (and nothing
/// changes) when OpenSSL has no ChaCha20-Poly1305 (a FIPS-only provider).
bool enable_openssl_aead();

}  // namespace cdc::crypto
