// SPDX-License-Identifier: Apache-2.0
// The store's encryption primitives (src/crypto): sealing of records and
// objects (every altered bit, kind, id, context or length detected; the
// OpenSSL and libsodium backends give the same bytes), the master key's
// keyed ids, size mask and chunker key, and the secret memory type.
#include "master_key.hpp"
#include "seal.hpp"
#include "seal_evp.hpp"
#include "secret.hpp"

#include "test_support.hpp"

#include <cdc/algorithms.hpp>

#include <blake3.h>
#include <sodium.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <set>
#include <thread>

namespace cdc::test {
namespace {

using crypto::AeadBackend;
using crypto::AuthenticationError;
using crypto::MasterKey;
using crypto::Sealer;
using crypto::SealKind;
using Bytes = std::vector<std::uint8_t>;

Bytes key_of(std::uint64_t seed) { return random_bytes(32, seed); }

const Bytes& record_id() {
    static const Bytes id = random_bytes(32, 77);
    return id;
}

// A record header's bytes stand for the caller's context.
const Bytes& header() {
    static const Bytes h = random_bytes(56, 78);
    return h;
}

std::vector<AeadBackend> backends() {
    EXPECT_TRUE(crypto::detail::evp_aead_available());
    return {AeadBackend::sodium, AeadBackend::openssl};
}

std::string hex(const Bytes& b) {
    std::string s;
    for (const std::uint8_t x : b) s += fmt::format("{:02x}", x);
    return s;
}

std::string backend_name(AeadBackend b) { return b == AeadBackend::sodium ? "sodium" : "openssl"; }

TEST(Seal, RoundTripsEverySizeOnBothBackends) {
    for (const AeadBackend b : backends()) {
        const Sealer s(key_of(1), b);
        EXPECT_EQ(s.backend(), b);
        for (const std::size_t n : {0u, 1u, 15u, 16u, 63u, 64u, 1000u, 8192u, 65536u, 1u << 20}) {
            const Bytes plain = random_bytes(n, n + 1);
            const Bytes sealed = s.seal(SealKind::record, record_id(), header(), plain);
            ASSERT_EQ(sealed.size(), n + crypto::kSealOverhead) << backend_name(b);
            EXPECT_EQ(s.open(SealKind::record, record_id(), header(), sealed), plain) << backend_name(b) << " " << n;
            if (n >= 64) {  // the cipher text is not the plain text
                EXPECT_NE(Bytes(sealed.begin() + crypto::kNonceBytes, sealed.begin() + crypto::kNonceBytes + 64),
                          Bytes(plain.begin(), plain.begin() + 64));
            }
        }
    }
}

// The OpenSSL path is libsodium's XChaCha20-Poly1305-IETF, byte for byte:
// each opens what the other sealed, and libsodium's one-shot function
// opens both with the documented associated data.
TEST(Seal, OpenSslAndLibsodiumAreTheSameAead) {
    backends();
    const Bytes key = key_of(2);
    const Sealer fast(key, AeadBackend::openssl), ref(key, AeadBackend::sodium);
    for (const std::size_t n : {0u, 1u, 100u, 8191u, 65536u}) {
        const Bytes plain = random_bytes(n, 3 + n);
        const Bytes a = fast.seal(SealKind::snapshot, record_id(), header(), plain);
        const Bytes b = ref.seal(SealKind::snapshot, record_id(), header(), plain);
        EXPECT_EQ(ref.open(SealKind::snapshot, record_id(), header(), a), plain);
        EXPECT_EQ(fast.open(SealKind::snapshot, record_id(), header(), b), plain);
        const Bytes ad = crypto::associated_data(SealKind::snapshot, record_id(), header());
        Bytes out(n);
        unsigned long long out_len = 0;
        ASSERT_EQ(crypto_aead_xchacha20poly1305_ietf_decrypt(out.data(), &out_len, nullptr,
                                                             a.data() + crypto::kNonceBytes,
                                                             a.size() - crypto::kNonceBytes, ad.data(), ad.size(),
                                                             a.data(), key.data()),
                  0);
        EXPECT_EQ(out, plain);
    }
}

// A record's short nonce: 16 random bytes carried, the XChaCha20 nonce's
// last 8 zero (libsodium opens it so); it opens only as what it was sealed as.
TEST(Seal, AShortNonceIsTheXChaChaNonceEndingInZeros) {
    for (const AeadBackend b : backends()) {
        const Bytes key = key_of(40);
        const Sealer s(key, b);
        for (const std::size_t n : {0u, 1u, 3000u, 65536u}) {
            const Bytes plain = random_bytes(n, 41 + n);
            Bytes sealed(n + crypto::kShortSealOverhead);
            s.seal(SealKind::record, record_id(), header(), plain, sealed, crypto::kShortNonceBytes);
            Bytes out(n);
            s.open(SealKind::record, record_id(), header(), sealed, out, crypto::kShortNonceBytes);
            EXPECT_EQ(out, plain) << backend_name(b) << " " << n;
            Bytes nonce(crypto::kNonceBytes, 0);
            std::copy_n(sealed.begin(), crypto::kShortNonceBytes, nonce.begin());
            const Bytes ad = crypto::associated_data(SealKind::record, record_id(), header());
            Bytes ref(n);
            ASSERT_EQ(crypto_aead_xchacha20poly1305_ietf_decrypt_detached(
                          ref.data(), nullptr, sealed.data() + crypto::kShortNonceBytes, n,
                          sealed.data() + crypto::kShortNonceBytes + n, ad.data(), ad.size(), nonce.data(), key.data()),
                      0) << backend_name(b);
            EXPECT_EQ(ref, plain);
            // as a full-nonce string it does not open (the sizes would not even agree)
            if (n >= 8) {
                Bytes wrong(n - 8);
                EXPECT_THROW(s.open(SealKind::record, record_id(), header(), sealed, wrong), AuthenticationError);
            }
        }
        Bytes out(10);
        EXPECT_THROW(s.seal(SealKind::record, record_id(), header(), Bytes(10), out, 12), Error);
    }
}

TEST(Seal, TheSamePlainTextSealsDifferentlyEachTime) {
    const Sealer s(key_of(4));
    const Bytes plain = random_bytes(4096, 5);
    std::set<Bytes> seen;
    for (int i = 0; i < 50; ++i) seen.insert(s.seal(SealKind::record, record_id(), header(), plain));
    EXPECT_EQ(seen.size(), 50u) << "a nonce repeated";
}

// Every bit of a sealed record, flipped alone, is detected; so is every bit
// of its id and of its context (the record header) at open.
TEST(Seal, EveryFlippedBitOfTheRecordAndOfItsAssociatedDataIsDetected) {
    for (const AeadBackend b : backends()) {
        const Sealer s(key_of(6), b);
        const Bytes plain = random_bytes(100, 7);
        const Bytes sealed = s.seal(SealKind::record, record_id(), header(), plain);
        std::size_t detected = 0, tried = 0;
        for (std::size_t bit = 0; bit < 8 * sealed.size(); ++bit) {
            Bytes bad = sealed;
            bad[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
            ++tried;
            try {
                (void)s.open(SealKind::record, record_id(), header(), bad);
            } catch (const AuthenticationError&) {
                ++detected;
            }
        }
        for (std::size_t bit = 0; bit < 8 * record_id().size(); ++bit) {
            Bytes id = record_id();
            id[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
            ++tried;
            EXPECT_THROW((void)s.open(SealKind::record, id, header(), sealed), AuthenticationError);
            ++detected;
        }
        for (std::size_t bit = 0; bit < 8 * header().size(); ++bit) {
            Bytes h = header();
            h[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
            ++tried;
            EXPECT_THROW((void)s.open(SealKind::record, record_id(), h, sealed), AuthenticationError);
            ++detected;
        }
        EXPECT_EQ(detected, tried) << backend_name(b);
        EXPECT_EQ(tried, 8 * (140 + 32 + 56));
    }
}

// Flips spread over a larger record (every 61st bit: all positions mod 8).
TEST(Seal, FlippedBitsOfALargeRecordAreDetected) {
    const Sealer s(key_of(8));
    const Bytes sealed = s.seal(SealKind::record, record_id(), header(), random_bytes(65536, 9));
    for (std::size_t bit = 0; bit < 8 * sealed.size(); bit += 61) {
        Bytes bad = sealed;
        bad[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        EXPECT_THROW((void)s.open(SealKind::record, record_id(), header(), bad), AuthenticationError) << bit;
    }
}

TEST(Seal, AKindCannotBeOpenedAsAnother) {
    const Sealer s(key_of(10));
    const SealKind kinds[] = {SealKind::record, SealKind::snapshot, SealKind::tree, SealKind::catalog,
                              SealKind::metadata};
    const Bytes plain = random_bytes(300, 11);
    for (const SealKind sealed_as : kinds) {
        const Bytes sealed = s.seal(sealed_as, record_id(), header(), plain);
        for (const SealKind opened_as : kinds) {
            if (opened_as == sealed_as) {
                EXPECT_EQ(s.open(opened_as, record_id(), header(), sealed), plain);
            } else {
                EXPECT_THROW((void)s.open(opened_as, record_id(), header(), sealed), AuthenticationError)
                    << crypto::name_of(sealed_as) << " opened as " << crypto::name_of(opened_as);
            }
        }
    }
}

// The id and the context are length-prefixed: bytes moved from one to the
// other are not the same associated data.
TEST(Seal, IdAndContextDoNotRunIntoEachOther) {
    const Sealer s(key_of(12));
    const Bytes sealed = s.seal(SealKind::snapshot, crypto::bytes_of("ab"), crypto::bytes_of("c"), Bytes{1, 2, 3});
    EXPECT_THROW((void)s.open(SealKind::snapshot, crypto::bytes_of("a"), crypto::bytes_of("bc"), sealed),
                 AuthenticationError);
    EXPECT_THROW((void)s.open(SealKind::snapshot, crypto::bytes_of("abc"), {}, sealed), AuthenticationError);
    EXPECT_EQ(s.open(SealKind::snapshot, crypto::bytes_of("ab"), crypto::bytes_of("c"), sealed), (Bytes{1, 2, 3}));
}

TEST(Seal, TruncatedOrExtendedRecordsAreDetectedAndNamed) {
    const Sealer s(key_of(13));
    const Bytes sealed = s.seal(SealKind::record, record_id(), header(), random_bytes(200, 14));
    for (std::size_t n = 0; n < sealed.size(); ++n) {
        const Bytes cut(sealed.begin(), sealed.begin() + static_cast<std::ptrdiff_t>(n));
        try {
            (void)s.open(SealKind::record, record_id(), header(), cut);
            ADD_FAILURE() << "truncated to " << n << " bytes opened";
        } catch (const AuthenticationError& e) {
            const std::string m = e.what();
            EXPECT_TRUE(m.starts_with("record " + hex(record_id()) + ": ")) << m;
            if (n < crypto::kSealOverhead) {
                EXPECT_NE(m.find("truncated"), std::string::npos) << m;
            }
        }
    }
    Bytes longer = sealed;
    longer.push_back(0);
    EXPECT_THROW((void)s.open(SealKind::record, record_id(), header(), longer), AuthenticationError);
}

TEST(Seal, AWrongKeyFailsAndTheOutputIsWiped) {
    const Sealer right(key_of(15)), wrong(key_of(16));
    const Bytes plain(1000, 0xAB);
    const Bytes sealed = right.seal(SealKind::snapshot, crypto::bytes_of("0123abcd"), {}, plain);
    Bytes out(plain.size(), 0x55);
    try {
        wrong.open(SealKind::snapshot, crypto::bytes_of("0123abcd"), {}, sealed, out);
        ADD_FAILURE() << "opened under another key";
    } catch (const AuthenticationError& e) {
        EXPECT_EQ(std::string(e.what()).rfind("snapshot 0123abcd: authentication failed", 0), 0u) << e.what();
    }
    EXPECT_EQ(out, Bytes(plain.size(), 0)) << "what failed to open must not be left in the caller's buffer";
}

TEST(Seal, WrongBufferSizesAreRefused) {
    const Sealer s(key_of(17));
    Bytes out(10);
    EXPECT_THROW(s.seal(SealKind::record, record_id(), {}, Bytes(11), out), Error);
    EXPECT_THROW(Sealer(Bytes(31)), Error);
}

// A Sealer uses OpenSSL's AEAD where OpenSSL has it (it has here).
TEST(Seal, TheDefaultBackendIsOpenSsl) {
    EXPECT_EQ(Sealer(key_of(30)).backend(), AeadBackend::openssl);
    EXPECT_EQ(MasterKey::generate().sealer().backend(), AeadBackend::openssl);
}

// The OpenSSL construction against libsodium's one-shot XChaCha20-Poly1305
// with the same key, nonce and associated data: the same cipher text and
// tag, byte for byte, at every length around ChaCha20's 64-byte blocks and
// Poly1305's 16-byte blocks; each opens the other's.
TEST(Seal, OpenSslGivesLibsodiumsBytesForTheSameNonce) {
    ASSERT_TRUE(crypto::detail::evp_aead_available());
    std::uint64_t seed = 100;
    for (const std::size_t n : {0u, 1u, 15u, 16u, 17u, 63u, 64u, 65u, 4095u, 65536u + 3u}) {
        for (const std::size_t ad_size : {0u, 1u, 17u, 99u}) {
            const Bytes key = random_bytes(32, ++seed), nonce = random_bytes(24, ++seed);
            const Bytes ad = random_bytes(ad_size, ++seed), plain = random_bytes(n, ++seed);
            Bytes c1(n), t1(16), c2, t2(16);
            c2.reserve(n + 1);  // (libsodium declares its output non-null, even for 0 bytes)
            c2.resize(n);
            ASSERT_TRUE(crypto::detail::evp_seal(key.data(), nonce.data(), ad, plain, c1.data(), t1.data()));
            crypto_aead_xchacha20poly1305_ietf_encrypt_detached(c2.data(), t2.data(), nullptr, plain.data(), n,
                                                                ad.data(), ad.size(), nullptr, nonce.data(),
                                                                key.data());
            EXPECT_EQ(hex(c1), hex(c2)) << n << " bytes, " << ad_size << " of associated data";
            EXPECT_EQ(hex(t1), hex(t2)) << n << " bytes, " << ad_size << " of associated data";
            Bytes back(n, 0x5A);
            EXPECT_TRUE(crypto::detail::evp_open(key.data(), nonce.data(), ad, c2, t2.data(), back.data()));
            EXPECT_EQ(back, plain) << n;
        }
    }
}

// Every byte of the cipher text, of the tag and of the associated data,
// altered alone, makes OpenSSL's open fail.
TEST(Seal, OpenSslRefusesEveryAlteredByte) {
    ASSERT_TRUE(crypto::detail::evp_aead_available());
    const Bytes key = random_bytes(32, 40), nonce = random_bytes(24, 41), ad = random_bytes(45, 42);
    for (const std::size_t n : {0u, 17u, 65u}) {
        const Bytes plain = random_bytes(n, 43 + n);
        Bytes cipher(n), tag(16), out(n);
        ASSERT_TRUE(crypto::detail::evp_seal(key.data(), nonce.data(), ad, plain, cipher.data(), tag.data()));
        ASSERT_TRUE(crypto::detail::evp_open(key.data(), nonce.data(), ad, cipher, tag.data(), out.data()));
        for (const std::uint8_t flip : {std::uint8_t{0x01}, std::uint8_t{0x80}}) {
            for (std::size_t i = 0; i < n; ++i) {
                Bytes bad = cipher;
                bad[i] ^= flip;
                EXPECT_FALSE(crypto::detail::evp_open(key.data(), nonce.data(), ad, bad, tag.data(), out.data()))
                    << "cipher byte " << i;
            }
            for (std::size_t i = 0; i < tag.size(); ++i) {
                Bytes bad = tag;
                bad[i] ^= flip;
                EXPECT_FALSE(crypto::detail::evp_open(key.data(), nonce.data(), ad, cipher, bad.data(), out.data()))
                    << "tag byte " << i;
            }
            for (std::size_t i = 0; i < ad.size(); ++i) {
                Bytes bad = ad;
                bad[i] ^= flip;
                EXPECT_FALSE(crypto::detail::evp_open(key.data(), nonce.data(), bad, cipher, tag.data(), out.data()))
                    << "associated data byte " << i;
            }
            for (std::size_t i = 0; i < nonce.size(); ++i) {
                Bytes bad = nonce;
                bad[i] ^= flip;
                EXPECT_FALSE(crypto::detail::evp_open(key.data(), bad.data(), ad, cipher, tag.data(), out.data()))
                    << "nonce byte " << i;
            }
        }
        // A failed open leaves the context fit for the next one.
        EXPECT_TRUE(crypto::detail::evp_open(key.data(), nonce.data(), ad, cipher, tag.data(), out.data()));
        EXPECT_EQ(out, plain);
    }
}

// One Sealer shared by threads that seal and open at once (each thread has
// its own EVP context): every record opens, under libsodium too, to what
// its thread sealed. (The TSan build runs this for races.)
TEST(Seal, OneSealerServesSeveralThreadsAtOnce) {
    const Bytes key = key_of(50);
    const Sealer shared(key);
    ASSERT_EQ(shared.backend(), AeadBackend::openssl);
    const Sealer ref(key, AeadBackend::sodium);
    constexpr int kThreads = 6, kRecords = 150;
    std::vector<int> failures(kThreads, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kRecords; ++i) {
                const std::size_t n = static_cast<std::size_t>((t * 7919 + i * 104729) % 9000);
                const Bytes plain = random_bytes(n, static_cast<std::uint64_t>(t * 1000 + i));
                const Bytes id = random_bytes(32, static_cast<std::uint64_t>(t * 1000 + i + 500000));
                const Bytes sealed = shared.seal(SealKind::record, id, header(), plain);
                if (shared.open(SealKind::record, id, header(), sealed) != plain) ++failures[static_cast<std::size_t>(t)];
                if (ref.open(SealKind::record, id, header(), sealed) != plain) ++failures[static_cast<std::size_t>(t)];
                Bytes bad = sealed;
                bad[bad.size() - 1] ^= 1;
                try {
                    (void)shared.open(SealKind::record, id, header(), bad);
                    ++failures[static_cast<std::size_t>(t)];
                } catch (const AuthenticationError&) {
                }
            }
        });
    }
    for (std::thread& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[static_cast<std::size_t>(t)], 0) << "thread " << t;
}

// ---------------------------------------------------------------- master key

TEST(MasterKey, ThreeDistinctRandomKeys) {
    const MasterKey a = MasterKey::generate(), b = MasterKey::generate();
    EXPECT_EQ(a.material().size(), 96u);
    EXPECT_FALSE(a.material().equals(b.material().span()));
    const Bytes d(a.data_key().begin(), a.data_key().end()), i(a.id_key().begin(), a.id_key().end()),
        c(a.chunker_key().begin(), a.chunker_key().end());
    EXPECT_NE(d, i);
    EXPECT_NE(i, c);
    EXPECT_NE(d, c);
    EXPECT_EQ(Bytes(a.material().data(), a.material().data() + 32), d);
    EXPECT_THROW(MasterKey::from_material(crypto::SecretBytes(95)), Error);
}

TEST(MasterKey, FromMaterialGivesTheSameKeys) {
    const MasterKey a = MasterKey::generate();
    const MasterKey b = MasterKey::from_material(crypto::SecretBytes::copy_of(a.material().span()));
    const Bytes plain = random_bytes(5000, 20);
    EXPECT_EQ(a.blob_id(plain), b.blob_id(plain));
    EXPECT_EQ(a.chunking_key(), b.chunking_key());
    EXPECT_EQ(a.check_value(), b.check_value());
    // b opens what a sealed: the data key is the same.
    EXPECT_EQ(b.sealer().open(SealKind::record, record_id(), {}, a.sealer().seal(SealKind::record, record_id(), {}, plain)),
              plain);
}

// The keyed-id property: the same bytes in two stores with different keys
// get unrelated ids; within one store, equal bytes get equal ids.
TEST(MasterKey, KeyedIdsDifferAcrossKeysAndAgreeWithin) {
    const MasterKey a = MasterKey::generate(), b = MasterKey::generate();
    const Bytes plain = random_bytes(10000, 21);
    EXPECT_EQ(a.blob_id(plain), a.blob_id(Bytes(plain)));
    EXPECT_NE(a.blob_id(plain), b.blob_id(plain));
    // Unrelated: about half the bits differ (256 bits; 5 sigma is 40 bits).
    const auto x = a.blob_id(plain), y = b.blob_id(plain);
    int differ = 0;
    for (std::size_t k = 0; k < x.size(); ++k) differ += std::popcount(static_cast<unsigned>(x[k] ^ y[k]));
    EXPECT_GT(differ, 128 - 40);
    EXPECT_LT(differ, 128 + 40);
    // Neither is the plain BLAKE3 of the bytes; a is BLAKE3 keyed with the id key.
    blake3_hasher h;
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, plain.data(), plain.size());
    crypto::KeyedId unkeyed{};
    blake3_hasher_finalize(&h, unkeyed.data(), unkeyed.size());
    EXPECT_NE(a.blob_id(plain), unkeyed);
    blake3_hasher_init_keyed(&h, a.id_key().data());
    blake3_hasher_update(&h, plain.data(), plain.size());
    crypto::KeyedId keyed{};
    blake3_hasher_finalize(&h, keyed.data(), keyed.size());
    EXPECT_EQ(a.blob_id(plain), keyed);
}

// The batched ids (16 lanes, as put hashes chunks) are the one-by-one ids.
TEST(MasterKey, BatchedIdsAreTheKeyedIds) {
    const MasterKey a = MasterKey::generate();
    std::vector<std::uint32_t> lengths;
    for (std::uint32_t i = 0; i < 300; ++i) lengths.push_back((i * 7919u) % 70000u + (i % 5 == 0 ? 0u : 1u));
    std::size_t total = 0;
    for (const auto n : lengths) total += n;
    const Bytes data = random_bytes(total, 25);
    std::vector<Digest> ids(lengths.size());
    a.blob_ids(std::as_bytes(std::span(data)), lengths, ids);
    std::size_t pos = 0;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
        const auto one = a.blob_id(std::span(data).subspan(pos, lengths[i]));
        ASSERT_EQ(ids[i].size, 32u);
        ASSERT_TRUE(std::equal(one.begin(), one.end(), ids[i].bytes.begin())) << i << ", length " << lengths[i];
        pos += lengths[i];
    }
    std::vector<Digest> few(2);
    EXPECT_THROW(a.blob_ids(std::as_bytes(std::span(data)), lengths, few), Error);
    const std::vector<std::uint32_t> too_long{static_cast<std::uint32_t>(data.size() + 1)};
    EXPECT_THROW(a.blob_ids(std::as_bytes(std::span(data)), too_long, std::span(few).first(1)), Error);
}

TEST(MasterKey, SizeMaskIsItsOwnInverseAndKeyed) {
    const MasterKey a = MasterKey::generate(), b = MasterKey::generate();
    const auto id1 = a.blob_id(random_bytes(100, 22)), id2 = a.blob_id(random_bytes(100, 23));
    for (const std::uint64_t n : {0ull, 1ull, 65536ull, 123456789ull, ~0ull}) {
        EXPECT_EQ(a.mask_size(id1, a.mask_size(id1, n)), n);
    }
    EXPECT_NE(a.size_mask(id1), a.size_mask(id2));
    EXPECT_NE(a.size_mask(id1), b.size_mask(id1));
    EXPECT_NE(a.mask_size(id1, 65536), 65536u);
    // The mask is no part of the id (its own derived key).
    std::uint64_t prefix = 0;
    for (std::size_t i = 0; i < 8; ++i) prefix |= std::uint64_t{id1[i]} << (8 * i);
    EXPECT_NE(a.size_mask(id1), prefix);
}

// The catalog's mask of a whole-file digest: its own inverse, bound to the
// name and the size (a row moved to another name or size unmasks to another
// digest), one per store, and no function of the size mask or the ids.
TEST(MasterKey, DigestMaskIsBoundToNameAndSize) {
    const MasterKey a = MasterKey::generate(), b = MasterKey::generate();
    const auto digest = a.blob_id(random_bytes(100, 25));  // (any 32 bytes)
    auto masked = digest;
    a.mask_digest(masked, "dir/file.bin", 4096);
    EXPECT_NE(masked, digest);
    auto back = masked;
    a.mask_digest(back, "dir/file.bin", 4096);
    EXPECT_EQ(back, digest);
    EXPECT_EQ(a.digest_mask("dir/file.bin", 4096), a.digest_mask("dir/file.bin", 4096));
    EXPECT_NE(a.digest_mask("dir/file.bin", 4096), a.digest_mask("dir/file.bim", 4096));
    EXPECT_NE(a.digest_mask("dir/file.bin", 4096), a.digest_mask("dir/file.bin", 4097));
    EXPECT_NE(a.digest_mask("dir/file.bin", 4096), b.digest_mask("dir/file.bin", 4096));
    // The name's length is hashed before it: a name and a size cannot pass
    // for another name and size whose bytes run on.
    EXPECT_NE(a.digest_mask("a", 0x62), a.digest_mask("ab", 0));
    EXPECT_NE(a.digest_mask("", 0), a.digest_mask(std::string_view("\0", 1), 0));
}

// The chunker key keys kfastcdc: two stores cut the same bytes at unrelated
// places; the derived key is not the raw chunker key.
TEST(MasterKey, ChunkingKeyKeysTheChunker) {
    const MasterKey a = MasterKey::generate(), b = MasterKey::generate();
    const Key ka = a.chunking_key();
    EXPECT_NE(ka, b.chunking_key());
    EXPECT_NE(Bytes(ka.begin(), ka.end()), Bytes(a.chunker_key().begin(), a.chunker_key().end()));
    const Bytes data = random_bytes(1 << 20, 24);
    Options oa, ob;
    oa.key = ka;
    ob.key = b.chunking_key();
    const auto la = lengths_memory(make_cut_finder("kfastcdc", oa), data);
    const auto lb = lengths_memory(make_cut_finder("kfastcdc", ob), data);
    EXPECT_GT(la.size(), 20u);
    EXPECT_NE(la, lb);
    EXPECT_EQ(la, lengths_memory(make_cut_finder("kfastcdc", oa), data));
}

TEST(MasterKey, CheckValueIsHexAndKeyed) {
    const MasterKey a = MasterKey::generate(), b = MasterKey::generate();
    EXPECT_EQ(a.check_value().size(), 64u);
    EXPECT_EQ(a.check_value().find_first_not_of("0123456789abcdef"), std::string::npos);
    EXPECT_NE(a.check_value(), b.check_value());
}

// ---------------------------------------------------------------- secret bytes

TEST(SecretBytes, HoldsMovesShrinksAndCompares) {
    crypto::SecretBytes s = crypto::SecretBytes::copy_of(crypto::bytes_of("password\n"));
    EXPECT_EQ(s.view(), "password\n");
    s.shrink(8);
    EXPECT_EQ(s.view(), "password");
    EXPECT_EQ(s.data()[8], 0) << "the shrunk tail is wiped";
    EXPECT_TRUE(s.equals(crypto::bytes_of("password")));
    EXPECT_FALSE(s.equals(crypto::bytes_of("passwore")));
    EXPECT_FALSE(s.equals(crypto::bytes_of("passwor")));
    crypto::SecretBytes t = std::move(s);
    EXPECT_TRUE(s.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    EXPECT_EQ(t.view(), "password");
    t = crypto::SecretBytes(4);
    EXPECT_EQ(t.size(), 4u);
    EXPECT_EQ(t.view(), std::string_view("\0\0\0\0", 4));
    EXPECT_TRUE(crypto::SecretBytes().empty());
}

}  // namespace
}  // namespace cdc::test
