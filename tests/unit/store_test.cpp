// SPDX-License-Identifier: Apache-2.0
// cdc::store: round trips for every algorithm (keyed too), dedup across names
// and versions, the transfer-service calls, rm + gc, keys.
#include "store_support.hpp"

#include "store/dir_packs.hpp"
#include "store/ordered_decoder.hpp"
#include "common/ordered_hasher.hpp"
#include "store/pack_writer.hpp"
#include "store/sqlite_catalog.hpp"

#include <cdc/algorithms.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cdc {
namespace {

namespace fs = std::filesystem;
using store::Store;
using store::Writer;

Key test_key(std::uint8_t seed) {
    Key k;
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::uint8_t>(seed * 31 + i * 7);
    return k;
}

TEST(Store, RoundTripEveryAlgorithmKeyedToo) {
    test::TempDir tmp;
    const auto data = test::mixed_bytes(300'000, 5);
    const std::vector<std::uint8_t> empty;
    const std::vector<std::uint8_t> one{42};
    int n = 0;
    for (const auto& algo : algorithms()) {
        for (const bool keyed : {false, true}) {
            if (keyed ? algo.key == KeyUse::none : algo.key == KeyUse::required) continue;
            SCOPED_TRACE(std::string(algo.name) + (keyed ? " keyed" : ""));
            store::InitOptions init;
            init.algorithm = std::string(algo.name);
            if (keyed) init.chunking.key = test_key(3);
            const fs::path dir = tmp.path() / std::string("s").append(std::to_string(n++));
            Store s = Store::init(dir, init);
            EXPECT_EQ(s.info().profile.keyed, keyed);
            {
                Writer w(s);
                test::put_bytes(w, "data", data);
                test::put_bytes(w, "empty", empty);
                test::put_bytes(w, "one", one);
                w.commit();
            }
            EXPECT_EQ(test::get_bytes(s, "data", tmp), data);
            EXPECT_EQ(test::get_bytes(s, "empty", tmp), empty);
            EXPECT_EQ(test::get_bytes(s, "one", tmp), one);
            const auto m = s.find("data");
            ASSERT_TRUE(m);
            EXPECT_EQ(m->size, data.size());
            EXPECT_EQ(m->algorithm, algo.name);
            EXPECT_EQ(m->mode, 0640u);
            EXPECT_EQ(m->mtime_ns, 1'700'000'000'123'456'789);
            EXPECT_EQ(m->digest, store::chunk_id_of(std::as_bytes(std::span(data))));
            // The chunk list is the library's chunking of the file.
            std::vector<std::uint32_t> sizes;
            s.for_each_chunk("data", [&](const store::ChunkId&, std::uint32_t size) { sizes.push_back(size); });
            const auto expect = test::lengths_memory(s.finder(), data);
            ASSERT_EQ(sizes.size(), expect.size());
            for (std::size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(sizes[i], expect[i]);
            const auto v = s.verify(test::full_check());
            EXPECT_TRUE(v.ok()) << (v.damage.empty() ? "" : v.damage[0].what);
        }
    }
    EXPECT_GE(n, static_cast<int>(algorithms().size()) + 1);
}

TEST(Store, FilesFromDescriptorsAndStreams) {
    test::TempDir tmp;
    Store s = Store::init(tmp.path() / "s", {});
    const auto big = test::mixed_bytes(5'000'000, 8);  // several read segments
    const auto path = tmp.write("big.bin", big);
    {
        Writer w(s);
        store::FileMeta m;
        m.name = "big";
        w.put_file(m, FileSource(path));
        // A reader that returns odd short reads, like a pipe.
        test::ScriptedReader reader(big, {1, 4095, 70000, 0, 1 << 20}, true);
        m.name = "piped";
        w.put_file(m, ReaderSource(reader));
        w.commit();
    }
    EXPECT_EQ(test::get_bytes(s, "big", tmp), big);
    EXPECT_EQ(test::get_bytes(s, "piped", tmp), big);
    EXPECT_EQ(s.find("big")->chunks, s.find("piped")->chunks);
}

// The peer-compatible names take parameters beyond the sizes (restic's
// polynomial, borg's seed and window, fastcdc-rs's level and seed): init
// records them, a reopened store cuts with them, not with the defaults.
TEST(Store, RecordsPeerParameters) {
    test::TempDir tmp;
    const auto data = test::mixed_bytes(400'000, 11);
    struct Case {
        std::string algorithm;
        Options options;
    };
    std::vector<Case> cases(3);
    cases[0].algorithm = "restic-rabin";
    cases[0].options.polynomial = 458649537773299;  // irreducible, degree 48 (compat vectors)
    cases[1].algorithm = "borg-buzhash";
    cases[1].options.seed = 0x12345678;
    cases[1].options.window_size = 63;
    cases[2].algorithm = "fastcdc-rs-v2020";
    cases[2].options.normalization_level = 3;
    cases[2].options.seed = 0xfedcba9876543210;
    int n = 0;
    for (auto& c : cases) {
        ASSERT_NE(find_algorithm(c.algorithm), nullptr) << c.algorithm;
        SCOPED_TRACE(c.algorithm);
        c.options.min_size = 2048;
        c.options.normal_size = 8192;
        c.options.max_size = 65536;
        const fs::path dir = tmp.path() / std::string("p").append(std::to_string(n++));
        {
            store::InitOptions init;
            init.algorithm = c.algorithm;
            init.chunking = c.options;
            Store s = Store::init(dir, init);
            Writer w(s);
            test::put_bytes(w, "data", data);
            w.commit();
        }
        const Store s = Store::open(dir, {});
        const Profile want = resolve_profile(c.algorithm, c.options);
        EXPECT_EQ(s.info().profile.normalization_level, want.normalization_level);
        EXPECT_EQ(s.info().profile.seed, want.seed);
        EXPECT_EQ(s.info().profile.polynomial, want.polynomial);
        EXPECT_EQ(s.info().profile.window_size, want.window_size);
        std::vector<std::size_t> stored;
        s.for_each_chunk("data", [&](const store::ChunkId&, std::uint32_t size) { stored.push_back(size); });
        EXPECT_EQ(stored, test::lengths_memory(make_cut_finder(c.algorithm, c.options), data));
        // The control: the defaults cut elsewhere, so the parameters mattered.
        Options defaults;
        defaults.min_size = c.options.min_size;
        defaults.normal_size = c.options.normal_size;
        defaults.max_size = c.options.max_size;
        EXPECT_NE(stored, test::lengths_memory(make_cut_finder(c.algorithm, defaults), data));
        EXPECT_EQ(s.finder()->profile().polynomial, want.polynomial);
        EXPECT_EQ(test::get_bytes(s, "data", tmp), data);
    }
}

TEST(Store, DedupAcrossNamesAndVersions) {
    test::TempDir tmp;
    Store s = Store::init(tmp.path() / "s", {});
    auto v1 = test::mixed_bytes(600'000, 11);
    auto v2 = v1;
    v2.insert(v2.begin() + 300'000, 5000, std::uint8_t{7});  // an edit in the middle
    Writer w(s);
    const auto a = test::put_bytes(w, "v1/file", v1);
    const auto b = test::put_bytes(w, "copy/file", v1);
    const auto c = test::put_bytes(w, "v2/file", v2);
    w.commit();
    EXPECT_EQ(a.new_bytes, v1.size());
    EXPECT_EQ(b.new_bytes, 0u);   // same data, another name: nothing new
    EXPECT_GT(c.new_bytes, 0u);
    EXPECT_LT(c.new_bytes, 60'000u);  // only the chunks around the edit
    const auto st = s.stats();
    EXPECT_EQ(st.files, 3u);
    EXPECT_EQ(st.logical_bytes, 2 * v1.size() + v2.size());
    EXPECT_EQ(st.chunk_bytes, a.new_bytes + c.new_bytes);
    EXPECT_LT(st.stored_bytes, st.chunk_bytes);  // the text half compresses
    EXPECT_EQ(test::get_bytes(s, "v2/file", tmp), v2);
    EXPECT_EQ(test::get_bytes(s, "copy/file", tmp), v1);
}

// Two writers that store the same chunk before either flushes: the later
// commit finds it indexed and reports it raced (its copy is garbage).
TEST(Store, AChunkTwoWritersStoredAtOnceIsReportedRaced) {
    test::TempDir tmp;
    Store s = Store::init(tmp.path() / "s", {});
    const auto bytes = test::random_bytes(5000, 3);
    const auto raw = std::as_bytes(std::span(bytes));
    Writer a(s);
    Writer b(s);
    EXPECT_TRUE(a.put_chunk(raw).added);
    const store::ChunkPut second = b.put_chunk(raw);
    EXPECT_TRUE(second.added) << "not committed yet: b stores it too";
    a.commit();
    b.commit();
    EXPECT_EQ(a.stats().raced_chunks, 0u);
    EXPECT_EQ(b.stats().raced_chunks, 1u);
    EXPECT_EQ(b.stats().raced_bytes, second.stored_bytes);
    EXPECT_EQ(s.stats().garbage_bytes, second.stored_bytes);
    EXPECT_EQ(s.stats().chunks, 1u);
}

TEST(Store, ManifestsFromChunkListsAndCompressedChunks) {
    test::TempDir tmp;
    Store s = Store::init(tmp.path() / "s", {});
    const auto p1 = test::mixed_bytes(50'000, 1);
    const auto p2 = test::random_bytes(30'000, 2);
    std::vector<std::uint8_t> whole(p1);
    whole.insert(whole.end(), p2.begin(), p2.end());
    const auto id1 = store::chunk_id_of(std::as_bytes(std::span(p1)));
    const auto id2 = store::chunk_id_of(std::as_bytes(std::span(p2)));
    const std::vector<store::ChunkId> ids{id1, id2};
    EXPECT_EQ(s.missing(ids), ids);
    {
        Writer w(s);
        EXPECT_TRUE(w.put_chunk(std::as_bytes(std::span(p1))).added);
        // p2 arrives compressed (as a client would send it).
        std::vector<std::uint8_t> frame(ZSTD_compressBound(p2.size()));
        frame.resize(ZSTD_compress(frame.data(), frame.size(), p2.data(), p2.size(), 3));
        const auto r = w.put_chunk_compressed(id2, static_cast<std::uint32_t>(p2.size()), std::as_bytes(std::span(frame)));
        EXPECT_TRUE(r.added);
        // A frame whose content is not the id: refused.
        EXPECT_THROW(w.put_chunk_compressed(id1, static_cast<std::uint32_t>(p2.size()), std::as_bytes(std::span(frame))),
                     store::DamageError);
        w.begin_manifest({"assembled", 0600, 5});
        EXPECT_EQ(w.add_chunks(ids), whole.size());
        EXPECT_THROW(w.finish_manifest(store::chunk_id_of(std::as_bytes(std::span(whole))), whole.size() + 1),
                     store::DamageError);
        w.finish_manifest(store::chunk_id_of(std::as_bytes(std::span(whole))), whole.size());
        // Not visible before commit.
        EXPECT_FALSE(s.find("assembled"));
        w.commit();
    }
    EXPECT_TRUE(s.missing(ids).empty());
    EXPECT_EQ(test::get_bytes(s, "assembled", tmp), whole);
    const auto raw = s.read_chunk(id1, false);
    EXPECT_EQ(raw.codec, store::Codec::raw);
    EXPECT_TRUE(std::equal(raw.bytes.begin(), raw.bytes.end(), reinterpret_cast<const std::byte*>(p1.data())));
    const auto stored = s.read_chunk(id1, true);
    EXPECT_EQ(stored.codec, store::Codec::zstd);  // half of p1 is text
    EXPECT_LT(stored.bytes.size(), p1.size());
    EXPECT_EQ(stored.raw_size, p1.size());
    std::vector<std::uint8_t> back(p1.size());
    EXPECT_EQ(ZSTD_decompress(back.data(), back.size(), stored.bytes.data(), stored.bytes.size()), p1.size());
    EXPECT_EQ(back, p1);
    EXPECT_EQ(s.read_chunk(id2, true).codec, store::Codec::raw);  // random: kept raw
    // The file's chunks as stored, in order (what a server streams).
    std::vector<store::ChunkId> streamed;
    s.for_each_chunk("assembled", [&](const store::ChunkId& id, std::uint32_t) { streamed.push_back(id); });
    std::vector<std::uint8_t> rebuilt;
    s.read_chunks(streamed, store::Store::ChunkForm::stored, [&](std::size_t, const store::StoredChunk& c) {
        std::vector<std::uint8_t> raw_bytes(c.raw_size);
        if (c.codec == store::Codec::zstd)
            EXPECT_EQ(ZSTD_decompress(raw_bytes.data(), raw_bytes.size(), c.bytes.data(), c.bytes.size()), c.raw_size);
        else
            std::memcpy(raw_bytes.data(), c.bytes.data(), c.raw_size);
        rebuilt.insert(rebuilt.end(), raw_bytes.begin(), raw_bytes.end());
    });
    EXPECT_EQ(streamed, ids);
    EXPECT_EQ(rebuilt, whole);
    // The file's raw bytes in one call; a read session holds one committed
    // state (a file committed meanwhile shows once it ends) and the lock
    // (gc, exclusive, is refused meanwhile).
    {
        std::vector<std::uint8_t> read_back;
        const auto collect = [&](std::span<const std::byte> b) {
            const auto* p = reinterpret_cast<const std::uint8_t*>(b.data());
            read_back.insert(read_back.end(), p, p + b.size());
        };
        s.read_file("assembled", collect);
        EXPECT_EQ(read_back, whole);
        auto session = s.read_session();
        read_back.clear();
        s.read_file("assembled", collect);
        EXPECT_EQ(read_back, whole);
        EXPECT_THROW(s.read_file("absent", collect), store::NotFoundError);
        {
            Writer later(s);
            later.begin_manifest({"later", 0600, 5});
            later.add_chunks(ids);
            later.finish_manifest(store::chunk_id_of(std::as_bytes(std::span(whole))), whole.size());
            later.commit();
        }
        EXPECT_FALSE(s.find("later")) << "committed after the session's view began";
        EXPECT_THROW(s.gc(), store::StoreError);
        session.renew();  // a fresh view, the lock kept
        EXPECT_TRUE(s.find("later"));
        EXPECT_THROW(s.gc(), store::StoreError);
    }
    EXPECT_TRUE(s.find("later"));
    EXPECT_NO_THROW(s.gc());
    // A chunk list naming an unknown chunk is refused.
    Writer w(s);
    w.begin_manifest({"bad", 0600, 5});
    store::ChunkId unknown{};
    unknown[0] = 1;
    EXPECT_THROW(w.add_chunks(std::span(&unknown, 1)), store::DamageError);
    EXPECT_THROW(s.read_chunk(unknown, false), store::NotFoundError);
    // Chunks the caller read, with their sizes (no lookup): a second file of
    // them restores; sizes of another count, or of 0 bytes, are refused; a
    // wrong size fails the manifest's size check.
    Writer r(s);
    const std::vector<std::uint32_t> sizes{static_cast<std::uint32_t>(p1.size()), static_cast<std::uint32_t>(p2.size())};
    r.begin_manifest({"read", 0600, 5});
    EXPECT_THROW(r.add_read_chunks(ids, std::span(sizes).first(1)), std::invalid_argument);
    const std::vector<std::uint32_t> zero{0};
    EXPECT_THROW(r.add_read_chunks(std::span(ids).first(1), zero), std::invalid_argument);
    r.add_read_chunks(ids, sizes);
    r.finish_manifest(store::chunk_id_of(std::as_bytes(std::span(whole))), whole.size());
    r.commit();
    EXPECT_EQ(test::get_bytes(s, "read", tmp), whole);
    r.begin_manifest({"wrong", 0600, 5});
    const std::vector<std::uint32_t> short_sizes{sizes[0], sizes[1] - 1};
    r.add_read_chunks(ids, short_sizes);
    EXPECT_THROW(r.finish_manifest(store::chunk_id_of(std::as_bytes(std::span(whole))), whole.size()),
                 store::DamageError);
}

// Single chunks (the transfer server's path) are appended to the pack by
// the MiB: a file of many of them must be read back whole after commit, none
// visible before, and `lacking` (the caller just asked Store::missing) skips
// the index but never this writer's own chunks.
// A read session told which files it is about to read looks them up in
// batches (over PostgreSQL: tests/engines, by its statements); it hands over
// what Store::read_file does whatever order the reads then take: the order
// told, a name told twice, names told and never read, a name read before its
// turn, an absent name, a renewal between reads, a file of more chunks than
// a batch lists, and a file whose chunk the index lost (that file only).
TEST(Store, AReadSessionReadsTheFilesItExpectsInAnyOrder) {
    test::TempDir tmp;
    Store s = Store::init(tmp.path() / "s", {});
    std::map<std::string, std::vector<std::uint8_t>> files;
    {
        Writer w(s);
        for (int i = 0; i < 150; ++i) {
            const std::string name = fmt::format("f{:03}", i);
            files[name] = test::mixed_bytes(100 + static_cast<std::size_t>(i) * 977 % 50000, static_cast<std::uint64_t>(1000 + i));
            test::put_bytes(w, name, files[name]);
        }
        files["big"] = test::mixed_bytes(12'000'000, 99);  // over a thousand chunks
        test::put_bytes(w, "big", files["big"]);
        w.commit();
    }
    std::size_t big_chunks = 0;
    s.for_each_chunk("big", [&](const store::ChunkId&, std::uint32_t) { ++big_chunks; });
    EXPECT_GT(big_chunks, 1024u) << "more than a batch lists";
    std::vector<store::ChunkId> lost_ids;
    s.for_each_chunk("f060", [&](const store::ChunkId& id, std::uint32_t) { lost_ids.push_back(id); });
    ASSERT_EQ(lost_ids.size(), 1u);
    {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open((tmp.path() / "s" / "index.db").c_str(), &db), SQLITE_OK);
        sqlite3_stmt* st = nullptr;
        ASSERT_EQ(sqlite3_prepare_v2(db, "DELETE FROM chunks WHERE id = ?", -1, &st, nullptr), SQLITE_OK);
        sqlite3_bind_blob(st, 1, lost_ids[0].data(), static_cast<int>(lost_ids[0].size()), SQLITE_STATIC);
        ASSERT_EQ(sqlite3_step(st), SQLITE_DONE);
        sqlite3_finalize(st);
        ASSERT_EQ(sqlite3_changes(db), 1);
        sqlite3_close(db);
    }
    std::vector<std::string> told;
    for (const auto& [name, bytes] : files)
        if (name != "big") told.push_back(name);
    told.insert(told.begin() + 10, "f005");  // again
    told.insert(told.begin() + 70, "absent");
    told.insert(told.begin() + 100, "big");
    std::size_t at = 0;
    auto session = s.read_session();
    session.expect([&]() -> std::optional<std::string> {
        if (at == told.size()) return std::nullopt;
        return told[at++];
    });
    std::vector<std::uint8_t> got;
    const auto collect = [&](std::span<const std::byte> b) {
        const auto* p = reinterpret_cast<const std::uint8_t*>(b.data());
        got.insert(got.end(), p, p + b.size());
    };
    std::set<std::string> read;
    const auto read_one = [&](const std::string& name) {
        got.clear();
        if (name == "absent") {
            EXPECT_THROW(session.read_file(name, collect), store::NotFoundError);
        } else if (name == "f060") {
            try {
                session.read_file(name, collect);
                ADD_FAILURE() << "f060 lost its chunk, read anyway";
            } catch (const store::DamageError& e) {
                EXPECT_NE(std::string(e.what()).find("'f060': chunk"), std::string::npos) << e.what();
            }
        } else {
            session.read_file(name, collect);
            EXPECT_EQ(got, files.at(name)) << name;
        }
        read.insert(name);
    };
    for (std::size_t k = 0; k < told.size(); ++k) {
        if (k % 7 == 3) continue;  // told, never read
        if (k == 40) read_one("f140");  // before its turn
        if (k == 80) session.renew();
        read_one(told[k]);
    }
    EXPECT_EQ(at, told.size()) << "every name told was asked for";
    EXPECT_TRUE(read.count("big") && read.count("absent") && read.count("f060") && read.count("f140"));
    // Read again, none of them told: each on its own, the same bytes.
    session.renew();
    for (const std::string name : {"f000", "f149", "big"}) read_one(name);
}

// ReadSession::retry_once: a failure of the catalog is tried once more in
// a fresh view (one that sees what was committed since), never a damaged
// or missing file, nor when the caller says the first try handed bytes on.
TEST(Store, ARetryOnceRenewsTheViewAfterACatalogErrorOnly) {
    test::TempDir tmp;
    Store s = Store::init(tmp.path() / "s", {});
    const auto a = test::mixed_bytes(30000, 1);
    {
        Writer w(s);
        test::put_bytes(w, "a", a);
        w.commit();
    }
    auto session = s.read_session();
    std::vector<std::uint8_t> got;
    const auto collect = [&](std::span<const std::byte> b) {
        const auto* p = reinterpret_cast<const std::uint8_t*>(b.data());
        got.insert(got.end(), p, p + b.size());
    };
    int tries = 0;
    session.retry_once([&] {
        ++tries;
        got.clear();
        if (tries == 1) {
            EXPECT_THROW(session.read_file("b", collect), store::NotFoundError) << "not in this view yet";
            Writer w(s);
            test::put_bytes(w, "b", a);
            w.commit();
            throw store::StoreError("the catalog's server went away");
        }
        session.read_file("b", collect);
    });
    EXPECT_EQ(tries, 2);
    EXPECT_EQ(got, a) << "the second try's view sees what was committed since the first";
    for (int kind = 0; kind < 3; ++kind) {
        tries = 0;
        const auto fail = [&] {
            ++tries;
            if (kind == 0) throw store::DamageError("a damaged chunk");
            if (kind == 1) throw store::NotFoundError("no such file");
            throw store::StoreError("the catalog's server went away");
        };
        EXPECT_THROW(session.retry_once(fail, [](const store::StoreError&) { return false; }), store::StoreError);
        EXPECT_EQ(tries, 1) << "kind " << kind;
    }
    tries = 0;
    EXPECT_THROW(session.retry_once([&] {
        ++tries;
        throw store::StoreError("the catalog's server went away");
    }),
                 store::StoreError);
    EXPECT_EQ(tries, 2) << "tried once more, then its error";
}

TEST(Store, SingleChunksBatchedAndLackingSkipsOnlyTheIndex) {
    test::TempDir tmp;
    store::InitOptions init;
    init.pack_size = 1 << 20;  // the batches roll over packs too
    Store s = Store::init(tmp.path() / "s", init);
    std::vector<std::vector<std::uint8_t>> pieces;
    std::vector<store::ChunkId> ids;
    std::vector<std::uint8_t> whole;
    for (std::uint64_t i = 0; i < 300; ++i) {  // ~3.6 MB: several batches and packs
        pieces.push_back(i % 2 ? test::random_bytes(12'000, 100 + i) : test::mixed_bytes(12'000, 100 + i));
        ids.push_back(store::chunk_id_of(std::as_bytes(std::span(pieces.back()))));
        whole.insert(whole.end(), pieces.back().begin(), pieces.back().end());
    }
    const auto frame_of = [](const std::vector<std::uint8_t>& p) {
        std::vector<std::uint8_t> f(ZSTD_compressBound(p.size()));
        f.resize(ZSTD_compress(f.data(), f.size(), p.data(), p.size(), 3));
        return f;
    };
    {
        Writer w(s);
        std::vector<std::byte> decoded;
        for (std::size_t i = 0; i < pieces.size(); ++i) {
            const auto f = frame_of(pieces[i]);
            const auto r = w.put_chunk_compressed(ids[i], static_cast<std::uint32_t>(pieces[i].size()),
                                                  std::as_bytes(std::span(f)), decoded, true);
            EXPECT_TRUE(r.added);
            EXPECT_TRUE(std::equal(decoded.begin(), decoded.end(), reinterpret_cast<const std::byte*>(pieces[i].data()),
                                   reinterpret_cast<const std::byte*>(pieces[i].data() + pieces[i].size())));
        }
        // Put again by this writer: known from its own session, even when lacking.
        const auto f0 = frame_of(pieces[0]);
        EXPECT_FALSE(w.put_chunk_compressed(ids[0], static_cast<std::uint32_t>(pieces[0].size()),
                                            std::as_bytes(std::span(f0)), decoded, true)
                         .added);
        EXPECT_EQ(s.missing(ids).size(), ids.size());  // nothing indexed before commit
        w.begin_manifest({"singles", 0644, 1});
        EXPECT_EQ(w.add_chunks(ids), whole.size());
        w.finish_manifest(store::chunk_id_of(std::as_bytes(std::span(whole))), whole.size());
        w.commit();
    }
    EXPECT_TRUE(s.missing(ids).empty());
    EXPECT_EQ(test::get_bytes(s, "singles", tmp), whole);
    EXPECT_TRUE(s.verify(test::full_check()).ok());
    const auto before = s.stats();
    EXPECT_EQ(before.chunks, ids.size());
    EXPECT_EQ(before.garbage_bytes, 0u);
    {
        // A second writer told `lacking` for an indexed chunk stores it again:
        // the index keeps one record, the other is garbage that gc reclaims.
        Writer w(s);
        std::vector<std::byte> decoded;
        const auto f = frame_of(pieces[1]);
        EXPECT_TRUE(w.put_chunk_compressed(ids[1], static_cast<std::uint32_t>(pieces[1].size()),
                                           std::as_bytes(std::span(f)), decoded, true)
                        .added);
        const auto f3 = frame_of(pieces[3]);
        EXPECT_FALSE(w.put_chunk_compressed(ids[3], static_cast<std::uint32_t>(pieces[3].size()),
                                            std::as_bytes(std::span(f3)), decoded)
                         .added);  // without `lacking`: found in the index
        w.commit();
    }
    const auto dup = s.stats();
    EXPECT_EQ(dup.chunks, ids.size());
    EXPECT_GT(dup.pack_bytes, before.pack_bytes);
    EXPECT_TRUE(s.verify(test::full_check()).ok());
    // (every pack with garbage rewritten: where the duplicate lands, in a
    // pack of its own or at the end of a full one, depends on the batches)
    store::GcOptions all;
    all.rewrite_below = 1.0;
    s.gc(all);
    EXPECT_LE(s.stats().pack_bytes, before.pack_bytes);
    EXPECT_EQ(test::get_bytes(s, "singles", tmp), whole);
    EXPECT_TRUE(s.verify(test::full_check()).ok());
}

// A large file put again under its name is compared with the stored
// version (base_list.hpp): unchanged, the stored digest is reused; changed
// early, late, cut short or grown, the chunks that matched are read back for
// the whole-file BLAKE3, and every version restores byte for byte (get
// checks the digest).
TEST(Store, PutUnderANewNameComparesWithAStoredFileStartingAlike) {
    // A large file under a name the store does not hold, equal to a stored
    // file of another name (a tree put again under a new prefix): found by
    // its first chunk, compared like a same-name re-put, its digest reused.
    test::TempDir tmp;
    Store s = Store::init(tmp.path() / "s", {});
    const auto v1 = test::mixed_bytes(14'000'000, 73);
    auto late = v1;
    late[12'500'000] ^= 0x5a;
    const std::vector<std::uint8_t> cut(v1.begin(), v1.begin() + 9'000'000);
    auto grown = v1;
    const auto more = test::random_bytes(3'000'000, 74);
    grown.insert(grown.end(), more.begin(), more.end());
    int names = 0;
    const auto put = [&](const std::vector<std::uint8_t>& v) {
        Writer w(s);
        const std::string name = fmt::format("n{}", ++names);
        const auto r = test::put_bytes(w, name, v);
        w.commit();
        EXPECT_EQ(s.find(name)->digest, store::chunk_id_of(std::as_bytes(std::span(v)))) << name;
        EXPECT_EQ(test::get_bytes(s, name, tmp), v) << name;
        EXPECT_EQ(r.unchanged_files, 0u);
        return r;
    };
    EXPECT_EQ(put(v1).identical_files, 0u);
    EXPECT_EQ(put(v1).identical_files, 1u);  // the stored digest of n1
    EXPECT_EQ(put(cut).identical_files, 0u);    // compared up to its end, then read back and hashed
    EXPECT_EQ(put(grown).identical_files, 0u);  // compared up to v1's end
    // Among files that start alike (n1, n2, n3, n4), one of the same size
    // comes first (n3 and n4, more recent, do not equal it).
    EXPECT_EQ(put(v1).identical_files, 1u);
    EXPECT_EQ(put(late).identical_files, 0u);  // compared up to the change
    // A small file is not looked for (the index holds lists of 256 chunks or more).
    const std::vector<std::uint8_t> small(v1.begin(), v1.begin() + 100'000);
    EXPECT_EQ(put(small).identical_files, 0u);
    EXPECT_EQ(put(small).identical_files, 0u);
    EXPECT_TRUE(s.verify(test::full_check()).ok());
}

TEST(Store, AStoreWithoutTheFirstIdsGetsThem) {
    // A store made before manifests.first_id (with the earlier first-chunk
    // index of manifest_chunks, of any length or of large files only, or
    // none): a writer adds the column, fills it in for the stored files,
    // adds its index, drops the earlier ones, and finds files by it.
    test::TempDir tmp;
    const auto v = test::mixed_bytes(6'000'000, 75);
    const auto small = test::mixed_bytes(40'000, 76);
    const char* earlier_indexes[] = {
        "",
        "CREATE INDEX manifest_first_ids ON manifest_chunks(substr(ids, 1, 32), length(ids) / 32) "
        "WHERE seq = 0 AND length(ids) >= 64",
        "CREATE INDEX manifest_first_chunk ON manifest_chunks(substr(ids, 1, 32)) "
        "WHERE seq = 0 AND length(ids) >= 8192",
    };
    for (std::size_t e = 0; e < std::size(earlier_indexes); ++e) {
        const auto dir = tmp.path() / fmt::format("s{}", e);
        {
            Store s = Store::init(dir, {});
            Writer w(s);
            test::put_bytes(w, "a", v);
            test::put_bytes(w, "small", small);
            test::put_bytes(w, "one", test::mixed_bytes(100, 77));
            w.commit();
        }
        auto query = [&](const char* sql) {
            sqlite3* db = nullptr;
            EXPECT_EQ(sqlite3_open((dir / "index.db").c_str(), &db), SQLITE_OK);
            std::set<std::string> rows;
            EXPECT_EQ(sqlite3_exec(
                          db, sql,
                          [](void* out, int n, char** row, char**) {
                              std::string r;
                              for (int k = 0; k < n; ++k) r += std::string(k ? "|" : "") + (row[k] ? row[k] : "NULL");
                              static_cast<std::set<std::string>*>(out)->insert(r);
                              return 0;
                          },
                          &rows, nullptr),
                      SQLITE_OK);
            sqlite3_close(db);
            return rows;
        };
        const char* indexes = "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'manifest%'";
        const char* firsts =
            "SELECT name, CASE WHEN first_id IS NULL THEN 'NULL' ELSE hex(first_id) END FROM manifests";
        EXPECT_EQ(query(indexes), std::set<std::string>{"manifests_first_id"});
        const auto stored_firsts = query(firsts);
        EXPECT_EQ(stored_firsts.size(), 3u);
        EXPECT_TRUE(stored_firsts.count("one|NULL")) << "a one-chunk list has none";
        query("DROP INDEX manifests_first_id");
        query("ALTER TABLE manifests DROP COLUMN first_id");
        if (*earlier_indexes[e]) query(earlier_indexes[e]);
        Store s = Store::open(dir);
        {
            Writer w(s);
            EXPECT_EQ(test::put_bytes(w, "b", v).identical_files, 1u);
            w.commit();
        }
        EXPECT_EQ(query(indexes), std::set<std::string>{"manifests_first_id"});
        // An older writer adds its index back: the next writer drops it.
        if (*earlier_indexes[e]) {
            query(earlier_indexes[e]);
            Writer w(s);
            w.commit();
            EXPECT_EQ(query(indexes), std::set<std::string>{"manifests_first_id"});
        }
        const auto after = query(firsts);
        EXPECT_EQ(after.size(), 4u);
        for (const auto& r : stored_firsts) EXPECT_TRUE(after.count(r)) << r << " filled in";
        EXPECT_EQ(test::get_bytes(s, "b", tmp), v);
        EXPECT_TRUE(s.verify(test::full_check()).ok());
    }
}

// What this process has read so far with read(2) and pread(2) (/proc/self/io).
std::uint64_t bytes_read_so_far() {
    std::ifstream io("/proc/self/io");
    std::string key;
    std::uint64_t value = 0;
    while (io >> key >> value)
        if (key == "rchar:") return value;
    ADD_FAILURE() << "no rchar in /proc/self/io";
    return 0;
}

TEST(Store, AFilePutUnderANewNameIsFoundWithoutReadingTheVersionsThatStartAlike) {
    // A tree put again under a new prefix (a new snapshot) finds each file's
    // stored copy by its first chunk. How much of the index that reads must
    // not grow with the versions the store holds: the candidates' lists of
    // ids (many pages each) were once read whole, 40 versions of a file 40
    // times what one version cost, and a re-put of a store with months of
    // snapshots ran at a fraction of its first speed.
    test::TempDir tmp;
    Store s = Store::init(tmp.path() / "s", {});
    std::vector<std::vector<std::uint8_t>> files;
    files.push_back(test::mixed_bytes(5'000'000, 81));  // over one segment: compared as it is read
    for (std::uint64_t i = 0; i < 12; ++i) files.push_back(test::mixed_bytes(30'000 + i * 7'000, 82 + i));
    auto put_tree = [&](const std::string& prefix) {
        std::vector<Writer::Input> inputs;
        for (std::size_t i = 0; i < files.size(); ++i) {
            Writer::Input in;
            in.meta.name = fmt::format("{}/f{:02}", prefix, i);
            in.size_hint = files[i].size();
            in.open = [&, i](store::FileMeta&) { return MemorySource(std::span<const std::uint8_t>(files[i])); };
            inputs.push_back(std::move(in));
        }
        const std::uint64_t before = bytes_read_so_far();
        Writer w(s);
        w.put_files(inputs, [](std::size_t, const store::PutStats&, const std::exception_ptr& err) {
            EXPECT_FALSE(err);
        });
        w.commit();
        return std::pair{bytes_read_so_far() - before, w.stats().identical_files};
    };
    put_tree("v0");
    const auto [read_one, identical_one] = put_tree("new1");
    EXPECT_EQ(identical_one, files.size());  // each found by its first chunk, not hashed whole and looked up
    for (int v = 1; v < 40; ++v) put_tree(fmt::format("v{}", v));
    const auto [read_many, identical_many] = put_tree("new2");
    EXPECT_EQ(identical_many, files.size());
    EXPECT_LT(read_many, 2 * read_one + 256 * 1024) << "one version stored: " << read_one << " bytes read";
    RecordProperty("bytes_read_one_version", std::to_string(read_one));
    RecordProperty("bytes_read_40_versions", std::to_string(read_many));
    for (std::size_t i = 0; i < files.size(); ++i)
        EXPECT_EQ(test::get_bytes(s, fmt::format("new2/f{:02}", i), tmp), files[i]) << i;
}

TEST(Store, PutAgainUnderItsNameComparesWithTheStoredVersion) {
    test::TempDir tmp;
    Store s = Store::init(tmp.path() / "s", {});
    const auto v1 = test::mixed_bytes(14'000'000, 71);  // 4 segments of 4 MiB
    auto late = v1;
    late[12'500'000] ^= 0x5a;  // in the last segment: three read back
    auto early = v1;
    early[100] ^= 0x5a;  // in the first: nothing read back
    const std::vector<std::uint8_t> cut(v1.begin(), v1.begin() + 9'000'000);
    auto grown = v1;
    const auto more = test::random_bytes(3'000'000, 72);
    grown.insert(grown.end(), more.begin(), more.end());
    const auto digest_of = [](const std::vector<std::uint8_t>& v) {
        return store::chunk_id_of(std::as_bytes(std::span(v)));
    };
    const auto put = [&](const std::vector<std::uint8_t>& v) {
        Writer w(s);
        const auto r = test::put_bytes(w, "f", v);
        w.commit();
        EXPECT_EQ(s.find("f")->digest, digest_of(v));
        EXPECT_EQ(test::get_bytes(s, "f", tmp), v);
        return r;
    };
    EXPECT_EQ(put(v1).unchanged_files, 0u);
    const auto first = *s.find("f");
    EXPECT_EQ(put(v1).unchanged_files, 1u);  // the same chunks: the stored digest
    // ... and the same metadata: the stored manifest is kept as it was.
    EXPECT_EQ(s.find("f")->committed_ns, first.committed_ns);
    {
        // A new mtime: the same chunks, a new manifest with it.
        Writer w(s);
        store::FileMeta meta{"f", 0600, 42};
        EXPECT_EQ(w.put_file(meta, MemorySource(std::span<const std::uint8_t>(v1))).unchanged_files, 1u);
        w.commit();
        const auto now = *s.find("f");
        EXPECT_NE(now.committed_ns, first.committed_ns);
        EXPECT_EQ(now.mtime_ns, 42);
        EXPECT_EQ(now.mode, 0600u);
        EXPECT_EQ(now.digest, first.digest);
        EXPECT_EQ(test::get_bytes(s, "f", tmp), v1);
    }
    {
        // Kept only if still there at the flush: another writer replaces the
        // file between this writer's put and its commit; this commit, the
        // later one, must write its manifest.
        EXPECT_EQ(put(v1).unchanged_files, 1u);  // the same chunks; metadata back to put_bytes'
        Writer a(s);
        EXPECT_EQ(test::put_bytes(a, "f", v1).unchanged_files, 1u);
        {
            Writer b(s);
            test::put_bytes(b, "f", early);
            b.commit();
        }
        EXPECT_EQ(test::get_bytes(s, "f", tmp), early);
        a.commit();
        EXPECT_EQ(test::get_bytes(s, "f", tmp), v1);
    }
    EXPECT_EQ(put(late).unchanged_files, 0u);
    EXPECT_EQ(put(late).unchanged_files, 1u);
    EXPECT_EQ(put(early).unchanged_files, 0u);
    EXPECT_EQ(put(cut).unchanged_files, 0u);  // a prefix of the stored version
    EXPECT_EQ(put(v1).unchanged_files, 0u);   // the stored version is a prefix
    EXPECT_EQ(put(grown).unchanged_files, 0u);
    EXPECT_EQ(put(v1).unchanged_files, 0u);
    // Cut at one of its chunk boundaries: the first chunks of the stored
    // version exactly, yet not all of them.
    std::uint64_t boundary = 0;
    s.for_each_chunk("f", [&](const store::ChunkId&, std::uint32_t size) {
        if (boundary < 10'000'000) boundary += size;
    });
    const std::vector<std::uint8_t> head(v1.begin(), v1.begin() + static_cast<std::ptrdiff_t>(boundary));
    EXPECT_EQ(put(head).unchanged_files, 0u);
    {
        // Another name: compared with a stored file that starts alike ("f",
        // which grown goes on past: hashed whole), never "unchanged".
        Writer w(s);
        EXPECT_EQ(test::put_bytes(w, "g", grown).unchanged_files, 0u);
        w.commit();
    }
    EXPECT_EQ(test::get_bytes(s, "g", tmp), grown);
    EXPECT_TRUE(s.verify(test::full_check()).ok());
}

// A damaged chunk of the stored version, read back when a new version
// differs after it, fails the put with a DamageError naming the file and the
// chunk (decoding runs on a pool: the error crosses threads), and the stored
// version stays as it was.
TEST(Store, DamagedStoredVersionFailsTheReadBackNamingIt) {
    test::TempDir tmp;
    store::InitOptions init;
    init.pack_size = 256 << 20;  // one pack
    Store s = Store::init(tmp.path() / "s", init);
    const auto v1 = test::mixed_bytes(14'000'000, 81);
    {
        Writer w(s);
        test::put_bytes(w, "f", v1);
        w.commit();
    }
    std::vector<store::ChunkId> ids;
    s.for_each_chunk("f", [&](const store::ChunkId& id, std::uint32_t) { ids.push_back(id); });
    const store::ChunkId victim = ids.at(ids.size() / 2);
    const auto at = test::id_offset_in_pack(test::first_pack(tmp.path() / "s"), victim);
    ASSERT_NE(at, std::string::npos);
    test::flip_byte(test::first_pack(tmp.path() / "s"), at + 40 + 5);
    auto v2 = v1;
    v2[13'500'000] ^= 1;  // differs after the damaged chunk: everything before is read back
    Writer w(s);
    try {
        test::put_bytes(w, "f", v2);
        FAIL() << "put returned";
    } catch (const store::DamageError& e) {
        EXPECT_NE(std::string(e.what()).find("'f'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(store::to_hex(victim)), std::string::npos) << e.what();
    }
    w.commit();
    EXPECT_EQ(s.find("f")->digest, store::chunk_id_of(std::as_bytes(std::span(v1))));
}

TEST(Store, ReplaceRemoveAndGcReclaim) {
    test::TempDir tmp;
    store::InitOptions init;
    init.pack_size = 1 << 20;  // several packs
    Store s = Store::init(tmp.path() / "s", init);
    const auto a = test::random_bytes(1'500'000, 21);
    const auto b = test::random_bytes(1'500'000, 22);
    const auto c = test::mixed_bytes(400'000, 23);
    {
        Writer w(s);
        test::put_bytes(w, "a", a);
        test::put_bytes(w, "b", b);
        test::put_bytes(w, "c", c);
        w.commit();
    }
    {
        Writer w(s);
        test::put_bytes(w, "c", a);  // replaces c's content
        w.commit();
    }
    EXPECT_EQ(test::get_bytes(s, "c", tmp), a);
    EXPECT_EQ(s.list().size(), 3u);
    EXPECT_THROW(s.remove(std::vector<std::string>{"a", "nope"}), store::NotFoundError);
    EXPECT_TRUE(s.find("a"));  // all or nothing
    s.remove(std::vector<std::string>{"b"});
    EXPECT_FALSE(s.find("b"));
    EXPECT_EQ(s.list().size(), 2u);
    EXPECT_THROW(s.get("b", tmp.path() / "x"), store::NotFoundError);
    const auto before = s.stats();
    const auto r = s.gc();
    EXPECT_GT(r.chunks_removed, 0u);
    EXPECT_LT(r.bytes_after, r.bytes_before);
    const auto after = s.stats();
    EXPECT_LT(after.pack_bytes, before.pack_bytes);
    EXPECT_LT(after.chunks, before.chunks);
    // b's chunks are gone: what is left is about a (c's old text compressed
    // away). The packs keep some dead bytes: how a's and b's records shared
    // packs depends on which compression task appended first, and gc
    // rewrites only packs under half live, so each kept pack is at least half live.
    EXPECT_LT(after.stored_bytes, a.size() + 200'000);
    EXPECT_LE(after.pack_bytes, 2 * after.stored_bytes + 16 * after.packs);
    EXPECT_TRUE(s.verify(test::full_check()).ok());
    EXPECT_EQ(test::get_bytes(s, "a", tmp), a);
    EXPECT_EQ(test::get_bytes(s, "c", tmp), a);
    // gc again: nothing to do, still fine.
    const auto r2 = s.gc();
    EXPECT_EQ(r2.chunks_removed, 0u);
    EXPECT_TRUE(s.verify(test::full_check()).ok());
}

TEST(Store, GcDeletesEmptyPacksAndRewritesSparseOnes) {
    test::TempDir tmp;
    store::InitOptions init;
    init.pack_size = 4 << 20;
    Store s = Store::init(tmp.path() / "s", init);
    // y (small) is put first: its record shares a 4 MiB pack with x's
    // (compression groups of ~1 MiB); the rest of x and z fill another pack.
    const auto y = generate_input("text:5:100000");
    const auto x = test::random_bytes(5'500'000, 61);
    const auto z = test::random_bytes(500'000, 63);
    {
        Writer w(s);
        test::put_bytes(w, "y", y);
        test::put_bytes(w, "x", x);
        test::put_bytes(w, "z", z);
        w.commit();
    }
    const auto before = s.stats();
    ASSERT_GE(before.packs, 2u);
    s.remove(std::vector<std::string>{"x", "z"});
    const auto r = s.gc();
    // y's pack (mostly x's bytes) and the pack of x's tail and z (which
    // also holds the three files' catalog records, y's live): rewritten,
    // or deleted where nothing in it lives.
    EXPECT_GE(r.packs_deleted + r.packs_rewritten, 2u);
    EXPECT_GE(r.packs_rewritten, 1u);
    const auto after = s.stats();
    EXPECT_EQ(after.garbage_bytes, 0u);
    EXPECT_EQ(after.packs, 1u);
    EXPECT_LT(after.pack_bytes, y.size());
    EXPECT_TRUE(s.verify(test::full_check()).ok());
    EXPECT_EQ(test::get_bytes(s, "y", tmp), y);
}

// The soft RLIMIT_NOFILE lowered for a scope (this test's process only).
class FewDescriptors {
public:
    explicit FewDescriptors(rlim_t soft) {
        ::getrlimit(RLIMIT_NOFILE, &old_);
        rlimit r = old_;
        r.rlim_cur = std::min(soft, old_.rlim_max);
        ok_ = ::setrlimit(RLIMIT_NOFILE, &r) == 0;
    }
    ~FewDescriptors() { ::setrlimit(RLIMIT_NOFILE, &old_); }
    FewDescriptors(const FewDescriptors&) = delete;
    FewDescriptors& operator=(const FewDescriptors&) = delete;
    bool ok() const { return ok_; }

private:
    rlimit old_{};
    bool ok_ = false;
};

TEST(Store, FilesSpanningMorePacksThanDescriptorsAreReadInTurns) {
    // A file over more packs than the process may open at once: every reader
    // of packs (get, the re-put's read-back, read_chunks, verify, gc) keeps
    // a bounded number open (an eighth of the soft limit, at least 4) and
    // closes them in turn. Before the bound, each failed with EMFILE here.
    test::TempDir tmp;
    store::InitOptions init;
    init.pack_size = 1 << 20;
    init.zstd_level = 0;
    Store s = Store::init(tmp.path() / "s", init);
    // "all": 40 pairs of 640 KiB runs, kept (k) and dropped (d); "kept": the
    // k runs. Removing "all" leaves every pack about half live.
    std::vector<std::uint8_t> all, kept;
    for (std::uint64_t i = 0; i < 40; ++i) {
        const auto k = test::random_bytes(640 << 10, 1000 + i);
        const auto d = test::random_bytes(640 << 10, 2000 + i);
        all.insert(all.end(), k.begin(), k.end());
        all.insert(all.end(), d.begin(), d.end());
        kept.insert(kept.end(), k.begin(), k.end());
    }
    {
        Writer w(s);
        test::put_bytes(w, "all", all);
        test::put_bytes(w, "kept", kept);
        w.commit();
    }
    ASSERT_GE(s.stats().packs, 50u);
    FewDescriptors few(40);  // 5 packs at once; 50 would not fit
    ASSERT_TRUE(few.ok());
    EXPECT_EQ(test::get_bytes(s, "all", tmp), all);
    {
        Writer w(s);  // the stored version is read back to hash the new one
        const auto st = test::put_bytes(w, "all", all);
        w.commit();
        EXPECT_EQ(st.new_bytes, 0u);
    }
    std::vector<store::ChunkId> ids;
    s.for_each_chunk("all", [&](const store::ChunkId& id, std::uint32_t) { ids.push_back(id); });
    std::vector<std::uint8_t> raw;
    s.read_chunks(ids, Store::ChunkForm::raw, [&](std::size_t, const store::StoredChunk& c) {
        const auto* b = reinterpret_cast<const std::uint8_t*>(c.bytes.data());
        raw.insert(raw.end(), b, b + c.bytes.size());
    });
    EXPECT_EQ(raw, all);
    std::size_t stored = 0;
    s.read_chunks(ids, Store::ChunkForm::stored, [&](std::size_t, const store::StoredChunk&) { ++stored; });
    EXPECT_EQ(stored, ids.size());
    EXPECT_TRUE(s.verify({}).ok());
    EXPECT_TRUE(s.verify(test::full_check()).ok());
    s.remove(std::vector<std::string>{"all"});
    store::GcOptions gc;
    gc.rewrite_below = 0.9;
    const auto r = s.gc(gc);
    EXPECT_GE(r.packs_rewritten, 10u);
    EXPECT_TRUE(s.verify(test::full_check()).ok());
    EXPECT_EQ(test::get_bytes(s, "kept", tmp), kept);
}

TEST(Store, PutFilesStoresWhatPutFileStores) {
    // put_files reads files ahead on the pool (small ones whole, large ones
    // in chains of segments stored as they are read); the store must end up
    // as a put_file of each in turn leaves it: same manifests, digests and
    // chunks, every IoError reported for its file in order, the rest put,
    // and each input opened once. Inputs: small files (empty, one chunk,
    // several, copies), large ones, small and large ones grown past their
    // listed size, one shrunk below it, one listed larger than the
    // read-ahead budget, a stream (no size: put in its turn, while files
    // after it are read ahead), one that fails to open, one in memory.
    test::TempDir tmp;
    struct File {
        std::string name;
        std::vector<std::uint8_t> bytes;
        std::optional<std::uint64_t> hint;
        bool fails = false;
        bool memory = false;
    };
    std::vector<File> files;
    for (int i = 0; i < 40; ++i) {
        const std::size_t n = i == 0 ? 0 : i == 1 ? 100 : static_cast<std::size_t>(i) * 7919;
        auto b = test::mixed_bytes(n, 900 + static_cast<std::uint64_t>(i % 13));  // (repeats: dedup)
        files.push_back({fmt::format("small/{:02}", i), b, b.size()});
    }
    const auto big = test::mixed_bytes(6'000'000, 950);
    files.insert(files.begin() + 10, File{"big", big, big.size()});
    const auto grown = test::mixed_bytes(5'000'000, 951);
    files.insert(files.begin() + 20, File{"grown", grown, 1000});
    files.insert(files.begin() + 25, File{"vanished", {}, 10, true});
    files.insert(files.begin() + 30, File{"memory", test::mixed_bytes(50'000, 952), 50'000, false, true});
    files.insert(files.begin() + 2, File{"stream", test::mixed_bytes(6'000'000, 953), std::nullopt});
    files.insert(files.begin() + 12, File{"shrunk", test::mixed_bytes(5'000'000, 954), 9'000'000});
    files.insert(files.begin() + 14, File{"grown-large", test::mixed_bytes(10'000'000, 955), 4'500'000});
    files.insert(files.begin() + 16, File{"listed-huge", test::mixed_bytes(2'000'000, 956), 200'000'000});
    files.insert(files.begin() + 35, File{"big-memory", test::mixed_bytes(7'000'000, 957), 7'000'000, false, true});
    for (const auto& f : files)
        if (!f.fails && !f.memory) tmp.write("in/" + f.name, f.bytes);

    store::InitOptions init;
    Store a = Store::init(tmp.path() / "a", init);
    Store b = Store::init(tmp.path() / "b", init);
    std::vector<Writer::Input> inputs;
    std::vector<std::atomic<int>> opens(files.size());
    for (std::size_t i = 0; i < files.size(); ++i) {
        const File& f = files[i];
        Writer::Input in;
        in.meta.name = f.name;
        in.size_hint = f.hint;
        const auto path = tmp.path() / "in" / f.name;
        in.open = [&f, path, &opens, i](store::FileMeta& meta) {
            ++opens[i];
            meta.mode = 0600;
            if (f.fails) throw IoError("cannot open: gone");
            if (f.memory) return MemorySource(std::span<const std::uint8_t>(f.bytes));
            return FileSource(path);
        };
        inputs.push_back(std::move(in));
    }
    std::vector<std::size_t> order;
    std::uint64_t new_bytes_a = 0;
    {
        Writer w(a);
        w.put_files(inputs, [&](std::size_t i, const store::PutStats& st, const std::exception_ptr& err) {
            order.push_back(i);
            EXPECT_EQ(err != nullptr, files[i].fails) << files[i].name;
            if (!err) {
                EXPECT_EQ(st.bytes, files[i].bytes.size()) << files[i].name;
            }
            new_bytes_a += st.new_bytes;
        });
        w.commit();
    }
    std::vector<std::size_t> expected(files.size());
    for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = i;
    EXPECT_EQ(order, expected);
    for (std::size_t i = 0; i < files.size(); ++i) EXPECT_EQ(opens[i].load(), 1) << files[i].name;
    std::uint64_t new_bytes_b = 0;
    {
        Writer w(b);
        for (std::size_t i = 0; i < files.size(); ++i) {
            if (files[i].fails) continue;
            store::FileMeta meta;
            meta.name = files[i].name;
            meta.mode = 0600;
            new_bytes_b += w.put_file(meta, MemorySource(std::span<const std::uint8_t>(files[i].bytes))).new_bytes;
        }
        w.commit();
    }
    EXPECT_EQ(new_bytes_a, new_bytes_b);
    for (const auto& f : files) {
        const auto ma = a.find(f.name);
        if (f.fails) {
            EXPECT_FALSE(ma.has_value());
            continue;
        }
        const auto mb = b.find(f.name);
        ASSERT_TRUE(ma && mb) << f.name;
        EXPECT_EQ(ma->digest, store::chunk_id_of(std::as_bytes(std::span(f.bytes)))) << f.name;
        EXPECT_EQ(ma->digest, mb->digest) << f.name;
        EXPECT_EQ(ma->chunks, mb->chunks) << f.name;
        EXPECT_EQ(ma->size, f.bytes.size()) << f.name;
        EXPECT_EQ(ma->mode, 0600u) << f.name;
        EXPECT_EQ(test::get_bytes(a, f.name, tmp), f.bytes) << f.name;
    }
    EXPECT_EQ(a.stats().chunks, b.stats().chunks);
    EXPECT_TRUE(a.verify(test::full_check()).damage.empty());

    // Put again unchanged: every file is counted so, and a small one's
    // manifest row (metadata unchanged) is kept, not written anew.
    const auto before = a.find("small/05");
    std::uint64_t unchanged = 0;
    {
        Writer w(a);
        w.put_files(inputs, [&](std::size_t, const store::PutStats& st, const std::exception_ptr&) {
            unchanged += st.unchanged_files;
        });
        w.commit();
        EXPECT_EQ(w.stats().unchanged_files, unchanged);
    }
    EXPECT_EQ(unchanged, files.size() - 1);  // all but the one that cannot be opened
    ASSERT_TRUE(before);
    EXPECT_EQ(a.find("small/05")->committed_ns, before->committed_ns);
    EXPECT_EQ(a.stats().files, files.size() - 1);
    EXPECT_TRUE(a.verify(test::full_check()).damage.empty());

    // Changed in place, same name and size (one byte, then a whole chunk's
    // worth): not unchanged, and the manifest has the new digest.
    for (const std::size_t i : {std::size_t{7}, std::size_t{8}}) {
        File& f = files[i];
        ASSERT_FALSE(f.fails || f.memory || f.bytes.size() < 20'000) << f.name;
        if (i == 7)
            f.bytes[f.bytes.size() / 2] ^= 1;
        else
            std::fill(f.bytes.begin(), f.bytes.begin() + 10'000, std::uint8_t{7});
        tmp.write("in/" + f.name, f.bytes);
    }
    std::vector<std::uint64_t> unchanged_at(files.size());
    {
        Writer w(a);
        w.put_files(inputs, [&](std::size_t i, const store::PutStats& st, const std::exception_ptr&) {
            unchanged_at[i] = st.unchanged_files;
        });
        w.commit();
    }
    for (std::size_t i = 0; i < files.size(); ++i) {
        if (files[i].fails) continue;
        EXPECT_EQ(unchanged_at[i], i == 7 || i == 8 ? 0u : 1u) << files[i].name;
        EXPECT_EQ(a.find(files[i].name)->digest, store::chunk_id_of(std::as_bytes(std::span(files[i].bytes))))
            << files[i].name;
    }
    EXPECT_EQ(test::get_bytes(a, files[7].name, tmp), files[7].bytes);
    EXPECT_TRUE(a.verify(test::full_check()).damage.empty());
}

// An environment variable set for a scope (empty: unset).
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (*value)
            ::setenv(name, value, 1);
        else
            ::unsetenv(name);
    }
    ~ScopedEnv() { ::unsetenv(name_); }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    const char* name_;
};

TEST(Store, PutFilesOpensEachInputOnceWhateverTheReadAheadBudget) {
    // Large files read ahead in chains of segments, or (a budget too small
    // for them) put in their turn while the files after them are read
    // ahead: either way each input is opened once and reported as itself.
    // (A large file put in its turn was once also read ahead by the
    // read-ahead its own put started: opened twice, its descriptor closed
    // under the second reader, every report after it one file off.)
    test::TempDir tmp;
    std::vector<std::pair<std::string, std::vector<std::uint8_t>>> files;
    for (std::size_t i = 0; i < 12; ++i) {
        // (before each large file one almost a segment, whose compression
        // holds its segment on: under 5.75 MiB of read-ahead the large one
        // must wait for its turn, the budget freed while it is put)
        const std::size_t n = i % 4 == 0 ? 6'000'000 + i * 1000 : i % 4 == 3 ? 4'000'000 : 30'000 + i * 1000;
        files.emplace_back(fmt::format("f{:02}", i), test::mixed_bytes(n, 1200 + i));
        tmp.write("in/" + files.back().first, files.back().second);
    }
    // (budgets of all buffers: put_file's four segments, 4 x (4 MiB + 64 KiB)
    // here, then 1.75 MiB or 5.75 MiB of read-ahead)
    for (const char* budget : {"", "18874368", "23068672"}) {
        ScopedEnv env("CDC_STORE_AHEAD_BYTES", budget);
        Store s = Store::init(tmp.path() / fmt::format("s{}", budget), {});
        std::vector<std::atomic<int>> opens(files.size());
        std::vector<Writer::Input> inputs(files.size());
        for (std::size_t i = 0; i < files.size(); ++i) {
            inputs[i].meta.name = files[i].first;
            inputs[i].size_hint = files[i].second.size();
            inputs[i].open = [&opens, i, path = tmp.path() / "in" / files[i].first](store::FileMeta&) {
                ++opens[i];
                return FileSource(path);
            };
        }
        std::vector<std::uint64_t> bytes(files.size());
        Writer w(s);
        w.put_files(inputs, [&](std::size_t i, const store::PutStats& st, const std::exception_ptr& err) {
            EXPECT_FALSE(err) << files[i].first;
            bytes[i] = st.bytes;
        });
        w.commit();
        for (std::size_t i = 0; i < files.size(); ++i) {
            EXPECT_EQ(opens[i].load(), 1) << files[i].first << " budget '" << budget << "'";
            EXPECT_EQ(bytes[i], files[i].second.size()) << files[i].first;
            const auto m = s.find(files[i].first);
            ASSERT_TRUE(m) << files[i].first;
            EXPECT_EQ(m->digest, store::chunk_id_of(std::as_bytes(std::span(files[i].second)))) << files[i].first;
        }
    }
}

TEST(Store, ASmallFileUnderANewNameIsComparedWithAStoredFileThatStartsAlike) {
    // A tree put again under a new prefix: a small file of several chunks
    // equal to a stored file (found by its first chunk and chunk count,
    // then its size and digest) is counted identical and its chunks need no
    // lookups; one that starts alike but differs (a byte at its end, or
    // longer) is not, and gets its own digest.
    test::TempDir tmp;
    std::vector<std::vector<std::uint8_t>> files;
    for (std::uint64_t i = 0; i < 8; ++i) files.push_back(test::mixed_bytes(300'000 + i * 1000, 1300 + i));
    auto put_tree = [&](Store& s, const std::string& prefix) {
        for (std::size_t i = 0; i < files.size(); ++i) tmp.write(prefix + std::to_string(i), files[i]);
        std::vector<Writer::Input> inputs(files.size());
        for (std::size_t i = 0; i < files.size(); ++i) {
            inputs[i].meta.name = prefix + std::to_string(i);
            inputs[i].size_hint = files[i].size();
            inputs[i].open = [path = tmp.path() / (prefix + std::to_string(i))](store::FileMeta&) {
                return FileSource(path);
            };
        }
        std::vector<std::uint64_t> identical(files.size());
        Writer w(s);
        w.put_files(inputs, [&](std::size_t i, const store::PutStats& st, const std::exception_ptr& err) {
            EXPECT_FALSE(err);
            identical[i] = st.identical_files;
        });
        w.commit();
        for (std::size_t i = 0; i < files.size(); ++i) {
            const auto m = s.find(prefix + std::to_string(i));
            EXPECT_TRUE(m && m->digest == store::chunk_id_of(std::as_bytes(std::span(files[i])))) << prefix << i;
            EXPECT_TRUE(m && m->chunks >= 2) << prefix << i;
        }
        return identical;
    };
    Store s = Store::init(tmp.path() / "s", {});
    EXPECT_EQ(put_tree(s, "a/"), std::vector<std::uint64_t>(files.size(), 0));
    files[2].back() ^= 1;                                   // the same size, first chunk and count
    files[5].insert(files[5].end(), 5000, std::uint8_t{9});  // longer
    auto want = std::vector<std::uint64_t>(files.size(), 1);
    want[2] = want[5] = 0;
    EXPECT_EQ(put_tree(s, "b/"), want);
    EXPECT_EQ(test::get_bytes(s, "b/2", tmp), files[2]);
    EXPECT_EQ(test::get_bytes(s, "b/5", tmp), files[5]);
    EXPECT_TRUE(s.verify(test::full_check()).ok());
}

TEST(Store, ALargeFileOfFewChunksUnderANewNameFindsItsStoredCopy) {
    // A file over one segment (4 MiB) but of fewer than 256 chunks (64 KiB
    // average): put again under another name, it is compared with its
    // stored copy (identical, no lookups), as a file of many chunks is.
    test::TempDir tmp;
    store::InitOptions init;
    init.chunking.min_size = 16 << 10;
    init.chunking.normal_size = 64 << 10;
    init.chunking.max_size = 256 << 10;
    Store s = Store::init(tmp.path() / "s", init);
    const auto v = test::mixed_bytes(6'000'000, 1400);
    tmp.write("in/f", v);
    for (const char* name : {"a/f", "b/f"}) {
        std::vector<Writer::Input> inputs(1);
        inputs[0].meta.name = name;
        inputs[0].size_hint = v.size();
        inputs[0].open = [path = tmp.path() / "in" / "f"](store::FileMeta&) { return FileSource(path); };
        store::PutStats got;
        Writer w(s);
        w.put_files(inputs, [&](std::size_t, const store::PutStats& st, const std::exception_ptr& err) {
            EXPECT_FALSE(err);
            got = st;
        });
        w.commit();
        EXPECT_LT(s.find(name)->chunks, 256u);
        EXPECT_EQ(got.identical_files, std::string(name) == "b/f" ? 1u : 0u) << name;
        EXPECT_EQ(s.find(name)->digest, store::chunk_id_of(std::as_bytes(std::span(v))));
    }
}

TEST(Store, ATreePutUnderANewPrefixFindsEachFilesOwnEarlierVersion) {
    // Versions of one file that start alike and have one size (disk images
    // v1..v3): put again under a new prefix, each is compared with its own
    // earlier version (the longest common name suffix), not with the most
    // recent sibling, and so is found identical (its digest reused).
    test::TempDir tmp;
    Store s = Store::init(tmp.path() / "s", {});
    const auto head = test::random_bytes(200'000, 61);
    std::vector<std::vector<std::uint8_t>> versions;
    for (std::uint64_t v = 0; v < 3; ++v) {
        auto b = head;
        const auto rest = test::random_bytes(4'800'000, 62 + v);  // (over one 4 MiB segment: small files are not compared)
        b.insert(b.end(), rest.begin(), rest.end());
        versions.push_back(std::move(b));
    }
    auto put_tree = [&](const std::string& prefix) {
        Writer w(s);
        std::uint64_t identical = 0;
        for (std::size_t v = 0; v < versions.size(); ++v) {
            store::FileMeta meta;
            meta.name = fmt::format("{}/images/disk-v{}.img", prefix, v + 1);
            identical += w.put_file(meta, MemorySource(std::span<const std::uint8_t>(versions[v]))).identical_files;
        }
        w.commit();
        return identical;
    };
    EXPECT_EQ(put_tree("day1"), 0u);
    EXPECT_EQ(put_tree("day2"), versions.size());
    for (std::size_t v = 0; v < versions.size(); ++v)
        EXPECT_EQ(s.find(fmt::format("day2/images/disk-v{}.img", v + 1))->digest,
                  store::chunk_id_of(std::as_bytes(std::span(versions[v]))));
}

TEST(Store, LinksPutInASharedStoreAreNeverFollowed) {
    // In a store shared by a group, a member can put links among its files;
    // another member (or root) using the store must never write, truncate or
    // create what they point to: a pack continued by a writer (it was
    // truncated to the pack's committed length, then appended to), a torn
    // pack tail gc cuts off (truncate(2) follows links), the lock file and
    // the database's -wal and -shm files (created and written by SQLite).
    test::TempDir tmp;
    const auto dir = tmp.path() / "s";
    store::InitOptions init;
    init.pack_size = 1 << 20;
    Store s = Store::init(dir, init);
    const auto a = test::random_bytes(300'000, 81);
    {
        Writer w(s);
        test::put_bytes(w, "a", a);
        w.commit();
    }
    const auto pack = test::first_pack(dir);
    const std::vector<std::uint8_t> victim_bytes(2'000'000, 'V');
    const auto victim = tmp.write("victim", victim_bytes);  // a file the other member may not write
    const auto absent = tmp.path() / "absent";              // one they would like created
    const auto held = tmp.path() / "pack.real";
    fs::rename(pack, held);
    fs::create_symlink(victim, pack);

    {  // a writer does not continue a pack through the link
        Writer w(s);
        test::put_bytes(w, "b", test::random_bytes(200'000, 82));
        w.commit();
    }
    EXPECT_EQ(test::read_bytes(victim), victim_bytes);
    try {
        (void)test::get_bytes(s, "a", tmp);
        ADD_FAILURE() << "read a pack through a link";
    } catch (const store::DamageError& e) {
        EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
    }
    const auto report = s.verify({});
    ASSERT_FALSE(report.damage.empty());
    EXPECT_NE(report.damage[0].what.find("symbolic link"), std::string::npos) << report.damage[0].what;
    store::GcOptions keep_going;
    try {
        s.gc(keep_going);  // (may refuse to rewrite around it: what matters is the victim)
    } catch (const store::StoreError&) {
    }
    EXPECT_EQ(test::read_bytes(victim), victim_bytes);
    fs::remove(pack);
    fs::rename(held, pack);
    EXPECT_EQ(test::get_bytes(s, "a", tmp), a);

    // DIR/packs itself a link to another store's packs: nothing there is
    // continued, truncated or deleted (as an orphan) through it.
    const auto other = tmp.path() / "other-packs";
    fs::create_directories(other);
    const auto other_pack = other / pack.filename();
    const auto other_orphan = other / "00000099.pack";
    fs::copy_file(victim, other_pack);
    fs::copy_file(victim, other_orphan);
    fs::rename(dir / "packs", tmp.path() / "packs.real");
    fs::create_directory_symlink(other, dir / "packs");
    try {
        Writer w(s);
        test::put_bytes(w, "c", test::random_bytes(200'000, 83));
        w.commit();
        ADD_FAILURE() << "wrote packs through a link";
    } catch (const store::StoreError& e) {
        EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
    }
    try {
        s.gc(keep_going);
    } catch (const store::StoreError&) {
    }
    const auto linked = s.verify({});
    ASSERT_FALSE(linked.damage.empty());
    EXPECT_NE(linked.damage[0].what.find("symbolic link"), std::string::npos) << linked.damage[0].what;
    EXPECT_EQ(test::read_bytes(other_pack), victim_bytes);
    ASSERT_TRUE(fs::exists(other_orphan));
    EXPECT_EQ(test::read_bytes(other_orphan), victim_bytes);
    fs::remove(dir / "packs");
    fs::rename(tmp.path() / "packs.real", dir / "packs");
    EXPECT_EQ(test::get_bytes(s, "a", tmp), a);

    // The lock file and the database's files.
    for (const char* name : {"lock", "index.db-wal", "index.db-shm"}) {
        fs::remove(dir / name);
        fs::create_symlink(absent, dir / name);
        try {
            Store::open(dir);
            ADD_FAILURE() << "opened a store whose " << name << " is a link";
        } catch (const store::StoreError& e) {
            EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
        }
        EXPECT_FALSE(fs::exists(absent)) << name;
        fs::remove(dir / name);
    }
    // The database itself.
    fs::rename(dir / "index.db", tmp.path() / "index.db.real");
    fs::create_symlink(victim, dir / "index.db");
    try {
        Store::open(dir);
        ADD_FAILURE() << "opened a database through a link";
    } catch (const store::StoreError& e) {
        EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
    }
    EXPECT_EQ(test::read_bytes(victim), victim_bytes);
    fs::remove(dir / "index.db");
    fs::rename(tmp.path() / "index.db.real", dir / "index.db");
    // SQLite itself, past that check (a link put there in between): it opens
    // the -wal (and -shm) file with O_NOFOLLOW, which the store relies on.
    fs::create_symlink(absent, dir / "index.db-wal");
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2((dir / "index.db").c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL; SELECT count(*) FROM chunks", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    EXPECT_NE(rc, SQLITE_OK);
    EXPECT_FALSE(fs::exists(absent));
    fs::remove(dir / "index.db-wal");
    Store again = Store::open(dir);
    EXPECT_EQ(test::get_bytes(again, "a", tmp), a);
    EXPECT_TRUE(again.verify(test::full_check()).damage.empty());
}

TEST(Store, PrivateToItsOwnerUnlessItsDirectoryIsShared) {
    // A store holds the bytes of every file put into it (a 0600 key too):
    // init makes it 0700 whatever the umask, its files 0600; files made later
    // take the read/write bits of the store directory's mode, so a group share
    // is one chmod of the directory.
    const mode_t old_mask = ::umask(022);
    test::TempDir tmp;
    const auto dir = tmp.path() / "s";
    store::InitOptions init;
    init.pack_size = 1 << 20;
    Store s = Store::init(dir, init);
    {
        Writer w(s);
        test::put_bytes(w, "a", test::random_bytes(300'000, 71));
        w.commit();
        for (const auto& e : fs::recursive_directory_iterator(dir))  // -wal and -shm too, while open
            EXPECT_EQ(test::mode_of(e.path()) & 077u, 0u) << e.path() << " mode " << std::oct << test::mode_of(e.path());
    }
    EXPECT_EQ(test::mode_of(dir), 0700u);
    EXPECT_EQ(test::mode_of(dir / "packs"), 0700u);
    EXPECT_EQ(test::mode_of(dir / "index.db"), 0600u);
    EXPECT_EQ(test::mode_of(dir / "cdc-store"), 0600u);
    EXPECT_EQ(test::mode_of(dir / "lock"), 0600u);
    EXPECT_EQ(test::mode_of(test::first_pack(dir)), 0600u);
    EXPECT_TRUE(s.verify({}).notes.empty());
    ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);  // as stores were made before: verify says so
    const auto open_notes = s.verify({}).notes;
    ASSERT_EQ(open_notes.size(), 1u);
    EXPECT_NE(open_notes[0].what.find("open to every user (mode 0755)"), std::string::npos) << open_notes[0].what;
    ASSERT_EQ(::chmod(dir.c_str(), 0750), 0);  // shared with the group, read-only
    EXPECT_TRUE(s.verify({}).notes.empty());
    {
        Writer w(s);
        test::put_bytes(w, "b", test::random_bytes(2'500'000, 72));  // new packs
        w.commit();
    }
    std::size_t shared = 0;
    for (const auto& e : fs::directory_iterator(dir / "packs"))
        if (test::mode_of(e.path()) == 0640u) ++shared;
    EXPECT_GE(shared, 2u);
    ::umask(old_mask);
}

TEST(Store, GetStripsSetIdBitsUnlessAskedToKeepThem) {
    test::TempDir tmp;
    Store s = Store::init(tmp.path() / "s", {});
    const auto data = test::random_bytes(10'000, 73);
    {
        Writer w(s);
        store::FileMeta m;
        m.name = "tool";
        m.mode = 04755 | 01000;  // setuid and sticky, as put
        m.mtime_ns = 1'700'000'000'000'000'000;
        w.put_file(m, MemorySource(std::span<const std::uint8_t>(data)));
        w.commit();
    }
    EXPECT_EQ(s.find("tool")->mode, 05755u);  // kept in the store as it was
    auto mode_after = [&](bool keep) {
        const auto out = tmp.path() / (keep ? "kept" : "stripped");
        store::GetOptions o;
        o.keep_setid = keep;
        s.get("tool", out, o);
        return test::mode_of(out);
    };
    EXPECT_EQ(mode_after(false), 0755u);
    EXPECT_EQ(mode_after(true), 05755u);
}

TEST(Store, TreesRestoreBelowTheirDirectoryNeverThroughALink) {
    test::TempDir tmp;
    Store s = Store::init(tmp.path() / "s", {});
    const auto a = test::mixed_bytes(200'000, 81);
    const auto b = test::random_bytes(50'000, 82);
    const auto bad = test::random_bytes(60'000, 83);
    {
        Writer w(s);
        test::put_bytes(w, "t/a", a);
        test::put_bytes(w, "t/d/b", b);
        test::put_bytes(w, "t/empty", {});
        test::put_bytes(w, "t/bad", bad);
        for (const char* unsafe : {"t/../evil", "t//c", "t/./e", "t/link/f"}) test::put_bytes(w, unsafe, b);
        test::put_bytes(w, "other", b);
        w.commit();
    }
    // A damaged file is skipped, the others restored.
    std::vector<store::ChunkId> ids;
    s.for_each_chunk("t/bad", [&](const store::ChunkId& id, std::uint32_t) { ids.push_back(id); });
    const auto at = test::id_offset_in_pack(test::first_pack(tmp.path() / "s"), ids.at(0));
    ASSERT_NE(at, std::string::npos);
    test::flip_byte(test::first_pack(tmp.path() / "s"), at + 32 + 8 + 100);
    // A link planted in OUT, to a directory outside it.
    const auto out = tmp.path() / "out";
    const auto outside = tmp.path() / "outside";
    fs::create_directories(out);
    fs::create_directories(outside);
    fs::create_directory_symlink(outside, out / "link");

    const auto r = s.get_tree("t", out);
    EXPECT_EQ(r.files, 3u);
    EXPECT_EQ(r.bytes, a.size() + b.size());
    std::set<std::string> skipped;
    for (const auto& k : r.skipped) skipped.insert(k.name);
    EXPECT_EQ(skipped, (std::set<std::string>{"t/../evil", "t//c", "t/./e", "t/link/f", "t/bad"}));
    EXPECT_EQ(test::read_bytes(out / "a"), a);
    EXPECT_EQ(test::read_bytes(out / "d" / "b"), b);
    EXPECT_TRUE(fs::is_regular_file(out / "empty"));
    EXPECT_EQ(fs::file_size(out / "empty"), 0u);
    EXPECT_FALSE(fs::exists(out / "bad"));
    EXPECT_TRUE(fs::is_empty(outside));
    EXPECT_FALSE(fs::exists(tmp.path() / "evil"));
    for (const auto& e : fs::recursive_directory_iterator(out, fs::directory_options::none))
        EXPECT_EQ(e.path().filename().string().find(".cdc-get-"), std::string::npos) << e.path();
    // The whole store: every safe name ("t/link/f" too: no link in the way
    // there), "other" included.
    const auto all = s.get_tree("", tmp.path() / "all");
    EXPECT_EQ(all.files, 5u);
    EXPECT_EQ(test::read_bytes(tmp.path() / "all" / "t" / "link" / "f"), b);
    EXPECT_EQ(test::read_bytes(tmp.path() / "all" / "other"), b);
    EXPECT_EQ(test::read_bytes(tmp.path() / "all" / "t" / "d" / "b"), b);
}

TEST(Store, KeyIsCheckedAndNeverWritten) {
    test::TempDir tmp;
    store::InitOptions init;
    init.algorithm = "kfastcdc";
    init.chunking.key = test_key(9);
    const fs::path dir = tmp.path() / "s";
    const auto data = test::mixed_bytes(200'000, 4);
    {
        Store s = Store::init(dir, init);
        Writer w(s);
        test::put_bytes(w, "f", data);
        w.commit();
    }
    {
        Store s = Store::open(dir);  // reading needs no key
        EXPECT_EQ(test::get_bytes(s, "f", tmp), data);
        EXPECT_THROW(Writer{s}, OptionError);
    }
    {
        store::OpenOptions o;
        o.key = test_key(10);
        Store s = Store::open(dir, o);
        EXPECT_THROW(Writer{s}, OptionError);
    }
    // Neither the key's bytes nor its hex appear in any file of the store.
    const Key k = *init.chunking.key;
    const std::string raw(reinterpret_cast<const char*>(k.data()), k.size());
    std::string hex;
    for (const auto b : k) hex += fmt::format("{:02x}", b);
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        if (!e.is_regular_file()) continue;
        const auto bytes = test::read_bytes(e.path());
        const std::string text(bytes.begin(), bytes.end());
        EXPECT_EQ(text.find(raw), std::string::npos) << e.path();
        EXPECT_EQ(text.find(hex), std::string::npos) << e.path();
    }
}

TEST(Store, InitRefusesBadOptionsAndNonEmptyDirs) {
    test::TempDir tmp;
    store::InitOptions bad;
    bad.algorithm = "nope";
    EXPECT_THROW(Store::init(tmp.path() / "a", bad), OptionError);
    store::InitOptions level;
    level.zstd_level = 99;
    EXPECT_THROW(Store::init(tmp.path() / "b", level), OptionError);
    store::InitOptions nokey;
    nokey.algorithm = "kfastcdc";
    EXPECT_THROW(Store::init(tmp.path() / "c", nokey), OptionError);
    tmp.write("full/file", std::vector<std::uint8_t>{1});
    EXPECT_THROW(Store::init(tmp.path() / "full", {}), OptionError);
    EXPECT_THROW(Store::open(tmp.path() / "full"), store::VersionError);  // not a store
    // Uncompressed stores work too.
    store::InitOptions raw;
    raw.zstd_level = 0;
    Store s = Store::init(tmp.path() / "raw", raw);
    const auto t = test::mixed_bytes(100'000, 2);
    {
        Writer w(s);
        test::put_bytes(w, "t", t);
        w.commit();
        EXPECT_GT(w.stats().stored_bytes, t.size());  // raw + record headers
    }
    EXPECT_EQ(test::get_bytes(s, "t", tmp), t);
}

TEST(Store, TwoWritersAtOnceBothCommitAndShareChunks) {
    test::TempDir tmp;
    const fs::path dir = tmp.path() / "s";
    Store::init(dir, {});
    const auto data = test::mixed_bytes(3'000'000, 31);
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
        threads.emplace_back([&, t] {
            Store s = Store::open(dir);
            Writer w(s);
            test::put_bytes(w, std::string("w").append(std::to_string(t)), data);
            w.commit();
        });
    for (auto& t : threads) t.join();
    Store s = Store::open(dir);
    EXPECT_EQ(test::get_bytes(s, "w0", tmp), data);
    EXPECT_EQ(test::get_bytes(s, "w1", tmp), data);
    // The index holds each chunk once, whichever writer stored it.
    EXPECT_EQ(s.stats().chunks, s.find("w0")->chunks);
    s.gc();
    EXPECT_LE(s.stats().pack_bytes, s.stats().stored_bytes + 2 * 16);
    EXPECT_TRUE(s.verify(test::full_check()).ok());
    // A third put finds everything.
    Writer w(s);
    EXPECT_EQ(test::put_bytes(w, "w2", data).new_bytes, 0u);
}

// Files of many read segments (put) and output blocks (get): the whole-file
// BLAKE3 runs on a hasher thread beside the pipelines; it must see every byte
// once, in order, and let buffers be reused only after it hashed them.
std::vector<std::uint8_t> repeated(std::size_t unit, int times, std::uint64_t seed) {
    const auto one = test::mixed_bytes(unit, seed);
    std::vector<std::uint8_t> v;
    v.reserve(unit * static_cast<std::size_t>(times));
    for (int i = 0; i < times; ++i) v.insert(v.end(), one.begin(), one.end());
    v[v.size() / 3] ^= 0x55;  // not only repeats: one changed chunk in the middle
    return v;
}

TEST(Store, LargeFilesWholeDigestThroughThePipelines) {
    test::TempDir tmp;
    Store s = Store::init(tmp.path() / "s", {});
    const auto data = repeated(3'000'000, 16, 41);  // 48 MB: 12 read segments, 12 output blocks
    {
        Writer w(s);
        test::put_bytes(w, "big", data);
        test::put_bytes(w, "again", data);  // a re-put: every chunk found in the session/index
        w.commit();
    }
    const store::ChunkId whole = store::chunk_id_of(std::as_bytes(std::span(data)));
    EXPECT_EQ(s.find("big")->digest, whole);
    EXPECT_EQ(s.find("again")->digest, whole);
    EXPECT_EQ(test::get_bytes(s, "big", tmp), data);
    // The stream form writes as it goes; the same bytes.
    const auto out = tmp.path() / "streamed";
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    s.get("again", fd);
    ::close(fd);
    EXPECT_EQ(test::read_bytes(out), data);
}

// A reader that fails after `fail_at` bytes.
class FailingReader final : public Reader {
public:
    FailingReader(std::span<const std::uint8_t> data, std::size_t fail_at) : data_(data), fail_at_(fail_at) {}
    ReadResult read(std::span<std::byte> buffer) override {
        if (pos_ >= fail_at_) throw IoError("the disk went away");
        const std::size_t n = std::min({buffer.size(), fail_at_ - pos_, data_.size() - pos_});
        std::memcpy(buffer.data(), data_.data() + pos_, n);
        pos_ += n;
        return {n, pos_ == data_.size()};
    }

private:
    std::span<const std::uint8_t> data_;
    std::size_t fail_at_;
    std::size_t pos_ = 0;
};

TEST(Store, AFailedLargePutLeavesTheWriterUsable) {
    test::TempDir tmp;
    Store s = Store::init(tmp.path() / "s", {});
    const auto first = test::mixed_bytes(14'000'000, 43);
    const auto second = test::mixed_bytes(14'000'000, 44);
    {
        Writer w(s);
        FailingReader reader(first, 10'000'000);  // fails in the third segment
        store::FileMeta m;
        m.name = "failed";
        EXPECT_THROW(w.put_file(m, ReaderSource(reader)), IoError);
        // The next file's digest starts afresh (nothing of the failed one in it).
        test::put_bytes(w, "second", second);
        w.commit();
    }
    EXPECT_FALSE(s.find("failed"));
    EXPECT_EQ(s.find("second")->digest, store::chunk_id_of(std::as_bytes(std::span(second))));
    EXPECT_EQ(test::get_bytes(s, "second", tmp), second);
    EXPECT_TRUE(s.verify(test::full_check()).ok());
}

TEST(Store, AWriterWhoseFlushFailedCommitsNothingMore) {
    // A flush that fails (here: packs cannot grow, EFBIG) leaves the Writer's
    // memory out of step with the store: chunks it counts as stored that have
    // no row, manifest rows rolled back. Anything it committed after that
    // could name chunks the store lacks, so it refuses to go on.
    test::TempDir tmp;
    store::InitOptions init;
    init.zstd_level = 0;
    init.pack_size = 1 << 20;
    init.chunking.min_size = 64;  // many small chunks: the index grows faster than the packs
    init.chunking.normal_size = 256;
    init.chunking.max_size = 1024;
    Store s = Store::init(tmp.path() / "s", init);
    const auto data = test::random_bytes(16'000'000, 45);
    {
        Writer w(s);
        {
            auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
            rlimit old{};
            ::getrlimit(RLIMIT_FSIZE, &old);
            rlimit small = old;
            small.rlim_cur = 1'250'000;  // packs fit (1 MiB), the database grows past it
            ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
            EXPECT_THROW(
                {
                    test::put_bytes(w, "a", data);
                    w.commit();
                },
                store::StoreError);
            ::setrlimit(RLIMIT_FSIZE, &old);
            std::signal(SIGXFSZ, old_handler);
        }
        try {
            test::put_bytes(w, "b", data);
            w.commit();
            ADD_FAILURE() << "a writer whose flush failed committed again";
        } catch (const store::StoreError& e) {
            EXPECT_NE(std::string(e.what()).find("failed"), std::string::npos) << "second: " << e.what();
        }
    }
    EXPECT_FALSE(s.find("a"));
    EXPECT_TRUE(s.verify(test::full_check()).ok());
    {
        Writer w(s);  // a new writer stores it whole
        test::put_bytes(w, "b", data);
        w.commit();
    }
    EXPECT_EQ(test::get_bytes(s, "b", tmp), data);
    EXPECT_TRUE(s.verify(test::full_check()).ok());
}

TEST(Store, DamageLateInALargeFileLeavesOutUntouched) {
    test::TempDir tmp;
    const fs::path dir = tmp.path() / "s";
    store::InitOptions init;
    init.pack_size = 256 << 20;  // one pack
    Store s = Store::init(dir, init);
    const auto data = test::mixed_bytes(48'000'000, 45);
    {
        Writer w(s);
        test::put_bytes(w, "big", data);
        w.commit();
    }
    // Damage the last chunk's payload: get fails after most blocks went out.
    store::ChunkId last{};
    s.for_each_chunk("big", [&](const store::ChunkId& id, std::uint32_t) { last = id; });
    const auto at = test::id_offset_in_pack(test::first_pack(dir), last);
    ASSERT_NE(at, std::string::npos);
    test::flip_byte(test::first_pack(dir), at + 40 + 5);  // id at header+16, payload at header+56
    const auto out = tmp.path() / "out.bin";
    { std::ofstream(out) << "old content"; }
    try {
        s.get("big", out);
        FAIL() << "get returned";
    } catch (const store::DamageError& e) {
        EXPECT_NE(std::string(e.what()).find(store::to_hex(last)), std::string::npos) << e.what();
    }
    EXPECT_EQ(test::read_text(out), "old content");
    for (const auto& e : fs::directory_iterator(tmp.path()))
        EXPECT_EQ(e.path().filename().string().find(".cdc-get-"), std::string::npos) << "temp file left";
}

TEST(PackAppender, AFullPackStaysLockedUntilItsLengthIsCommitted) {
    // Another writer continues a partly filled pack it can flock, cutting it
    // back to its committed length first. So a pack this writer filled and
    // retired stays locked from sync() until the caller has committed the
    // length sync() returned (release_retired): else records synced but not
    // yet indexed could be cut off, and the index then points past the end.
    test::TempDir tmp;
    store::detail::DirPackStorage storage(tmp.path());
    store::detail::PackAppender packs(storage, 1 << 20);
    auto batch_of = [](std::uint64_t seed) {
        const auto bytes = test::random_bytes(700'000, seed);
        const auto raw = std::as_bytes(std::span(bytes));
        store::detail::RecordBatch b;
        b.add(store::chunk_id_of(raw), store::Codec::raw, static_cast<std::uint32_t>(raw.size()), raw);
        return b;
    };
    auto locked = [&](std::uint64_t pack) {
        const auto path = store::detail::pack_path(tmp.path(), pack);
        const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        EXPECT_GE(fd, 0) << path;
        const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
        ::close(fd);
        return held;
    };
    packs.append(batch_of(1));
    auto [sizes1, rows1] = packs.sync();
    packs.release_retired();  // "committed"; pack 1 is still the one appended to
    EXPECT_EQ(rows1.size(), 1u);
    EXPECT_TRUE(locked(1));
    packs.append(batch_of(2));  // over the 1 MiB bound: pack 1 retired, pack 2 begun
    EXPECT_EQ(packs.retired_count(), 1u);
    auto [sizes2, rows2] = packs.sync();
    ASSERT_EQ(rows2.size(), 1u);
    EXPECT_EQ(rows2[0].pack, 2u);
    EXPECT_TRUE(locked(1)) << "a retired pack was released before its length was committed";
    EXPECT_TRUE(locked(2));
    packs.release_retired();
    EXPECT_FALSE(locked(1));
    EXPECT_EQ(packs.retired_count(), 0u);
    EXPECT_TRUE(locked(2));
}

}  // namespace
}  // namespace cdc

// The push server's whole-file hash: bytes copied into a few small blocks
// (reused while others are hashed) give the digest of the bytes in order,
// message after message; reset() drops a message begun.
TEST(CopyingHasher, DigestEqualsOneShotForAnyPieces) {
    std::mt19937_64 rng(7);
    cdc::common::CopyingHasher h(1000, 3);
    for (int message = 0; message < 6; ++message) {
        std::vector<std::byte> data(static_cast<std::size_t>(rng() % 20'000));
        for (auto& b : data) b = static_cast<std::byte>(rng());
        if (message == 2) {  // a message dropped halfway
            h.update(std::span<const std::byte>(data).first(data.size() / 2));
            h.reset();
        }
        std::size_t at = 0;
        while (at < data.size()) {
            const std::size_t n = std::min<std::size_t>(data.size() - at, rng() % 3'500);
            h.update(std::span<const std::byte>(data).subspan(at, n));
            at += n;
        }
        cdc::Hasher ref(cdc::DigestKind::blake3);
        ref.update(data);
        EXPECT_EQ(h.finish().bytes, ref.finish().bytes) << "message " << message << ", " << data.size() << " bytes";
    }
}

// Bytes the caller keeps (update_kept: a decoder's block) and bytes copied
// hash in the order given; each kept span's `done` runs once it is hashed.
TEST(CopyingHasher, KeptSpansTakeTheirPlaceAmongCopies) {
    std::mt19937_64 rng(11);
    cdc::common::CopyingHasher h(1000, 2);
    std::vector<std::byte> data(50'000);
    for (auto& b : data) b = static_cast<std::byte>(rng());
    std::atomic<int> given_back{0};
    int kept = 0;
    std::size_t at = 0;
    while (at < data.size()) {
        const std::size_t n = std::min<std::size_t>(data.size() - at, rng() % 4'000);
        const auto piece = std::span<const std::byte>(data).subspan(at, n);
        if (rng() % 2) {
            ++kept;
            h.update_kept(piece, [&] { ++given_back; });
        } else {
            h.update(piece);
        }
        at += n;
    }
    cdc::Hasher ref(cdc::DigestKind::blake3);
    ref.update(data);
    EXPECT_EQ(h.finish().bytes, ref.finish().bytes);
    EXPECT_GT(kept, 3);
    EXPECT_EQ(given_back.load(), kept);
}

// `n` chunks of up to 6,000 bytes put into `s` in one commit (every third
// compressible: a zstd record; the others raw), kept in `pieces` and `ids`.
static void put_mixed_chunks(cdc::store::Store& s, int n, std::mt19937_64& rng, std::vector<std::vector<std::byte>>& pieces,
                      std::vector<cdc::store::ChunkId>& ids) {
    cdc::store::Writer w(s);
    for (int i = 0; i < n; ++i) {
        std::vector<std::byte> p(1 + rng() % 6'000);
        const bool text = i % 3 == 0;
        for (auto& b : p) b = static_cast<std::byte>(text ? 'a' + rng() % 4 : rng());
        ids.push_back(w.put_chunk(p).id);
        pieces.push_back(std::move(p));
    }
    w.commit();
}

// A block's records are read in runs over the pack, whatever the order the
// chunks were added in (a chunk twice, gaps where chunks were left out), as
// the reader's Runs say: one read when gaps may be read through, one per
// stretch of adjacent records when not, no read beyond max_bytes unless a
// record alone is larger. The bytes come out in the order added each time.
TEST(OrderedDecoder, RecordsAreReadInRunsOverThePackAsTheReaderSays) {
    using namespace cdc::store::detail;
    class CountingReader final : public PackReader {
    public:
        CountingReader(const PackReader& inner, Runs runs) : inner_(inner), runs_(runs) {}
        std::size_t read_at(std::uint64_t offset, std::span<std::byte> out) const override {
            reads.fetch_add(1);
            std::size_t seen = largest.load();
            while (out.size() > seen && !largest.compare_exchange_weak(seen, out.size())) {
            }
            return inner_.read_at(offset, out);
        }
        std::uint64_t size() const override { return inner_.size(); }
        Runs runs() const override { return runs_; }
        mutable std::atomic<int> reads{0};
        mutable std::atomic<std::size_t> largest{0};

    private:
        const PackReader& inner_;
        Runs runs_;
    };
    cdc::test::TempDir tmp;
    cdc::store::Store s = cdc::store::Store::init(tmp.path() / "s", {});
    std::mt19937_64 rng(11);
    std::vector<std::vector<std::byte>> pieces;
    std::vector<cdc::store::ChunkId> ids;
    put_mixed_chunks(s, 60, rng, pieces, ids);
    const auto catalog = SqliteCatalog::open(tmp.path() / "s");
    std::vector<Location> locs;
    for (const auto& id : ids) {
        const auto loc = catalog->find_chunk(id);
        ASSERT_TRUE(loc);
        locs.push_back(*loc);
        ASSERT_EQ(loc->pack, locs.front().pack) << "one pack";
    }
    // Every fifth chunk left out, the rest shuffled, some twice.
    std::vector<std::size_t> added;
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (i % 5 != 2) added.push_back(i);
    for (std::size_t i = 0; i < 6; ++i) added.push_back(added[rng() % added.size()]);
    std::shuffle(added.begin(), added.end(), rng);
    // The stretches of adjacent records among those added.
    std::vector<std::size_t> by_offset(added.begin(), added.end());
    std::sort(by_offset.begin(), by_offset.end(), [&](auto x, auto y) { return locs[x].offset < locs[y].offset; });
    by_offset.erase(std::unique(by_offset.begin(), by_offset.end()), by_offset.end());
    int stretches = 1;
    std::size_t largest_record = 0;
    for (std::size_t k = 0; k < by_offset.size(); ++k) {
        const auto& l = locs[by_offset[k]];
        largest_record = std::max<std::size_t>(largest_record, kRecordHeaderSize + l.stored_size);
        if (k > 0) {
            const auto& p = locs[by_offset[k - 1]];
            if (l.offset != p.offset + kRecordHeaderSize + p.stored_size) ++stretches;
        }
    }
    ASSERT_GT(stretches, 5);

    DirPackStorage storage(tmp.path() / "s");
    const auto pack = storage.open(locs.front().pack);
    ASSERT_TRUE(pack);
    TaskPool pool(2);
    std::vector<std::byte> expected;
    for (const std::size_t i : added) expected.insert(expected.end(), pieces[i].begin(), pieces[i].end());
    const auto decode = [&](PackReader::Runs runs) {
        CountingReader reader(*pack, runs);
        std::vector<std::byte> got;
        OrderedDecoder decoder(
            pool, "", [&](OrderedDecoder::Delivery& d) { got.insert(got.end(), d.bytes.begin(), d.bytes.end()); },
            OrderedDecoder::Options{std::size_t{4} << 20, 2, 0});
        for (const std::size_t i : added) decoder.add(ids[i], locs[i], reader);
        decoder.finish();
        EXPECT_EQ(got, expected) << runs.max_bytes << " " << runs.max_gap;
        return std::make_pair(reader.reads.load(), reader.largest.load());
    };
    EXPECT_EQ(decode({std::uint64_t{1} << 20, std::uint64_t{64} << 10}).first, 1) << "gaps read through";
    EXPECT_EQ(decode({std::uint64_t{1} << 20, 0}).first, stretches) << "a read per stretch";
    const auto [reads, largest] = decode({16'384, std::uint64_t{64} << 10});
    EXPECT_LE(largest, std::max<std::size_t>(16'384, largest_record));
    EXPECT_GE(reads, 5);
}

// The push server's read-back: stored chunks decoded on a pool and bytes in
// hand (add_bytes) are delivered in the order added, across blocks smaller
// than some chunks; kept blocks hashed by a CopyingHasher give the digest of
// the whole.
TEST(OrderedDecoder, BytesInHandKeepTheirPlaceAmongStoredChunks) {
    using namespace cdc::store::detail;
    using cdc::common::CopyingHasher;
    cdc::test::TempDir tmp;
    cdc::store::Store s = cdc::store::Store::init(tmp.path() / "s", {});
    std::mt19937_64 rng(5);
    std::vector<std::vector<std::byte>> pieces;
    std::vector<cdc::store::ChunkId> ids;
    put_mixed_chunks(s, 40, rng, pieces, ids);
    const auto catalog = SqliteCatalog::open(tmp.path() / "s");
    DirPackStorage storage(tmp.path() / "s");
    PackFiles packs(storage);
    TaskPool pool(2);
    std::vector<std::byte> expected, got;
    std::vector<std::uint32_t> sizes;
    {
        CopyingHasher whole(700, 2);
        OrderedDecoder decoder(
            pool, "",
            [&](OrderedDecoder::Delivery& d) {
                got.insert(got.end(), d.bytes.begin(), d.bytes.end());
                for (const auto& l : d.locs) sizes.push_back(l.raw_size);
                const void* token = d.keep();
                whole.update_kept(d.bytes, [&decoder, token] { decoder.release(token); });
            },
            OrderedDecoder::Options{4'096, 2, 2});
        std::vector<std::uint32_t> added;
        for (std::size_t i = 0; i < ids.size(); ++i) {
            const auto loc = catalog->find_chunk(ids[i]);
            ASSERT_TRUE(loc);
            decoder.add(ids[i], *loc, packs.reader(loc->pack));
            expected.insert(expected.end(), pieces[i].begin(), pieces[i].end());
            added.push_back(static_cast<std::uint32_t>(pieces[i].size()));
            for (std::size_t k = 0; k < i % 3; ++k) {  // chunks just received, in hand
                std::vector<std::byte> in_hand(1 + rng() % 1'500);
                for (auto& b : in_hand) b = static_cast<std::byte>(rng());
                decoder.add_bytes(in_hand);
                expected.insert(expected.end(), in_hand.begin(), in_hand.end());
                added.push_back(static_cast<std::uint32_t>(in_hand.size()));
                in_hand.assign(in_hand.size(), std::byte{0});  // copied: the caller may reuse it
            }
        }
        decoder.finish();
        cdc::Hasher ref(cdc::DigestKind::blake3);
        ref.update(expected);
        EXPECT_EQ(whole.finish().bytes, ref.finish().bytes);
        EXPECT_EQ(sizes, added);
    }
    EXPECT_EQ(got, expected);
}
