// SPDX-License-Identifier: Apache-2.0
#include "seal_evp.hpp"

#include "secret.hpp"

#include <cdc/error.hpp>

#include <openssl/evp.h>
#include <sodium.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <new>

namespace cdc::crypto::detail {

namespace {

// Fetched once: an implicit fetch at every init would cost a lookup per record.
EVP_CIPHER* chacha_cipher() {
    static EVP_CIPHER* const cipher = EVP_CIPHER_fetch(nullptr, "ChaCha20-Poly1305", nullptr);
    return cipher;
}

struct CtxFree {
    void operator()(EVP_CIPHER_CTX* c) const noexcept { EVP_CIPHER_CTX_free(c); }
};

// One context per thread, reused, its cipher set once: each record's init
// then passes no cipher, which re-keys the provider's context in place (an
// init that names the cipher frees, wipes and allocates that context again:
// ~10% of sealing a 4 KiB record).
EVP_CIPHER_CTX* thread_ctx() {
    thread_local const std::unique_ptr<EVP_CIPHER_CTX, CtxFree> ctx = [] {
        std::unique_ptr<EVP_CIPHER_CTX, CtxFree> c(EVP_CIPHER_CTX_new());
        if (!c) throw std::bad_alloc();
        if (EVP_CipherInit_ex2(c.get(), chacha_cipher(), nullptr, nullptr, 1, nullptr) != 1)
            throw Error("OpenSSL could not set up a ChaCha20-Poly1305 context");
        return c;
    }();
    return ctx.get();
}

// The XChaCha20 construction's inner key and 96-bit nonce.
struct Inner {
    std::array<std::uint8_t, 32> key{};
    std::array<std::uint8_t, 12> iv{};
    Inner(const std::uint8_t* outer_key, const std::uint8_t* nonce) {
        crypto_core_hchacha20(key.data(), nonce, outer_key, nullptr);
        std::memcpy(iv.data() + 4, nonce + 16, 8);
    }
    ~Inner() { wipe(key); }
    Inner(const Inner&) = delete;
    Inner& operator=(const Inner&) = delete;
};

// EVP updates take an int length: long inputs go in pieces.
constexpr std::size_t kPiece = std::size_t{1} << 30;

bool update(EVP_CIPHER_CTX* ctx, bool encrypt, const std::uint8_t* in, std::size_t n, std::uint8_t* out) {
    for (std::size_t done = 0; done < n;) {
        const std::size_t take = std::min(kPiece, n - done);
        int len = 0;
        const int ok = encrypt ? EVP_EncryptUpdate(ctx, out + done, &len, in + done, static_cast<int>(take))
                               : EVP_DecryptUpdate(ctx, out + done, &len, in + done, static_cast<int>(take));
        if (ok != 1 || static_cast<std::size_t>(len) != take) return false;
        done += take;
    }
    return true;
}

}  // namespace

bool evp_aead_available() noexcept {
    try {
        ensure_sodium();  // (HChaCha20)
    } catch (...) {
        return false;
    }
    return chacha_cipher() != nullptr;
}

bool evp_seal(const std::uint8_t* key, const std::uint8_t* nonce, std::span<const std::uint8_t> ad,
              std::span<const std::uint8_t> plain, std::uint8_t* cipher, std::uint8_t* tag) {
    const Inner inner(key, nonce);
    EVP_CIPHER_CTX* ctx = thread_ctx();
    int len = 0;
    return EVP_EncryptInit_ex2(ctx, nullptr, inner.key.data(), inner.iv.data(), nullptr) == 1 &&
           EVP_EncryptUpdate(ctx, nullptr, &len, ad.data(), static_cast<int>(ad.size())) == 1 &&
           update(ctx, true, plain.data(), plain.size(), cipher) &&
           EVP_EncryptFinal_ex(ctx, cipher + plain.size(), &len) == 1 &&
           EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, tag) == 1;
}

bool evp_open(const std::uint8_t* key, const std::uint8_t* nonce, std::span<const std::uint8_t> ad,
              std::span<const std::uint8_t> cipher, const std::uint8_t* tag, std::uint8_t* plain) {
    const Inner inner(key, nonce);
    EVP_CIPHER_CTX* ctx = thread_ctx();
    int len = 0;
    std::array<std::uint8_t, 16> t{};
    std::memcpy(t.data(), tag, t.size());  // (SET_TAG takes a non-const pointer)
    // The tag is set before the data: OpenSSL checks it at Final.
    return EVP_DecryptInit_ex2(ctx, nullptr, inner.key.data(), inner.iv.data(), nullptr) == 1 &&
           EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16, t.data()) == 1 &&
           EVP_DecryptUpdate(ctx, nullptr, &len, ad.data(), static_cast<int>(ad.size())) == 1 &&
           update(ctx, false, cipher.data(), cipher.size(), plain) &&
           EVP_DecryptFinal_ex(ctx, plain + cipher.size(), &len) == 1;
}

}  // namespace cdc::crypto::detail
