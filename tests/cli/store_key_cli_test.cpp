// SPDX-License-Identifier: Apache-2.0
// cdc store key list|add|remove|passwd, run as a user runs them, on a
// directory whose key slots the test makes with the library (a whole
// encrypted store: store_encryption_cli_test): password sources, exit codes, round trips,
// damaged slots named, and kill -9 during passwd at random instants.
#include "cli_support.hpp"

#include "key_ring.hpp"  // (src/crypto: to make the first slot and check what opens)

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <random>
#include <thread>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;
using namespace crypto;

constexpr std::string_view kStore = "0123456789abcdef0123456789abcdef";

// Sets an environment variable for the test's lifetime (the tool inherits it).
class EnvVar {
public:
    EnvVar(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
    ~EnvVar() { ::unsetenv(name_); }
    EnvVar(const EnvVar&) = delete;
    EnvVar& operator=(const EnvVar&) = delete;

private:
    const char* name_;
};

std::span<const std::uint8_t> pw(std::string_view p) { return bytes_of(p); }

struct KeyedDir {
    TempDir tmp;
    fs::path dir = tmp.path() / "store";
    MasterKey key = MasterKey::generate();
    std::string first;
    EnvVar fast{"CDC_TEST_FAST_KDF", "1"};  // every slot the tool makes: weakest Argon2id

    KeyedDir() {
        fs::create_directory(dir);
        fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace);
        DirKeySlots storage(dir, DirKeySlots::Mode::create);
        first = create_key_ring(storage, key, kStore, pw("old password"), fast_kdf_params_for_tests());
    }
    // A password file (0600) holding `text`.
    std::string file(const std::string& name, const std::string& text) const {
        const fs::path p = tmp.path() / name;
        std::ofstream(p, std::ios::binary) << text;
        fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
        return p.string();
    }
    // Whether `password` opens the slots now, with the original key.
    bool opens(std::string_view password) const {
        const DirKeySlots storage(dir, DirKeySlots::Mode::read);
        try {
            return open_key_ring(storage, pw(password)).key.material().equals(key.material().span());
        } catch (const WrongPasswordError&) {
            return false;
        }
    }
    std::size_t slots() const { return DirKeySlots(dir, DirKeySlots::Mode::read).list().size(); }
    std::string d() const { return dir.string(); }
};

TEST(StoreKey, ListNeedsNoPassword) {
    KeyedDir k;
    const auto r = run_tool({"store", "key", "list", k.d()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.out.starts_with(k.first + "  ")) << r.out;
    EXPECT_NE(r.out.find("argon2id 1 pass, 8 KiB  store " + std::string(kStore)), std::string::npos) << r.out;
    const auto j = json_of(run_tool({"store", "key", "list", "--json", k.d()}));
    ASSERT_EQ(j["slots"].size(), 1u);
    EXPECT_EQ(j["slots"][0]["id"], k.first);
    EXPECT_EQ(j["slots"][0]["ok"], true);
    EXPECT_EQ(j["slots"][0]["opslimit"], 1);
    EXPECT_EQ(j["slots"][0]["memlimit"], 8192);
    EXPECT_EQ(j["slots"][0]["store_id"], kStore);
    EXPECT_EQ(j["dir"], k.d());
}

TEST(StoreKey, AddThenBothPasswordsOpen) {
    KeyedDir k;
    const auto j = json_of(run_tool({"store", "key", "add", "--json", "--password-file", k.file("old", "old password\n"),
                                     "--new-password-file", k.file("new", "new password\n"), k.d()}));
    EXPECT_EQ(j["opened_with"], k.first);
    EXPECT_EQ(j["slots"], 2);
    EXPECT_EQ(j["added"].get<std::string>().size(), 16u);
    EXPECT_TRUE(k.opens("old password"));
    EXPECT_TRUE(k.opens("new password")) << "the file's trailing newline is not part of the password";
    EXPECT_FALSE(k.opens("new password\n"));
    const auto text = run_tool({"store", "key", "add", "--password-file", k.file("o2", "new password"),
                                "--new-password-file", k.file("n2", "third\r\n"), k.d()});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_TRUE(text.out.starts_with("added key slot ")) << text.out;
    EXPECT_NE(text.out.find("(3 slots)"), std::string::npos) << text.out;
    EXPECT_TRUE(k.opens("third")) << "CR LF ends a line too";
    EXPECT_EQ(run_tool({"store", "key", "add", "-q", "--password-file", k.file("o3", "third"), "--new-password-file",
                        k.file("n3", "fourth"), k.d()})
                  .out,
              "");
}

TEST(StoreKey, AWrongPasswordExits2) {
    KeyedDir k;
    const auto r = run_tool({"store", "key", "add", "--password-file", k.file("bad", "not it"),
                             "--new-password-file", k.file("new", "new"), k.d()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, fmt::format("cdc: error: wrong password: it opens none of the 1 key slot of '{}'\n", k.d()));
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(k.slots(), 1u);
    const auto p = run_tool({"store", "key", "passwd", "--password-file", k.file("bad2", "old passwor"),
                             "--new-password-file", k.file("new2", "x"), k.d()});
    EXPECT_EQ(p.exit_code, 2) << p.err;
    EXPECT_TRUE(k.opens("old password"));
}

TEST(StoreKey, PasswordSourcesInOrder) {
    KeyedDir k;
    const std::string good = k.file("good", "old password"), bad = k.file("bad", "wrong");
    auto add = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = {"store", "key", "add", "--json", "--new-password-file",
                                         k.file("new", "added"), k.d()};
        args.insert(args.end(), extra.begin(), extra.end());
        return run_tool(args);
    };
    {
        EnvVar f("CDC_PASSWORD_FILE", good);
        EXPECT_EQ(add({}).exit_code, 0);
        EXPECT_EQ(add({"--password-file", bad}).exit_code, 2) << "the flag comes first";
    }
    {
        EnvVar p("CDC_PASSWORD", "old password");
        EXPECT_EQ(add({}).exit_code, 0);
        EnvVar f("CDC_PASSWORD_FILE", bad);
        EXPECT_EQ(add({}).exit_code, 2) << "CDC_PASSWORD_FILE comes before CDC_PASSWORD";
    }
    {
        EnvVar p("CDC_PASSWORD", "");
        const auto r = add({});
        EXPECT_EQ(r.exit_code, 2);
        EXPECT_EQ(r.err, "cdc: error: the password from CDC_PASSWORD is empty\n");
    }
    // No source, and standard input is no terminal: refused, sources named.
    const auto none = add({});
    EXPECT_EQ(none.exit_code, 2);
    EXPECT_EQ(none.err, "cdc: error: no password given: use --password-file, CDC_PASSWORD_FILE or CDC_PASSWORD "
                        "(standard input is not a terminal to ask on)\n");
    const auto no_new = run_tool({"store", "key", "add", "--password-file", good, k.d()});
    EXPECT_EQ(no_new.exit_code, 2);
    EXPECT_EQ(no_new.err, "cdc: error: no new password given: use --new-password-file (standard input is not a "
                          "terminal to ask on)\n");
    const auto empty = add({"--password-file", k.file("empty", "\n")});
    EXPECT_EQ(empty.exit_code, 2);
    EXPECT_NE(empty.err.find("is empty"), std::string::npos) << empty.err;
    const auto missing = add({"--password-file", (k.tmp.path() / "absent").string()});
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find("cannot read the password file"), std::string::npos) << missing.err;
    const auto huge = add({"--password-file", k.file("huge", std::string(5000, 'x'))});
    EXPECT_EQ(huge.exit_code, 2);
    EXPECT_NE(huge.err.find("longer than 4096 bytes"), std::string::npos) << huge.err;
    EXPECT_EQ(k.slots(), 3u);
}

TEST(StoreKey, APasswordFileOthersCanReadIsWarnedAbout) {
    KeyedDir k;
    const std::string f = k.file("open", "old password");
    ::chmod(f.c_str(), 0644);
    const auto r = run_tool({"store", "key", "add", "--password-file", f, "--new-password-file", k.file("n", "x"),
                             k.d()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("cdc: warning: the password file '" + f + "' can be read by other users"), std::string::npos)
        << r.err;
}

TEST(StoreKey, RemoveKeepsTheLastSlotAndNeedsAnotherSlotsPassword) {
    KeyedDir k;
    const std::string old_pw = k.file("old", "old password"), new_pw = k.file("new", "second");
    const auto last = run_tool({"store", "key", "remove", "--password-file", old_pw, k.d(), k.first});
    EXPECT_EQ(last.exit_code, 2);
    EXPECT_NE(last.err.find("is the last one"), std::string::npos) << last.err;
    const auto added = json_of(
        run_tool({"store", "key", "add", "--json", "--password-file", old_pw, "--new-password-file", new_pw, k.d()}));
    const std::string second = added["added"];
    const auto self = run_tool({"store", "key", "remove", "--password-file", new_pw, k.d(), second});
    EXPECT_EQ(self.exit_code, 2);
    EXPECT_NE(self.err.find("opens key slot " + second + " itself"), std::string::npos) << self.err;
    const auto bad_id = run_tool({"store", "key", "remove", "--password-file", old_pw, k.d(), "xyz"});
    EXPECT_EQ(bad_id.exit_code, 2);
    EXPECT_NE(bad_id.err.find("'xyz' is not a key slot id"), std::string::npos) << bad_id.err;
    const auto r = json_of(run_tool({"store", "key", "remove", "--json", "--password-file", old_pw, k.d(), second}));
    EXPECT_EQ(r["removed"], second);
    EXPECT_EQ(r["slots"], 1);
    EXPECT_FALSE(k.opens("second"));
    EXPECT_TRUE(k.opens("old password"));
}

TEST(StoreKey, PasswdReplacesTheSlot) {
    KeyedDir k;
    const auto r = run_tool({"store", "key", "passwd", "--password-file", k.file("old", "old password"),
                             "--new-password-file", k.file("new", "brand new"), k.d()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.out.starts_with("changed the password of '" + k.d() + "': key slot ")) << r.out;
    EXPECT_NE(r.out.find("replaces " + k.first), std::string::npos) << r.out;
    EXPECT_FALSE(k.opens("old password"));
    EXPECT_TRUE(k.opens("brand new"));
    EXPECT_EQ(k.slots(), 1u);
}

TEST(StoreKey, ADamagedSlotIsNamed) {
    KeyedDir k;
    const std::string old_pw = k.file("old", "old password");
    ASSERT_EQ(run_tool({"store", "key", "add", "--password-file", old_pw, "--new-password-file",
                        k.file("new", "second"), k.d()})
                  .exit_code,
              0);
    const fs::path slot = k.dir / "keys" / k.first;
    {
        std::fstream f(slot, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(40);
        f.put('\x7f');
    }
    const auto list = run_tool({"store", "key", "list", k.d()});
    EXPECT_EQ(list.exit_code, 4);
    EXPECT_NE(list.out.find(k.first + "  damaged"), std::string::npos) << list.out;
    EXPECT_EQ(list.err, fmt::format("cdc: error: key slot '{}': damaged (its checksum does not match its bytes)\n",
                                    slot.string()));
    // The other password still works, with a warning naming the damaged slot.
    const auto add = run_tool({"store", "key", "add", "--password-file", k.file("s", "second"), "--new-password-file",
                               k.file("t", "third"), k.d()});
    EXPECT_EQ(add.exit_code, 0) << add.err;
    EXPECT_NE(add.err.find("cdc: warning: key slot '" + slot.string() + "': damaged"), std::string::npos) << add.err;
    // The damaged slot's own password: wrong (the damage is named too).
    const auto wrong = run_tool({"store", "key", "add", "--password-file", old_pw, "--new-password-file",
                                 k.file("u", "x"), k.d()});
    EXPECT_EQ(wrong.exit_code, 2);
    EXPECT_NE(wrong.err.find(slot.string()), std::string::npos) << wrong.err;
}

TEST(StoreKey, ADirectoryWithoutSlotsIsAUsageError) {
    TempDir tmp;
    const auto r = run_tool({"store", "key", "list", tmp.path().string()});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, fmt::format("cdc: error: '{}' has no key slots (no keys/ directory)\n", tmp.path().string()));
    const auto absent = run_tool({"store", "key", "list", (tmp.path() / "absent").string()});
    EXPECT_EQ(absent.exit_code, 2);
    EXPECT_EQ(absent.err, fmt::format("cdc: error: '{}' is not a directory: No such file or directory\n",
                                      (tmp.path() / "absent").string()));
}

// The terminal: asked without echo, twice for a new password (a mismatch
// refused), through a pseudo-terminal as a user types.
TEST(StoreKey, TheTerminalIsAskedTwiceForANewPassword) {
    KeyedDir k;
    const std::vector<std::string> add{"store", "key", "add", k.d()};
    std::string screen;
    EXPECT_EQ(run_tool_on_pty(add, {"old password", "typed new", "typed new"}, screen), 0) << screen;
    EXPECT_NE(screen.find("Enter the password: "), std::string::npos) << screen;
    EXPECT_NE(screen.find("Enter the new password again: "), std::string::npos) << screen;
    EXPECT_EQ(screen.find("typed new"), std::string::npos) << "echoed: " << screen;
    EXPECT_EQ(screen.find("old password"), std::string::npos) << "echoed: " << screen;
    EXPECT_TRUE(k.opens("typed new"));
    screen.clear();
    EXPECT_EQ(run_tool_on_pty(add, {"old password", "one", "other"}, screen), 2) << screen;
    EXPECT_NE(screen.find("the two new passwords differ"), std::string::npos) << screen;
    EXPECT_FALSE(k.opens("one"));
    EXPECT_EQ(k.slots(), 2u);
}

// kill -9 at random instants of `cdc store key passwd`: every time, the old
// password or the new one (or both) opens the store with its key, and no
// slot file is left half written.
TEST(StoreKey, KillDuringPasswdLeavesOldOrNewPasswordWorking) {
    KeyedDir k;
    const std::string a = k.file("a", "password A"), b = k.file("b", "password B");
    // Start from A: each round changes the password to the other one.
    ASSERT_EQ(run_tool({"store", "key", "passwd", "--password-file", k.file("o", "old password"),
                        "--new-password-file", a, k.d()})
                  .exit_code,
              0);
    // How long an uninterrupted change takes here (the kills fall inside it).
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(wait_exit(spawn_tool({"store", "key", "passwd", "-q", "--password-file", a, "--new-password-file", b,
                                    k.d()},
                                   {}, {{"CDC_TEST_FAST_KDF", "1"}})),
              0);
    const auto span_us = std::max<long>(
        1000, static_cast<long>(std::chrono::duration_cast<std::chrono::microseconds>(
                                    std::chrono::steady_clock::now() - t0)
                                    .count()));
    bool now_a = false;  // the password that opens it now: B
    std::mt19937_64 rng(36);
    int killed = 0, both = 0;
    for (int round = 0; round < 20; ++round) {
        const std::string& from = now_a ? a : b;
        const std::string& to = now_a ? b : a;
        const pid_t pid = spawn_tool({"store", "key", "passwd", "-q", "--password-file", from, "--new-password-file",
                                      to, k.d()},
                                     {}, {{"CDC_TEST_FAST_KDF", "1"}});
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % static_cast<std::uint64_t>(span_us)));
        ::kill(pid, SIGKILL);
        const int code = wait_exit(pid);
        killed += code == 128 + SIGKILL;
        const bool opens_a = k.opens("password A"), opens_b = k.opens("password B");
        ASSERT_TRUE(opens_a || opens_b) << "round " << round << ": neither password opens the store";
        both += opens_a && opens_b;
        const std::size_t slots = k.slots();
        EXPECT_GE(slots, 1u);
        EXPECT_LE(slots, 2u);
        // Every slot file present parses (a killed write never becomes a slot).
        const DirKeySlots storage(k.dir, DirKeySlots::Mode::read);
        for (const auto& s : list_key_slots(storage)) EXPECT_EQ(s.problem, "") << "round " << round;
        // Back to one slot, for the next round: remove the other password's slot.
        if (opens_a && opens_b) {
            DirKeySlots w(k.dir, DirKeySlots::Mode::write);
            const auto keep_a = open_key_ring(w, pw("password A"));
            const auto drop_b = open_key_ring(w, pw("password B"));
            remove_key_slot(w, drop_b.slot_id, pw("password A"));
            (void)keep_a;
            now_a = true;
        } else {
            now_a = opens_a;
        }
    }
    RecordProperty("killed", killed);
    RecordProperty("both", both);
    std::cout << "kill -9 rounds: " << killed << " of 20 killed before exiting, " << both
              << " left both passwords working\n";
}

}  // namespace
}  // namespace cdc::test
