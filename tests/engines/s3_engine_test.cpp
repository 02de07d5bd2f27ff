// SPDX-License-Identifier: Apache-2.0
// S3 pack storage against a real Ceph RGW (the `engines` CTest label): a
// one-node Ceph started once for all these tests (tests/engines/ceph.sh; the
// CTest fixture `ceph` starts it in $CDC_TEST_CEPH_DIR, a run by hand starts
// its own), each test in a bucket of its own.
//   - S3PackStorage: write, list, ranged reads, multipart above the part
//     size, remove, never an overwrite, nothing visible before it is whole.
//   - The store through the cdc tool (its cdc-store-s3 helper): put, get,
//     verify --full, rm + gc, stats.
//   - Wrong credentials, a missing bucket: clear errors, exit 4, nothing lost.
//   - cdc serve of such a store: push, pull.
//   - radosgw killed mid-put: a clear error and a catalog that names only
//     complete packs; radosgw restarted mid-put: the put retries and succeeds.
#include "store/s3_client.hpp"
#include "store/s3_packs.hpp"
#include "store/format.hpp"

#include <cdc/store_s3.hpp>

#include "cli_support.hpp"
#include "engine_files.hpp"
#include "engine_support.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

namespace cdc::test {
namespace {

using namespace cdc::store::detail;
namespace fs = std::filesystem;

struct Ceph : EngineInstance {
    std::string endpoint() const { return env.at("CEPH_S3_ENDPOINT"); }
};

Ceph& ceph() {
    static Ceph c;
    return c;
}

class CephEnvironment : public ::testing::Environment {
public:
    void SetUp() override {
        Ceph& c = ceph();
        ASSERT_TRUE(c.start("CDC_TEST_CEPH_DIR", CDC_CEPH_SCRIPT, "ceph", "log"));
        ASSERT_TRUE(c.env.count("CEPH_S3_ENDPOINT")) << c.dir;
        use_ceph_credentials(c.env);
        ::unsetenv("CDC_S3_CREDENTIALS_FILE");
        cdc::store::enable_s3_packs();
    }
    void TearDown() override { ceph().stop(CDC_CEPH_SCRIPT); }
};
[[maybe_unused]] const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new CephEnvironment);

s3::Client admin_client(const std::string& bucket) {
    s3::ClientConfig c;
    c.endpoint = ceph().endpoint();
    c.region = "us-east-1";
    c.bucket = bucket;
    c.credentials = {ceph().env.at("CEPH_S3_ACCESS_KEY"), ceph().env.at("CEPH_S3_SECRET_KEY"), "", "test"};
    c.retry.max_attempts = 3;
    return s3::Client(std::move(c));
}

/// A new bucket, named after the test.
std::string make_bucket() {
    static int n = 0;
    std::string name = fmt::format("t{}-{}-{}", ::getpid(), ++n,
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    for (char& ch : name) ch = static_cast<char>(std::isalnum(static_cast<unsigned char>(ch)) ? std::tolower(ch) : '-');
    name = name.substr(0, 60);
    while (!name.empty() && name.back() == '-') name.pop_back();
    s3::Request r;
    r.method = "PUT";
    admin_client(name).send(r);
    return name;
}

store::PackLocation location(const std::string& bucket, const std::string& prefix, std::uint64_t part = 5 << 20) {
    store::PackLocation w;
    w.url = fmt::format("s3://{}/{}", bucket, prefix);
    w.s3_endpoint = ceph().endpoint();
    w.s3_part_size = part;
    return w;
}

std::vector<std::uint8_t> read_all(const PackReader& r) {
    std::vector<std::uint8_t> out(r.size());
    const std::size_t got = r.read_at(0, std::as_writable_bytes(std::span(out)));
    out.resize(got);
    return out;
}

/// The keys of the multipart uploads in progress under `prefix`.
std::vector<std::string> uploads(const std::string& bucket, const std::string& prefix) {
    s3::Request r;
    r.query = {{"uploads", ""}, {"prefix", prefix}};
    const auto a = admin_client(bucket).send(r);
    std::vector<std::string> keys;
    for (const auto up : s3::xml_elements(a.body, "Upload")) keys.push_back(s3::xml_value(up, "Key").value_or(""));
    return keys;
}

std::uint64_t object_count(const std::string& bucket, const std::string& prefix) {
    s3::Request r;
    r.query = {{"list-type", "2"}, {"prefix", prefix}};
    return s3::xml_elements(admin_client(bucket).send(r).body, "Contents").size();
}

TEST(S3Engine, PackStorageRoundTrip) {
    const std::string bucket = make_bucket();
    TempDir tmp;
    S3PackStorage st(tmp.path(), location(bucket, "p"), true);
    EXPECT_TRUE(st.list().empty());

    // A small pack: one PUT at its sync, sealed after it.
    const auto small = random_bytes(100000, 1);
    auto sink = st.create(1);
    ASSERT_TRUE(sink);
    EXPECT_EQ(sink->size(), kPackHeaderSize);
    sink->append(small);
    EXPECT_TRUE(st.list().empty()) << "nothing is visible before the sync";
    sink->sync();
    EXPECT_TRUE(sink->sealed());
    EXPECT_THROW(sink->append(small), store::StoreError) << "an object takes no more";
    EXPECT_EQ(st.list(), (std::map<std::uint64_t, std::uint64_t>{{1, kPackHeaderSize + small.size()}}));
    sink.reset();
    EXPECT_FALSE(st.create(1)) << "an existing pack is never created again";
    auto reader = st.open(1);
    ASSERT_TRUE(reader);
    const auto back = read_all(*reader);
    ASSERT_EQ(back.size(), kPackHeaderSize + small.size());
    EXPECT_TRUE(check_pack_header(std::span(back).first(kPackHeaderSize), 1).empty());
    EXPECT_TRUE(std::equal(small.begin(), small.end(), back.begin() + kPackHeaderSize));
    std::array<std::byte, 1000> part{};
    EXPECT_EQ(reader->read_at(kPackHeaderSize + 5000, part), part.size());
    EXPECT_EQ(std::memcmp(part.data(), small.data() + 5000, part.size()), 0);
    EXPECT_EQ(reader->read_at(back.size() - 10, part), 10u) << "fewer only at the end";
    EXPECT_EQ(reader->read_at(back.size() + 10, part), 0u);

    // Above the part size (5 MiB): a multipart upload, invisible until complete.
    const auto big = random_bytes((12 << 20) + 12345, 2);
    sink = st.create(2);
    ASSERT_TRUE(sink);
    for (std::size_t at = 0; at < big.size(); at += 700000)
        sink->append(std::span(big).subspan(at, std::min<std::size_t>(700000, big.size() - at)));
    EXPECT_EQ(uploads(bucket, "p/").size(), 1u) << "two full parts are up already";
    EXPECT_FALSE(st.list().count(2)) << "a pack is not visible before its upload completes";
    sink->sync();
    sink.reset();
    EXPECT_TRUE(uploads(bucket, "p/").empty());
    ASSERT_EQ(st.list().at(2), kPackHeaderSize + big.size());
    reader = st.open(2);
    ASSERT_TRUE(reader);
    const auto big_back = read_all(*reader);  // (one large ranged GET)
    EXPECT_TRUE(std::equal(big.begin(), big.end(), big_back.begin() + kPackHeaderSize));
    // Small reads across the cache's block boundaries.
    for (const std::uint64_t at : {std::uint64_t{4 << 20} - 100, std::uint64_t{8 << 20} - 3, std::uint64_t{1} << 20}) {
        EXPECT_EQ(reader->read_at(at, part), part.size());
        EXPECT_EQ(std::memcmp(part.data(), big.data() + at - kPackHeaderSize, part.size()), 0) << at;
    }

    // Small reads in order through another storage of the same packs (which
    // shares the cache of `st`): every byte, in order.
    {
        S3PackStorage fresh(tmp.path(), location(bucket, "p"), false);
        auto in_order = fresh.open(2);
        ASSERT_TRUE(in_order);
        std::vector<unsigned char> got;
        std::array<unsigned char, 50000> piece{};
        for (std::uint64_t at = 0;; at += piece.size()) {
            const std::size_t n = in_order->read_at(at, std::as_writable_bytes(std::span(piece)));
            got.insert(got.end(), piece.begin(), piece.begin() + static_cast<std::ptrdiff_t>(n));
            if (n < piece.size()) break;
        }
        EXPECT_EQ(got, big_back);
    }
    // A read of kLargeRead or more (the decoder's run over a file's stretch
    // of a pack) takes a large block, and the pack's next large block is
    // fetched ahead meanwhile: reading there, or a small read within, costs
    // no request more. (No large block of pack 2 is in the shared cache yet:
    // the reads above were small, or larger than a block.)
    {
        S3PackStorage fresh(tmp.path(), location(bucket, "p"), false);
        auto ahead = fresh.open(2);
        ASSERT_TRUE(ahead);
        const std::uint64_t before = fresh.client().requests();
        std::vector<std::byte> run(S3PackStorage::kLargeRead);
        ASSERT_EQ(ahead->read_at(1000, run), run.size());
        EXPECT_EQ(std::memcmp(run.data(), big_back.data() + 1000, run.size()), 0);
        for (int waited = 0; fresh.client().requests() < before + 2 && waited < 2000; ++waited)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        EXPECT_EQ(fresh.client().requests(), before + 2) << "the next block is asked for before it is read";
        const std::uint64_t at = S3PackStorage::kLargeBlockBytes + 5;
        ASSERT_EQ(ahead->read_at(at, run), run.size());
        EXPECT_EQ(std::memcmp(run.data(), big_back.data() + at, run.size()), 0);
        ASSERT_EQ(ahead->read_at(3 << 20, part), part.size());
        EXPECT_EQ(std::memcmp(part.data(), big_back.data() + (3 << 20), part.size()), 0);
        EXPECT_EQ(fresh.client().requests(), before + 2) << "(the pack has two large blocks)";
    }
    // A pack that went away between reads: each read after it is an error
    // of its own (never a hang on a block another read failed to fetch).
    {
        sink = st.create(6);
        ASSERT_TRUE(sink);
        sink->append(big);
        sink->sync();
        sink.reset();
        S3PackStorage fresh(tmp.path(), location(bucket, "p"), false);
        auto gone = fresh.open(6);
        ASSERT_TRUE(gone);
        EXPECT_EQ(gone->read_at(0, part), part.size());
        st.remove(6);
        EXPECT_THROW(gone->read_at(S3PackStorage::kBlockBytes, part), store::StoreError);
        EXPECT_THROW(gone->read_at(2 * S3PackStorage::kBlockBytes, part), store::StoreError);
        EXPECT_THROW(gone->read_at(3 * S3PackStorage::kBlockBytes + 7, part), store::StoreError);
    }

    // Never an overwrite: another writer's object of the same name stays, and
    // the sink's sync fails (a single PUT: If-None-Match; multipart: asked first).
    for (const std::uint64_t id : {std::uint64_t{3}, std::uint64_t{4}}) {
        sink = st.create(id);
        ASSERT_TRUE(sink);
        const auto theirs = random_bytes(1000, 3);
        s3::Body body;
        body.pieces.emplace_back(theirs);
        s3::Request put;
        put.method = "PUT";
        put.key = st.key_of(id);
        put.body = &body;
        admin_client(bucket).send(put);
        sink->append(id == 3 ? small : big);
        try {
            sink->sync();
            ADD_FAILURE() << "pack " << id << " replaced another writer's object";
        } catch (const store::StoreError& e) {
            EXPECT_NE(std::string(e.what()).find("exists already"), std::string::npos) << e.what();
        }
        sink.reset();
        reader = st.open(id);
        ASSERT_TRUE(reader);
        EXPECT_EQ(read_all(*reader), theirs);
    }
    EXPECT_TRUE(uploads(bucket, "p/").empty()) << "a failed sink aborts its upload";

    // A pack id is reserved while a sink holds it.
    sink = st.create(5);
    ASSERT_TRUE(sink);
    EXPECT_FALSE(st.create(5));
    sink.reset();  // never synced: nothing in the bucket, the id free again
    EXPECT_FALSE(st.list().count(5));
    EXPECT_TRUE(st.create(5));

    // An upload left by a writer that died is aborted by gc's reclaim.
    {
        s3::Request r;
        r.method = "POST";
        r.key = st.key_of(9);
        r.query = {{"uploads", ""}};
        admin_client(bucket).send(r);
    }
    EXPECT_EQ(uploads(bucket, "p/").size(), 1u);
    st.reclaim_incomplete(8);  // (a pack after 8 may be a writer's, uploading now)
    EXPECT_EQ(uploads(bucket, "p/").size(), 1u);
    st.reclaim_incomplete(std::numeric_limits<std::uint64_t>::max());
    EXPECT_TRUE(uploads(bucket, "p/").empty());

    st.remove(1);
    st.remove(1);  // (gone already: fine)
    EXPECT_FALSE(st.open(1));
    EXPECT_FALSE(st.list().count(1));
    EXPECT_TRUE(st.list().count(2));

    // A new store refuses a prefix that holds objects.
    EXPECT_THROW(S3PackStorage(tmp.path(), location(bucket, "p"), true), OptionError);
}


// A process's S3 memory does not grow with its storages (a server opens one
// for each push and pull): past the process's memory for sinks, a sink writes
// its pack to its reservation file and sends it from there (whole or in
// parts, after parts sent from memory, byte for byte; the memory is given
// back), and the storages of the same packs share one read cache.
TEST(S3Engine, MemoryIsBoundedPerProcessNotPerStorage) {
    struct Bound {
        explicit Bound(std::uint64_t b) { S3PackStorage::set_sinks_memory_bound(b); }
        ~Bound() { S3PackStorage::set_sinks_memory_bound(S3PackStorage::kSinksMemory); }
    } bound(6 << 20);
    ASSERT_EQ(S3PackStorage::sinks_memory(), 0u);
    const std::string bucket = make_bucket();
    TempDir tmp;
    std::optional<S3PackStorage> storage(std::in_place, tmp.path(), location(bucket, "p"), true);  // parts of 5 MiB
    S3PackStorage& st = *storage;
    const auto file_bytes = [&](std::uint64_t id) {
        struct stat sb{};
        const auto path = tmp.path() / "packs" / fmt::format("{:08}.uploading", id);
        return ::stat(path.c_str(), &sb) == 0 ? static_cast<std::uint64_t>(sb.st_blocks) * 512 : ~std::uint64_t{0};
    };
    const auto append = [](PackSink& sink, std::span<const std::uint8_t> bytes) {
        for (std::size_t at = 0; at < bytes.size(); at += 300000)
            sink.append(bytes.subspan(at, std::min<std::size_t>(300000, bytes.size() - at)));
    };
    const auto a = random_bytes(9 << 20, 11);
    const auto b = random_bytes((12 << 20) + 777, 12);
    const auto c = random_bytes(300000, 13);

    auto sa = st.create(1);
    ASSERT_TRUE(sa);
    append(*sa, std::span(a).first(3 << 20));
    EXPECT_EQ(S3PackStorage::sinks_memory(), std::uint64_t{4} << 20) << "in memory, by blocks of 1 MiB";
    EXPECT_EQ(file_bytes(1), 0u);

    // Two blocks more fit, then the rest goes to the file, and its parts go up from there.
    auto sb = st.create(2);
    ASSERT_TRUE(sb);
    append(*sb, b);
    EXPECT_EQ(S3PackStorage::sinks_memory(), std::uint64_t{4} << 20) << "the blocks written out are given back";
    EXPECT_GE(file_bytes(2), std::uint64_t{12} << 20);
    EXPECT_EQ(uploads(bucket, "p/").size(), 1u) << "its full parts are up already";

    // A part from memory, then none is left: the rest from the file (the first part a hole there).
    append(*sa, std::span(a).subspan(3 << 20, 3 << 20));
    EXPECT_EQ(uploads(bucket, "p/").size(), 2u);
    EXPECT_EQ(file_bytes(1), 0u);
    S3PackStorage::set_sinks_memory_bound(0);
    append(*sa, std::span(a).subspan(6 << 20));
    EXPECT_EQ(S3PackStorage::sinks_memory(), 0u);
    EXPECT_GT(file_bytes(1), 0u);
    EXPECT_LT(file_bytes(1), std::uint64_t{8} << 20) << "what went up is not written out";

    // A small pack in the file: one PUT from it.
    auto sc = st.create(3);
    ASSERT_TRUE(sc);
    append(*sc, c);
    EXPECT_GT(file_bytes(3), 0u);
    for (auto* sink : {sa.get(), sb.get(), sc.get()}) sink->sync();
    sa.reset();
    sb.reset();
    sc.reset();
    EXPECT_EQ(file_bytes(1), ~std::uint64_t{0}) << "the reservation is gone with its sink";
    EXPECT_TRUE(uploads(bucket, "p/").empty());
    EXPECT_EQ(S3PackStorage::sinks_memory(), 0u);
    const std::vector<std::pair<std::uint64_t, const std::vector<std::uint8_t>*>> packs = {{1, &a}, {2, &b}, {3, &c}};
    for (const auto& [id, want] : packs) {
        auto reader = st.open(id);
        ASSERT_TRUE(reader) << id;
        const auto back = read_all(*reader);
        ASSERT_EQ(back.size(), kPackHeaderSize + want->size()) << id;
        EXPECT_TRUE(check_pack_header(std::span(back).first(kPackHeaderSize), id).empty()) << id;
        EXPECT_TRUE(std::equal(want->begin(), want->end(), back.begin() + kPackHeaderSize)) << id;
    }

    // The storages of the same packs in a process share one cache while one
    // of them is alive (a server's pulls at once hold one cache, not one each).
    std::array<std::byte, 100> few{};
    {
        S3PackStorage other(tmp.path(), location(bucket, "p"), false);
        auto reader = other.open(3);
        ASSERT_TRUE(reader);
        const std::uint64_t before = other.client().requests();
        ASSERT_EQ(reader->read_at(kPackHeaderSize + 10, few), few.size());
        EXPECT_EQ(std::memcmp(few.data(), c.data() + 10, few.size()), 0);
        EXPECT_EQ(other.client().requests(), before) << "read through the other storage's cache";
    }
    storage.reset();
    S3PackStorage later(tmp.path(), location(bucket, "p"), false);
    auto reader = later.open(3);
    ASSERT_TRUE(reader);
    const std::uint64_t before = later.client().requests();
    ASSERT_EQ(reader->read_at(kPackHeaderSize + 10, few), few.size());
    EXPECT_EQ(later.client().requests(), before + 1) << "the cache went with the last storage of its packs";
}

TEST(S3Engine, StoreRoundTripThroughTheTool) {
    const std::string bucket = make_bucket();
    TempDir tmp;
    const std::string store = (tmp.path() / "store").string();
    auto tree = make_tree(tmp.path() / "in", 6, 300000, 10);
    auto big = random_bytes(11 << 20, 99);  // multipart at 5 MiB parts
    std::ofstream(tmp.path() / "in" / "big.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(big.data()), static_cast<std::streamsize>(big.size()));
    tree.emplace("big.bin", big);

    auto r = run_tool({"store", "init", "--no-encryption", "--json", "--packs", fmt::format("s3://{}/st", bucket), "--s3-endpoint",
                       ceph().endpoint(), "--s3-part-size", "5M", "--pack-size", "32M", store});
    const auto init = json_of(r);
    EXPECT_NE(init.value("packs_location", "").find(fmt::format("s3://{}/st", bucket)), std::string::npos) << init;
    r = run_tool({"store", "put", store, (tmp.path() / "in").string(), "--name", "t"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(fs::exists(tmp.path() / "store" / "packs" / "00000001.pack")) << "no pack file in the directory";

    // (CDC_S3_STATS: the get says what its requests cost, on stderr.)
    ::setenv("CDC_S3_STATS", "1", 1);
    r = run_tool({"store", "get", store, "t", "-o", (tmp.path() / "out").string()});
    ::unsetenv("CDC_S3_STATS");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const auto& [name, bytes] : tree) EXPECT_EQ(file_bytes(tmp.path() / "out" / name), bytes) << name;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.err, m, std::regex(R"(S3: (\d+) requests, ([0-9.]+) MB received, [0-9.]+ s in transfers)")))
        << r.err;
    EXPECT_GT(std::stoull(m[1].str()), 1u) << r.err;
    EXPECT_GT(std::stod(m[2].str()), 11.0) << r.err;  // the big file came over the wire
    auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    EXPECT_EQ(v["manifests"], tree.size() + 2);  // + the snapshot's header and trees

    auto stats = json_of(run_tool({"store", "stats", "--json", store}));
    EXPECT_EQ(stats["files"], tree.size() + 2);
    EXPECT_EQ(stats["packs"].get<std::uint64_t>(), object_count(bucket, "st/packs/"));

    // rm + gc: the big file's packs go from the bucket.
    r = run_tool({"store", "rm", store, "t/big.bin"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto gc = json_of(run_tool({"store", "gc", "--json", store}));
    EXPECT_GT(gc["bytes_removed"].get<std::uint64_t>(), std::uint64_t{10} << 20) << gc;
    EXPECT_LT(gc["bytes_after"].get<std::uint64_t>(), gc["bytes_before"].get<std::uint64_t>()) << gc;
    stats = json_of(run_tool({"store", "stats", "--json", store}));
    EXPECT_EQ(stats["files"], tree.size() - 1 + 2);  // the snapshot rewritten without it
    EXPECT_EQ(stats["packs"].get<std::uint64_t>(), object_count(bucket, "st/packs/"));
    v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    fs::remove_all(tmp.path() / "out");
    r = run_tool({"store", "get", store, "t", "-o", (tmp.path() / "out").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const auto& [name, bytes] : tree) {
        if (name != "big.bin") {
            EXPECT_EQ(file_bytes(tmp.path() / "out" / name), bytes) << name;
        }
    }
    EXPECT_FALSE(fs::exists(tmp.path() / "out" / "big.bin"));
}

// An encrypted store with its packs in S3: the round trip, and no object of
// the bucket holds the contents' distinctive string (what the bucket's
// operator could read).
TEST(S3Engine, EncryptedStoreInS3) {
    const std::string bucket = make_bucket();
    TempDir tmp;
    const std::string store = (tmp.path() / "store").string();
    const fs::path pw = tmp.path() / "pw";
    std::ofstream(pw) << "s3 bucket password";
    fs::permissions(pw, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    ::setenv("CDC_PASSWORD_FILE", pw.c_str(), 1);
    ::setenv("CDC_TEST_FAST_KDF", "1", 1);
    static constexpr std::string_view kCanary = "PANGOLIN-ORCHARD-4242";
    auto big = random_bytes(7 << 20, 17);  // raw records: the canary would be there in clear
    for (std::size_t at = 500; at + kCanary.size() < big.size(); at += 50000)
        std::copy(kCanary.begin(), kCanary.end(), big.begin() + static_cast<std::ptrdiff_t>(at));
    fs::create_directories(tmp.path() / "in");
    std::ofstream(tmp.path() / "in" / "big.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(big.data()), static_cast<std::streamsize>(big.size()));
    auto r = run_tool({"store", "init", "--json", "--packs", fmt::format("s3://{}/enc", bucket), "--s3-endpoint",
                       ceph().endpoint(), "--s3-part-size", "5M", store});
    EXPECT_EQ(json_of(r)["encrypted"], true);
    r = run_tool({"store", "put", store, (tmp.path() / "in").string(), "--name", "t"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"store", "get", store, "t/big.bin", "-o", (tmp.path() / "out.bin").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(file_bytes(tmp.path() / "out.bin"), big);
    auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    // Every object of the bucket, read as its operator could.
    s3::Request list;
    list.query = {{"list-type", "2"}, {"prefix", "enc/"}};
    const std::string listing = admin_client(bucket).send(list).body;
    const auto keys = s3::xml_elements(listing, "Contents");
    ASSERT_GT(keys.size(), 0u);
    for (const auto c : keys) {
        s3::Request get;
        get.key = s3::xml_value(c, "Key").value_or("");
        const auto body = admin_client(bucket).send(get).body;
        EXPECT_EQ(body.find(kCanary), std::string::npos) << get.key;
    }
    ::unsetenv("CDC_PASSWORD_FILE");
    ::unsetenv("CDC_TEST_FAST_KDF");
}

#if CDC_TEST_TRANSFER  // (a build without cdc-transfer has no cdc serve)
// `cdc serve` of a store whose packs are in S3: push, pull, verify.
TEST(S3Engine, ServeAStoreWithS3Packs) {
    const std::string bucket = make_bucket();
    TempDir tmp;
    const std::string store = (tmp.path() / "store").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", "-q", "--packs", fmt::format("s3://{}/sv", bucket), "--s3-endpoint",
                        ceph().endpoint(), store})
                  .exit_code,
              0);
    const std::string token_text = "s3-engine-test-token\n";
    const auto token = tmp.write("token", std::span(reinterpret_cast<const std::uint8_t*>(token_text.data()),
                                                    token_text.size()));
    fs::permissions(token, fs::perms::owner_read | fs::perms::owner_write);
    const fs::path logs = tmp.path() / "serve";
    fs::create_directories(logs);
    const pid_t server = spawn_tool({"serve", "--store", store, "--listen", "127.0.0.1:0", "--port-file",
                                     (logs / "port").string(), "--token-file", token.string()},
                                    logs);
    std::string port;
    for (int i = 0; i < 600 && port.empty(); ++i) {
        if (fs::exists(logs / "port")) port = read_text(logs / "port");
        while (!port.empty() && (port.back() == '\n' || port.back() == '\r')) port.pop_back();
        if (port.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_FALSE(port.empty()) << "cdc serve did not start";
    const auto bytes = random_bytes(3 << 20, 42);
    const auto in = tmp.write("in.bin", bytes);
    const std::string to = "127.0.0.1:" + port;
    auto r = run_tool({"push", "-q", "--to", to, "--token-file", token.string(), "--name", "f.bin", in.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"pull", "-q", "--from", to, "--token-file", token.string(), "f.bin", "-o",
                  (tmp.path() / "back.bin").string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    ::kill(server, SIGTERM);
    EXPECT_EQ(wait_exit(server), 0) << read_text(logs / "err");
    EXPECT_EQ(file_bytes(tmp.path() / "back.bin"), bytes);
    EXPECT_GE(object_count(bucket, "sv/packs/"), 1u) << "the pushed chunks are in the bucket";
    const auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
}
#endif

TEST(S3Engine, WrongCredentialsAndAMissingBucketAreClearErrors) {
    const std::string bucket = make_bucket();
    TempDir tmp;
    const std::string endpoint = ceph().endpoint();
    // A bucket that does not exist: nothing is made.
    const std::string nostore = (tmp.path() / "nostore").string();
    auto r = run_tool({"store", "init", "--no-encryption", "--packs", "s3://no-such-bucket-here/p", "--s3-endpoint", endpoint, nostore});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("NoSuchBucket"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("s3://no-such-bucket-here"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(nostore));
    // Wrong secret: 403 with S3's code, nothing made.
    {
        ScopedEnv secret("AWS_SECRET_ACCESS_KEY", "wrong-secret");
        r = run_tool({"store", "init", "--no-encryption", "--packs", fmt::format("s3://{}/p", bucket), "--s3-endpoint", endpoint, nostore});
        EXPECT_EQ(r.exit_code, 4) << r.err;
        EXPECT_NE(r.err.find("HTTP 403 SignatureDoesNotMatch"), std::string::npos) << r.err;
        EXPECT_FALSE(fs::exists(nostore));
    }
    // A store with a file, then every command with bad credentials: exit 4,
    // the file still there afterwards.
    const std::string store = (tmp.path() / "store").string();
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", "-q", "--packs", fmt::format("s3://{}/p", bucket), "--s3-endpoint", endpoint,
                        store})
                  .exit_code,
              0);
    const auto bytes = random_bytes(500000, 5);
    const auto in = tmp.write("in.bin", bytes);
    ASSERT_EQ(run_tool({"store", "put", "-q", store, in.string(), "--name", "keep"}).exit_code, 0);
    const auto other = tmp.write("other.bin", random_bytes(400000, 6));
    {
        ScopedEnv key("AWS_ACCESS_KEY_ID", "NOSUCHKEY");
        r = run_tool({"store", "put", store, other.string(), "--name", "other"});
        EXPECT_EQ(r.exit_code, 4) << r.err;
        EXPECT_NE(r.err.find("HTTP 403 InvalidAccessKeyId"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(fmt::format("s3://{}/p/packs/", bucket)), std::string::npos) << r.err;
        r = run_tool({"store", "get", store, "keep", "-o", (tmp.path() / "got").string()});
        EXPECT_EQ(r.exit_code, 4) << r.err;
        EXPECT_FALSE(fs::exists(tmp.path() / "got")) << "no partial output";
        r = run_tool({"store", "gc", store});
        EXPECT_EQ(r.exit_code, 4) << r.err;
    }
    {
        // No credentials at all (nor a file): says where it looked.
        ScopedEnv key("AWS_ACCESS_KEY_ID", "");
        ScopedEnv secret("AWS_SECRET_ACCESS_KEY", "");
        ScopedEnv home("HOME", tmp.path().string());
        r = run_tool({"store", "verify", store});
        EXPECT_EQ(r.exit_code, 4) << r.err;
        EXPECT_NE(r.err.find("no S3 credentials found"), std::string::npos) << r.err;
        // ls too: the names are in the snapshots' trees, which are in the
        // packs (a clear error, not an empty listing).
        r = run_tool({"store", "ls", store});
        EXPECT_EQ(r.exit_code, 4) << r.err;
        EXPECT_NE(r.err.find("no S3 credentials found"), std::string::npos) << r.err;
        EXPECT_EQ(r.out.find("keep"), std::string::npos) << r.out;
    }
    // Credentials from a file recorded at init, the environment empty.
    const std::string text = fmt::format("[default]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
                                         ceph().env.at("CEPH_S3_ACCESS_KEY"), ceph().env.at("CEPH_S3_SECRET_KEY"));
    const auto creds = tmp.write("creds", std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
    const std::string store2 = (tmp.path() / "store2").string();
    {
        ScopedEnv key("AWS_ACCESS_KEY_ID", "");
        ScopedEnv secret("AWS_SECRET_ACCESS_KEY", "");
        ScopedEnv home("HOME", tmp.path().string());
        r = run_tool({"store", "init", "--no-encryption", "-q", "--packs", fmt::format("s3://{}/q", bucket), "--s3-endpoint", endpoint,
                      "--s3-credentials", creds.string(), store2});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        r = run_tool({"store", "put", "-q", store2, in.string(), "--name", "viafile"});
        EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    // Nothing lost.
    auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    EXPECT_EQ(v["manifests"], 1 + 2);  // one file, its snapshot's header and trees
    r = run_tool({"store", "get", store, "keep", "-o", (tmp.path() / "got").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(file_bytes(tmp.path() / "got"), bytes);
    // A location that does not parse is a usage error.
    r = run_tool({"store", "init", "--no-encryption", "--packs", "s3://UPPER/x", "--s3-endpoint", endpoint, nostore});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    r = run_tool({"store", "init", "--no-encryption", "--packs", fmt::format("s3://{}/z", bucket), "--s3-endpoint", "localhost:1", nostore});
    EXPECT_EQ(r.exit_code, 2) << r.err;
}

/// radosgw-admin on the test cluster; its exit code.
int rgw_admin(const std::string& args) {
    return shell(fmt::format("timeout 120 radosgw-admin -c '{}' {} >/dev/null", ceph().env.at("CEPH_CONF"), args));
}

// A bucket whose quota is full: the put that would pass it stops with S3's
// QuotaExceeded named (exit 4), what was stored before stays whole, and once
// the quota is raised the same put goes through and gc leaves no object the
// catalog does not name.
TEST(S3Engine, AFullBucketQuotaIsAClearErrorAndLosesNothing) {
    const std::string bucket = make_bucket();
    ASSERT_EQ(rgw_admin(fmt::format("quota set --quota-scope=bucket --bucket={} --max-size={}", bucket, 12 << 20)), 0);
    ASSERT_EQ(rgw_admin(fmt::format("quota enable --quota-scope=bucket --bucket={}", bucket)), 0);
    TempDir tmp;
    const std::string store = (tmp.path() / "store").string();
    // (Parts of 5 MiB: the big file's pack is a multipart upload, cut off
    // midway, which gc aborts.)
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", "-q", "--packs", fmt::format("s3://{}/full", bucket),
                        "--s3-endpoint", ceph().endpoint(), "--s3-part-size", "5M", store})
                  .exit_code,
              0);
    const auto small = random_bytes(3 << 20, 21);
    const auto big = random_bytes(20 << 20, 22);
    const auto small_in = tmp.write("small.bin", small);
    const auto big_in = tmp.write("big.bin", big);
    auto r = run_tool({"store", "put", "-q", store, small_in.string(), "--name", "small"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"store", "put", store, big_in.string(), "--name", "big"});
    EXPECT_EQ(r.exit_code, 4) << r.err;
    EXPECT_NE(r.err.find("HTTP 403 QuotaExceeded: the bucket's or its owner's quota is full"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(fmt::format("s3://{}/full/packs/", bucket)), std::string::npos) << r.err;
    std::cout << "the put's error: " << r.err;
    const auto cut_off = uploads(bucket, "full/");
    std::cout << cut_off.size() << " multipart upload(s) left for gc\n";
    // Nothing lost, nothing half there.
    auto v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    const auto list = run_tool({"store", "ls", store});
    EXPECT_NE(list.out.find("small"), std::string::npos) << list.out;
    EXPECT_EQ(list.out.find("big"), std::string::npos) << list.out;
    r = run_tool({"store", "get", store, "small", "-o", (tmp.path() / "small.out").string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(file_bytes(tmp.path() / "small.out"), small);
    // Room made: the same put goes through.
    ASSERT_EQ(rgw_admin(fmt::format("quota disable --quota-scope=bucket --bucket={}", bucket)), 0);
    r = run_tool({"store", "put", "-q", store, big_in.string(), "--name", "big"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run_tool({"store", "gc", "-q", store});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto stats = json_of(run_tool({"store", "stats", "--json", store}));
    EXPECT_EQ(stats["packs"].get<std::uint64_t>(), object_count(bucket, "full/packs/"));
    EXPECT_TRUE(uploads(bucket, "full/").empty());
    v = json_of(run_tool({"store", "verify", "--full", "--json", store}));
    EXPECT_EQ(v["ok"], true) << v;
    for (const auto& [name, bytes] : {std::pair{"small", &small}, std::pair{"big", &big}}) {
        const auto out = tmp.path() / (std::string(name) + ".again");
        r = run_tool({"store", "get", store, name, "-o", out.string()});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(file_bytes(out), *bytes) << name;
    }
}

pid_t rgw_pid() {
    std::ifstream in(ceph().env.at("CEPH_RGW_PID_FILE"));
    pid_t pid = 0;
    in >> pid;
    return pid;
}

void kill_rgw() {
    const pid_t pid = rgw_pid();
    ASSERT_GT(pid, 0);
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    for (int i = 0; i < 200 && ::kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
}

void start_rgw() {
    ASSERT_EQ(shell(ceph().env.at("CEPH_RGW_CMD") + " 2>>" + (ceph().dir / "log" / "daemons.err").string()), 0);
    // Up when it answers.
    for (int i = 0; i < 600; ++i) {
        try {
            s3::Request r;
            r.method = "HEAD";
            r.expected = {404, 403};
            auto c = admin_client("probe-bucket");
            c.send(r);
            return;
        } catch (const std::exception&) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    }
    FAIL() << "radosgw did not come back";
}

/// Waits until `n` objects are under `prefix` (the put is under way).
bool wait_objects(const std::string& bucket, const std::string& prefix, std::uint64_t n, pid_t put) {
    for (int i = 0; i < 2000; ++i) {
        if (object_count(bucket, prefix) >= n) return true;
        int status = 0;
        if (::waitpid(put, &status, WNOHANG) == put) {
            ADD_FAILURE() << "the put ended before " << n << " packs were up";
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}


TEST(S3Engine, RadosgwKilledMidPutLeavesNoHalfCommittedFile) {
    const std::string bucket = make_bucket();
    TempDir tmp;
    const std::string store = (tmp.path() / "store").string();
    const auto tree = make_tree(tmp.path() / "in", 80, 1 << 20, 100);
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", "-q", "--packs", fmt::format("s3://{}/k", bucket), "--s3-endpoint",
                        ceph().endpoint(), store})
                  .exit_code,
              0);
    // Small flushes: several packs committed before radosgw goes; few, quick retries.
    const pid_t put = spawn_tool({"store", "put", store, (tmp.path() / "in").string(), "--name", "t"}, tmp.path(),
                                 {{"CDC_STORE_FLUSH_BYTES", std::to_string(2 << 20)},
                                  {"CDC_S3_RETRIES", "3"},
                                  {"CDC_S3_RETRY_BASE_MS", "50"}});
    const bool started = wait_objects(bucket, "k/packs/", 3, put);
    kill_rgw();
    const int code = wait_exit(put);
    start_rgw();
    ASSERT_TRUE(started);
    EXPECT_EQ(code, 4);
    const std::string text = read_text(tmp.path() / "err");
    EXPECT_NE(text.find("cdc: error: S3 "), std::string::npos) << text;
    EXPECT_NE(text.find(fmt::format("s3://{}/k/packs/", bucket)), std::string::npos) << text;
    EXPECT_NE(text.find("after 3 tries"), std::string::npos) << text;
    std::cout << "the put's error: " << text;
    const std::size_t committed = check_committed(store, tree, tmp.path() / "restored");  // (tmp/out: the put's stdout)
    EXPECT_EQ(committed, 0u) << "a put is one snapshot: visible whole at its last commit, or not at all";
}

TEST(S3Engine, RadosgwRestartedMidPutIsRetried) {
    const std::string bucket = make_bucket();
    TempDir tmp;
    const std::string store = (tmp.path() / "store").string();
    const auto tree = make_tree(tmp.path() / "in", 60, 1 << 20, 300);
    ASSERT_EQ(run_tool({"store", "init", "--no-encryption", "-q", "--packs", fmt::format("s3://{}/r", bucket), "--s3-endpoint",
                        ceph().endpoint(), store})
                  .exit_code,
              0);
    // 8 tries from 100 ms (~12 s of backoff in all) outlast a restart.
    const pid_t put = spawn_tool({"store", "put", store, (tmp.path() / "in").string(), "--name", "t"}, tmp.path(),
                                 {{"CDC_STORE_FLUSH_BYTES", std::to_string(2 << 20)}, {"CDC_S3_RETRY_BASE_MS", "100"}});
    const bool started = wait_objects(bucket, "r/packs/", 2, put);
    kill_rgw();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    start_rgw();
    const int code = wait_exit(put);
    ASSERT_TRUE(started);
    const std::string text = read_text(tmp.path() / "err");
    EXPECT_EQ(code, 0) << text;
    const auto list = json_of(run_tool({"store", "ls", "--json", store}));
    EXPECT_EQ(list.size(), tree.size());
    EXPECT_EQ(check_committed(store, tree, tmp.path() / "restored"), tree.size());  // (tmp/out: the put's stdout)
}

}  // namespace
}  // namespace cdc::test
