// SPDX-License-Identifier: Apache-2.0
// cdc/digest.hpp — chunk fingerprints: BLAKE3-256 (default), SHA-256
// (OpenSSL) and XXH3-128 (xxHash), behind one small interface.
#pragma once

#include <cdc/enum_names.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace cdc {

enum class DigestKind { blake3, sha256, xxh3, none };
inline constexpr std::array kDigestKindNames = {
    EnumName<DigestKind>{DigestKind::blake3, "blake3"}, EnumName<DigestKind>{DigestKind::sha256, "sha256"},
    EnumName<DigestKind>{DigestKind::xxh3, "xxh3"}, EnumName<DigestKind>{DigestKind::none, "none"}};

/// Parses "blake3", "sha256", "xxh3" or "none"; throws OptionError.
DigestKind parse_digest_kind(std::string_view name);
std::string_view to_string(DigestKind kind) noexcept;
/// Digest length in bytes: 32, 32, 16, 0.
std::size_t digest_size(DigestKind kind) noexcept;

/// A fingerprint of up to 32 bytes (unused bytes are zero).
struct Digest {
    std::array<std::uint8_t, 32> bytes{};
    std::uint8_t size = 0;

    std::string hex() const;
    std::span<const std::uint8_t> view() const noexcept { return {bytes.data(), size}; }
    friend bool operator==(const Digest&, const Digest&) = default;
};

/// One-shot digest of `data`.
Digest compute_digest(DigestKind kind, std::span<const std::byte> data);

/// Digests of consecutive chunks: out[i] = compute_digest(kind, chunk i),
/// where chunk 0 starts at data[0] and chunk i + 1 right after chunk i, with
/// lengths[i] bytes. The sum of `lengths` must be <= data.size() and
/// out.size() == lengths.size(), else OptionError (nothing is hashed).
///
/// For BLAKE3 this is much faster than one compute_digest per chunk when the
/// chunks are small (a few KiB): the chunks are hashed side by side, so that
/// the SIMD lanes (8 with AVX2, 16 with AVX-512) are full; pass tens of chunks
/// per call (e.g. 64). The digests are the same. SHA-256 and XXH3 loop over
/// compute_digest. Allocates nothing in steady state (BLAKE3 keeps ~60 KiB of
/// scratch per calling thread). Thread-safe.
void compute_digests(DigestKind kind, std::span<const std::byte> data, std::span<const std::uint32_t> lengths,
                     std::span<Digest> out);

/// Incremental digest (whole files, streamed in pieces). Thread-compatible.
class Hasher {
public:
    explicit Hasher(DigestKind kind);
    ~Hasher();
    Hasher(Hasher&&) noexcept;
    Hasher& operator=(Hasher&&) noexcept;
    Hasher(const Hasher&) = delete;
    Hasher& operator=(const Hasher&) = delete;

    void update(std::span<const std::byte> data);
    /// Returns the digest; the hasher is reset for a new message.
    Digest finish();
    DigestKind kind() const noexcept { return kind_; }

private:
    struct State;
    DigestKind kind_;
    std::unique_ptr<State> state_;
};

}  // namespace cdc
