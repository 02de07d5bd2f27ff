// SPDX-License-Identifier: Apache-2.0
#include "key_slot.hpp"

#include <blake3.h>
#include <sodium.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace cdc::crypto {

namespace {

constexpr std::array<std::uint8_t, 8> kMagic = {'C', 'D', 'C', 'K', 'E', 'Y', '0', '1'};
constexpr std::uint8_t kKdfArgon2id13 = 1;
constexpr std::uint8_t kCipherXChaCha20Poly1305 = 1;
constexpr std::size_t kMaxStoreIdBytes = 64;
constexpr std::size_t kChecksumBytes = 32;
// Every byte but the store id's: magic .. store id length, kdf .. wrapped, checksum.
constexpr std::size_t kFixedBytes = 8 + 4 + 4 + kSlotIdBytes + 8 + 1 + 1 + 8 + 8 + 16 + 1 + kNonceBytes +
                                    MasterKey::kBytes + kTagBytes + kChecksumBytes;

void put_u32(std::vector<std::uint8_t>& v, std::uint32_t x) {
    for (int i = 0; i < 4; ++i) v.push_back(static_cast<std::uint8_t>(x >> (8 * i)));
}
void put_u64(std::vector<std::uint8_t>& v, std::uint64_t x) {
    for (int i = 0; i < 8; ++i) v.push_back(static_cast<std::uint8_t>(x >> (8 * i)));
}

class Reader {
public:
    explicit Reader(std::span<const std::uint8_t> b) : b_(b) {}
    std::span<const std::uint8_t> take(std::size_t n) {
        auto s = b_.subspan(at_, n);  // (the caller checked the total size)
        at_ += n;
        return s;
    }
    std::uint8_t u8() { return take(1)[0]; }
    std::uint32_t u32() {
        std::uint32_t x = 0;
        const auto s = take(4);
        for (std::size_t i = 0; i < 4; ++i) x |= std::uint32_t{s[i]} << (8 * i);
        return x;
    }
    std::uint64_t u64() {
        std::uint64_t x = 0;
        const auto s = take(8);
        for (std::size_t i = 0; i < 8; ++i) x |= std::uint64_t{s[i]} << (8 * i);
        return x;
    }
    template <std::size_t N>
    void into(std::array<std::uint8_t, N>& a) {
        const auto s = take(N);
        std::copy(s.begin(), s.end(), a.begin());
    }
    std::size_t at() const { return at_; }

private:
    std::span<const std::uint8_t> b_;
    std::size_t at_ = 0;
};

std::array<std::uint8_t, kChecksumBytes> checksum(std::span<const std::uint8_t> bytes) {
    blake3_hasher h;
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, bytes.data(), bytes.size());
    std::array<std::uint8_t, kChecksumBytes> out{};
    blake3_hasher_finalize(&h, out.data(), out.size());
    return out;
}

// The serialized slot up to (not including) the wrapped material: the
// associated data of the wrapping.
std::vector<std::uint8_t> header_bytes(const KeySlot& s) {
    std::vector<std::uint8_t> v(kMagic.begin(), kMagic.end());
    put_u32(v, kSlotFormatVersion);
    put_u32(v, s.store_format_version);
    v.insert(v.end(), s.id.begin(), s.id.end());
    put_u64(v, static_cast<std::uint64_t>(s.created));
    v.push_back(static_cast<std::uint8_t>(s.store_id.size()));
    v.insert(v.end(), s.store_id.begin(), s.store_id.end());
    v.push_back(kKdfArgon2id13);
    put_u64(v, s.kdf.opslimit);
    put_u64(v, s.kdf.memlimit);
    v.insert(v.end(), s.salt.begin(), s.salt.end());
    v.push_back(kCipherXChaCha20Poly1305);
    v.insert(v.end(), s.nonce.begin(), s.nonce.end());
    return v;
}

std::string store_id_problem(std::string_view id) {
    if (id.empty() || id.size() > kMaxStoreIdBytes)
        return fmt::format("a store id of {} bytes (1..{})", id.size(), kMaxStoreIdBytes);
    for (const char c : id)
        if (c <= 0x20 || c >= 0x7f) return "a store id that is not printable ASCII";
    return {};
}

// Argon2id of `password` into `out` (32 bytes); throws if it cannot run.
void derive_wrapping_key(std::span<const std::uint8_t> password, const KeySlot& s, SecretBytes& out) {
    ensure_sodium();
    if (crypto_pwhash(out.data(), out.size(), reinterpret_cast<const char*>(password.data()), password.size(),
                      s.salt.data(), s.kdf.opslimit, static_cast<std::size_t>(s.kdf.memlimit),
                      crypto_pwhash_ALG_ARGON2ID13) != 0)
        throw Error(fmt::format("Argon2id with {} MiB of memory failed (out of memory?)", s.kdf.memlimit >> 20));
}

double seconds_of_one_pass(std::uint64_t memlimit) {
    std::array<std::uint8_t, 16> salt{};
    random_bytes(salt);
    std::array<std::uint8_t, 32> out{};
    static constexpr char kPassword[] = "tuning";
    const auto t0 = std::chrono::steady_clock::now();
    if (crypto_pwhash(out.data(), out.size(), kPassword, sizeof kPassword - 1, salt.data(), 1,
                      static_cast<std::size_t>(memlimit), crypto_pwhash_ALG_ARGON2ID13) != 0)
        throw Error(fmt::format("Argon2id with {} MiB of memory failed (out of memory?)", memlimit >> 20));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::uint64_t memory_available() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    std::uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib >> unit)
        if (key == "MemAvailable:") return kib << 10;
    return 0;  // unknown
}

}  // namespace

KdfParams fast_kdf_params_for_tests() noexcept { return {1, kMinMemlimit}; }

KdfParams tune_kdf(std::chrono::duration<double> target) {
    ensure_sodium();
    constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
    // 64 MiB (libsodium's interactive memory), more passes for the time:
    // every store command derives a key first, and its memory counts in the
    // command's peak, which a backup keeps under 100 MB.
    std::uint64_t mem = 64 * kMiB;
    if (const std::uint64_t avail = memory_available(); avail != 0 && avail < 4 * mem)
        mem = std::max<std::uint64_t>(32 * kMiB, std::bit_floor(avail / 4));
    const double want = std::max(target.count(), 0.001);
    double t = seconds_of_one_pass(mem);
    while (t > 2 * want && mem > 32 * kMiB) {
        mem /= 2;
        t = seconds_of_one_pass(mem);
    }
    const double passes = std::floor(want / std::max(t, 1e-6) + 0.5);
    const auto ops = static_cast<std::uint64_t>(std::clamp(passes, 1.0, static_cast<double>(kMaxOpslimit)));
    return {ops, mem};
}

std::optional<KdfParams> kdf_params_from_environment() {
    const char* fast = std::getenv("CDC_TEST_FAST_KDF");
    if (fast != nullptr && std::string_view(fast) == "1") return fast_kdf_params_for_tests();
    return std::nullopt;
}

KdfParams kdf_params_for_new_slot() {
    if (const auto p = kdf_params_from_environment()) return *p;
    return tune_kdf();
}

void check_kdf_params(const KdfParams& p, std::string_view where) {
    if (p.opslimit < 1 || p.opslimit > kMaxOpslimit)
        throw KeySlotError(fmt::format("{}: Argon2id opslimit {} is out of range (1..{})", where, p.opslimit,
                                       kMaxOpslimit));
    if (p.memlimit < kMinMemlimit || p.memlimit > kMaxMemlimit || p.memlimit % 1024 != 0)
        throw KeySlotError(fmt::format("{}: Argon2id memlimit {} is out of range ({}..{} bytes, whole KiB)", where,
                                       p.memlimit, kMinMemlimit, kMaxMemlimit));
}

std::string KeySlot::id_hex() const {
    std::string s;
    for (const std::uint8_t b : id) s += fmt::format("{:02x}", b);
    return s;
}

std::optional<std::array<std::uint8_t, kSlotIdBytes>> parse_slot_id(std::string_view hex) {
    if (hex.size() != 2 * kSlotIdBytes) return std::nullopt;
    std::array<std::uint8_t, kSlotIdBytes> id{};
    for (std::size_t i = 0; i < hex.size(); ++i) {
        const char c = hex[i];
        int v = 0;
        if (c >= '0' && c <= '9') v = c - '0';
        else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
        else return std::nullopt;
        id[i / 2] = static_cast<std::uint8_t>(id[i / 2] | (v << (i % 2 == 0 ? 4 : 0)));
    }
    return id;
}

std::vector<std::uint8_t> serialize(const KeySlot& slot) {
    std::vector<std::uint8_t> v = header_bytes(slot);
    v.insert(v.end(), slot.wrapped.begin(), slot.wrapped.end());
    const auto sum = checksum(v);
    v.insert(v.end(), sum.begin(), sum.end());
    return v;
}

KeySlot parse_key_slot(std::span<const std::uint8_t> bytes, std::string_view name, std::string_view expected_id) {
    auto bad = [&](std::string_view what) { return KeySlotError(fmt::format("key slot '{}': {}", name, what)); };
    if (bytes.size() < kMagic.size() || !std::equal(kMagic.begin(), kMagic.end(), bytes.begin()))
        throw bad("not a key slot (no CDCKEY01 magic)");
    if (bytes.size() < kFixedBytes + 1 || bytes.size() > kFixedBytes + kMaxStoreIdBytes)
        throw bad(fmt::format("{} bytes, not the size of a key slot ({}..{}): truncated or damaged", bytes.size(),
                              kFixedBytes + 1, kFixedBytes + kMaxStoreIdBytes));
    const auto body = bytes.first(bytes.size() - kChecksumBytes);
    const auto sum = checksum(body);
    if (!std::equal(sum.begin(), sum.end(), bytes.begin() + static_cast<std::ptrdiff_t>(body.size())))
        throw bad("damaged (its checksum does not match its bytes)");
    Reader r(bytes);
    r.take(kMagic.size());
    KeySlot s;
    if (const std::uint32_t v = r.u32(); v != kSlotFormatVersion)
        throw bad(fmt::format("slot format version {} (this cdc reads version {})", v, kSlotFormatVersion));
    s.store_format_version = r.u32();
    if (s.store_format_version != kEncryptedStoreFormatVersion)
        throw bad(fmt::format("made for store format {} (this cdc encrypts format {})", s.store_format_version,
                              kEncryptedStoreFormatVersion));
    r.into(s.id);
    if (!expected_id.empty() && s.id_hex() != expected_id)
        throw bad(fmt::format("holds slot id {}, not its name's", s.id_hex()));
    s.created = static_cast<std::int64_t>(r.u64());
    const std::size_t n = r.u8();
    if (bytes.size() != kFixedBytes + n)
        throw bad(fmt::format("{} bytes, but a store id of {} bytes makes {}", bytes.size(), n, kFixedBytes + n));
    const auto sid = r.take(n);
    s.store_id.assign(reinterpret_cast<const char*>(sid.data()), sid.size());
    if (const std::string p = store_id_problem(s.store_id); !p.empty()) throw bad(p);
    if (const std::uint8_t kdf = r.u8(); kdf != kKdfArgon2id13)
        throw bad(fmt::format("unknown key derivation {} (1: Argon2id)", kdf));
    s.kdf.opslimit = r.u64();
    s.kdf.memlimit = r.u64();
    check_kdf_params(s.kdf, fmt::format("key slot '{}'", name));
    r.into(s.salt);
    if (const std::uint8_t c = r.u8(); c != kCipherXChaCha20Poly1305)
        throw bad(fmt::format("unknown wrapping cipher {} (1: XChaCha20-Poly1305)", c));
    r.into(s.nonce);
    r.into(s.wrapped);
    return s;
}

KeySlot wrap_master_key(const MasterKey& key, std::span<const std::uint8_t> password, std::string_view store_id,
                        const KdfParams& kdf, std::int64_t created) {
    if (password.empty()) throw KeyRingError("the password is empty");
    if (const std::string p = store_id_problem(store_id); !p.empty())
        throw KeyRingError(fmt::format("cannot make a key slot for {}", p));
    check_kdf_params(kdf, "new key slot");
    KeySlot s;
    random_bytes(s.id);
    s.created = created;
    s.store_id = store_id;
    s.kdf = kdf;
    random_bytes(s.salt);
    random_bytes(s.nonce);
    SecretBytes wrapping(32);
    derive_wrapping_key(password, s, wrapping);
    const std::vector<std::uint8_t> ad = header_bytes(s);
    crypto_aead_xchacha20poly1305_ietf_encrypt(s.wrapped.data(), nullptr, key.material().data(),
                                               key.material().size(), ad.data(), ad.size(), nullptr, s.nonce.data(),
                                               wrapping.data());
    return s;
}

std::optional<MasterKey> unwrap_master_key(const KeySlot& slot, std::span<const std::uint8_t> password) {
    check_kdf_params(slot.kdf, fmt::format("key slot '{}'", slot.id_hex()));
    SecretBytes wrapping(32);
    derive_wrapping_key(password, slot, wrapping);
    const std::vector<std::uint8_t> ad = header_bytes(slot);
    SecretBytes material(MasterKey::kBytes);
    if (crypto_aead_xchacha20poly1305_ietf_decrypt(material.data(), nullptr, nullptr, slot.wrapped.data(),
                                                   slot.wrapped.size(), ad.data(), ad.size(), slot.nonce.data(),
                                                   wrapping.data()) != 0)
        return std::nullopt;
    return MasterKey::from_material(std::move(material));
}

}  // namespace cdc::crypto
