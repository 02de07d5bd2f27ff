// SPDX-License-Identifier: Apache-2.0
// cdc::store against files that change while they are put, names that take
// all of NAME_MAX or more, a crafted index.db (sizes no chunk of the store
// may have), and a group share's umask: each defect found by a hostile probe,
// each refused or handled with the file named.
#include "store_support.hpp"

#include "store/format.hpp"

#include <cdc/source.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <climits>
#include <fstream>
#include <functional>
#include <set>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc {
namespace {

namespace fs = std::filesystem;
using store::Store;
using store::Writer;

// ---------------------------------------------------------------- files that change while read

/// A file opened and read by a SteadyFileReader; `between` runs after the
/// first read (the file changes meanwhile). Returns the error, or "" when
/// it was read to its end.
std::string read_while(const fs::path& p, const std::function<void()>& between) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    struct stat st {};
    EXPECT_EQ(::fstat(fd, &st), 0);
    SteadyFileReader reader(fd, st, p.string());
    std::vector<std::byte> buf(4096);
    std::string error;
    try {
        bool first = true;
        for (;;) {
            const ReadResult r = reader.read(buf);
            if (first && between) between();
            first = false;
            if (r.end) break;
        }
    } catch (const IoError& e) {
        error = e.what();
    }
    ::close(fd);
    return error;
}

/// Sets a file's times in the past: a write now changes its mtime and ctime
/// whatever the clock's granularity.
void age(const fs::path& p) {
    const timespec past[2] = {{1'000'000'000, 0}, {1'000'000'000, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), past, 0), 0);
}

TEST(StoreSafety, ASteadyFileReaderRefusesAFileThatChangedWhileRead) {
    test::TempDir tmp;
    const auto data = test::random_bytes(100'000, 1);
    const auto f = tmp.write("f", data);
    age(f);
    EXPECT_EQ(read_while(f, {}), "");  // unchanged: read to its end
    // Shrunk: the bytes read end early.
    auto e = read_while(f, [&] { fs::resize_file(f, 10'000); });
    EXPECT_NE(e.find("changed while it was read"), std::string::npos) << e;
    EXPECT_NE(e.find("100000 bytes when opened"), std::string::npos) << e;
    // Grown: more bytes than at open.
    tmp.write("f", data);
    e = read_while(f, [&] {
        std::ofstream(f, std::ios::app) << "more";
    });
    EXPECT_NE(e.find("changed while it was read"), std::string::npos) << e;
    // Written in place, same size: the mtime tells.
    tmp.write("f", data);
    age(f);
    e = read_while(f, [&] {
        const int w = ::open(f.c_str(), O_WRONLY | O_CLOEXEC);
        ASSERT_EQ(::pwrite(w, "x", 1, 0), 1);
        ::close(w);
    });
    EXPECT_NE(e.find("changed while it was read"), std::string::npos) << e;
    EXPECT_NE(e.find("written to"), std::string::npos) << e;
}

/// A reader that truncates its file after its first read.
class ShrinkingReader final : public Reader {
public:
    ShrinkingReader(int fd, const struct stat& st, fs::path path) : inner_(fd, st, path.string()), path_(std::move(path)) {}
    ReadResult read(std::span<std::byte> buffer) override {
        const ReadResult r = inner_.read(buffer);
        if (!shrunk_) fs::resize_file(path_, 1000);
        shrunk_ = true;
        return r;
    }

private:
    SteadyFileReader inner_;
    fs::path path_;
    bool shrunk_ = false;
};

TEST(StoreSafety, AFileThatShrinksWhileItIsPutIsNotCommitted) {
    test::TempDir tmp;
    Store s = Store::init(tmp.path() / "s", {});
    const auto data = test::mixed_bytes(12'000'000, 2);  // several read segments
    const auto f = tmp.write("big", data);
    Writer w(s);
    const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    struct stat st {};
    ASSERT_EQ(::fstat(fd, &st), 0);
    EXPECT_THROW(w.put_file({"big", 0644, 1}, Source::reader(std::make_unique<ShrinkingReader>(fd, st, f))), IoError);
    ::close(fd);
    // The writer goes on; nothing of the torn file is visible.
    test::put_bytes(w, "other", data);
    w.commit();
    EXPECT_FALSE(s.find("big").has_value());
    EXPECT_TRUE(s.find("other").has_value());
    EXPECT_TRUE(s.verify(test::full_check()).ok());
}

// ---------------------------------------------------------------- long names

TEST(StoreSafety, NamesUpToNameMaxRestoreAndLongerOnesAreSkippedNotTheTree) {
    test::TempDir tmp;
    Store s = Store::init(tmp.path() / "s", {});
    const auto a = test::random_bytes(20'000, 3);
    const auto b = test::random_bytes(30'000, 4);
    const std::string full(NAME_MAX - 5, 'n');   // 250 bytes: fits, its temporary name with it did not
    const std::string too_long(NAME_MAX + 20, 'x');  // no file system holds it
    {
        Writer w(s);
        test::put_bytes(w, "t/" + full, a);
        test::put_bytes(w, "t/" + too_long, b);
        test::put_bytes(w, "t/" + too_long + "/below", b);  // a directory that cannot be made
        test::put_bytes(w, "t/z", b);
        w.commit();
    }
    const auto out = tmp.path() / "out";
    const auto r = s.get_tree("t", out);
    EXPECT_EQ(r.files, 2u);
    std::set<std::string> skipped;
    for (const auto& k : r.skipped) {
        skipped.insert(k.name);
        EXPECT_NE(k.why.find("too long"), std::string::npos) << k.why;
    }
    EXPECT_EQ(skipped, (std::set<std::string>{"t/" + too_long, "t/" + too_long + "/below"}));
    EXPECT_EQ(test::read_bytes(out / full), a);
    EXPECT_EQ(test::read_bytes(out / "z"), b);
    for (const auto& e : fs::directory_iterator(out))
        EXPECT_EQ(e.path().filename().string().find(".cdc-get-"), std::string::npos) << e.path();
    // A single get of the 250-byte name, into a directory and by path.
    fs::create_directories(tmp.path() / "one");
    s.get("t/" + full, tmp.path() / "one");
    EXPECT_EQ(test::read_bytes(tmp.path() / "one" / full), a);
    s.get("t/" + full, tmp.path() / "one" / full);
    EXPECT_EQ(test::read_bytes(tmp.path() / "one" / full), a);
}

// ---------------------------------------------------------------- a crafted catalog

/// Runs SQL on a store's index.db (what anyone who may write it can do).
void craft(const fs::path& dir, const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "index.db").c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
}

struct Catalog {
    test::TempDir tmp;
    fs::path dir = tmp.path() / "s";
    std::vector<std::uint8_t> good = test::random_bytes(100'000, 5);
    std::vector<std::uint8_t> victim = test::mixed_bytes(200'000, 6);
    store::ChunkId id{};
    Catalog() {
        Store s = Store::init(dir, {});
        Writer w(s);
        test::put_bytes(w, "t/good", good);
        test::put_bytes(w, "t/victim", victim);
        w.commit();
        std::vector<store::ChunkId> ids;
        s.for_each_chunk("t/victim", [&](const store::ChunkId& c, std::uint32_t) { ids.push_back(c); });
        id = ids.at(1);
    }
    void set(const std::string& assignments) {
        craft(dir, fmt::format("UPDATE chunks SET {} WHERE id = x'{}'", assignments, store::to_hex(id)));
    }
};

/// What every reader of the store says about the crafted row: damage naming
/// the file (where it reads one) and the chunk, before anything is allocated
/// for it.
void expect_refused_everywhere(Catalog& c, const std::string& why) {
    SCOPED_TRACE(why);
    Store s = Store::open(c.dir);
    const auto hex = store::to_hex(c.id);
    try {
        s.get("t/victim", c.tmp.path() / "out");
        ADD_FAILURE() << "get did not refuse";
    } catch (const store::DamageError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("'t/victim'"), std::string::npos) << m;
        EXPECT_NE(m.find(hex), std::string::npos) << m;
        EXPECT_NE(m.find(why), std::string::npos) << m;
    }
    EXPECT_FALSE(fs::exists(c.tmp.path() / "out"));
    const auto tree = s.get_tree("t", c.tmp.path() / "tree");
    EXPECT_EQ(tree.files, 1u);
    ASSERT_EQ(tree.skipped.size(), 1u);
    EXPECT_EQ(tree.skipped[0].name, "t/victim");
    EXPECT_EQ(test::read_bytes(c.tmp.path() / "tree" / "good"), c.good);
    EXPECT_THROW(s.read_chunk(c.id, false), store::DamageError);
    EXPECT_THROW(s.read_chunk(c.id, true), store::DamageError);
    for (const bool full : {false, true}) {
        store::VerifyOptions o;
        o.full = full;
        const auto v = s.verify(o);
        ASSERT_EQ(v.damage.size(), 1u) << full;
        EXPECT_NE(v.damage[0].what.find(hex), std::string::npos) << v.damage[0].what;
        EXPECT_NE(v.damage[0].what.find(why), std::string::npos) << v.damage[0].what;
        EXPECT_NE(v.damage[0].what.find("needed by 't/victim'"), std::string::npos) << v.damage[0].what;
    }
}

TEST(StoreSafety, CraftedCatalogSizesAreDamageNotAllocations) {
    {
        Catalog c;  // 2^32 - 1 bytes, both sizes: 12.5 GB allocated before the fix
        c.set("raw_size = 4294967295, stored_size = 4294967295");
        expect_refused_everywhere(c, "raw size of 4294967295 bytes");
    }
    {
        Catalog c;  // a stored size beyond zstd's bound of the raw size
        c.set("stored_size = 3000000000");
        expect_refused_everywhere(c, "stored size of 3000000000 bytes");
    }
    {
        Catalog c;  // a record beyond its pack's committed length
        c.set("offset = 1000000000");
        expect_refused_everywhere(c, "beyond its pack's committed length");
    }
    {
        Catalog c;  // sizes SQLite holds as 64-bit numbers (not cut to 32 bits)
        c.set("raw_size = 4294967296 + 1000, stored_size = 4294967296 + 1000");
        expect_refused_everywhere(c, "raw size of 4294968296");
    }
    {
        Catalog c;  // a pack the index does not have
        c.set("pack = 99");
        expect_refused_everywhere(c, "its pack is not in the index");
    }
    // gc stops at such a row before anything is dropped.
    Catalog c;
    c.set("offset = 1000000000");
    Store s = Store::open(c.dir);
    s.remove(std::vector<std::string>{"t/good"});
    store::GcOptions o;
    o.rewrite_below = 1.0;  // every pack is rewritten
    EXPECT_THROW(s.gc(o), store::DamageError);
    EXPECT_TRUE(s.find("t/victim").has_value());
}

TEST(StoreSafety, ChunksLargerThanTheStoresMaxAreRefused) {
    test::TempDir tmp;
    store::InitOptions init;
    init.chunking.min_size = 1024;
    init.chunking.normal_size = 4096;
    init.chunking.max_size = 16384;
    Store s = Store::init(tmp.path() / "s", init);
    Writer w(s);
    const auto big = test::random_bytes(16385, 7);
    EXPECT_THROW(w.put_chunk(std::as_bytes(std::span(big))), OptionError);
    const auto fits = test::random_bytes(16384, 8);
    EXPECT_TRUE(w.put_chunk(std::as_bytes(std::span(fits))).added);
}

// ---------------------------------------------------------------- a group share

TEST(StoreSafety, PacksOfAGroupShareAreGroupWritableWhateverTheUmask) {
    test::TempDir tmp;
    const auto dir = tmp.path() / "s";
    Store::init(dir, {});
    // The share as STORE.md says to make it: g+rwX on everything, g+s on the directories.
    for (const auto& p : {dir, dir / "packs"}) ASSERT_EQ(::chmod(p.c_str(), 02770), 0);
    for (const auto& f : fs::directory_iterator(dir))
        if (f.is_regular_file()) {
            ASSERT_EQ(::chmod(f.path().c_str(), 0660), 0);
        }
    const mode_t old = ::umask(022);
    {
        Store s = Store::open(dir);
        Writer w(s);
        test::put_bytes(w, "f", test::random_bytes(50'000, 9));
        w.commit();
    }
    ::umask(old);
    const auto pack = test::first_pack(dir);
    EXPECT_EQ(test::mode_of(pack), 0660u) << pack;
}

}  // namespace
}  // namespace cdc

namespace cdc {
namespace {

// A lock taken again inside the process (gc reading snapshot trees under its
// exclusive hold) only counts: flock on the same descriptor would turn the
// exclusive lock shared, and the inner unlock would release it.
TEST(StoreSafety, TheStoreLockNestsWithoutLoweringOrDroppingIt) {
    test::TempDir tmp;
    store::detail::StoreLock lock(tmp.path());
    auto other_can_share = [&] {
        const int fd = ::open((tmp.path() / "lock").c_str(), O_RDONLY | O_CLOEXEC);
        EXPECT_GE(fd, 0);
        const bool ok = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
        ::close(fd);
        return ok;
    };
    lock.lock(true);
    lock.lock(false);
    lock.unlock();
    EXPECT_TRUE(lock.held());
    EXPECT_FALSE(other_can_share());  // still exclusive
    lock.unlock();
    EXPECT_FALSE(lock.held());
    EXPECT_TRUE(other_can_share());
    lock.lock(false);
    EXPECT_THROW(lock.lock(true), store::StoreError);
    lock.unlock();
}

}  // namespace
}  // namespace cdc
