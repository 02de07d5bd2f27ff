// SPDX-License-Identifier: Apache-2.0
// Key slots: the master key material wrapped under one password
// (docs/STORE.md "Encryption: key slots"). The wrapping key is
// Argon2id(password, salt, opslimit, memlimit) (libsodium crypto_pwhash,
// ALG_ARGON2ID13), the wrapping XChaCha20-Poly1305-IETF with a random nonce,
// its associated data the slot's header: format versions, slot id, store id,
// creation time and the Argon2id parameters, so that a slot cannot be moved
// to another store or name, nor its parameters changed, without failing.
//
// A slot is a small binary file (all integers little-endian):
//
// | size | field |
// |---|---|
// | 8 | magic `CDCKEY01` |
// | 4 | slot format version (1) |
// | 4 | store format version (2) |
// | 8 | slot id (its 16 hex digits name the file) |
// | 8 | created (Unix time, seconds, signed) |
// | 1 | store id length n (1..64) |
// | n | store id (printable ASCII) |
// | 1 | key derivation: 1 = Argon2id v1.3 |
// | 8 | opslimit (1..kMaxOpslimit) |
// | 8 | memlimit, bytes (8 KiB..kMaxMemlimit, a multiple of 1 KiB) |
// | 16 | salt |
// | 1 | wrapping cipher: 1 = XChaCha20-Poly1305-IETF |
// | 24 | nonce |
// | 112 | the wrapped material (96 bytes) and its tag (16) |
// | 32 | BLAKE3-256 of every byte before (tells damage from a wrong password) |
//
// Parsing is strict: the exact size, every field in its range, the checksum.
#pragma once

#include "master_key.hpp"
#include "secret.hpp"

#include <cdc/error.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cdc::crypto {

/// A key slot that cannot be used: not a slot, damaged, of another format
/// or store. The message names the slot (its file).
class KeySlotError : public Error {
public:
    using Error::Error;
};

/// A request on key slots that is refused (an empty password, the last slot
/// removed, a slot that does not exist): the caller's mistake (exit 2).
class KeyRingError : public Error {
public:
    using Error::Error;
};

/// Argon2id parameters of one slot.
struct KdfParams {
    std::uint64_t opslimit = 0;  ///< passes over memory
    std::uint64_t memlimit = 0;  ///< bytes of memory
    bool operator==(const KdfParams&) const = default;
};

/// Bounds a slot's parameters must keep (a damaged or hostile slot must
/// not make an open run for hours or take more memory than a machine has).
inline constexpr std::uint64_t kMaxOpslimit = 256;
inline constexpr std::uint64_t kMaxMemlimit = std::uint64_t{4} << 30;
inline constexpr std::uint64_t kMinMemlimit = 8192;  // libsodium's minimum for Argon2id

/// The weakest parameters libsodium takes (1 pass, 8 KiB): instant, and
/// worthless against guessing. For tests only (CDC_TEST_FAST_KDF=1).
KdfParams fast_kdf_params_for_tests() noexcept;

/// Parameters for which one derivation takes about `target` on this
/// machine now: memory 64 MiB (less when MemAvailable is below 256 MiB, down
/// to 32 MiB, or when one pass already takes more than twice the target),
/// then as many passes (opslimit, at least 2 when it fits) as fill the
/// target, measured with one derivation of one pass.
KdfParams tune_kdf(std::chrono::duration<double> target = std::chrono::milliseconds(500));

/// fast_kdf_params_for_tests() when the environment has CDC_TEST_FAST_KDF=1
/// (exactly "1"), else nothing.
std::optional<KdfParams> kdf_params_from_environment();

/// The parameters for a new slot: kdf_params_from_environment(), else tune_kdf().
KdfParams kdf_params_for_new_slot();

/// Checks that `p` is within the bounds above; throws KeySlotError
/// prefixed with `where` otherwise.
void check_kdf_params(const KdfParams& p, std::string_view where);

inline constexpr std::uint32_t kSlotFormatVersion = 1;
inline constexpr std::uint32_t kEncryptedStoreFormatVersion = 2;
inline constexpr std::size_t kSlotIdBytes = 8;

/// One parsed slot.
struct KeySlot {
    std::uint32_t store_format_version = kEncryptedStoreFormatVersion;
    std::array<std::uint8_t, kSlotIdBytes> id{};
    std::int64_t created = 0;
    std::string store_id;
    KdfParams kdf;
    std::array<std::uint8_t, 16> salt{};
    std::array<std::uint8_t, kNonceBytes> nonce{};
    std::array<std::uint8_t, MasterKey::kBytes + kTagBytes> wrapped{};

    /// The slot id as 16 hex digits (the file's name).
    std::string id_hex() const;
};

/// 16 lowercase hex digits -> slot id; nullopt for anything else.
std::optional<std::array<std::uint8_t, kSlotIdBytes>> parse_slot_id(std::string_view hex);

/// The slot as stored (the table above).
std::vector<std::uint8_t> serialize(const KeySlot& slot);

/// Parses a slot's bytes; `name` (the file) is named in every error
/// (KeySlotError). When `expected_id` is given (the file's name), the id
/// inside must be it.
KeySlot parse_key_slot(std::span<const std::uint8_t> bytes, std::string_view name,
                       std::string_view expected_id = {});

/// Wraps `key` under `password` into a new slot with a random id, salt and
/// nonce. Throws KeyRingError for an empty password or a store id out of
/// the format's rules.
KeySlot wrap_master_key(const MasterKey& key, std::span<const std::uint8_t> password, std::string_view store_id,
                        const KdfParams& kdf, std::int64_t created);

/// The material of `slot` if `password` opens it, else nullopt (the tag
/// does not match: a wrong password, since parsing checked for damage).
/// Throws cdc::Error if Argon2id cannot run (out of memory).
std::optional<MasterKey> unwrap_master_key(const KeySlot& slot, std::span<const std::uint8_t> password);

}  // namespace cdc::crypto
