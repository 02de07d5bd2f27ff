// SPDX-License-Identifier: Apache-2.0
#include "seal.hpp"

#include "seal_evp.hpp"

#include <sodium.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <memory>

namespace cdc::crypto {

namespace {

constexpr std::string_view kDomain = "cdc-seal";

std::string id_text(std::span<const std::uint8_t> id) {
    if (id.empty()) return "(no id)";
    const bool printable = std::all_of(id.begin(), id.end(), [](std::uint8_t c) { return c > 0x20 && c < 0x7f; });
    if (printable) return std::string(reinterpret_cast<const char*>(id.data()), id.size());
    std::string s;
    for (const std::uint8_t b : id) s += fmt::format("{:02x}", b);
    return s;
}

[[noreturn]] void fail(SealKind kind, std::span<const std::uint8_t> id, std::string_view what) {
    throw AuthenticationError(fmt::format("{} {}: {}", name_of(kind), id_text(id), what));
}

void put_u32(std::uint8_t* p, std::size_t n) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(n >> (8 * i));
}

// associated_data() into `ad` (resized; its capacity is kept between calls).
void build_ad(std::vector<std::uint8_t>& ad, SealKind kind, std::span<const std::uint8_t> id,
              std::span<const std::uint8_t> context) {
    if (id.size() > INT_MAX / 2 || context.size() > INT_MAX / 2)
        throw Error("sealed associated data: longer than 2 GiB");  // (EVP takes an int)
    ad.resize(kDomain.size() + 1 + 4 + id.size() + 4 + context.size());
    std::uint8_t* p = ad.data();
    std::memcpy(p, kDomain.data(), kDomain.size());
    p += kDomain.size();
    *p++ = static_cast<std::uint8_t>(kind);
    put_u32(p, id.size());
    p += 4;
    if (!id.empty()) std::memcpy(p, id.data(), id.size());
    p += id.size();
    put_u32(p, context.size());
    p += 4;
    if (!context.empty()) std::memcpy(p, context.data(), context.size());
}

// A buffer per thread for the associated data: no allocation per record.
std::vector<std::uint8_t>& thread_ad() {
    thread_local std::vector<std::uint8_t> ad;
    return ad;
}

}  // namespace

std::string_view name_of(SealKind kind) noexcept {
    switch (kind) {
        case SealKind::record: return "record";
        case SealKind::snapshot: return "snapshot";
        case SealKind::tree: return "tree";
        case SealKind::catalog: return "catalog value";
        case SealKind::metadata: return "metadata";
    }
    return "object";
}

std::vector<std::uint8_t> associated_data(SealKind kind, std::span<const std::uint8_t> id,
                                          std::span<const std::uint8_t> context) {
    std::vector<std::uint8_t> ad;
    build_ad(ad, kind, id, context);
    return ad;
}

Sealer::Sealer(std::span<const std::uint8_t> key, AeadBackend backend) : backend_(backend) {
    if (key.size() != kKeyBytes) throw Error(fmt::format("a sealing key has {} bytes, not {}", kKeyBytes, key.size()));
    ensure_sodium();
    key_ = SecretBytes::copy_of(key);
    if (backend_ == AeadBackend::fastest)
        backend_ = detail::evp_aead_available() ? AeadBackend::openssl : AeadBackend::sodium;
    if (backend_ == AeadBackend::openssl && !detail::evp_aead_available())
        throw Error("OpenSSL provides no ChaCha20-Poly1305 here (a FIPS-only provider?)");
}

namespace {

void check_nonce_bytes(std::size_t nonce_bytes) {
    if (nonce_bytes != kNonceBytes && nonce_bytes != kShortNonceBytes)
        throw Error(fmt::format("a sealed string carries a nonce of {} or {} bytes, not {}", kNonceBytes,
                                kShortNonceBytes, nonce_bytes));
}

}  // namespace

void Sealer::seal(SealKind kind, std::span<const std::uint8_t> id, std::span<const std::uint8_t> context,
                  std::span<const std::uint8_t> plain, std::span<std::uint8_t> out, std::size_t nonce_bytes) const {
    check_nonce_bytes(nonce_bytes);
    if (out.size() != plain.size() + nonce_bytes + kTagBytes)
        throw Error(fmt::format("seal: output of {} bytes for {} plain bytes", out.size(), plain.size()));
    std::vector<std::uint8_t>& ad = thread_ad();
    build_ad(ad, kind, id, context);
    std::array<std::uint8_t, kNonceBytes> nonce{};  // (a short nonce: its last bytes zero)
    randombytes_buf(nonce.data(), nonce_bytes);
    std::memcpy(out.data(), nonce.data(), nonce_bytes);
    std::uint8_t* cipher = out.data() + nonce_bytes;
    std::uint8_t* tag = cipher + plain.size();
    if (backend_ == AeadBackend::sodium) {
        crypto_aead_xchacha20poly1305_ietf_encrypt_detached(cipher, tag, nullptr, plain.data(), plain.size(),
                                                            ad.data(), ad.size(), nullptr, nonce.data(), key_.data());
        return;
    }
    if (!detail::evp_seal(key_.data(), nonce.data(), ad, plain, cipher, tag)) {
        wipe(out);
        throw Error(fmt::format("sealing a {}: OpenSSL's ChaCha20-Poly1305 failed", name_of(kind)));
    }
}

std::vector<std::uint8_t> Sealer::seal(SealKind kind, std::span<const std::uint8_t> id,
                                       std::span<const std::uint8_t> context,
                                       std::span<const std::uint8_t> plain) const {
    std::vector<std::uint8_t> out(plain.size() + kSealOverhead);
    seal(kind, id, context, plain, out);
    return out;
}

void Sealer::open(SealKind kind, std::span<const std::uint8_t> id, std::span<const std::uint8_t> context,
                  std::span<const std::uint8_t> sealed, std::span<std::uint8_t> out, std::size_t nonce_bytes) const {
    check_nonce_bytes(nonce_bytes);
    const std::size_t overhead = nonce_bytes + kTagBytes;
    if (sealed.size() < overhead)
        fail(kind, id, fmt::format("{} sealed bytes, fewer than nonce and tag ({}): truncated", sealed.size(),
                                   overhead));
    const std::size_t n = sealed.size() - overhead;
    if (out.size() != n) throw Error(fmt::format("open: output of {} bytes for {} sealed bytes", out.size(), sealed.size()));
    std::vector<std::uint8_t>& ad = thread_ad();
    build_ad(ad, kind, id, context);
    std::array<std::uint8_t, kNonceBytes> nonce{};
    std::memcpy(nonce.data(), sealed.data(), nonce_bytes);
    const std::uint8_t* cipher = sealed.data() + nonce_bytes;
    const std::uint8_t* tag = cipher + n;
    bool ok = false;
    if (backend_ == AeadBackend::sodium) {
        ok = crypto_aead_xchacha20poly1305_ietf_decrypt_detached(out.data(), nullptr, cipher, n, tag, ad.data(),
                                                                 ad.size(), nonce.data(), key_.data()) == 0;
    } else {
        ok = detail::evp_open(key_.data(), nonce.data(), ad, {cipher, n}, tag, out.data());
    }
    if (!ok) {
        wipe(out);
        fail(kind, id, "authentication failed (altered, truncated, moved under another id or kind, or sealed "
                       "under another key)");
    }
}

std::vector<std::uint8_t> Sealer::open(SealKind kind, std::span<const std::uint8_t> id,
                                       std::span<const std::uint8_t> context,
                                       std::span<const std::uint8_t> sealed) const {
    std::vector<std::uint8_t> out(sealed.size() < kSealOverhead ? 0 : sealed.size() - kSealOverhead);
    open(kind, id, context, sealed, out);
    return out;
}

}  // namespace cdc::crypto
