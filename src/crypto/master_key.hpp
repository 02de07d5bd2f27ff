// SPDX-License-Identifier: Apache-2.0
// The master key material of an encrypted store and what is derived from it
// (docs/STORE-V2.md "Encryption"): three random 32-byte keys, each with one
// use, kept in locked memory and wrapped per password in key slots
// (key_slot.hpp).
#pragma once

#include "seal.hpp"
#include "secret.hpp"

#include <cdc/digest.hpp>
#include <cdc/options.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace cdc::crypto {

/// A keyed id (BLAKE3-256 keyed with the id key): the id of a blob in an
/// encrypted store.
using KeyedId = std::array<std::uint8_t, 32>;

class MasterKey {
public:
    /// Bytes of the material: data key || id key || chunker key.
    static constexpr std::size_t kBytes = 96;

    /// Fresh random material.
    static MasterKey generate();
    /// The material as unwrapped from a key slot (exactly kBytes).
    static MasterKey from_material(SecretBytes material);

    /// The whole material (what a key slot wraps).
    const SecretBytes& material() const noexcept { return material_; }
    /// The key that seals records and objects (XChaCha20-Poly1305).
    std::span<const std::uint8_t> data_key() const noexcept { return material_.span().subspan(0, 32); }
    /// The key of blob ids and of the size mask.
    std::span<const std::uint8_t> id_key() const noexcept { return material_.span().subspan(32, 32); }
    /// The key the chunker's key is derived from.
    std::span<const std::uint8_t> chunker_key() const noexcept { return material_.span().subspan(64, 32); }

    /// Seals and opens under the data key.
    const Sealer& sealer() const noexcept { return sealer_; }

    /// The id of a blob: BLAKE3-256 of its plain bytes keyed with the id
    /// key. Two stores with different material give unrelated ids to the
    /// same bytes, so an id does not tell whether a known file is stored.
    KeyedId blob_id(std::span<const std::uint8_t> plain) const noexcept;
    /// The ids of the consecutive blobs of `data` whose lengths are
    /// `lengths` (as cut_lengths gives them), hashed side by side as
    /// compute_digests does for plain BLAKE3 (the same speed); out[i] is
    /// blob i's id (a 32-byte Digest). Throws cdc::Error when out.size() !=
    /// lengths.size() or the lengths add up to more than data.size().
    void blob_ids(std::span<const std::byte> data, std::span<const std::uint32_t> lengths,
                  std::span<Digest> out) const;

    /// The mask of a raw size kept in the catalog: the first 8 bytes (LE) of
    /// a keyed PRF of the id (BLAKE3 keyed with a key derived from the id
    /// key, its own context), xor'ed with the size. mask_size is its own
    /// inverse: mask_size(id, mask_size(id, n)) == n.
    std::uint64_t size_mask(std::span<const std::uint8_t> id) const noexcept;
    std::uint64_t mask_size(std::span<const std::uint8_t> id, std::uint64_t size) const noexcept {
        return size ^ size_mask(id);
    }

    /// The mask of a file's whole-file BLAKE3 kept in the catalog (so that
    /// the catalog does not tell whether a known file is stored): BLAKE3
    /// keyed with a key derived from the id key (its own context) over the
    /// file's name and size, 32 bytes, xor'ed with the digest. Its own
    /// inverse; bound to the name and size, so a digest moved to another
    /// row unmasks to a wrong one.
    KeyedId digest_mask(std::string_view name, std::uint64_t size) const noexcept;
    void mask_digest(std::span<std::uint8_t, 32> digest, std::string_view name, std::uint64_t size) const noexcept {
        const KeyedId m = digest_mask(name, size);
        for (std::size_t i = 0; i < 32; ++i) digest[i] ^= m[i];
    }

    /// The key of the store's keyed chunker (the `key` of cdc::Options, as
    /// `--key-file` gives it): BLAKE3's derive_key of the chunker key under
    /// this project's context string, so that the chunker key itself never
    /// leaves locked memory and the Gear table it keys is no function of the
    /// other keys.
    Key chunking_key() const noexcept;

    /// A check value of the material (64 hex digits: BLAKE3 keyed with the
    /// id key over a fixed text): stored beside the store's configuration,
    /// it says whether unwrapped material is this store's, and reveals
    /// nothing of the keys.
    std::string check_value() const;

private:
    explicit MasterKey(SecretBytes material);
    SecretBytes material_;
    SecretBytes mask_key_;
    SecretBytes digest_mask_key_;  // (derived once from the id key, as mask_key_)
    Sealer sealer_;
};

}  // namespace cdc::crypto
