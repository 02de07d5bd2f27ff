// SPDX-License-Identifier: Apache-2.0
// Key slots (src/crypto/key_slot.hpp, key_ring.hpp): the strict slot
// format, the wrapping's binding to store, slot and parameters, and the
// key ring in a directory: add / remove / passwd round trips, the last slot
// kept, wrong passwords and damaged slots named, crash-safe files.
#include "key_ring.hpp"
#include "key_slot.hpp"

#include "test_support.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace cdc::test {
namespace {

using namespace crypto;
using Bytes = std::vector<std::uint8_t>;
namespace fs = std::filesystem;

const KdfParams kFast = fast_kdf_params_for_tests();
constexpr std::string_view kStore = "0123456789abcdef0123456789abcdef";

std::span<const std::uint8_t> pw(std::string_view p) { return bytes_of(p); }

Bytes read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& p, const Bytes& b) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

bool same_key(const MasterKey& a, const MasterKey& b) { return a.material().equals(b.material().span()); }

template <class E, class F>
std::string message_of(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    }
    ADD_FAILURE() << "no exception of the expected type";
    return {};
}

// ---------------------------------------------------------------- one slot

TEST(KeySlot, SerializesAndParsesBack) {
    const MasterKey key = MasterKey::generate();
    const KeySlot s = wrap_master_key(key, pw("secret"), kStore, kFast, 1700000000);
    const Bytes bytes = serialize(s);
    EXPECT_EQ(bytes.size(), 235 + kStore.size());
    const KeySlot p = parse_key_slot(bytes, "keys/x", s.id_hex());
    EXPECT_EQ(p.id, s.id);
    EXPECT_EQ(p.created, 1700000000);
    EXPECT_EQ(p.store_id, kStore);
    EXPECT_EQ(p.kdf, kFast);
    EXPECT_EQ(p.salt, s.salt);
    EXPECT_EQ(p.nonce, s.nonce);
    EXPECT_EQ(p.wrapped, s.wrapped);
    EXPECT_EQ(serialize(p), bytes);
    const auto opened = unwrap_master_key(p, pw("secret"));
    ASSERT_TRUE(opened);
    EXPECT_TRUE(same_key(*opened, key));
    EXPECT_FALSE(unwrap_master_key(p, pw("secreT")));
    EXPECT_FALSE(unwrap_master_key(p, pw("secret ")));
    EXPECT_EQ(s.id_hex().size(), 16u);
    EXPECT_TRUE(parse_slot_id(s.id_hex()));
}

TEST(KeySlot, TwoSlotsOfOnePasswordDifferInEveryRandomField) {
    const MasterKey key = MasterKey::generate();
    const KeySlot a = wrap_master_key(key, pw("p"), kStore, kFast, 1), b = wrap_master_key(key, pw("p"), kStore, kFast, 1);
    EXPECT_NE(a.id, b.id);
    EXPECT_NE(a.salt, b.salt);
    EXPECT_NE(a.nonce, b.nonce);
    EXPECT_NE(a.wrapped, b.wrapped);
}

// Every single byte changed anywhere in a slot file makes it unparseable,
// with the file named (a damaged slot is never taken for a wrong password).
TEST(KeySlot, EveryDamagedByteIsAnErrorNamingTheFile) {
    const KeySlot s = wrap_master_key(MasterKey::generate(), pw("x"), kStore, kFast, 5);
    const Bytes good = serialize(s);
    for (std::size_t i = 0; i < good.size(); ++i) {
        Bytes bad = good;
        bad[i] ^= 0x01;
        const std::string m = message_of<KeySlotError>([&] { (void)parse_key_slot(bad, "DIR/keys/slot", s.id_hex()); });
        EXPECT_EQ(m.rfind("key slot 'DIR/keys/slot': ", 0), 0u) << i << ": " << m;
    }
    for (const std::size_t n : {0ul, 7ul, 8ul, 100ul, good.size() - 1}) {
        const Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
        EXPECT_THROW((void)parse_key_slot(cut, "f"), KeySlotError) << n;
    }
    Bytes longer = good;
    longer.push_back(0);
    EXPECT_THROW((void)parse_key_slot(longer, "f"), KeySlotError);
    EXPECT_NE(message_of<KeySlotError>([&] { (void)parse_key_slot(good, "f", "0000000000000000"); }).find("not its name"),
              std::string::npos);
}

// The checksum is no protection against someone who rewrites a slot: the
// wrapping's associated data is. A slot moved to another store, renamed, or
// with its parameters or time changed (checksum recomputed) does not open.
TEST(KeySlot, TheWrappingBindsStoreSlotTimeAndParameters) {
    const KeySlot s = wrap_master_key(MasterKey::generate(), pw("pass"), kStore, kFast, 10);
    ASSERT_TRUE(unwrap_master_key(s, pw("pass")));
    auto rewritten = [](KeySlot t) { return parse_key_slot(serialize(t), "f"); };
    KeySlot t = s;
    t.store_id = "another-store";
    EXPECT_FALSE(unwrap_master_key(rewritten(t), pw("pass")));
    t = s;
    t.id[0] ^= 1;
    EXPECT_FALSE(unwrap_master_key(rewritten(t), pw("pass")));
    t = s;
    t.created = 11;
    EXPECT_FALSE(unwrap_master_key(rewritten(t), pw("pass")));
    t = s;
    t.kdf.memlimit = 16384;  // (the derived key changes too: doubly wrong)
    EXPECT_FALSE(unwrap_master_key(rewritten(t), pw("pass")));
    t = s;
    t.salt[3] ^= 1;
    EXPECT_FALSE(unwrap_master_key(rewritten(t), pw("pass")));
    t = s;
    t.nonce[3] ^= 1;
    EXPECT_FALSE(unwrap_master_key(rewritten(t), pw("pass")));
    t = s;
    t.wrapped[50] ^= 1;
    EXPECT_FALSE(unwrap_master_key(rewritten(t), pw("pass")));
}

TEST(KeySlot, ParametersOutOfBoundsAreRefused) {
    EXPECT_THROW(check_kdf_params({0, kMinMemlimit}, "x"), KeySlotError);
    EXPECT_THROW(check_kdf_params({kMaxOpslimit + 1, kMinMemlimit}, "x"), KeySlotError);
    EXPECT_THROW(check_kdf_params({1, kMinMemlimit - 1024}, "x"), KeySlotError);
    EXPECT_THROW(check_kdf_params({1, kMaxMemlimit + 1024}, "x"), KeySlotError);
    EXPECT_THROW(check_kdf_params({1, kMinMemlimit + 1}, "x"), KeySlotError);
    EXPECT_NO_THROW(check_kdf_params({1, kMinMemlimit}, "x"));
    // A slot whose parameters were raised past the bounds (checksum
    // recomputed) is refused before Argon2id runs.
    KeySlot s = wrap_master_key(MasterKey::generate(), pw("p"), kStore, kFast, 1);
    s.kdf.memlimit = std::uint64_t{64} << 30;
    const std::string m = message_of<KeySlotError>([&] { (void)parse_key_slot(serialize(s), "keys/f"); });
    EXPECT_NE(m.find("memlimit"), std::string::npos) << m;
}

TEST(KeySlot, EmptyPasswordsAndBadStoreIdsAreRefused) {
    const MasterKey key = MasterKey::generate();
    EXPECT_THROW(wrap_master_key(key, pw(""), kStore, kFast, 1), KeyRingError);
    EXPECT_THROW(wrap_master_key(key, pw("p"), "", kFast, 1), KeyRingError);
    EXPECT_THROW(wrap_master_key(key, pw("p"), "has space", kFast, 1), KeyRingError);
    EXPECT_THROW(wrap_master_key(key, pw("p"), std::string(65, 'a'), kFast, 1), KeyRingError);
}

// The tuner's result is within the bounds and usable (its timing is not
// asserted: the machine may be loaded).
TEST(KeySlot, TunedParametersAreUsable) {
    const KdfParams p = tune_kdf(std::chrono::milliseconds(100));
    EXPECT_NO_THROW(check_kdf_params(p, "tuned"));
    EXPECT_GE(p.memlimit, std::uint64_t{32} << 20);
    // (every store command derives a key: its memory counts in the peak of a
    // backup, which stays under 100 MB)
    EXPECT_LE(p.memlimit, std::uint64_t{64} << 20);
    const MasterKey key = MasterKey::generate();
    const KeySlot s = wrap_master_key(key, pw("tuned"), kStore, p, 1);
    const auto back = unwrap_master_key(parse_key_slot(serialize(s), "f"), pw("tuned"));
    ASSERT_TRUE(back);
    EXPECT_TRUE(same_key(*back, key));
}

TEST(KeySlot, FastParametersOnlyThroughTheTestVariable) {
    ::unsetenv("CDC_TEST_FAST_KDF");
    EXPECT_FALSE(kdf_params_from_environment());
    ::setenv("CDC_TEST_FAST_KDF", "yes", 1);  // only "1" counts
    EXPECT_FALSE(kdf_params_from_environment());
    ::setenv("CDC_TEST_FAST_KDF", "1", 1);
    EXPECT_EQ(kdf_params_from_environment(), kFast);
    EXPECT_EQ(kdf_params_for_new_slot(), kFast);
    ::unsetenv("CDC_TEST_FAST_KDF");
}

// ---------------------------------------------------------------- the ring in a directory

struct Ring {
    TempDir tmp;
    fs::path dir = tmp.path() / "store";
    MasterKey key = MasterKey::generate();
    std::string first;
    Ring() {
        fs::create_directory(dir);
        fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
        DirKeySlots storage(dir, DirKeySlots::Mode::create);
        first = create_key_ring(storage, key, kStore, pw("first"), kFast);
    }
};

TEST(KeyRing, CreateOpenAndWrongPassword) {
    Ring r;
    const DirKeySlots storage(r.dir, DirKeySlots::Mode::read);
    const UnlockedKey k = open_key_ring(storage, pw("first"));
    EXPECT_TRUE(same_key(k.key, r.key));
    EXPECT_EQ(k.slot_id, r.first);
    EXPECT_EQ(k.store_id, kStore);
    EXPECT_TRUE(k.damaged.empty());
    const std::string m = message_of<WrongPasswordError>([&] { (void)open_key_ring(storage, pw("First")); });
    EXPECT_EQ(m, "wrong password: it opens none of the 1 key slot of '" + r.dir.string() + "'");
    EXPECT_THROW((void)open_key_ring(storage, pw("first"), "another-store"), KeySlotError);
    EXPECT_NO_THROW((void)open_key_ring(storage, pw("first"), kStore));
    // Files: keys/ takes DIR's rwx bits, a slot its rw bits; no temporary left.
    struct stat st {};
    ASSERT_EQ(::stat((r.dir / "keys").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    ASSERT_EQ(::stat((r.dir / "keys" / r.first).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    EXPECT_EQ(std::distance(fs::directory_iterator(r.dir / "keys"), fs::directory_iterator()), 1);
}

TEST(KeyRing, CreateIsRefusedWhereSlotsExist) {
    Ring r;
    DirKeySlots storage(r.dir, DirKeySlots::Mode::create);
    EXPECT_THROW(create_key_ring(storage, r.key, kStore, pw("again"), kFast), KeyRingError);
}

TEST(KeyRing, ADirectoryWithoutSlotsIsNamed) {
    TempDir tmp;
    const std::string m = message_of<KeyRingError>([&] { DirKeySlots s(tmp.path(), DirKeySlots::Mode::read); });
    EXPECT_NE(m.find("has no key slots"), std::string::npos) << m;
    EXPECT_THROW(DirKeySlots(tmp.path() / "absent", DirKeySlots::Mode::read), KeyRingError);
    // An empty keys/ directory: no slot to open with.
    fs::create_directory(tmp.path() / "keys");
    const DirKeySlots s(tmp.path(), DirKeySlots::Mode::read);
    EXPECT_THROW((void)open_key_ring(s, pw("x")), KeyRingError);
}

TEST(KeyRing, AddRemovePasswdRoundTrips) {
    Ring r;
    DirKeySlots storage(r.dir, DirKeySlots::Mode::write);
    const std::string second = add_key_slot(storage, open_key_ring(storage, pw("first")), pw("second"), kFast);
    EXPECT_EQ(storage.list().size(), 2u);
    EXPECT_TRUE(same_key(open_key_ring(storage, pw("second")).key, r.key));
    EXPECT_EQ(open_key_ring(storage, pw("second")).slot_id, second);
    EXPECT_TRUE(same_key(open_key_ring(storage, pw("first")).key, r.key));
    const std::string m = message_of<WrongPasswordError>([&] { (void)open_key_ring(storage, pw("third")); });
    EXPECT_NE(m.find("none of the 2 key slots"), std::string::npos) << m;

    // passwd: the new password replaces the old one's slot only.
    const PasswordChange c = change_password(storage, pw("first"), pw("renewed"), kFast);
    EXPECT_EQ(c.removed, r.first);
    EXPECT_NE(c.added, r.first);
    EXPECT_EQ(storage.list().size(), 2u);
    EXPECT_THROW((void)open_key_ring(storage, pw("first")), WrongPasswordError);
    EXPECT_TRUE(same_key(open_key_ring(storage, pw("renewed")).key, r.key));
    EXPECT_TRUE(same_key(open_key_ring(storage, pw("second")).key, r.key));

    // remove: with the password of a slot that stays.
    remove_key_slot(storage, second, pw("renewed"));
    EXPECT_EQ(storage.list(), std::vector<std::string>{c.added});
    EXPECT_THROW((void)open_key_ring(storage, pw("second")), WrongPasswordError);
    EXPECT_TRUE(same_key(open_key_ring(storage, pw("renewed")).key, r.key));
}

TEST(KeyRing, TheLastSlotIsNeverRemoved) {
    Ring r;
    DirKeySlots storage(r.dir, DirKeySlots::Mode::write);
    const std::string m = message_of<KeyRingError>([&] { remove_key_slot(storage, r.first, pw("first")); });
    EXPECT_NE(m.find("is the last one"), std::string::npos) << m;
    EXPECT_EQ(storage.list().size(), 1u);
}

TEST(KeyRing, RemoveNeedsThePasswordOfASlotThatStays) {
    Ring r;
    DirKeySlots storage(r.dir, DirKeySlots::Mode::write);
    const std::string second = add_key_slot(storage, open_key_ring(storage, pw("first")), pw("second"), kFast);
    std::string m = message_of<KeyRingError>([&] { remove_key_slot(storage, second, pw("second")); });
    EXPECT_NE(m.find("opens key slot " + second + " itself"), std::string::npos) << m;
    EXPECT_THROW(remove_key_slot(storage, second, pw("neither")), WrongPasswordError);
    m = message_of<KeyRingError>([&] { remove_key_slot(storage, "0123456789abcdef", pw("first")); });
    EXPECT_NE(m.find("no key slot 0123456789abcdef"), std::string::npos) << m;
    EXPECT_EQ(storage.list().size(), 2u);
    remove_key_slot(storage, second, pw("first"));
    EXPECT_EQ(storage.list().size(), 1u);
}

// A damaged slot is named: in the list, in a wrong-password message, and
// when it is the only one; a password of an intact slot still opens.
TEST(KeyRing, ADamagedSlotIsNamedAndTheOthersStillOpen) {
    Ring r;
    std::string second;
    {
        DirKeySlots storage(r.dir, DirKeySlots::Mode::write);
        second = add_key_slot(storage, open_key_ring(storage, pw("first")), pw("second"), kFast);
    }
    const fs::path damaged = r.dir / "keys" / r.first;
    Bytes b = read_file(damaged);
    b[60] ^= 0x80;
    write_file(damaged, b);
    const DirKeySlots storage(r.dir, DirKeySlots::Mode::read);
    const auto list = list_key_slots(storage);
    ASSERT_EQ(list.size(), 2u);
    const auto& bad = list[0].id == r.first ? list[0] : list[1];
    EXPECT_EQ(bad.problem, "key slot '" + damaged.string() + "': damaged (its checksum does not match its bytes)");
    const UnlockedKey k = open_key_ring(storage, pw("second"));
    EXPECT_TRUE(same_key(k.key, r.key));
    ASSERT_EQ(k.damaged.size(), 1u);
    EXPECT_NE(k.damaged[0].find(damaged.string()), std::string::npos);
    const std::string m = message_of<WrongPasswordError>([&] { (void)open_key_ring(storage, pw("first")); });
    EXPECT_NE(m.find("none of the 1 key slot"), std::string::npos) << m;
    EXPECT_NE(m.find(damaged.string()), std::string::npos) << m;
    // Only damaged slots left: that is what the error says.
    fs::remove(r.dir / "keys" / second);
    const std::string only = message_of<KeySlotError>([&] { (void)open_key_ring(storage, pw("first")); });
    EXPECT_NE(only.find("no key slot of '" + r.dir.string() + "' is intact"), std::string::npos) << only;
    EXPECT_NE(only.find(damaged.string()), std::string::npos) << only;
}

TEST(KeyRing, ADamagedSlotCanBeRemovedWithAnotherPassword) {
    Ring r;
    DirKeySlots storage(r.dir, DirKeySlots::Mode::write);
    const std::string second = add_key_slot(storage, open_key_ring(storage, pw("first")), pw("second"), kFast);
    write_file(r.dir / "keys" / second, Bytes(10, 0));
    remove_key_slot(storage, second, pw("first"));
    EXPECT_EQ(storage.list(), std::vector<std::string>{r.first});
}

TEST(KeyRing, RemovingTheOnlyIntactSlotIsRefused) {
    Ring r;
    DirKeySlots storage(r.dir, DirKeySlots::Mode::write);
    const std::string second = add_key_slot(storage, open_key_ring(storage, pw("first")), pw("second"), kFast);
    write_file(r.dir / "keys" / second, Bytes(10, 0));
    const std::string m = message_of<KeyRingError>([&] { remove_key_slot(storage, r.first, pw("first")); });
    EXPECT_NE(m.find("would lock the store"), std::string::npos) << m;
}

TEST(KeyRing, SlotsOfAnotherStoreAreRefused) {
    Ring r;
    {
        TempDir other;
        DirKeySlots os(other.path(), DirKeySlots::Mode::create);
        const std::string id = create_key_ring(os, MasterKey::generate(), "other-store", pw("x"), kFast);
        fs::copy_file(other.path() / "keys" / id, r.dir / "keys" / id);
    }
    const DirKeySlots storage(r.dir, DirKeySlots::Mode::read);
    const std::string m = message_of<KeySlotError>([&] { (void)open_key_ring(storage, pw("first")); });
    EXPECT_NE(m.find("belong to different stores"), std::string::npos) << m;
}

TEST(KeyRing, LinksAndStrangeFilesAreNotFollowed) {
    Ring r;
    fs::create_symlink(r.dir / "keys" / r.first, r.dir / "keys" / "00000000000000aa");
    const DirKeySlots storage(r.dir, DirKeySlots::Mode::read);
    const auto list = list_key_slots(storage);
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[0].problem, "key slot '" + (r.dir / "keys" / "00000000000000aa").string() +
                                   "' is a symbolic link: not opened");
    EXPECT_THROW((void)storage.read("00000000000000aa"), KeySlotError);
    EXPECT_TRUE(same_key(open_key_ring(storage, pw("first")).key, r.key));
    // keys/ itself as a link: refused.
    TempDir t2;
    fs::create_directory_symlink(r.dir / "keys", t2.path() / "keys");
    EXPECT_THROW(DirKeySlots(t2.path(), DirKeySlots::Mode::read), KeySlotError);
}

// What a change killed before its rename leaves (keys/.tmp-<id>) is never
// a slot, and the next change removes it under its lock.
TEST(KeyRing, TemporaryFilesAreIgnoredAndCleanedUp) {
    Ring r;
    write_file(r.dir / "keys" / ".tmp-00112233445566ff", Bytes(100, 1));
    {
        const DirKeySlots storage(r.dir, DirKeySlots::Mode::read);
        EXPECT_EQ(storage.list(), std::vector<std::string>{r.first});
        EXPECT_TRUE(fs::exists(r.dir / "keys" / ".tmp-00112233445566ff"));
    }
    const DirKeySlots writer(r.dir, DirKeySlots::Mode::write);
    EXPECT_FALSE(fs::exists(r.dir / "keys" / ".tmp-00112233445566ff"));
}

TEST(KeyRing, ASlotIsNeverReplaced) {
    Ring r;
    DirKeySlots storage(r.dir, DirKeySlots::Mode::write);
    const Bytes before = read_file(r.dir / "keys" / r.first);
    EXPECT_THROW(storage.write_new(r.first, Bytes(5, 0)), KeyRingError);
    EXPECT_EQ(read_file(r.dir / "keys" / r.first), before);
}

TEST(KeyRing, FilesTakeTheStoreDirectorysBits) {
    TempDir tmp;
    const fs::path dir = tmp.path() / "shared";
    fs::create_directory(dir);
    ::chmod(dir.c_str(), 0770);
    const mode_t old = ::umask(077);
    {
        DirKeySlots storage(dir, DirKeySlots::Mode::create);
        const std::string id = create_key_ring(storage, MasterKey::generate(), kStore, pw("p"), kFast);
        struct stat st {};
        ASSERT_EQ(::stat((dir / "keys").c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 0777, 0770u);
        ASSERT_EQ(::stat((dir / "keys" / id).c_str(), &st), 0);
        EXPECT_EQ(st.st_mode & 0777, 0660u);
    }
    ::umask(old);
}

}  // namespace
}  // namespace cdc::test
