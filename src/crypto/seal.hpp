// SPDX-License-Identifier: Apache-2.0
// Sealing: XChaCha20-Poly1305-IETF with a random 192-bit nonce, for records
// in packs and for whole objects (docs/STORE-V2.md "Records and packs").
//
// sealed = nonce (24) || ciphertext (as long as the plain text) || tag (16)
//
// Records may carry a 128-bit nonce instead (the XChaCha20 nonce's last 8
// bytes zero): 8 bytes less in every record, where the overhead is felt
// (~4 KB records), and still no repeat in practice (2^-49 after 2^40
// records under one key).
//
// The associated data binds what the sealed bytes are: a fixed domain, the
// kind (a record cannot be presented as a snapshot, nor one object kind as
// another), the id the caller addresses it by (a record moved under another
// chunk id fails) and a context of the caller's (a record's header bytes).
// Random nonces of 192 bits never repeat in practice, whatever the number of
// records a key seals (a 96-bit one, as AES-GCM's, would bound a key to
// about 2^32 records).
//
// The AEAD is libsodium's crypto_aead_xchacha20poly1305_ietf. OpenSSL's
// EVP ChaCha20-Poly1305 under the XChaCha subkey computes the same bytes
// about twice as fast (seal_evp.hpp): Sealers use it unless OpenSSL lacks
// the cipher (a FIPS-only provider), then libsodium's own.
#pragma once

#include "secret.hpp"

#include <cdc/error.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cdc::crypto {

inline constexpr std::size_t kKeyBytes = 32;
inline constexpr std::size_t kNonceBytes = 24;
inline constexpr std::size_t kTagBytes = 16;
/// Bytes a sealed string has beyond its plain text.
inline constexpr std::size_t kSealOverhead = kNonceBytes + kTagBytes;
/// The nonce bytes a record of the compact form carries (seal's nonce_bytes).
inline constexpr std::size_t kShortNonceBytes = 16;
/// Bytes a string sealed with a short nonce has beyond its plain text.
inline constexpr std::size_t kShortSealOverhead = kShortNonceBytes + kTagBytes;

/// What a sealed byte string is (part of its associated data).
enum class SealKind : std::uint8_t {
    record = 1,    ///< a blob in a pack (data chunk, chunk list, tree record); id = its chunk id
    snapshot = 2,  ///< a snapshot object; id = the snapshot's id
    tree = 3,      ///< a tree kept as an object of its own (not as a pack record)
    catalog = 4,   ///< a value the catalog keeps sealed (a row's payload); id = the row's key
    metadata = 5,  ///< other metadata of the store, not tied to a blob; id = its name
};

/// "record", "snapshot", ... (for messages).
std::string_view name_of(SealKind kind) noexcept;

/// Sealed bytes that do not open: altered, truncated, moved under another
/// id, kind or context, or sealed under another key. The message names the
/// kind and id; the caller adds where it read them (pack and offset, file).
class AuthenticationError : public Error {
public:
    using Error::Error;
};

/// Which implementation computes the AEAD (the same bytes either way).
enum class AeadBackend {
    fastest,  ///< OpenSSL's when OpenSSL has ChaCha20-Poly1305, else libsodium's
    openssl,  ///< OpenSSL's EVP ChaCha20-Poly1305 under the HChaCha20 subkey (throws if OpenSSL lacks it)
    sodium,   ///< libsodium's crypto_aead_xchacha20poly1305_ietf
};

/// Seals and opens under one 32-byte key, kept in SecretBytes. Its const
/// members may be called from several threads at once.
class Sealer {
public:
    explicit Sealer(std::span<const std::uint8_t> key, AeadBackend backend = AeadBackend::fastest);

    /// Seals `plain` into `out`, whose size must be plain.size() +
    /// nonce_bytes + kTagBytes. `nonce_bytes`: kNonceBytes, or
    /// kShortNonceBytes (random, the rest of the nonce zero).
    void seal(SealKind kind, std::span<const std::uint8_t> id, std::span<const std::uint8_t> context,
              std::span<const std::uint8_t> plain, std::span<std::uint8_t> out,
              std::size_t nonce_bytes = kNonceBytes) const;
    std::vector<std::uint8_t> seal(SealKind kind, std::span<const std::uint8_t> id,
                                   std::span<const std::uint8_t> context, std::span<const std::uint8_t> plain) const;

    /// Opens `sealed` into `out`, whose size must be sealed.size() -
    /// nonce_bytes - kTagBytes (`nonce_bytes` as it was sealed with).
    /// Throws AuthenticationError (then `out` is wiped) when the tag does
    /// not match or `sealed` is too short to be sealed bytes.
    void open(SealKind kind, std::span<const std::uint8_t> id, std::span<const std::uint8_t> context,
              std::span<const std::uint8_t> sealed, std::span<std::uint8_t> out,
              std::size_t nonce_bytes = kNonceBytes) const;
    std::vector<std::uint8_t> open(SealKind kind, std::span<const std::uint8_t> id,
                                   std::span<const std::uint8_t> context, std::span<const std::uint8_t> sealed) const;

    /// The backend in use (fastest resolved).
    AeadBackend backend() const noexcept { return backend_; }

private:
    SecretBytes key_;
    AeadBackend backend_;
};

/// The associated data of (kind, id, context): "cdc-seal" || kind ||
/// u32 LE id size || id || u32 LE context size || context. Public for
/// the tests and for documentation; seal and open build it themselves.
std::vector<std::uint8_t> associated_data(SealKind kind, std::span<const std::uint8_t> id,
                                          std::span<const std::uint8_t> context);

/// A view of text as bytes (ids given as text, contexts).
inline std::span<const std::uint8_t> bytes_of(std::string_view text) noexcept {
    return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

}  // namespace cdc::crypto
