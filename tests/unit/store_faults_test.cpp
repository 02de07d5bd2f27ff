// SPDX-License-Identifier: Apache-2.0
// cdc::store faults: a flipped byte, a truncated pack, a damaged database, a
// newer format; each found with a message naming the file and the chunk, and
// get never writes a wrong byte to its output.
#include "store_support.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <fstream>

namespace cdc {
namespace {

namespace fs = std::filesystem;
using store::Store;
using store::Writer;

struct Damaged {
    test::TempDir tmp;
    fs::path dir = tmp.path() / "s";
    std::vector<std::uint8_t> good = test::mixed_bytes(400'000, 1);
    std::vector<std::uint8_t> other = test::random_bytes(300'000, 2);
    Damaged() {
        Store s = Store::init(dir, {});
        Writer w(s);
        test::put_bytes(w, "dir/good.bin", good);
        w.commit();
        test::put_bytes(w, "other.bin", other);
        w.commit();
    }
    // Offset of a byte inside the payload of other.bin's 3rd chunk.
    std::pair<store::ChunkId, std::uint64_t> victim() {
        Store s = Store::open(dir);
        std::vector<store::ChunkId> ids;
        s.for_each_chunk("other.bin", [&](const store::ChunkId& id, std::uint32_t) { ids.push_back(id); });
        const auto& id = ids.at(2);
        // Find the record by its id in the pack (records are self-describing).
        const auto at = test::id_offset_in_pack(test::first_pack(dir), id);
        EXPECT_NE(at, std::string::npos);
        return {id, at + 32 + 8 + 100};  // id at header+16, payload at header+56
    }
};

TEST(StoreFaults, FlippedByteFoundByVerifyAndGetNamesFileAndChunk) {
    Damaged d;
    const auto [id, offset] = d.victim();
    test::flip_byte(test::first_pack(d.dir), offset);
    Store s = Store::open(d.dir);
    const auto v = s.verify({});
    ASSERT_FALSE(v.ok());
    ASSERT_EQ(v.damage.size(), 1u);
    EXPECT_NE(v.damage[0].what.find(store::to_hex(id)), std::string::npos) << v.damage[0].what;
    EXPECT_NE(v.damage[0].what.find("other.bin"), std::string::npos) << v.damage[0].what;
    EXPECT_NE(v.damage[0].what.find("checksum"), std::string::npos) << v.damage[0].what;
    EXPECT_FALSE(s.verify(test::full_check()).ok());
    // get: an error naming both, and OUT keeps its old content.
    const auto out = d.tmp.path() / "out.bin";
    { std::ofstream(out) << "old content"; }
    try {
        s.get("other.bin", out);
        FAIL() << "get returned";
    } catch (const store::DamageError& e) {
        EXPECT_NE(std::string(e.what()).find("other.bin"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(store::to_hex(id)), std::string::npos) << e.what();
    }
    EXPECT_EQ(test::read_text(out), "old content");
    for (const auto& e : fs::directory_iterator(d.tmp.path()))
        EXPECT_EQ(e.path().filename().string().find(".cdc-get-"), std::string::npos) << "temp file left";
    // The undamaged file still restores.
    EXPECT_EQ(test::get_bytes(s, "dir/good.bin", d.tmp), d.good);
}

TEST(StoreFaults, FlippedByteInARawPayloadIsFoundToo) {
    // other.bin is random: its chunks are stored raw, so no zstd check helps.
    Damaged d;
    const auto [id, offset] = d.victim();
    Store s = Store::open(d.dir);
    ASSERT_EQ(s.read_chunk(id, true).codec, store::Codec::raw);
    test::flip_byte(test::first_pack(d.dir), offset);
    EXPECT_THROW(s.read_chunk(id, false), store::DamageError);
    EXPECT_THROW(s.get("other.bin", d.tmp.path() / "o"), store::DamageError);
    EXPECT_FALSE(fs::exists(d.tmp.path() / "o"));
}

TEST(StoreFaults, TruncatedPack) {
    Damaged d;
    const auto pack = test::first_pack(d.dir);
    // Cut inside other.bin's last chunk record (the pack ends with the
    // files' catalog records, which get does not read).
    std::vector<store::ChunkId> ids;
    Store::open(d.dir).for_each_chunk("other.bin", [&](const store::ChunkId& id, std::uint32_t) { ids.push_back(id); });
    const auto at = test::id_offset_in_pack(pack, ids.back());  // (the id is 16 bytes into its record)
    ASSERT_NE(at, std::string::npos);
    fs::resize_file(pack, at + 40 + 100);
    Store s = Store::open(d.dir);
    const auto v = s.verify({});
    ASSERT_FALSE(v.ok());
    bool named = false;
    for (const auto& p : v.damage) named = named || p.what.find("truncated") != std::string::npos;
    EXPECT_TRUE(named);
    try {
        s.get("other.bin", d.tmp.path() / "o");
        FAIL() << "get returned";
    } catch (const store::DamageError& e) {
        EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(d.tmp.path() / "o"));
}

TEST(StoreFaults, MissingPack) {
    Damaged d;
    fs::remove(test::first_pack(d.dir));
    Store s = Store::open(d.dir);
    EXPECT_FALSE(s.verify({}).ok());
    EXPECT_THROW(s.get("dir/good.bin", d.tmp.path() / "o"), store::DamageError);
}

TEST(StoreFaults, TruncatedOrGarbledDatabase) {
    for (const bool garble : {false, true}) {
        Damaged d;
        const auto db = d.dir / "index.db";
        ASSERT_FALSE(fs::exists(d.dir / "index.db-wal") && fs::file_size(d.dir / "index.db-wal") > 0);
        if (garble) {
            for (std::uint64_t off = 4096; off < fs::file_size(db); off += 512) test::flip_byte(db, off);
        } else {
            fs::resize_file(db, fs::file_size(db) / 2);
        }
        // A clear StoreError (damaged database), never a crash or a wrong byte.
        try {
            Store s = Store::open(d.dir);
            const auto v = s.verify({});
            EXPECT_FALSE(v.ok());
            s.get("dir/good.bin", d.tmp.path() / "o");
            EXPECT_EQ(test::read_bytes(d.tmp.path() / "o"), d.good);  // if it did restore, then exactly
        } catch (const store::StoreError& e) {
            EXPECT_NE(std::string(e.what()).find("index.db"), std::string::npos) << e.what();
        }
    }
}

TEST(StoreFaults, NewerFormatIsRefusedUntouched) {
    Damaged d;
    {
        std::ofstream(d.dir / "cdc-store") << "cdc-store\nformat 3\n";
    }
    const auto before = fs::last_write_time(d.dir / "index.db");
    try {
        Store::open(d.dir);
        FAIL() << "opened";
    } catch (const store::VersionError& e) {
        EXPECT_NE(std::string(e.what()).find("format version 3"), std::string::npos) << e.what();
    }
    EXPECT_EQ(fs::last_write_time(d.dir / "index.db"), before);
    // The database's own version counts too.
    {
        std::ofstream(d.dir / "cdc-store") << "cdc-store\nformat 1\n";
    }
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((d.dir / "index.db").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "UPDATE meta SET value = '7' WHERE key = 'format_version'", nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
    EXPECT_THROW(Store::open(d.dir), store::VersionError);
}

TEST(StoreFaults, UncommittedDataIsInvisibleAndReclaimed) {
    Damaged d;
    Store s = Store::open(d.dir);
    const auto before = s.stats();
    {
        Writer w(s);
        test::put_bytes(w, "never", test::random_bytes(2'000'000, 77));
        EXPECT_FALSE(s.find("never"));
        // destroyed without commit (like a killed writer)
    }
    EXPECT_FALSE(s.find("never"));
    const auto v = s.verify(test::full_check());
    EXPECT_TRUE(v.ok());
    s.gc();
    const auto after = s.stats();
    EXPECT_EQ(after.chunks, before.chunks);
    EXPECT_EQ(after.pack_bytes, before.pack_bytes);
    EXPECT_TRUE(s.verify(test::full_check()).ok());
    EXPECT_EQ(test::get_bytes(s, "other.bin", d.tmp), d.other);
}

}  // namespace
}  // namespace cdc
