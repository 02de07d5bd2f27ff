// SPDX-License-Identifier: Apache-2.0
#include "master_key.hpp"

#include "digest/blake3_batch.hpp"  // (src/: the library's batched BLAKE3)

#include <blake3.h>

#include <fmt/format.h>

namespace cdc::crypto {

namespace {

// BLAKE3 derive_key contexts: hardcoded, globally unique, one per use.
constexpr const char* kSizeMaskContext = "cdc-chunkers store format 2: catalog raw size mask key";
constexpr const char* kDigestMaskContext = "cdc-chunkers store format 2: catalog file digest mask key";
constexpr const char* kChunkerContext = "cdc-chunkers store format 2: keyed chunker key";
constexpr std::string_view kCheckText = "cdc-chunkers store format 2: master key check";

void derive(const char* context, std::span<const std::uint8_t> key, std::span<std::uint8_t> out) {
    blake3_hasher h;
    blake3_hasher_init_derive_key(&h, context);
    blake3_hasher_update(&h, key.data(), key.size());
    blake3_hasher_finalize(&h, out.data(), out.size());
    wipe({reinterpret_cast<std::uint8_t*>(&h), sizeof h});
}

}  // namespace

MasterKey::MasterKey(SecretBytes material)
    : material_(std::move(material)),
      mask_key_(32),
      digest_mask_key_(32),
      sealer_(material_.span().subspan(0, 32)) {
    derive(kSizeMaskContext, id_key(), mask_key_.span());
    derive(kDigestMaskContext, id_key(), digest_mask_key_.span());
}

MasterKey MasterKey::generate() {
    SecretBytes m(kBytes);
    random_bytes(m.span());
    return MasterKey(std::move(m));
}

MasterKey MasterKey::from_material(SecretBytes material) {
    if (material.size() != kBytes)
        throw Error(fmt::format("master key material of {} bytes, not {}", material.size(), kBytes));
    return MasterKey(std::move(material));
}

KeyedId MasterKey::blob_id(std::span<const std::uint8_t> plain) const noexcept {
    blake3_hasher h;
    blake3_hasher_init_keyed(&h, id_key().data());
    blake3_hasher_update(&h, plain.data(), plain.size());
    KeyedId out;
    blake3_hasher_finalize(&h, out.data(), out.size());
    wipe({reinterpret_cast<std::uint8_t*>(&h), sizeof h});
    return out;
}

void MasterKey::blob_ids(std::span<const std::byte> data, std::span<const std::uint32_t> lengths,
                         std::span<Digest> out) const {
    if (out.size() != lengths.size())
        throw Error(fmt::format("blob_ids: {} lengths but room for {} ids", lengths.size(), out.size()));
    std::uint64_t total = 0;
    for (const std::uint32_t n : lengths) total += n;
    if (total > data.size())
        throw Error(fmt::format("blob_ids: the lengths add up to {} bytes, more than the {} given", total, data.size()));
    cdc::detail::blake3_keyed_digests(data, lengths, id_key().data(), out);
}

std::uint64_t MasterKey::size_mask(std::span<const std::uint8_t> id) const noexcept {
    blake3_hasher h;
    blake3_hasher_init_keyed(&h, mask_key_.data());
    blake3_hasher_update(&h, id.data(), id.size());
    std::array<std::uint8_t, 8> out{};
    blake3_hasher_finalize(&h, out.data(), out.size());
    wipe({reinterpret_cast<std::uint8_t*>(&h), sizeof h});
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8; ++i) v |= std::uint64_t{out[i]} << (8 * i);
    return v;
}

KeyedId MasterKey::digest_mask(std::string_view name, std::uint64_t size) const noexcept {
    // name length, name, size (LE): no two (name, size) pairs hash the same input
    std::array<std::uint8_t, 8> n{}, z{};
    for (std::size_t i = 0; i < 8; ++i) {
        n[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(name.size()) >> (8 * i));
        z[i] = static_cast<std::uint8_t>(size >> (8 * i));
    }
    blake3_hasher h;
    blake3_hasher_init_keyed(&h, digest_mask_key_.data());
    blake3_hasher_update(&h, n.data(), n.size());
    blake3_hasher_update(&h, name.data(), name.size());
    blake3_hasher_update(&h, z.data(), z.size());
    KeyedId out;
    blake3_hasher_finalize(&h, out.data(), out.size());
    wipe({reinterpret_cast<std::uint8_t*>(&h), sizeof h});
    return out;
}

Key MasterKey::chunking_key() const noexcept {
    Key k{};
    derive(kChunkerContext, chunker_key(), k);
    return k;
}

std::string MasterKey::check_value() const {
    blake3_hasher h;
    blake3_hasher_init_keyed(&h, id_key().data());
    blake3_hasher_update(&h, kCheckText.data(), kCheckText.size());
    std::array<std::uint8_t, 32> out{};
    blake3_hasher_finalize(&h, out.data(), out.size());
    wipe({reinterpret_cast<std::uint8_t*>(&h), sizeof h});
    std::string s;
    for (const std::uint8_t b : out) s += fmt::format("{:02x}", b);
    return s;
}

}  // namespace cdc::crypto
