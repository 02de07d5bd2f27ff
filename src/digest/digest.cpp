// SPDX-License-Identifier: Apache-2.0
#include <cdc/digest.hpp>
#include <cdc/error.hpp>

#include "blake3_batch.hpp"

#include <blake3.h>
#include <fmt/format.h>
// SHA-256 through libcrypto's SHA256_* functions, not EVP: EVP's provider
// machinery pulls DSO loading and socket code into the static cdc binary
// (glibc link warnings, ~1 MB of code) and fetches the algorithm on every
// one-shot digest. Same OpenSSL code underneath (SHA-NI / AVX2 assembly).
// These functions are marked deprecated since OpenSSL 3.0 (not removed):
// the marking is silenced here only.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
#include <xxhash.h>

#include <cstring>

namespace cdc {

DigestKind parse_digest_kind(std::string_view name) { return parse_name(kDigestKindNames, name, "digest"); }

std::string_view to_string(DigestKind kind) noexcept { return name_of(kDigestKindNames, kind); }

std::size_t digest_size(DigestKind kind) noexcept {
    switch (kind) {
        case DigestKind::blake3:
        case DigestKind::sha256: return 32;
        case DigestKind::xxh3: return 16;
        case DigestKind::none: return 0;
    }
    return 0;
}

std::string Digest::hex() const {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string s(2u * size, '\0');
    for (std::size_t i = 0; i < size; ++i) {
        s[2 * i] = kHex[bytes[i] >> 4];
        s[2 * i + 1] = kHex[bytes[i] & 15];
    }
    return s;
}

namespace {
void store_xxh128(Digest& d, XXH128_hash_t h) {
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, h);  // big-endian, as xxhsum prints it
    std::memcpy(d.bytes.data(), canon.digest, 16);
}
}  // namespace

Digest compute_digest(DigestKind kind, std::span<const std::byte> data) {
    Digest d;
    d.size = static_cast<std::uint8_t>(digest_size(kind));
    switch (kind) {
        case DigestKind::blake3: {
            blake3_hasher h;
            blake3_hasher_init(&h);
            blake3_hasher_update(&h, data.data(), data.size());
            blake3_hasher_finalize(&h, d.bytes.data(), 32);
            break;
        }
        case DigestKind::sha256: {
            // (not SHA256(): in OpenSSL 3 that one-shot goes through EVP)
            SHA256_CTX ctx;
            if (SHA256_Init(&ctx) != 1 || SHA256_Update(&ctx, data.data(), data.size()) != 1 ||
                SHA256_Final(d.bytes.data(), &ctx) != 1)
                throw Error("SHA-256 failed");
            break;
        }
        case DigestKind::xxh3: store_xxh128(d, XXH3_128bits(data.data(), data.size())); break;
        case DigestKind::none: break;
    }
    return d;
}

void compute_digests(DigestKind kind, std::span<const std::byte> data, std::span<const std::uint32_t> lengths,
                     std::span<Digest> out) {
    if (out.size() != lengths.size())
        throw OptionError(fmt::format("compute_digests: {} lengths but room for {} digests", lengths.size(), out.size()));
    std::uint64_t total = 0;
    for (const std::uint32_t len : lengths) total += len;
    if (total > data.size())
        throw OptionError(fmt::format("compute_digests: the lengths add up to {} bytes, more than the {} given", total,
                                      data.size()));
    if (kind == DigestKind::blake3) {
        detail::blake3_digests(data, lengths, out);
        return;
    }
    std::size_t pos = 0;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
        out[i] = compute_digest(kind, data.subspan(pos, lengths[i]));
        pos += lengths[i];
    }
}

struct Hasher::State {
    blake3_hasher blake3{};
    SHA256_CTX sha{};
    XXH3_state_t* xxh = nullptr;
    ~State() {
        if (xxh) XXH3_freeState(xxh);
    }
    void begin(DigestKind kind) {
        switch (kind) {
            case DigestKind::blake3: blake3_hasher_init(&blake3); break;
            case DigestKind::sha256:
                if (SHA256_Init(&sha) != 1) throw Error("SHA-256 init failed");
                break;
            case DigestKind::xxh3:
                if (!xxh) xxh = XXH3_createState();
                if (!xxh || XXH3_128bits_reset(xxh) != XXH_OK) throw Error("XXH3 init failed");
                break;
            case DigestKind::none: break;
        }
    }
};

Hasher::Hasher(DigestKind kind) : kind_(kind), state_(std::make_unique<State>()) { state_->begin(kind_); }
Hasher::~Hasher() = default;
Hasher::Hasher(Hasher&&) noexcept = default;
Hasher& Hasher::operator=(Hasher&&) noexcept = default;

void Hasher::update(std::span<const std::byte> data) {
    switch (kind_) {
        case DigestKind::blake3: blake3_hasher_update(&state_->blake3, data.data(), data.size()); break;
        case DigestKind::sha256:
            if (SHA256_Update(&state_->sha, data.data(), data.size()) != 1) throw Error("SHA-256 update failed");
            break;
        case DigestKind::xxh3:
            if (XXH3_128bits_update(state_->xxh, data.data(), data.size()) != XXH_OK) throw Error("XXH3 update failed");
            break;
        case DigestKind::none: break;
    }
}

Digest Hasher::finish() {
    Digest d;
    d.size = static_cast<std::uint8_t>(digest_size(kind_));
    switch (kind_) {
        case DigestKind::blake3: blake3_hasher_finalize(&state_->blake3, d.bytes.data(), 32); break;
        case DigestKind::sha256: {
            if (SHA256_Final(d.bytes.data(), &state_->sha) != 1) throw Error("SHA-256 final failed");
            break;
        }
        case DigestKind::xxh3: store_xxh128(d, XXH3_128bits_digest(state_->xxh)); break;
        case DigestKind::none: break;
    }
    state_->begin(kind_);
    return d;
}

}  // namespace cdc
