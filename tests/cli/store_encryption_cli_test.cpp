// SPDX-License-Identifier: Apache-2.0
// cdc store on an encrypted store (docs/STORE.md "Encryption"), run as a
// user runs it: init encrypts by default and needs a password; put, get,
// gc and verify --full round trips; no file of the store holds the
// contents' distinctive strings; wrong or missing passwords exit 2;
// flipped, swapped, truncated, unsealed and foreign (another store's)
// records are each named by verify --full and refused by get; the same file
// in two stores gets unrelated chunk ids and boundaries; kill -9 during
// `key passwd` leaves the store open to the old or the new password.
#include "cli_support.hpp"

#include <cdc/snapshot.hpp>
#include <cdc/store.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <csignal>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc::test {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kPackHeader = 16;
constexpr std::size_t kRecordHeader = 56;

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

std::vector<std::uint8_t> read_all(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_all_to(const fs::path& p, const std::vector<std::uint8_t>& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// (bytes compared unsigned: a char above 127 must match its byte)
bool contains(const std::vector<std::uint8_t>& hay, std::string_view needle) {
    return std::search(hay.begin(), hay.end(), needle.begin(), needle.end(), [](std::uint8_t h, char n) {
               return h == static_cast<std::uint8_t>(n);
           }) != hay.end();
}

// A corpus with distinctive strings: text that compresses (zstd records)
// and random bytes around a marker (raw records).
constexpr std::string_view kCanaryText = "QUOKKA-LEDGER-7731 the walrus paid 4411 herrings";
constexpr std::string_view kCanaryRaw = "XYLOPHONE-BANSHEE-0x5EED";

std::vector<std::uint8_t> text_corpus(std::size_t n) {
    std::vector<std::uint8_t> out;
    std::mt19937_64 rng(7);
    while (out.size() < n) {
        const std::string line = fmt::format("{} line {} of {}\n", kCanaryText, rng() % 100000, out.size());
        out.insert(out.end(), line.begin(), line.end());
    }
    out.resize(n);
    return out;
}

std::vector<std::uint8_t> random_corpus(std::size_t n, std::uint64_t seed) {
    std::vector<std::uint8_t> out = random_bytes(n, seed);
    for (std::size_t at = 1000; at + kCanaryRaw.size() < n; at += 20000)
        std::copy(kCanaryRaw.begin(), kCanaryRaw.end(), out.begin() + static_cast<std::ptrdiff_t>(at));
    return out;
}

struct EncryptedStore {
    TempDir tmp;
    fs::path dir = tmp.path() / "store";
    EnvVar fast{"CDC_TEST_FAST_KDF", "1"};
    std::string pw = file("pw", "correct horse battery staple");

    std::string file(const std::string& name, const std::string& text) const {
        const fs::path p = tmp.path() / name;
        std::ofstream(p, std::ios::binary) << text;
        fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
        return p.string();
    }
    std::string d() const { return dir.string(); }
    RunResult run(std::vector<std::string> args, const std::string& password_file = {}) const {
        args.insert(args.begin() + 2, {"--password-file", password_file.empty() ? pw : password_file});
        return run_tool(args);
    }
    store::Store open(const std::string& password = "correct horse battery staple") const {
        store::OpenOptions o;
        o.password = [password] { return password; };
        return store::Store::open(dir, o);
    }
    // Each name got back byte for byte, then verify --full finds nothing.
    void expect_restored(std::initializer_list<std::pair<const char*, const std::vector<std::uint8_t>*>> files) const {
        for (const auto& [name, want] : files) {
            const auto out = tmp.path() / "out.bin";
            const auto r = run({"store", "get", d(), name, "-o", out.string()});
            ASSERT_EQ(r.exit_code, 0) << r.err;
            EXPECT_EQ(read_all(out), *want) << name;
        }
        const auto r = run({"store", "verify", "--full", d()});
        EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    }
    std::vector<fs::path> packs() const {
        std::vector<fs::path> out;
        for (const auto& e : fs::directory_iterator(dir / "packs"))
            if (e.path().extension() == ".pack") out.push_back(e.path());
        std::sort(out.begin(), out.end());
        return out;
    }
};

// The records of a pack: (offset, header + payload size).
std::vector<std::pair<std::size_t, std::size_t>> records_of(const std::vector<std::uint8_t>& pack) {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    std::size_t at = kPackHeader;
    while (at + kRecordHeader <= pack.size()) {
        std::uint32_t stored = 0;
        std::memcpy(&stored, pack.data() + at + 12, 4);
        out.emplace_back(at, kRecordHeader + stored);
        at += kRecordHeader + stored;
    }
    return out;
}

// What someone who can write the storage can do: recompute a record's
// (unkeyed) checksum after changing it.
void fix_checksum(std::vector<std::uint8_t>& pack, std::size_t at) {
    std::uint32_t stored = 0;
    std::memcpy(&stored, pack.data() + at + 12, 4);
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, pack.data() + at, 48);
    XXH3_64bits_update(&st, pack.data() + at + kRecordHeader, stored);
    const std::uint64_t sum = XXH3_64bits_digest(&st);
    std::memcpy(pack.data() + at + 48, &sum, 8);
}

TEST(StoreEncryption, InitEncryptsByDefaultAndNeedsAPassword) {
    TempDir tmp;
    ::unsetenv("CDC_PASSWORD");
    ::unsetenv("CDC_PASSWORD_FILE");
    const std::string dir = (tmp.path() / "s").string();
    // No source and no terminal (stdin is not one): a clear usage error.
    auto r = run_tool({"store", "init", dir});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("password"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(fs::path(dir) / "cdc-store"));
    // --no-encryption: a plain store, format 1.
    r = run_tool({"store", "init", "--no-encryption", "--json", dir});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r)["encrypted"], false);
    EXPECT_EQ(json_of(r)["format_version"], 2);  // every new store: files in snapshots
}

// init on a terminal asks for the password twice, without echo; a mismatch
// makes no store.
TEST(StoreEncryption, InitAsksTwiceOnATerminal) {
    EncryptedStore s;
    ::unsetenv("CDC_PASSWORD");
    ::unsetenv("CDC_PASSWORD_FILE");
    std::string screen;
    EXPECT_EQ(run_tool_on_pty({"store", "init", "-q", s.d()}, {"typed one", "typed two"}, screen), 2) << screen;
    EXPECT_NE(screen.find("differ"), std::string::npos) << screen;
    EXPECT_FALSE(fs::exists(s.dir / "cdc-store"));
    screen.clear();
    EXPECT_EQ(run_tool_on_pty({"store", "init", "-q", s.d()}, {"typed pass", "typed pass"}, screen), 0) << screen;
    EXPECT_NE(screen.find("again: "), std::string::npos) << screen;
    EXPECT_EQ(screen.find("typed pass"), std::string::npos) << "echoed: " << screen;
    EXPECT_EQ(s.run({"store", "ls", s.d()}, s.file("typed", "typed pass")).exit_code, 0);
    // Any command asks once on a terminal.
    screen.clear();
    EXPECT_EQ(run_tool_on_pty({"store", "ls", s.d()}, {"typed pass"}, screen), 0) << screen;
    screen.clear();
    EXPECT_EQ(run_tool_on_pty({"store", "ls", s.d()}, {"wrong"}, screen), 2) << screen;
    EXPECT_NE(screen.find("wrong password"), std::string::npos) << screen;
}

// Where OpenSSL provides no ChaCha20-Poly1305 (here: a configuration that
// loads only its base provider, as a FIPS-only one would lack it too), the
// records are sealed and opened by libsodium, the same AEAD: each build
// reads what the other sealed.
TEST(StoreEncryption, WithoutOpenSslsCipherLibsodiumSealsTheSameRecords) {
    EncryptedStore s;
    const std::string base_only = s.file("base-only.cnf",
                                         "openssl_conf = openssl_init\n[openssl_init]\nproviders = provider_sect\n"
                                         "[provider_sect]\nbase = base_sect\n[base_sect]\nactivate = 1\n");
    ASSERT_EQ(s.run({"store", "init", "-q", s.d()}).exit_code, 0);
    const auto text = text_corpus(1'500'000);
    const auto rnd = random_corpus(700'000, 12);
    const auto a = s.tmp.write("a.txt", text);
    const auto b = s.tmp.write("b.bin", rnd);
    auto r = s.run({"store", "put", s.d(), a.string(), "--name", "a.txt"});  // sealed by OpenSSL
    ASSERT_EQ(r.exit_code, 0) << r.err;
    {
        const EnvVar conf("OPENSSL_CONF", base_only);
        r = s.run({"store", "put", s.d(), b.string(), "--name", "b.bin"});  // sealed by libsodium
        ASSERT_EQ(r.exit_code, 0) << r.err;
        const auto out = s.tmp.path() / "a.out";
        r = s.run({"store", "get", s.d(), "a.txt", "-o", out.string()});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(read_all(out), text);
    }
    const auto out = s.tmp.path() / "b.out";
    r = s.run({"store", "get", s.d(), "b.bin", "-o", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_all(out), rnd);
    r = s.run({"store", "verify", "--full", s.d()});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(StoreEncryption, RoundTripAndNothingInClear) {
    EncryptedStore s;
    auto r = s.run({"store", "init", "--json", s.d()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r)["encrypted"], true);
    EXPECT_EQ(json_of(r)["keyed"], true);  // the keyed chunker by default
    EXPECT_EQ(json_of(r)["format_version"], 2);
    const auto text = text_corpus(3'000'000);
    const auto rnd = random_corpus(2'000'000, 11);
    const auto a = s.tmp.write("in/a.txt", text);
    const auto b = s.tmp.write("in/b.bin", rnd);
    r = s.run({"store", "put", s.d(), (s.tmp.path() / "in").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    s.expect_restored({{"a.txt", &text}, {"b.bin", &rnd}});
    // Every record is sealed (bit 1 of the flags byte).
    for (const auto& p : s.packs()) {
        const auto pack = read_all(p);
        for (const auto& [at, n] : records_of(pack)) EXPECT_NE(pack[at + 4] & 2, 0) << p << " at " << at;
    }
    // No file of the store (packs, index, key slots, settings) holds the
    // contents' distinctive strings.
    for (const auto& e : fs::recursive_directory_iterator(s.dir)) {
        if (!e.is_regular_file()) continue;
        const auto bytes = read_all(e.path());
        EXPECT_FALSE(contains(bytes, kCanaryText)) << e.path();
        EXPECT_FALSE(contains(bytes, kCanaryRaw)) << e.path();
        EXPECT_FALSE(contains(bytes, "QUOKKA")) << e.path();
    }
    // A tree put under a name and got by it: its files looked up in batches
    // (Store::get_each) through the masked digests, each checked whole.
    std::map<std::string, std::vector<std::uint8_t>> small;
    for (int i = 0; i < 150; ++i) {
        const std::string name = fmt::format("f{:03}.bin", i);
        small[name] = random_bytes(500 + static_cast<std::size_t>(i) * 37, static_cast<std::uint64_t>(100 + i));
        s.tmp.write("tree/" + name, small[name]);
    }
    r = s.run({"store", "put", s.d(), (s.tmp.path() / "tree").string(), "--name", "tree"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = s.run({"store", "get", s.d(), "tree", "-o", (s.tmp.path() / "tree-out").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const auto& [name, want] : small) EXPECT_EQ(read_all(s.tmp.path() / "tree-out" / name), want) << name;
    // rm + gc (sealed records copied as they are), then get again.
    r = s.run({"store", "rm", s.d(), "a.txt"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = s.run({"store", "gc", s.d()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto out = s.tmp.path() / "out2.bin";
    r = s.run({"store", "get", s.d(), "b.bin", "-o", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_all(out), rnd);
    r = s.run({"store", "verify", "--full", s.d()});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    (void)a;
    (void)b;
}

// Records are sealed in the compact form (a 16-byte nonce, 32 bytes beyond
// the stored form); a store of the first form (its cipher says so) is read
// and written in that form, both kinds of record side by side; a cipher this
// cdc does not know is refused, its name given, nothing read as damage.
TEST(StoreEncryption, RecordFormsFollowTheStoresCipher) {
    EncryptedStore s;
    auto r = s.run({"store", "init", "--json", s.d()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r)["cipher"], "xchacha20-poly1305-r2");
    const auto one = random_corpus(300'000, 21), two = random_corpus(300'000, 22);
    const auto a = s.tmp.write("a.bin", one);
    ASSERT_EQ(s.run({"store", "put", s.d(), a.string(), "--name", "a"}).exit_code, 0);
    auto flags = [&] {
        std::vector<std::uint8_t> out;
        for (const auto& p : s.packs()) {
            const auto pack = read_all(p);
            for (const auto& [at, n] : records_of(pack)) out.push_back(pack[at + 4]);
        }
        return out;
    };
    const auto first = flags();
    ASSERT_FALSE(first.empty());
    for (const std::uint8_t f : first) EXPECT_EQ(f & 6, 6) << "a record not sealed in the compact form";
    auto set_cipher = [&](const std::string& name) {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open((s.dir / "index.db").c_str(), &db), SQLITE_OK);
        const std::string q = fmt::format("UPDATE meta SET value = '{}' WHERE key = 'cipher'", name);
        EXPECT_EQ(sqlite3_exec(db, q.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
        EXPECT_EQ(sqlite3_changes(db), 1);
        sqlite3_close(db);
    };
    set_cipher("xchacha20-poly1305");
    r = s.run({"store", "stats", "--json", s.d()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r)["cipher"], "xchacha20-poly1305");
    const auto b = s.tmp.write("b.bin", two);
    ASSERT_EQ(s.run({"store", "put", s.d(), b.string(), "--name", "b"}).exit_code, 0);
    const auto both = flags();
    ASSERT_GT(both.size(), first.size());
    for (std::size_t i = first.size(); i < both.size(); ++i)
        EXPECT_EQ(both[i] & 6, 2) << "a record of the first form's store sealed otherwise";
    s.expect_restored({{"a", &one}, {"b", &two}});
    set_cipher("xchacha20-poly1305-r9");
    r = s.run({"store", "get", s.d(), "a", "-o", (s.tmp.path() / "out3.bin").string()});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("'xchacha20-poly1305-r9', unknown to this cdc"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("damage"), std::string::npos) << r.err;
}

// Snapshots of an encrypted store: names, link targets and contents live in
// sealed tree and content records only (the catalog holds snapshot ids and
// hashes), and a backup restores byte for byte with its names.
TEST(StoreEncryption, SnapshotsKeepNamesOutOfTheStore) {
    EncryptedStore s;
    auto r = s.run({"store", "init", s.d()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto text = text_corpus(500'000);
    const fs::path src = s.tmp.path() / "tree";
    fs::create_directories(src / "WOMBAT-FOLDER-9913");
    s.tmp.write("tree/WOMBAT-FOLDER-9913/PLATYPUS-NAME-5521.txt", text);
    fs::create_symlink("ECHIDNA-TARGET-3307", src / "link");
    r = s.run({"store", "backup", s.d(), src.string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const auto& e : fs::recursive_directory_iterator(s.dir)) {
        if (!e.is_regular_file()) continue;
        const auto bytes = read_all(e.path());
        for (const std::string_view secret : {std::string_view("WOMBAT"), std::string_view("PLATYPUS"),
                                              std::string_view("ECHIDNA"), std::string_view("QUOKKA")})
            EXPECT_FALSE(contains(bytes, secret)) << e.path() << " holds " << secret;
    }
    const auto out = s.tmp.path() / "out";
    r = s.run({"store", "get", s.d(), "latest:" + src.string(), "-o", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_all(out / "WOMBAT-FOLDER-9913" / "PLATYPUS-NAME-5521.txt"), text);
    EXPECT_EQ(fs::read_symlink(out / "link"), "ECHIDNA-TARGET-3307");
    r = s.run({"store", "verify", "--full", s.d()});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// The catalog keeps whole-file digests masked (bound to the name and the
// size): a known file's plain BLAKE3 is in no file of the store, binary or
// hex, put as a file or in a backup; ls still shows the plain digest.
TEST(StoreEncryption, AKnownFilesDigestIsInNoFileOfTheStore) {
    EncryptedStore s;
    auto r = s.run({"store", "init", s.d()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto known = random_corpus(300'000, 21);
    const auto small = text_corpus(3'000);  // one chunk
    const auto a = s.tmp.write("in/known.bin", known);
    s.tmp.write("in/small.txt", small);
    s.tmp.write("tree/small.txt", small);
    s.tmp.write("tree/known-again.bin", known);
    r = s.run({"store", "put", s.d(), (s.tmp.path() / "in").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = s.run({"store", "backup", s.d(), (s.tmp.path() / "tree").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const store::ChunkId known_id = store::chunk_id_of(std::as_bytes(std::span(known)));
    const store::ChunkId small_id = store::chunk_id_of(std::as_bytes(std::span(small)));
    for (const auto& e : fs::recursive_directory_iterator(s.dir)) {
        if (!e.is_regular_file()) continue;
        const auto bytes = read_all(e.path());
        for (const store::ChunkId& id : {known_id, small_id}) {
            EXPECT_FALSE(contains(bytes, std::string_view(reinterpret_cast<const char*>(id.data()), id.size())))
                << e.path() << " holds a file's BLAKE3";
            EXPECT_FALSE(contains(bytes, store::to_hex(id))) << e.path() << " holds a file's BLAKE3 in hex";
        }
    }
    // What users see is the plain digest, and get checks the bytes against it.
    r = s.run({"store", "ls", "--json", s.d()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, std::string> digests;
    for (const auto& f : json_of(r)) digests[f["name"]] = f["digest"];
    EXPECT_EQ(digests["known.bin"], store::to_hex(known_id));
    EXPECT_EQ(digests["small.txt"], store::to_hex(small_id));
    const auto out = s.tmp.path() / "out.bin";
    r = s.run({"store", "get", s.d(), "known.bin", "-o", out.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_all(out), known);
    // A second put of the same file is found unchanged (the masked digest
    // compares equal), and verify --full passes.
    r = s.run({"store", "put", "--json", s.d(), (s.tmp.path() / "in").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json_of(r)["new_chunks"], 0) << r.out;
    r = s.run({"store", "verify", "--full", s.d()});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST(StoreEncryption, WrongOrMissingPassword) {
    EncryptedStore s;
    ASSERT_EQ(s.run({"store", "init", "-q", s.d()}).exit_code, 0);
    for (const std::vector<std::string>& cmd :
         {std::vector<std::string>{"store", "ls", s.d()}, {"store", "verify", s.d()}, {"store", "stats", s.d()}}) {
        auto r = s.run(cmd, s.file("bad", "not the password"));
        EXPECT_EQ(r.exit_code, 2) << cmd[1] << r.err;
        EXPECT_NE(r.err.find("password"), std::string::npos) << r.err;
        ::unsetenv("CDC_PASSWORD");
        ::unsetenv("CDC_PASSWORD_FILE");
        r = run_tool(cmd);  // no source, no terminal
        EXPECT_EQ(r.exit_code, 2) << cmd[1] << r.err;
        EXPECT_NE(r.err.find("password"), std::string::npos) << r.err;
    }
    // Serving it needs its password too (tests/cli/transfer_encryption_cli_test.cpp serves one).
    auto r = run_tool({"serve", "--store", s.d(), "--listen", "127.0.0.1:0"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("password"), std::string::npos) << r.err;
    // The environment is a source.
    EnvVar env("CDC_PASSWORD_FILE", s.pw);
    EXPECT_EQ(run_tool({"store", "ls", s.d()}).exit_code, 0);
    // The library: PasswordError.
    EXPECT_THROW((void)s.open("wrong"), store::PasswordError);
    EXPECT_THROW((void)store::Store::open(s.dir), store::PasswordError);
}

// The same file into two stores with different passwords: unrelated ids
// (none shared, none the plain BLAKE3), unrelated boundaries.
TEST(StoreEncryption, KeyedIdsAndBoundaries) {
    EncryptedStore s1, s2;
    ASSERT_EQ(s1.run({"store", "init", "-q", s1.d()}).exit_code, 0);
    const std::string pw2 = s2.file("pw2", "another password entirely");
    ASSERT_EQ(s2.run({"store", "init", "-q", s2.d()}, pw2).exit_code, 0);
    const auto data = random_bytes(4'000'000, 5);
    const auto f = s1.tmp.write("f.bin", data);
    ASSERT_EQ(s1.run({"store", "put", s1.d(), f.string(), "--name", "f.bin"}).exit_code, 0);
    ASSERT_EQ(s2.run({"store", "put", s2.d(), f.string(), "--name", "f.bin"}, pw2).exit_code, 0);
    auto chunks = [&](const store::Store& st) {
        std::vector<std::pair<store::ChunkId, std::uint32_t>> out;
        const auto latest = store::find_latest(st, "f.bin");
        EXPECT_TRUE(latest.has_value());
        if (!latest) return out;
        st.for_each_chunk(store::file_manifest(st, latest->snapshot, latest->node.path),
                          [&](const store::ChunkId& id, std::uint32_t n) { out.emplace_back(id, n); });
        return out;
    };
    const auto c1 = chunks(s1.open());
    const auto c2 = chunks(s2.open("another password entirely"));
    ASSERT_GT(c1.size(), 10u);
    ASSERT_GT(c2.size(), 10u);
    std::set<store::ChunkId> ids1;
    std::set<std::uint64_t> ends1;
    std::uint64_t at = 0;
    std::size_t plain_equal = 0;
    for (const auto& [id, n] : c1) {
        ids1.insert(id);
        const auto plain = store::chunk_id_of(std::as_bytes(std::span(data).subspan(at, n)));
        plain_equal += plain == id;
        at += n;
        ends1.insert(at);
    }
    EXPECT_EQ(plain_equal, 0u);
    std::size_t shared_ids = 0, shared_ends = 0;
    at = 0;
    for (const auto& [id, n] : c2) {
        shared_ids += ids1.count(id);
        at += n;
        shared_ends += ends1.count(at);
    }
    EXPECT_EQ(shared_ids, 0u);
    // Only the file's end is certain to be shared; a few coincidences at most.
    EXPECT_LT(shared_ends, 1 + c1.size() / 10);
    // The library's id of a chunk is the keyed one.
    const store::Store st = s1.open();
    const auto first = std::as_bytes(std::span(data).first(c1[0].second));
    EXPECT_EQ(st.chunk_id(first), c1[0].first);
}

// Damage and tampering, each named by verify --full and refused by get.
TEST(StoreEncryption, TamperingIsDetectedAndNamed) {
    EncryptedStore s;
    // Fixed-size raw records: equal sizes, so that records can be swapped.
    ASSERT_EQ(s.run({"store", "init", "-q", "-a", "fixed-v1.0.0", "--avg", "8K", "--zstd-level", "0", s.d()}).exit_code, 0);
    const auto data = random_bytes(200'000, 9);
    const auto f = s.tmp.write("f.bin", data);
    ASSERT_EQ(s.run({"store", "put", s.d(), f.string(), "--name", "f.bin"}).exit_code, 0);
    ASSERT_EQ(s.packs().size(), 1u);
    const fs::path pack_path = s.packs()[0];
    const auto original = read_all(pack_path);
    const auto recs = records_of(original);
    ASSERT_GE(recs.size(), 4u);
    auto id_hex = [&](const std::vector<std::uint8_t>& pack, std::size_t at) {
        std::string hex;
        for (std::size_t i = 0; i < 32; ++i) hex += fmt::format("{:02x}", pack[at + 16 + i]);
        return hex;
    };
    auto expect_named = [&](const std::string& what, const std::string& id, const std::string& reason) {
        auto r = s.run({"store", "verify", "--full", s.d()});
        EXPECT_NE(r.exit_code, 0) << what;
        EXPECT_NE((r.out + r.err).find(id), std::string::npos) << what << ": " << r.out << r.err;
        EXPECT_NE((r.out + r.err).find(reason), std::string::npos) << what << ": " << r.out << r.err;
        const auto out = s.tmp.path() / "out.bin";
        r = s.run({"store", "get", s.d(), "f.bin", "-o", out.string()});
        EXPECT_NE(r.exit_code, 0) << what;
        EXPECT_NE(r.err.find(id), std::string::npos) << what << ": " << r.err;
        write_all_to(pack_path, original);
        EXPECT_EQ(s.run({"store", "verify", "--full", s.d()}).exit_code, 0) << what << ": restored";
    };
    const auto [a_at, a_n] = recs[1];
    const auto [b_at, b_n] = recs[2];
    ASSERT_EQ(a_n, b_n);
    {  // a flipped ciphertext byte, the checksum recomputed: the tag fails
        auto p = original;
        p[a_at + kRecordHeader + 100] ^= 0x40;
        fix_checksum(p, a_at);
        write_all_to(pack_path, p);
        expect_named("flipped", id_hex(original, a_at), "authentication tag");
    }
    {  // two records' payloads swapped, checksums recomputed: the ids are bound
        auto p = original;
        std::copy_n(original.begin() + static_cast<std::ptrdiff_t>(b_at + kRecordHeader), b_n - kRecordHeader,
                    p.begin() + static_cast<std::ptrdiff_t>(a_at + kRecordHeader));
        std::copy_n(original.begin() + static_cast<std::ptrdiff_t>(a_at + kRecordHeader), a_n - kRecordHeader,
                    p.begin() + static_cast<std::ptrdiff_t>(b_at + kRecordHeader));
        fix_checksum(p, a_at);
        fix_checksum(p, b_at);
        write_all_to(pack_path, p);
        expect_named("swapped", id_hex(original, a_at), "authentication tag");
    }
    {  // truncated in the middle of the file's last record (its catalog
       // records, one piece and the settings, follow it)
        const auto [l_at, l_n] = recs[recs.size() - 3];
        std::vector<std::uint8_t> p(original.begin(), original.begin() + static_cast<std::ptrdiff_t>(l_at + l_n / 2));
        write_all_to(pack_path, p);
        expect_named("truncated", id_hex(original, l_at), "truncated");
    }
    {  // a record rewritten unsealed (the sealed and compact flags cleared): refused
        auto p = original;
        p[a_at + 4] &= static_cast<std::uint8_t>(~6u);
        fix_checksum(p, a_at);
        write_all_to(pack_path, p);
        expect_named("unsealed", id_hex(original, a_at), "unsealed record");
    }
    {  // a record of another store (same layout, another key) replayed here
        EncryptedStore other;
        ASSERT_EQ(other.run({"store", "init", "-q", "-a", "fixed-v1.0.0", "--avg", "8K", "--zstd-level", "0", other.d()})
                      .exit_code,
                  0);
        const auto g = other.tmp.write("g.bin", random_bytes(200'000, 10));
        ASSERT_EQ(other.run({"store", "put", other.d(), g.string(), "--name", "g.bin"}).exit_code, 0);
        const auto foreign = read_all(other.packs()[0]);
        const auto frecs = records_of(foreign);
        ASSERT_EQ(frecs[1].second, a_n);
        auto p = original;
        // Its sealed payload under this record's header (the header's id
        // kept): what a writer of the storage could splice in.
        std::copy_n(foreign.begin() + static_cast<std::ptrdiff_t>(frecs[1].first + kRecordHeader), a_n - kRecordHeader,
                    p.begin() + static_cast<std::ptrdiff_t>(a_at + kRecordHeader));
        fix_checksum(p, a_at);
        write_all_to(pack_path, p);
        expect_named("foreign", id_hex(original, a_at), "authentication tag");
    }
}

// kill -9 at random instants of `key passwd`: the store opens afterwards
// with the old password or the new one, and get returns the file.
// Catalog rows swapped or pointed elsewhere by a writer of the storage
// (docs/STORE.md "Threat model"): a chunk row's location moved to another
// record of the same size fails that record's tag (the chunk id is in its
// associated data): verify --full and get name the chunk; two files' names,
// or their chunk lists, swapped: the masked whole-file digests are bound to
// the name and size, so get names the file and restores nothing.
TEST(StoreEncryption, SwappedCatalogRowsAreDetectedAndNamed) {
    EncryptedStore s;
    ASSERT_EQ(s.run({"store", "init", "-q", "-a", "fixed-v1.0.0", "--avg", "8K", "--zstd-level", "0", s.d()}).exit_code, 0);
    const auto one = random_bytes(100'000, 31);
    const auto two = random_bytes(100'000, 32);
    s.tmp.write("in/one.bin", one);
    s.tmp.write("in/two.bin", two);
    ASSERT_EQ(s.run({"store", "put", s.d(), (s.tmp.path() / "in").string()}).exit_code, 0);
    const fs::path db_path = s.dir / "index.db";
    const auto pristine = read_all(db_path);
    auto sql = [&](const std::string& statement) {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
        char* err = nullptr;
        EXPECT_EQ(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
        sqlite3_free(err);
        sqlite3_close(db);
    };
    auto query_hex = [&](const std::string& statement) {
        sqlite3* db = nullptr;
        EXPECT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
        sqlite3_stmt* st = nullptr;
        EXPECT_EQ(sqlite3_prepare_v2(db, statement.c_str(), -1, &st, nullptr), SQLITE_OK);
        std::vector<std::string> out;
        while (sqlite3_step(st) == SQLITE_ROW)
            out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
        sqlite3_finalize(st);
        sqlite3_close(db);
        return out;
    };
    auto get = [&](const std::string& name) {
        const auto out = s.tmp.path() / "out.bin";
        fs::remove(out);
        auto r = s.run({"store", "get", s.d(), name, "-o", out.string()});
        if (r.exit_code == 0) r.out = std::string(reinterpret_cast<const char*>(read_all(out).data()), fs::file_size(out));
        return r;
    };
    auto restore = [&] {
        write_all_to(db_path, pristine);
        for (const char* side : {"-wal", "-shm"}) fs::remove(db_path.string() + side);
        ASSERT_EQ(s.run({"store", "verify", "--full", s.d()}).exit_code, 0);
    };

    // 1. A chunk row pointed at another record of the same stored size.
    const auto ids = query_hex("SELECT lower(hex(id)) FROM chunks ORDER BY pack, offset");
    ASSERT_GE(ids.size(), 4u);
    sql(fmt::format("UPDATE chunks SET (pack, offset) = (SELECT pack, offset FROM chunks WHERE id = x'{}') "
                    "WHERE id = x'{}'",
                    ids[2], ids[1]));
    auto r = s.run({"store", "verify", "--full", s.d()});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE((r.out + r.err).find(ids[1]), std::string::npos) << r.out << r.err;
    std::size_t refused = 0;
    for (const char* name : {"one.bin", "two.bin"}) {
        r = get(name);
        if (r.exit_code != 0) {
            ++refused;
            EXPECT_NE(r.err.find(ids[1]), std::string::npos) << r.err;
        }
    }
    EXPECT_EQ(refused, 1u);  // the file that holds the chunk, and only it
    restore();

    // The two files' content manifests: the rows of their size (the
    // snapshot's header and trees are smaller); their names are keyed ids.
    const auto rows = query_hex("SELECT id FROM manifests WHERE size = 100000 ORDER BY id");
    ASSERT_EQ(rows.size(), 2u);
    const std::string& A = rows[0];
    const std::string& B = rows[1];

    // 2. The two files' names swapped (each row keeps its digest, size and list).
    sql(fmt::format("CREATE TEMP TABLE n AS SELECT id, name FROM manifests WHERE id IN ({0}, {1});"
                    "UPDATE manifests SET name = 'tmp-name' WHERE id = {0};"
                    "UPDATE manifests SET name = (SELECT name FROM n WHERE id = {0}) WHERE id = {1};"
                    "UPDATE manifests SET name = (SELECT name FROM n WHERE id = {1}) WHERE id = {0};",
                    A, B));
    for (const char* name : {"one.bin", "two.bin"}) {
        r = get(name);
        EXPECT_NE(r.exit_code, 0) << name << " restored from another file's row";
        EXPECT_NE(r.err.find(name), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("BLAKE3"), std::string::npos) << r.err;
    }
    restore();

    // 3. Their digests swapped.
    sql(fmt::format("CREATE TEMP TABLE d AS SELECT id, digest FROM manifests WHERE id IN ({0}, {1});"
                    "UPDATE manifests SET digest = (SELECT digest FROM d WHERE d.id <> manifests.id) "
                    "WHERE id IN ({0}, {1});",
                    A, B));
    for (const char* name : {"one.bin", "two.bin"}) EXPECT_NE(get(name).exit_code, 0) << name;
    restore();

    // 4. Their chunk lists swapped.
    sql(fmt::format("UPDATE manifest_chunks SET manifest = -1 WHERE manifest = {0};"
                    "UPDATE manifest_chunks SET manifest = {0} WHERE manifest = {1};"
                    "UPDATE manifest_chunks SET manifest = {1} WHERE manifest = -1;",
                    A, B));
    for (const char* name : {"one.bin", "two.bin"}) {
        r = get(name);
        EXPECT_NE(r.exit_code, 0) << name << " restored with another file's chunks";
        EXPECT_NE(r.err.find(name), std::string::npos) << r.err;
    }
    restore();
    EXPECT_EQ(get("one.bin").out, std::string(one.begin(), one.end()));
    EXPECT_EQ(get("two.bin").out, std::string(two.begin(), two.end()));
}

TEST(StoreEncryption, KillDuringPasswdLeavesTheStoreOpen) {
    EncryptedStore s;
    ASSERT_EQ(s.run({"store", "init", "-q", s.d()}).exit_code, 0);
    const auto data = random_bytes(300'000, 3);
    const auto f = s.tmp.write("f.bin", data);
    ASSERT_EQ(s.run({"store", "put", s.d(), f.string(), "--name", "f.bin"}).exit_code, 0);
    std::mt19937 rng(1234);
    std::vector<std::string> passwords = {"correct horse battery staple"};
    for (int round = 0; round < 6; ++round) {
        const std::string next = fmt::format("password number {}", round);
        const std::string old_file = s.file(fmt::format("old{}", round), passwords.back());
        const std::string new_file = s.file(fmt::format("new{}", round), next);
        const pid_t pid = spawn_tool({"store", "key", "passwd", s.d(), "--password-file", old_file,
                                      "--new-password-file", new_file});
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 40000));
        ::kill(pid, SIGKILL);
        (void)wait_exit(pid);
        passwords.push_back(next);
        // One of the passwords so far opens it, and the file comes back.
        bool opened = false;
        for (const auto& pw : passwords) {
            const std::string pf = s.file("try", pw);
            const auto out = s.tmp.path() / "out.bin";
            const auto r = s.run({"store", "get", s.d(), "f.bin", "-o", out.string()}, pf);
            if (r.exit_code == 0) {
                EXPECT_EQ(read_all(out), data);
                opened = true;
                // Continue from the password that works.
                passwords = {pw};
                break;
            }
            EXPECT_EQ(r.exit_code, 2) << r.err;
        }
        ASSERT_TRUE(opened) << "round " << round;
    }
}

}  // namespace
}  // namespace cdc::test
