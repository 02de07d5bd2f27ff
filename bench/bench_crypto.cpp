// SPDX-License-Identifier: Apache-2.0
// Encryption primitives of the store (src/crypto), per record of 4..64 KiB
// (the sizes of compressed chunks): seal + open under XChaCha20-Poly1305 by
// libsodium and by OpenSSL's EVP (the Sealer's two backends, the same
// bytes), against AES-256-GCM (OpenSSL's EVP; libsodium's AES-NI code) and
// the keyed BLAKE3 id of the same bytes; and a put's chunk ids, plain and
// keyed, batched. The rates count the plain bytes once per seal + open pair.
// Run: build-bench/bench/cdc_bench --benchmark_filter=crypto
#include "master_key.hpp"
#include "seal.hpp"

#include "chunked_corpus.hpp"

#include <cdc/cdc.hpp>

#include <openssl/evp.h>
#include <sodium.h>

#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

namespace {

using cdc::crypto::AeadBackend;
using cdc::crypto::SealKind;

std::vector<std::uint8_t> bytes(std::size_t n) {
    std::vector<std::uint8_t> v(n);
    randombytes_buf(v.data(), v.size());
    return v;
}

void seal_open(benchmark::State& state, AeadBackend backend) {
    const auto key = bytes(32), id = bytes(32), header = bytes(56);
    const cdc::crypto::Sealer s(key, backend);
    const auto plain = bytes(static_cast<std::size_t>(state.range(0)));
    std::vector<std::uint8_t> sealed(plain.size() + cdc::crypto::kSealOverhead), back(plain.size());
    for (auto _ : state) {
        s.seal(SealKind::record, id, header, plain, sealed);
        s.open(SealKind::record, id, header, sealed, back);
        benchmark::DoNotOptimize(back.data());
    }
    state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_crypto_xchacha_sodium(benchmark::State& state) { seal_open(state, AeadBackend::sodium); }
void BM_crypto_xchacha_openssl(benchmark::State& state) { seal_open(state, AeadBackend::openssl); }

// AES-256-GCM with a 96-bit nonce, through EVP (its AES-NI / VAES code).
void BM_crypto_aes256gcm_openssl(benchmark::State& state) {
    const auto key = bytes(32), ad = bytes(32 + 56);
    const auto plain = bytes(static_cast<std::size_t>(state.range(0)));
    std::vector<std::uint8_t> sealed(plain.size()), back(plain.size());
    std::array<std::uint8_t, 12> iv{};
    std::array<std::uint8_t, 16> tag{};
    EVP_CIPHER* gcm = EVP_CIPHER_fetch(nullptr, "AES-256-GCM", nullptr);
    std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)> ctx(EVP_CIPHER_CTX_new(), EVP_CIPHER_CTX_free);
    const int n = static_cast<int>(plain.size());
    for (auto _ : state) {
        randombytes_buf(iv.data(), iv.size());
        int len = 0;
        bool ok = EVP_EncryptInit_ex2(ctx.get(), gcm, key.data(), iv.data(), nullptr) == 1 &&
                  EVP_EncryptUpdate(ctx.get(), nullptr, &len, ad.data(), static_cast<int>(ad.size())) == 1 &&
                  EVP_EncryptUpdate(ctx.get(), sealed.data(), &len, plain.data(), n) == 1 &&
                  EVP_EncryptFinal_ex(ctx.get(), sealed.data() + n, &len) == 1 &&
                  EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_GET_TAG, 16, tag.data()) == 1;
        ok = ok && EVP_DecryptInit_ex2(ctx.get(), gcm, key.data(), iv.data(), nullptr) == 1 &&
             EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_AEAD_SET_TAG, 16, tag.data()) == 1 &&
             EVP_DecryptUpdate(ctx.get(), nullptr, &len, ad.data(), static_cast<int>(ad.size())) == 1 &&
             EVP_DecryptUpdate(ctx.get(), back.data(), &len, sealed.data(), n) == 1 &&
             EVP_DecryptFinal_ex(ctx.get(), back.data() + n, &len) == 1;
        if (!ok) throw std::runtime_error("AES-256-GCM failed");
        benchmark::DoNotOptimize(back.data());
    }
    EVP_CIPHER_free(gcm);
    state.SetBytesProcessed(state.iterations() * state.range(0));
}

// libsodium's AES-256-GCM (AES-NI + PCLMUL, no VAES).
void BM_crypto_aes256gcm_sodium(benchmark::State& state) {
    if (sodium_init() < 0 || crypto_aead_aes256gcm_is_available() == 0) {
        state.SkipWithError("no AES-NI");
        return;
    }
    const auto key = bytes(32), ad = bytes(32 + 56);
    const auto plain = bytes(static_cast<std::size_t>(state.range(0)));
    std::vector<std::uint8_t> sealed(plain.size()), back(plain.size());
    std::array<std::uint8_t, 12> iv{};
    std::array<std::uint8_t, 16> tag{};
    for (auto _ : state) {
        randombytes_buf(iv.data(), iv.size());
        crypto_aead_aes256gcm_encrypt_detached(sealed.data(), tag.data(), nullptr, plain.data(), plain.size(),
                                               ad.data(), ad.size(), nullptr, iv.data(), key.data());
        if (crypto_aead_aes256gcm_decrypt_detached(back.data(), nullptr, sealed.data(), sealed.size(), tag.data(),
                                                   ad.data(), ad.size(), iv.data(), key.data()) != 0)
            throw std::runtime_error("AES-256-GCM failed");
        benchmark::DoNotOptimize(back.data());
    }
    state.SetBytesProcessed(state.iterations() * state.range(0));
}

// The keyed id of the same bytes (one BLAKE3 per record, not batched).
void BM_crypto_keyed_id(benchmark::State& state) {
    const auto key = cdc::crypto::MasterKey::generate();
    const auto plain = bytes(static_cast<std::size_t>(state.range(0)));
    for (auto _ : state) benchmark::DoNotOptimize(key.blob_id(plain));
    state.SetBytesProcessed(state.iterations() * state.range(0));
}

// A put's chunk ids: fastcdc's chunks (~9 KiB) of 64 MiB, batched (16
// lanes), plain BLAKE3 as an unencrypted store hashes them against the
// keyed ids of an encrypted one.
using Chunks = cdc::bench::ChunkedCorpus;
const Chunks& chunks() { return cdc::bench::fastcdc_corpus(); }

void BM_crypto_ids_plain_batched(benchmark::State& state) {
    const Chunks& c = chunks();
    std::vector<cdc::Digest> out(c.lengths.size());
    for (auto _ : state) cdc::compute_digests(cdc::DigestKind::blake3, std::as_bytes(std::span(c.data)), c.lengths, out);
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(c.data.size()));
}

void BM_crypto_ids_keyed_batched(benchmark::State& state) {
    const Chunks& c = chunks();
    const auto key = cdc::crypto::MasterKey::generate();
    std::vector<cdc::Digest> out(c.lengths.size());
    for (auto _ : state) key.blob_ids(std::as_bytes(std::span(c.data)), c.lengths, out);
    state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(c.data.size()));
}

BENCHMARK(BM_crypto_ids_plain_batched);
BENCHMARK(BM_crypto_ids_keyed_batched);

#define CDC_RECORD_SIZES ->Arg(4 << 10)->Arg(8 << 10)->Arg(16 << 10)->Arg(32 << 10)->Arg(64 << 10)
BENCHMARK(BM_crypto_xchacha_sodium) CDC_RECORD_SIZES;
BENCHMARK(BM_crypto_xchacha_openssl) CDC_RECORD_SIZES;
BENCHMARK(BM_crypto_aes256gcm_openssl) CDC_RECORD_SIZES;
BENCHMARK(BM_crypto_aes256gcm_sodium) CDC_RECORD_SIZES;
BENCHMARK(BM_crypto_keyed_id) CDC_RECORD_SIZES;

}  // namespace
